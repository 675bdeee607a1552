package com.example.grpc;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/** The two native transports the example runs gRPC on. */
public enum Transport {
    IO_URING(IoUringServerSocketChannel.class, IoUringSocketChannel.class) {
        @Override
        IoHandlerFactory ioHandlerFactory() {
            return IoUringIoHandler.newFactory();
        }

        @Override
        public void ensureAvailable() {
            IoUring.ensureAvailability();
        }
    },
    EPOLL(EpollServerSocketChannel.class, EpollSocketChannel.class) {
        @Override
        IoHandlerFactory ioHandlerFactory() {
            return EpollIoHandler.newFactory();
        }

        @Override
        public void ensureAvailable() {
            Epoll.ensureAvailability();
        }
    };

    private final Class<? extends ServerChannel> serverChannel;
    private final Class<? extends SocketChannel> channel;

    Transport(Class<? extends ServerChannel> serverChannel, Class<? extends SocketChannel> channel) {
        this.serverChannel = serverChannel;
        this.channel = channel;
    }

    abstract IoHandlerFactory ioHandlerFactory();

    /** Throws the transport's own error when the kernel or the native library refuses it. */
    public abstract void ensureAvailable();

    public Class<? extends ServerChannel> serverChannel() {
        return serverChannel;
    }

    public Class<? extends SocketChannel> channel() {
        return channel;
    }

    /** An event loop group of this transport whose threads are named {@code prefix-N}. */
    public EventLoopGroup newGroup(int threads, String prefix) {
        AtomicInteger n = new AtomicInteger();
        ThreadFactory factory = r -> {
            Thread t = new Thread(r, prefix + '-' + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
        return new MultiThreadIoEventLoopGroup(threads, factory, ioHandlerFactory());
    }

    public static Transport of(String name) {
        switch (name) {
            case "io_uring":
                return IO_URING;
            case "epoll":
                return EPOLL;
            default:
                throw new IllegalArgumentException("unknown transport: " + name + " (io_uring or epoll)");
        }
    }
}
