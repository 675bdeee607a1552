package com.example.reactornetty;

import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import reactor.core.publisher.Mono;
import reactor.netty.resources.LoopResources;

import java.time.Duration;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@link LoopResources} on Netty 4.2's io_uring transport ({@code io.netty.channel.uring}), on epoll or on NIO (the
 * reference). Reactor Netty 1.3's own io_uring support is the incubator transport
 * ({@code io.netty.incubator.channel.uring}), so its default resources pick epoll when only Netty 4.2's io_uring is on
 * the class path; a user runs on io_uring with resources like these: one group of {@code threads} loops for accepting
 * and for the connections, and the transport's channels.
 */
public final class NativeLoopResources implements LoopResources {
    /** The two native transports and NIO. */
    public enum Transport {
        IO_URING, EPOLL, NIO;

        public static Transport of(String name) {
            switch (name) {
                case "io_uring":
                    return IO_URING;
                case "epoll":
                    return EPOLL;
                case "nio":
                    return NIO;
                default:
                    throw new IllegalArgumentException("unknown transport: " + name + " (io_uring, epoll or nio)");
            }
        }
    }

    private final Transport transport;
    private final EventLoopGroup group;

    /** Loops named {@code prefix-N}; throws the transport's own error when the kernel refuses it. */
    public NativeLoopResources(Transport transport, int threads, String prefix) {
        IoHandlerFactory factory;
        switch (transport) {
            case IO_URING:
                IoUring.ensureAvailability();
                factory = IoUringIoHandler.newFactory();
                break;
            case EPOLL:
                Epoll.ensureAvailability();
                factory = EpollIoHandler.newFactory();
                break;
            default:
                factory = NioIoHandler.newFactory();
        }
        AtomicInteger n = new AtomicInteger();
        ThreadFactory threadFactory = r -> {
            Thread t = new Thread(r, prefix + '-' + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
        this.transport = transport;
        this.group = new MultiThreadIoEventLoopGroup(threads, threadFactory, factory);
    }

    @Override
    public EventLoopGroup onServer(boolean useNative) {
        return group;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <C extends Channel> C onChannel(Class<C> channelType, EventLoopGroup eventLoopGroup) {
        if (channelType.equals(ServerSocketChannel.class)) {
            switch (transport) {
                case IO_URING: return (C) new IoUringServerSocketChannel();
                case EPOLL: return (C) new EpollServerSocketChannel();
                default: return (C) new NioServerSocketChannel();
            }
        }
        if (channelType.equals(SocketChannel.class)) {
            switch (transport) {
                case IO_URING: return (C) new IoUringSocketChannel();
                case EPOLL: return (C) new EpollSocketChannel();
                default: return (C) new NioSocketChannel();
            }
        }
        throw new IllegalArgumentException("unsupported channel type: " + channelType.getName());
    }

    @Override
    @SuppressWarnings("unchecked")
    public <C extends Channel> Class<? extends C> onChannelClass(Class<C> channelType,
                                                                  EventLoopGroup eventLoopGroup) {
        if (channelType.equals(ServerSocketChannel.class)) {
            switch (transport) {
                case IO_URING: return (Class<? extends C>) IoUringServerSocketChannel.class;
                case EPOLL: return (Class<? extends C>) EpollServerSocketChannel.class;
                default: return (Class<? extends C>) NioServerSocketChannel.class;
            }
        }
        if (channelType.equals(SocketChannel.class)) {
            switch (transport) {
                case IO_URING: return (Class<? extends C>) IoUringSocketChannel.class;
                case EPOLL: return (Class<? extends C>) EpollSocketChannel.class;
                default: return (Class<? extends C>) NioSocketChannel.class;
            }
        }
        throw new IllegalArgumentException("unsupported channel type: " + channelType.getName());
    }

    @Override
    public void dispose() {
        group.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
    }

    @Override
    public Mono<Void> disposeLater(Duration quietPeriod, Duration timeout) {
        return Mono.fromRunnable(this::dispose);
    }
}
