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
package io.netty.channel.uring;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * On a real io_uring socket with Netty's default write buffer water marks (32/64 KiB) and the default
 * {@link IoUringChannelOption#IO_URING_IN_FLIGHT_WRITABILITY_LIMIT} (16 x 64 KiB = 1 MiB): the bytes flushed behind the
 * outstanding write stop counting against the water marks, so a handler that writes while the channel is writable (as
 * HTTP/2's flow controller does) writes a burst of 16 x 64 KiB in one go instead of one message per write completion;
 * the memory a channel holds stays bounded by its water marks and limit. Counts, not times.
 */
public class IoUringQueuedInFlightTest {
    private static final int HIGH = 64 * 1024;
    private static final int MESSAGE = 64 * 1024;
    /** The default of {@link IoUringChannelOption#IO_URING_IN_FLIGHT_WRITABILITY_LIMIT} at the default marks. */
    private static final int LIMIT = 1024 * 1024;
    /** ChannelOutboundBuffer's per-message overhead, as the JVM is configured. */
    private static final int OVERHEAD = Integer.getInteger("io.netty.transport.outboundBufferEntrySizeOverhead", 96);

    private static EventLoopGroup group;

    @BeforeAll
    public static void setUp() {
        IoUring.ensureAvailability();
        group = new MultiThreadIoEventLoopGroup(2, IoUringIoHandler.newFactory());
    }

    @AfterAll
    public static void tearDown() throws Exception {
        group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
    }

    /** Reads and checks everything it receives; starts reading when told to. */
    private static final class Sink extends ChannelInboundHandlerAdapter {
        final AtomicLong received = new AtomicLong();
        final CRC32 crc = new CRC32();
        final CompletableFuture<Channel> connected = new CompletableFuture<Channel>();
        final CompletableFuture<Long> done = new CompletableFuture<Long>();
        final long expected;

        Sink(long expected) {
            this.expected = expected;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            connected.complete(ctx.channel());
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf buf = (ByteBuf) msg;
            try {
                byte[] bytes = new byte[buf.readableBytes()];
                buf.readBytes(bytes);
                crc.update(bytes);
                if (received.addAndGet(bytes.length) >= expected) {
                    done.complete(crc.getValue());
                }
            } finally {
                buf.release();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            done.completeExceptionally(cause);
            ctx.close();
        }
    }

    /**
     * Writes {@code messages} messages of {@code size} bytes while the channel is writable, and again at each
     * writability change, as HTTP/2's flow controller does; counts the passes that wrote something. A writability
     * change fired while it writes (by its own write or flush) does not start another pass.
     */
    private static class Producer extends ChannelInboundHandlerAdapter {
        final int messages;
        final int size;
        final CRC32 sent = new CRC32();
        final List<Integer> writtenPerPass = new ArrayList<Integer>();
        final List<Boolean> writableAfterFlush = new ArrayList<Boolean>();
        final List<Boolean> events = new ArrayList<Boolean>();
        final CompletableFuture<ChannelFuture> lastWrite = new CompletableFuture<ChannelFuture>();
        long maxPending;
        int written;
        ChannelFuture lastFlushed;
        boolean producing;

        Producer(int messages, int size) {
            this.messages = messages;
            this.size = size;
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            events.add(ctx.channel().isWritable());
            produce(ctx.channel());
            ctx.fireChannelWritabilityChanged();
        }

        void produce(Channel ch) {
            produce(ch, messages);
        }

        /** Writes while the channel is writable, up to message {@code upTo}. */
        void produce(Channel ch, int upTo) {
            if (producing) {
                return;
            }
            producing = true;
            int pass = 0;
            while (ch.isWritable() && written < upTo) {
                ByteBuf buf = data(size, written);
                byte[] bytes = new byte[size];
                buf.getBytes(0, bytes);
                sent.update(bytes);
                ChannelFuture write = ch.writeAndFlush(buf);
                lastFlushed = write;
                written++;
                pass++;
                writableAfterFlush.add(ch.isWritable());
                maxPending = Math.max(maxPending, ch.unsafe().outboundBuffer().totalPendingWriteBytes());
                if (written == messages) {
                    lastWrite.complete(write);
                }
            }
            producing = false;
            if (pass > 0) {
                writtenPerPass.add(pass);
            }
        }
    }

    private static Channel server(Sink sink, boolean autoRead) throws InterruptedException {
        return new ServerBootstrap().group(group).channel(IoUringServerSocketChannel.class)
                .childOption(ChannelOption.AUTO_READ, autoRead)
                .childHandler(sink)
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    }

    private static Channel client(Producer producer, Channel server) throws InterruptedException {
        return new Bootstrap().group(group).channel(IoUringSocketChannel.class)
                .handler(producer)
                .connect(server.localAddress()).sync().channel();
    }

    private static <T> T onLoop(Channel ch, Callable<T> task) throws Exception {
        return ch.eventLoop().submit(task).get(30, TimeUnit.SECONDS);
    }

    private static ByteBuf data(int size, int seed) {
        byte[] bytes = new byte[size];
        for (int i = 0; i < size; i++) {
            bytes[i] = (byte) (i * 31 + seed);
        }
        // One access: the paranoid leak detector records every access of a buffer.
        return ByteBufAllocator.DEFAULT.directBuffer(size).writeBytes(bytes);
    }

    /**
     * A burst of 16 x 64 KiB, each written and flushed while the channel is writable: all 16 in the first pass, the
     * channel writable after every flush. Without the messages queued behind the outstanding write counting as in
     * flight, the second flush leaves 64 KiB and its overhead counted, more than the high water mark, and every further
     * message waits for a write completion: 16 passes.
     */
    @Test
    public void burstIsWrittenInOnePass() throws Exception {
        final int messages = 16;
        Sink sink = new Sink((long) messages * MESSAGE);
        Channel server = server(sink, true);
        final Producer producer = new Producer(messages, MESSAGE);
        final Channel client = client(producer, server);
        try {
            onLoop(client, () -> {
                assertEquals(HIGH, client.config().getWriteBufferHighWaterMark());
                producer.produce(client);
                return null;
            });
            long receivedCrc = sink.done.get(30, TimeUnit.SECONDS);
            assertTrue(producer.lastWrite.get(30, TimeUnit.SECONDS).await(30, TimeUnit.SECONDS));
            onLoop(client, () -> {
                assertEquals(receivedCrc, producer.sent.getValue());
                List<Boolean> allWritable = new ArrayList<Boolean>();
                for (int i = 0; i < messages; i++) {
                    allWritable.add(true);
                }
                // One pass of 16 writes; the channel writable after each flush.
                assertEquals(listOf(messages), producer.writtenPerPass);
                assertEquals(allWritable, producer.writableAfterFlush);
                // Each message alone crosses the high water mark until it is flushed. The first one is reported, and
                // so is its flush (its write is submitted at once: writable again). From the second message on, the
                // flush's writable state is undone by the next message before its event would be fired: not
                // reported. The last flush is reported once.
                assertEquals(Arrays.asList(false, true, false, true), producer.events);
                // Everything flushed was pending at once, within the limit.
                assertEquals((long) messages * (MESSAGE + OVERHEAD), producer.maxPending);
                assertEquals(0, client.unsafe().outboundBuffer().totalPendingWriteBytes());
                assertTrue(client.isWritable());
                return null;
            });
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /**
     * A listener of a completed write writes and flushes from the completion: it sees the channel writable after its
     * flush, as what it flushed is queued behind the write the completion submits next.
     */
    @Test
    public void listenerThatWritesAndFlushesDuringCompletion() throws Exception {
        Sink sink = new Sink(4L * MESSAGE);
        Channel server = server(sink, true);
        final Producer producer = new Producer(0, MESSAGE);
        final Channel client = client(producer, server);
        final List<Boolean> seenByListener = new ArrayList<Boolean>();
        final CompletableFuture<ChannelFuture> fromListener = new CompletableFuture<ChannelFuture>();
        try {
            ChannelFuture last = onLoop(client, () -> {
                client.writeAndFlush(data(MESSAGE, 1)).addListener(f -> {
                    seenByListener.add(client.isWritable());
                    ChannelFuture write = client.write(data(MESSAGE, 2));
                    seenByListener.add(client.isWritable());
                    client.flush();
                    seenByListener.add(client.isWritable());
                    fromListener.complete(write);
                });
                client.writeAndFlush(data(MESSAGE, 3));
                return client.writeAndFlush(data(MESSAGE, 4));
            });
            sink.done.get(30, TimeUnit.SECONDS);
            assertTrue(last.await(30, TimeUnit.SECONDS));
            assertTrue(fromListener.get(30, TimeUnit.SECONDS).await(30, TimeUnit.SECONDS));
            onLoop(client, () -> {
                // Writable with the two queued messages in flight; not writable while its own is not flushed (64 KiB
                // and the overhead count); writable again after the flush.
                assertEquals(listOf(true, false, true), seenByListener);
                assertEquals(0, client.unsafe().outboundBuffer().totalPendingWriteBytes());
                assertTrue(client.isWritable());
                return null;
            });
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /**
     * The memory bound with a peer that does not read until the client is not writable: the outbound buffer holds at
     * most the high water mark, plus the limit, plus one message of pending size; and it does use the limit. The
     * messages are smaller than the high water mark, so that only the bytes queued beyond the limit make the client
     * unwritable. Netty's default water marks: the limit is 16 x 64 KiB.
     */
    @Test
    public void slowPeerKeepsMemoryBoundedByTheLimit() throws Exception {
        slowPeer(null, false, null, 96, 16 * 1024, HIGH, LIMIT);
    }

    /** Lower water marks lower the default limit with them: 16 x 8 KiB, not 1 MiB. */
    @Test
    public void slowPeerWithLowerWaterMarksIsBoundedByThem() throws Exception {
        slowPeer(new WriteBufferWaterMark(4 * 1024, 8 * 1024), false, null, 192, 2 * 1024, 8 * 1024, 16 * 8 * 1024);
    }

    /**
     * Water marks lowered after a write of the channel completed govern the default limit of its next writes: the
     * limit is taken with each write the channel submits, not when the channel is created, connected or first writes.
     */
    @Test
    public void slowPeerWithWaterMarksLoweredAfterAWriteIsBoundedByThem() throws Exception {
        slowPeer(new WriteBufferWaterMark(4 * 1024, 8 * 1024), true, null, 192, 2 * 1024, 8 * 1024, 16 * 8 * 1024);
    }

    /** The channel option sets one channel's limit, above and below the default. */
    @Test
    public void slowPeerWithTheLimitOption() throws Exception {
        slowPeer(null, false, 256 * 1024, 48, 16 * 1024, HIGH, 256 * 1024);
        slowPeer(null, false, 0, 16, 16 * 1024, HIGH, 0);
    }

    private static void slowPeer(final WriteBufferWaterMark waterMark, final boolean waterMarkAfterConnect,
                                 Integer limitOption, final int messages, final int size, int high, int limit)
            throws Exception {
        final Sink sink = new Sink((long) messages * size);
        Channel server = server(sink, false);
        final Producer producer = new Producer(messages, size) {
            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                final Channel ch = ctx.channel();
                if (waterMarkAfterConnect) {
                    // One message at the default water marks; once its write completed (the peer's receive buffer
                    // takes it) and the completion was processed, lower the water marks and go on.
                    produce(ch, 1);
                    lastFlushed.addListener(f -> ch.eventLoop().execute(() -> {
                        ch.config().setWriteBufferWaterMark(waterMark);
                        produceAll(ch);
                    }));
                } else {
                    produceAll(ch);
                }
                ctx.fireChannelActive();
            }

            private void produceAll(Channel ch) {
                produce(ch);
                if (written == messages) {
                    // Never held back (the limit does not apply): let the peer read, the bound is checked below.
                    sink.connected.thenAccept(peer -> peer.config().setAutoRead(true));
                }
            }

            @Override
            public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                if (!ctx.channel().isWritable()) {
                    // Held back: now let the peer read.
                    sink.connected.thenAccept(peer -> peer.config().setAutoRead(true));
                }
                super.channelWritabilityChanged(ctx);
            }
        };
        Bootstrap bootstrap = new Bootstrap().group(group).channel(IoUringSocketChannel.class)
                .option(ChannelOption.SO_SNDBUF, 16 * 1024)
                .handler(producer);
        if (waterMark != null && !waterMarkAfterConnect) {
            bootstrap.option(ChannelOption.WRITE_BUFFER_WATER_MARK, waterMark);
        }
        if (limitOption != null) {
            bootstrap.option(IoUringChannelOption.IO_URING_IN_FLIGHT_WRITABILITY_LIMIT, limitOption);
        }
        Channel client = bootstrap.connect(server.localAddress()).sync().channel();
        try {
            long receivedCrc = sink.done.get(30, TimeUnit.SECONDS);
            assertTrue(producer.lastWrite.get(30, TimeUnit.SECONDS).await(30, TimeUnit.SECONDS));
            // The producer's state is written on the event loop: read it there.
            assertEquals(receivedCrc, (long) onLoop(client, () -> producer.sent.getValue()));
            assertEquals(messages, (int) onLoop(client, () -> producer.written));
            assertEquals(high, client.config().getWriteBufferHighWaterMark());
            assertEquals(limit, (int) client.config().getOption(
                    IoUringChannelOption.IO_URING_IN_FLIGHT_WRITABILITY_LIMIT));
            long maxPending = onLoop(client, () -> producer.maxPending);
            long uncounted = Math.max(limit, high);
            long bound = high + uncounted + size + OVERHEAD;
            assertTrue(maxPending <= bound, "max pending " + maxPending + " > " + bound);
            assertTrue(maxPending > uncounted, "max pending " + maxPending + " <= " + uncounted);
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /**
     * The default limit is 16 times the high water mark and follows it (capped at {@link Integer#MAX_VALUE}); the
     * channel option replaces it; a negative value is rejected.
     */
    @Test
    public void limitOptionDefaultFollowsTheHighWaterMark() {
        assertNull(System.getProperty(IoUringStreamChannelConfig.IN_FLIGHT_LIMIT_PROPERTY),
                "this test runs without -D" + IoUringStreamChannelConfig.IN_FLIGHT_LIMIT_PROPERTY);
        final IoUringSocketChannel unregistered = new IoUringSocketChannel();
        try {
            final ChannelConfig config = unregistered.config();
            assertTrue(config.getOptions().containsKey(IoUringChannelOption.IO_URING_IN_FLIGHT_WRITABILITY_LIMIT));
            assertEquals(LIMIT, (int) config.getOption(IoUringChannelOption.IO_URING_IN_FLIGHT_WRITABILITY_LIMIT));
            config.setWriteBufferWaterMark(new WriteBufferWaterMark(4 * 1024, 8 * 1024));
            assertEquals(16 * 8 * 1024,
                    (int) config.getOption(IoUringChannelOption.IO_URING_IN_FLIGHT_WRITABILITY_LIMIT));
            config.setWriteBufferWaterMark(new WriteBufferWaterMark(1 << 30, Integer.MAX_VALUE));
            assertEquals(Integer.MAX_VALUE,
                    (int) config.getOption(IoUringChannelOption.IO_URING_IN_FLIGHT_WRITABILITY_LIMIT));
            assertTrue(config.setOption(IoUringChannelOption.IO_URING_IN_FLIGHT_WRITABILITY_LIMIT, 0));
            config.setWriteBufferWaterMark(new WriteBufferWaterMark(4 * 1024, 8 * 1024));
            assertEquals(0, (int) config.getOption(IoUringChannelOption.IO_URING_IN_FLIGHT_WRITABILITY_LIMIT));
            assertThrows(IllegalArgumentException.class,
                    () -> config.setOption(IoUringChannelOption.IO_URING_IN_FLIGHT_WRITABILITY_LIMIT, -1));
            assertEquals(0, (int) config.getOption(IoUringChannelOption.IO_URING_IN_FLIGHT_WRITABILITY_LIMIT));
        } finally {
            unregistered.unsafe().closeForcibly();
        }
    }

    @SafeVarargs
    private static <T> List<T> listOf(T... elements) {
        List<T> list = new ArrayList<T>();
        for (T e : elements) {
            list.add(e);
        }
        return list;
    }
}
