/*
 * Copyright 2026 The Netty Project
 *
 * The Netty Project licenses this file to you under the Apache License,
 * version 2.0 (the "License"); you may not use this file except in compliance
 * with the License. You may obtain a copy of the License at:
 *
 *   https://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
 * WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
 * License for the specific language governing permissions and limitations
 * under the License.
 */
package io.netty.testsuite.fork;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.AbstractNioChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import io.netty.testsuite.fork.soak.ClosingIoEventLoopGroup;
import io.netty.testsuite.fork.soak.ForwardingIoHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.ThreadAwareExecutor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.nio.channels.SelectableChannel;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What {@code shutdownGracefully(0, timeout)} does to the channels of a loop (the soak's event-loop shutdown fault,
 * docs/soak.md, Findings, 4a), made deterministic: the shutdown begins either in the server
 * loop's I/O step or in one of its tasks, started on the loop's own thread.
 * <p>
 * Upstream's {@code SingleThreadIoEventLoop.run()} closes a shutting-down loop's channels right after its I/O step
 * only; a shutdown that begins while the loop runs its tasks is confirmed, with a quiet period of 0, before another
 * I/O step: the loop terminates with its channels open, and the peer's connection stays open. These tests pin that
 * behaviour (if upstream changes it, the first one fails and {@link ClosingIoEventLoopGroup} can go) and check that
 * {@link ClosingIoEventLoopGroup}, which the soak's server runs on, closes the channels either way.
 */
public class EventLoopShutdownTest {
    private static final long TIMEOUT_SECONDS = 10;

    enum Transport {
        NIO, IO_URING;

        IoHandlerFactory handlerFactory() {
            if (this == NIO) {
                return NioIoHandler.newFactory();
            }
            IoUring.ensureAvailability();
            return IoUringIoHandler.newFactory();
        }
    }

    private EventLoopGroup serverGroup;
    private EventLoopGroup clientGroup;
    private Channel client;

    @AfterEach
    public void tearDown() throws InterruptedException {
        if (client != null) {
            client.close().await(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
        if (serverGroup != null) {
            serverGroup.shutdownGracefully(0, TIMEOUT_SECONDS, TimeUnit.SECONDS)
                    .await(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
        if (clientGroup != null) {
            clientGroup.shutdownGracefully(0, TIMEOUT_SECONDS, TimeUnit.SECONDS)
                    .await(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    public void upstreamLoopLeavesChannelsOpenWhenShutdownBeginsDuringTasks(Transport transport) throws Exception {
        ShutdownTrigger trigger = new ShutdownTrigger(transport.handlerFactory());
        serverGroup = new MultiThreadIoEventLoopGroup(1, threads(), trigger);
        Connection connection = connect(transport);

        shutDownDuringTask(connection.server.eventLoop());

        // The loop terminated without closing its channel: open, registered, and never inactive.
        assertTrue(connection.server.isOpen(), "server channel open after its loop terminated");
        assertTrue(connection.server.isRegistered());
        assertEquals(1, connection.inactive.getCount(), "channelInactive never came");
        assertEquals(0, trigger.prepareToDestroyCalls, "the loop never closed its channels");
        // The client's connection is open because the server's socket is: closing it by hand ends the client's.
        assertTrue(client.isOpen());
        closeSocket(connection.server);
        assertTrue(client.closeFuture().await(TIMEOUT_SECONDS, TimeUnit.SECONDS),
                "client closed once the server's socket was");
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    public void upstreamLoopClosesChannelsWhenShutdownBeginsDuringIo(Transport transport) throws Exception {
        ShutdownTrigger trigger = new ShutdownTrigger(transport.handlerFactory());
        serverGroup = new MultiThreadIoEventLoopGroup(1, threads(), trigger);
        Connection connection = connect(transport);

        shutDownDuringIo(trigger, connection.server.eventLoop());

        assertClosed(connection);
        assertEquals(1, trigger.prepareToDestroyCalls);
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    public void closingGroupClosesChannelsWhenShutdownBeginsDuringTasks(Transport transport) throws Exception {
        ShutdownTrigger trigger = new ShutdownTrigger(transport.handlerFactory());
        ClosingIoEventLoopGroup group = new ClosingIoEventLoopGroup(1, threads(), trigger);
        serverGroup = group;
        Connection connection = connect(transport);

        shutDownDuringTask(connection.server.eventLoop());

        assertClosed(connection);
        assertEquals(1, group.skippedCloses(), "the loop skipped its close, the group's check closed the channels");
        assertEquals(1, trigger.prepareToDestroyCalls);
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    public void closingGroupClosesChannelsWhenShutdownBeginsDuringIo(Transport transport) throws Exception {
        ShutdownTrigger trigger = new ShutdownTrigger(transport.handlerFactory());
        ClosingIoEventLoopGroup group = new ClosingIoEventLoopGroup(1, threads(), trigger);
        serverGroup = group;
        Connection connection = connect(transport);

        shutDownDuringIo(trigger, connection.server.eventLoop());

        assertClosed(connection);
        assertEquals(0, group.skippedCloses(), "the loop closed its channels itself");
        assertEquals(1, trigger.prepareToDestroyCalls);
    }

    private static ThreadFactory threads() {
        return new DefaultThreadFactory("shutdown-server", true);
    }

    /** Begins the shutdown (no quiet period) in a task of the loop, and waits until the loop terminated. */
    private void shutDownDuringTask(EventLoop loop) throws InterruptedException {
        loop.execute(() -> serverGroup.shutdownGracefully(0, TIMEOUT_SECONDS, TimeUnit.SECONDS));
        assertTrue(serverGroup.awaitTermination(TIMEOUT_SECONDS, TimeUnit.SECONDS), "server loop terminated");
    }

    /** Begins the shutdown (no quiet period) in the loop's next I/O step, and waits until the loop terminated. */
    private void shutDownDuringIo(ShutdownTrigger trigger, EventLoop loop) throws InterruptedException {
        trigger.beforeNextIo = () -> serverGroup.shutdownGracefully(0, TIMEOUT_SECONDS, TimeUnit.SECONDS);
        // Wakes the loop: this task runs after the current I/O step, the shutdown begins in the next one.
        loop.execute(() -> { });
        assertTrue(serverGroup.awaitTermination(TIMEOUT_SECONDS, TimeUnit.SECONDS), "server loop terminated");
    }

    private static void assertClosed(Connection connection) throws InterruptedException {
        assertTrue(connection.inactive.await(TIMEOUT_SECONDS, TimeUnit.SECONDS), "channelInactive");
        assertFalse(connection.server.isOpen());
        assertTrue(connection.client.closeFuture().await(TIMEOUT_SECONDS, TimeUnit.SECONDS),
                "client closed after the server's loop terminated");
    }

    private static void closeSocket(Channel channel) throws Exception {
        if (channel instanceof IoUringSocketChannel) {
            ((IoUringSocketChannel) channel).fd().close();
        } else {
            // The JDK channel, closed without the (terminated) event loop.
            Method javaChannel = AbstractNioChannel.class.getDeclaredMethod("javaChannel");
            javaChannel.setAccessible(true);
            ((SelectableChannel) javaChannel.invoke(channel)).close();
        }
        assertFalse(channel.isOpen());
    }

    private Connection connect(Transport transport) throws Exception {
        CompletableFuture<Channel> accepted = new CompletableFuture<>();
        CountDownLatch inactive = new CountDownLatch(1);
        ServerBootstrap sb = new ServerBootstrap().group(serverGroup)
                .channel(transport == Transport.NIO ? NioServerSocketChannel.class : IoUringServerSocketChannel.class)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelActive(ChannelHandlerContext ctx) {
                        accepted.complete(ctx.channel());
                        ctx.fireChannelActive();
                    }

                    @Override
                    public void channelInactive(ChannelHandlerContext ctx) {
                        inactive.countDown();
                        ctx.fireChannelInactive();
                    }
                });
        Channel serverChannel = sb.bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        clientGroup = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("shutdown-client", true),
                NioIoHandler.newFactory());
        client = new Bootstrap().group(clientGroup).channel(NioSocketChannel.class)
                .handler(new ChannelInboundHandlerAdapter())
                .connect(serverChannel.localAddress()).sync().channel();
        Channel server = accepted.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        assertTrue(server.isActive());
        assertTrue(client.isActive());
        return new Connection(server, client, inactive);
    }

    /**
     * The transport's handler, which runs a given action (on the loop's thread) at the start of the loop's next I/O
     * step and counts {@link IoHandler#prepareToDestroy()}.
     */
    private static final class ShutdownTrigger implements IoHandlerFactory {
        private final IoHandlerFactory delegate;
        volatile Runnable beforeNextIo;
        volatile int prepareToDestroyCalls;

        ShutdownTrigger(IoHandlerFactory delegate) {
            this.delegate = delegate;
        }

        @Override
        public IoHandler newHandler(ThreadAwareExecutor ioExecutor) {
            IoHandler handler = delegate.newHandler(ioExecutor);
            return new ForwardingIoHandler(handler) {
                @Override
                public int run(IoHandlerContext context) {
                    Runnable action = beforeNextIo;
                    if (action != null) {
                        beforeNextIo = null;
                        action.run();
                    }
                    return super.run(context);
                }

                @Override
                public void prepareToDestroy() {
                    prepareToDestroyCalls++;
                    super.prepareToDestroy();
                }
            };
        }

        @Override
        public boolean isChangingThreadSupported() {
            return delegate.isChangingThreadSupported();
        }
    }

    private static final class Connection {
        final Channel server;
        final Channel client;
        final CountDownLatch inactive;

        Connection(Channel server, Channel client, CountDownLatch inactive) {
            this.server = server;
            this.client = client;
            this.inactive = inactive;
        }
    }
}
