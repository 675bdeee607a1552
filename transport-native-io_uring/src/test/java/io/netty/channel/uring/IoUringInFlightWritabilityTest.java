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
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.DefaultFileRegion;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.DuplexChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.stream.ChunkedStream;
import io.netty.handler.stream.ChunkedWriteHandler;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * On a real io_uring socket, the bytes of a submitted write stop counting against the write water marks until its
 * completion is processed ({@link ChannelOutboundBuffer#setBytesInFlight(long)}), on every completion path.
 * With {@code -Dio.netty.iouring.inFlightWritability=false} (the build runs this class once more so) the same
 * checks expect upstream's accounting. The in-flight discount is observed through the public API: the pending bytes
 * less the bytes that {@code bytesBeforeUnwritable()} or {@code bytesBeforeWritable()} imply are counted.
 */
public class IoUringInFlightWritabilityTest {
    private static final int LOW = 32 * 1024;
    private static final int HIGH = 64 * 1024;
    /** ChannelOutboundBuffer's per-message overhead, as the JVM is configured. */
    private static final int OVERHEAD = Integer.getInteger("io.netty.transport.outboundBufferEntrySizeOverhead", 96);
    /** The process default, from the property as the build sets it for this JVM. */
    private static final boolean FEATURE = !"false".equals(System.getProperty("io.netty.iouring.inFlightWritability"));

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

    /** Counts (and checks) what a server connection receives; reads only when told to. */
    private static class Sink extends ChannelInboundHandlerAdapter {
        final AtomicLong received = new AtomicLong();
        final CRC32 crc = new CRC32();
        final CompletableFuture<Channel> connected = new CompletableFuture<Channel>();
        final CompletableFuture<Void> closed = new CompletableFuture<Void>();
        long expected = Long.MAX_VALUE;
        final CompletableFuture<Long> done = new CompletableFuture<Long>();

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
        public void channelInactive(ChannelHandlerContext ctx) {
            closed.complete(null);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    /** Records {@code isWritable()} at every writability event of the client, and checks the accounting there. */
    private static class WritabilityRecorder extends ChannelInboundHandlerAdapter {
        final List<Boolean> events = new ArrayList<Boolean>();
        final List<String> violations = new ArrayList<String>();

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            events.add(ctx.channel().isWritable());
            check(ctx.channel(), violations);
            ctx.fireChannelWritabilityChanged();
        }
    }

    /**
     * The pending bytes that do not count against the water marks, as the public API shows them: the pending bytes
     * less those that {@code bytesBeforeUnwritable()} (writable) or {@code bytesBeforeWritable()} (not writable)
     * imply are counted. Only meaningful when {@link #check} finds no violation.
     */
    static long discount(Channel ch) {
        long pending = ch.unsafe().outboundBuffer().totalPendingWriteBytes();
        long counted = ch.isWritable() ? HIGH + 1 - ch.bytesBeforeUnwritable() : ch.bytesBeforeWritable() + LOW - 1;
        return pending - counted;
    }

    /** The accounting invariants, checked on the event loop. */
    static void check(Channel ch, List<String> violations) {
        ChannelOutboundBuffer buffer = ch.unsafe().outboundBuffer();
        if (buffer == null) {
            return;
        }
        long pending = buffer.totalPendingWriteBytes();
        // Writable: at most HIGH bytes count, so bytesBeforeUnwritable() >= 1; not writable: at least LOW count.
        if (ch.isWritable() ? ch.bytesBeforeUnwritable() < 1 : ch.bytesBeforeWritable() < 1) {
            violations.add("writable " + ch.isWritable() + " with " + pending + " pending, bytesBeforeUnwritable "
                    + ch.bytesBeforeUnwritable() + ", bytesBeforeWritable " + ch.bytesBeforeWritable());
            return;
        }
        // Only io_uring stream channels with the option on (the process default unless a test sets it) have any.
        boolean feature = ch instanceof AbstractIoUringStreamChannel
                && ch.config().getOption(IoUringChannelOption.IO_URING_IN_FLIGHT_WRITABILITY);
        long discount = discount(ch);
        if (discount < 0 || discount > Math.min(pending, HIGH) || !feature && discount != 0) {
            violations.add("discount " + discount + " with " + pending + " pending (feature " + feature + ")");
        }
    }

    private static Channel server(Sink sink, boolean autoRead) throws InterruptedException {
        return new ServerBootstrap().group(group).channel(IoUringServerSocketChannel.class)
                .childOption(ChannelOption.AUTO_READ, autoRead)
                .childOption(ChannelOption.SO_RCVBUF, 16 * 1024)
                .childHandler(sink)
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    }

    /**
     * A client with a send buffer large enough for the kernel to take every write of these tests in one completion,
     * unless a test sets a smaller one.
     */
    private static Bootstrap client(WritabilityRecorder recorder) {
        return client(recorder, group, IoUringSocketChannel.class);
    }

    private static Bootstrap client(WritabilityRecorder recorder, EventLoopGroup group,
                                    Class<? extends Channel> channelClass) {
        return new Bootstrap().group(group).channel(channelClass)
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(LOW, HIGH))
                .option(ChannelOption.SO_SNDBUF, 1024 * 1024)
                .handler(recorder);
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

    private static long crc(ByteBuf... bufs) {
        CRC32 crc = new CRC32();
        for (ByteBuf buf : bufs) {
            byte[] bytes = new byte[buf.readableBytes()];
            buf.getBytes(buf.readerIndex(), bytes);
            crc.update(bytes);
        }
        return crc.getValue();
    }

    /** What one task sees after writing and flushing more than the high water mark. */
    private static final class SameTask {
        boolean writableAfterWrite;
        boolean writable;
        long bytesBeforeUnwritable;
        long pending;
        long discount;
        List<Boolean> events;
    }

    private void writeMoreThanHighWaterMarkInOneTask(final Bootstrap bootstrap, boolean inFlight, final int... sizes)
            throws Exception {
        Sink sink = new Sink();
        Channel server = server(sink, true);
        final WritabilityRecorder recorder = (WritabilityRecorder) bootstrap.config().handler();
        final Channel client = bootstrap.connect(server.localAddress()).sync().channel();
        try {
            final ByteBuf[] bufs = new ByteBuf[sizes.length];
            long total = 0;
            for (int i = 0; i < sizes.length; i++) {
                bufs[i] = data(sizes[i], i);
                total += sizes[i];
            }
            sink.expected = total;
            long expectedCrc = crc(bufs);
            final long written = total;
            final List<ChannelFuture> writes = new ArrayList<ChannelFuture>();
            SameTask seen = onLoop(client, new Callable<SameTask>() {
                @Override
                public SameTask call() {
                    SameTask seen = new SameTask();
                    for (ByteBuf buf : bufs) {
                        writes.add(client.write(buf));
                    }
                    seen.writableAfterWrite = client.isWritable();
                    client.flush();
                    seen.writable = client.isWritable();
                    seen.bytesBeforeUnwritable = client.bytesBeforeUnwritable();
                    check(client, recorder.violations);
                    seen.discount = discount(client);
                    seen.events = new ArrayList<Boolean>(recorder.events);
                    check(client, recorder.violations);
                    return seen;
                }
            });
            assertFalse(seen.writableAfterWrite);
            // ChannelOutboundBuffer counts 96 bytes of overhead per message on top of its readable bytes.
            long overhead = (long) OVERHEAD * sizes.length;
            if (inFlight) {
                // Everything flushed is in the one submitted write; the high water mark of it stops counting.
                assertTrue(seen.writable);
                assertEquals(HIGH, seen.discount);
                assertEquals(HIGH - (written + overhead - HIGH) + 1, seen.bytesBeforeUnwritable);
                assertEquals(listOf(false, true), seen.events);
            } else {
                assertFalse(seen.writable);
                assertEquals(0, seen.bytesBeforeUnwritable);
                assertEquals(0, seen.discount);
                assertEquals(listOf(false), seen.events);
            }
            assertEquals(expectedCrc, (long) sink.done.get(30, TimeUnit.SECONDS));
            // The peer may have every byte before the client processed the completion: wait for the promises.
            for (ChannelFuture write : writes) {
                assertTrue(write.await(30, TimeUnit.SECONDS));
                assertTrue(write.isSuccess());
            }
            // Completion processed: nothing pending, nothing in flight, writable; one event per flip.
            SameTask after = onLoop(client, new Callable<SameTask>() {
                @Override
                public SameTask call() {
                    SameTask after = new SameTask();
                    after.writable = client.isWritable();
                    after.pending = client.unsafe().outboundBuffer().totalPendingWriteBytes();
                    after.events = new ArrayList<Boolean>(recorder.events);
                    return after;
                }
            });
            assertTrue(after.writable);
            assertEquals(0, after.pending);
            assertEquals(listOf(false, true), after.events);
            assertEquals(listOf(), recorder.violations);
            // The buffers themselves are released by the outbound buffer and by the write tracker (for zero-copy
            // sends only once the kernel's notification arrives, which may be later); the leak detector checks them.
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    @Test
    public void sendIsWritableAgainInTheSameTask() throws Exception {
        writeMoreThanHighWaterMarkInOneTask(client(new WritabilityRecorder()), FEATURE, HIGH + LOW / 2);
    }

    @Test
    public void writevIsWritableAgainInTheSameTask() throws Exception {
        writeMoreThanHighWaterMarkInOneTask(client(new WritabilityRecorder()), FEATURE, HIGH / 2, HIGH / 2, LOW / 2);
    }

    @Test
    public void sendZeroCopyIsWritableAgainInTheSameTask() throws Exception {
        assertTrue(IoUring.isSendZcSupported(), "SEND_ZC is supported by this kernel");
        writeMoreThanHighWaterMarkInOneTask(client(new WritabilityRecorder())
                .option(IoUringChannelOption.IO_URING_WRITE_ZERO_COPY_THRESHOLD, 1), FEATURE, HIGH + LOW / 2);
    }

    @Test
    public void sendmsgZeroCopyIsWritableAgainInTheSameTask() throws Exception {
        assertTrue(IoUring.isSendmsgZcSupported(), "SENDMSG_ZC is supported by this kernel");
        writeMoreThanHighWaterMarkInOneTask(client(new WritabilityRecorder())
                .option(IoUringChannelOption.IO_URING_WRITE_ZERO_COPY_THRESHOLD, 1), FEATURE,
                HIGH / 2, HIGH / 2, LOW / 2);
    }

    /** The channel option overrides the process default, both ways, in one JVM. */
    @Test
    public void channelOptionOverridesTheDefault() throws Exception {
        IoUringSocketChannel unregistered = new IoUringSocketChannel();
        try {
            assertEquals(FEATURE, unregistered.config().getOption(IoUringChannelOption.IO_URING_IN_FLIGHT_WRITABILITY));
            assertTrue(unregistered.config().getOptions().containsKey(
                    IoUringChannelOption.IO_URING_IN_FLIGHT_WRITABILITY));
        } finally {
            unregistered.unsafe().closeForcibly();
        }
        writeMoreThanHighWaterMarkInOneTask(client(new WritabilityRecorder())
                .option(IoUringChannelOption.IO_URING_IN_FLIGHT_WRITABILITY, true), true, HIGH + LOW / 2);
        writeMoreThanHighWaterMarkInOneTask(client(new WritabilityRecorder())
                .option(IoUringChannelOption.IO_URING_IN_FLIGHT_WRITABILITY, false), false, HIGH + LOW / 2);
    }

    /**
     * A 64 KiB write is submitted (marks 32/64 KiB), its promise's listener writes 1 byte, and 40 KiB are flushed
     * behind it in the same task. When the write completes, its listener sees the accounting of the write it completes
     * (on io_uring the completed bytes still in flight, on NIO still pending): consistent at every step, and the
     * channel's writability changes only when the 64 KiB are added and when they are written (NIO) or submitted
     * (io_uring), never at the completion.
     */
    @Test
    public void listenerThatWritesDuringCompletionIoUring() throws Exception {
        listenerThatWritesDuringCompletion(client(new WritabilityRecorder()));
    }

    @Test
    public void listenerThatWritesDuringCompletionNio() throws Exception {
        EventLoopGroup nio = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try {
            listenerThatWritesDuringCompletion(client(new WritabilityRecorder(), nio, NioSocketChannel.class));
        } finally {
            nio.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }

    private void listenerThatWritesDuringCompletion(Bootstrap bootstrap) throws Exception {
        Sink sink = new Sink();
        sink.expected = HIGH + 1 + 40 * 1024;
        Channel server = server(sink, true);
        final WritabilityRecorder recorder = (WritabilityRecorder) bootstrap.config().handler();
        final Channel client = bootstrap.connect(server.localAddress()).sync().channel();
        final List<Boolean> seenByListener = new ArrayList<Boolean>();
        final CompletableFuture<ChannelFuture> oneByte = new CompletableFuture<ChannelFuture>();
        try {
            ChannelFuture last = onLoop(client, () -> {
                client.writeAndFlush(data(HIGH, 1)).addListener(f -> {
                    check(client, recorder.violations);
                    seenByListener.add(client.isWritable());
                    oneByte.complete(client.writeAndFlush(data(1, 2)));
                    check(client, recorder.violations);
                    seenByListener.add(client.isWritable());
                });
                ChannelFuture f = client.writeAndFlush(data(40 * 1024, 3));
                check(client, recorder.violations);
                return f;
            });
            sink.done.get(30, TimeUnit.SECONDS);
            assertTrue(last.await(30, TimeUnit.SECONDS));
            assertTrue(oneByte.get(30, TimeUnit.SECONDS).await(30, TimeUnit.SECONDS));
            onLoop(client, () -> {
                assertEquals(0, client.unsafe().outboundBuffer().totalPendingWriteBytes());
                return null;
            });
            assertEquals(listOf(), recorder.violations);
            if (client instanceof IoUringSocketChannel && FEATURE) {
                // The completed write is in flight until its listener returned: the 1-byte write does not cross the
                // high water mark (40 KiB + 1 byte + two entries' overhead count).
                assertEquals(listOf(true, true), seenByListener);
            }
            if (!(client instanceof IoUringSocketChannel) || FEATURE) {
                assertEquals(listOf(false, true), recorder.events);
            }
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /**
     * ChunkedWriteHandler writes its next chunks from the listener of the previous one's promise when the channel is
     * writable there: 2 MiB in chunks smaller and larger than the water marks, every chunk's completion checked from a
     * listener that runs before ChunkedWriteHandler's, every byte checked at the peer.
     */
    @ParameterizedTest
    @ValueSource(ints = {16 * 1024, 24 * 1024, 40 * 1024, 48 * 1024, 100 * 1024})
    public void chunkedWriteHandler(final int chunkSize) throws Exception {
        final int total = 2 * 1024 * 1024 + 1000;
        byte[] content = new byte[total];
        for (int i = 0; i < total; i++) {
            content[i] = (byte) (i * 17 + i / 1000);
        }
        CRC32 crc = new CRC32();
        crc.update(content);
        Sink sink = new Sink();
        sink.expected = total;
        Channel server = server(sink, true);
        final WritabilityRecorder recorder = new WritabilityRecorder();
        final List<String> violations = new ArrayList<String>();
        final AtomicLong completions = new AtomicLong();
        final Channel client = client(recorder).option(ChannelOption.SO_SNDBUF, 64 * 1024)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast(recorder, new ChannelOutboundHandlerAdapter() {
                            @Override
                            public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                                promise.addListener(f -> {
                                    completions.incrementAndGet();
                                    check(ctx.channel(), violations);
                                });
                                ctx.write(msg, promise);
                            }
                        }, new ChunkedWriteHandler());
                    }
                }).connect(server.localAddress()).sync().channel();
        try {
            ChannelFuture write = client.writeAndFlush(new ChunkedStream(new ByteArrayInputStream(content), chunkSize));
            assertEquals(crc.getValue(), (long) sink.done.get(60, TimeUnit.SECONDS));
            assertTrue(write.await(30, TimeUnit.SECONDS));
            assertTrue(write.isSuccess());
            assertEquals((total + chunkSize - 1) / chunkSize, completions.get());
            assertEquals(listOf(), violations);
            assertEquals(listOf(), recorder.violations);
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /**
     * A peer that reads only once the writer has been held back, small socket buffers, and a writer that writes while
     * the channel is writable: partial completions, resubmissions and writability flips, with the accounting checked
     * at every event and every write. Memory stays within twice the high water mark plus one message (upstream:
     * once).
     */
    @Test
    public void slowPeerKeepsMemoryBounded() throws Exception {
        final int messageSize = 16 * 1024;
        final long total = 1024 * 1024;
        final Sink sink = new Sink();
        sink.expected = total;
        Channel server = server(sink, false);
        final AtomicLong maxPending = new AtomicLong();
        final List<String> violations = new ArrayList<String>();
        final CRC32 sent = new CRC32();
        final CompletableFuture<ChannelFuture> lastWrite = new CompletableFuture<ChannelFuture>();
        final WritabilityRecorder recorder = new WritabilityRecorder() {
            long written;
            int seed;

            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                writeWhileWritable(ctx);
            }

            @Override
            public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                super.channelWritabilityChanged(ctx);
                if (!ctx.channel().isWritable()) {
                    // Held back: now let the peer read.
                    sink.connected.thenAccept(peer -> peer.config().setAutoRead(true));
                }
                writeWhileWritable(ctx);
            }

            private void writeWhileWritable(ChannelHandlerContext ctx) {
                while (ctx.channel().isWritable() && written < total) {
                    ByteBuf buf = data(messageSize, seed++);
                    byte[] bytes = new byte[messageSize];
                    buf.getBytes(0, bytes);
                    sent.update(bytes);
                    written += messageSize;
                    ChannelFuture write = ctx.writeAndFlush(buf);
                    if (written == total) {
                        lastWrite.complete(write);
                    }
                    maxPending.accumulateAndGet(ctx.channel().unsafe().outboundBuffer().totalPendingWriteBytes(),
                            Math::max);
                    check(ctx.channel(), violations);
                }
            }
        };
        Channel client = client(recorder).option(ChannelOption.SO_SNDBUF, 16 * 1024)
                .connect(server.localAddress()).sync().channel();
        try {
            long receivedCrc = sink.done.get(60, TimeUnit.SECONDS);
            // The lists are written on the event loop: read them there.
            onLoop(client, () -> {
                assertEquals(sent.getValue(), receivedCrc);
                assertEquals(listOf(), violations);
                assertEquals(listOf(), recorder.violations);
                assertFalse(recorder.events.isEmpty());
                return null;
            });
            long bound = (FEATURE ? 2L : 1L) * HIGH + messageSize + OVERHEAD;
            assertTrue(maxPending.get() <= bound, "max pending " + maxPending.get() + " > " + bound);
            assertTrue(lastWrite.get(30, TimeUnit.SECONDS).await(30, TimeUnit.SECONDS));
            onLoop(client, () -> {
                assertEquals(0, client.unsafe().outboundBuffer().totalPendingWriteBytes());
                assertEquals(HIGH + 1, client.bytesBeforeUnwritable());
                assertTrue(client.isWritable());
                return null;
            });
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /** A write the peer can not take yet, still outstanding when the channel closes (completes with -ECANCELED). */
    @Test
    public void closeWithWriteInFlight() throws Exception {
        closeOrShutdownWithWriteInFlight(false);
    }

    @Test
    public void shutdownOutputWithWriteInFlight() throws Exception {
        closeOrShutdownWithWriteInFlight(true);
    }

    private void closeOrShutdownWithWriteInFlight(boolean shutdownOutput) throws Exception {
        Sink sink = new Sink();
        Channel server = server(sink, false);
        WritabilityRecorder recorder = new WritabilityRecorder();
        final Channel client = client(recorder).option(ChannelOption.SO_SNDBUF, 16 * 1024)
                .connect(server.localAddress()).sync().channel();
        try {
            final ByteBuf buf = data(16 * 1024 * 1024, 7);
            final ChannelOutboundBuffer buffer = onLoop(client, () -> client.unsafe().outboundBuffer());
            ChannelFuture write = onLoop(client, () -> {
                ChannelFuture f = client.writeAndFlush(buf);
                check(client, recorder.violations);
                // 16 MiB in flight: the high water mark of them stops counting.
                assertEquals(FEATURE ? HIGH : 0, discount(client));
                return f;
            });
            // The peer does not read: the write can not complete.
            assertFalse(write.isDone());

            if (shutdownOutput) {
                ((DuplexChannel) client).shutdownOutput().sync();
            } else {
                client.close().sync();
            }
            assertTrue(write.await(30, TimeUnit.SECONDS));
            assertFalse(write.isSuccess());
            onLoop(client, () -> {
                assertEquals(0, buffer.totalPendingWriteBytes());
                return null;
            });
            assertEquals(listOf(), recorder.violations);
            if (shutdownOutput) {
                // The kernel may still hold the buffer of the shut down write (whose failure may also close the
                // channel): closing waits for its completion.
                client.close().sync();
            }
            assertEquals(0, buf.refCnt());
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /** The peer resets the connection: a write fails, and the accounting stays consistent until it does. */
    @Test
    public void peerResetFailsWrite() throws Exception {
        final Sink sink = new Sink() {
            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                // An abortive close: RST instead of FIN.
                ctx.channel().config().setOption(ChannelOption.SO_LINGER, 0);
                ctx.close();
            }
        };
        Channel server = server(sink, true);
        WritabilityRecorder recorder = new WritabilityRecorder();
        final Channel client = client(recorder).connect(server.localAddress()).sync().channel();
        try {
            final CompletableFuture<Throwable> failure = new CompletableFuture<Throwable>();
            client.eventLoop().execute(new Runnable() {
                int writes;

                @Override
                public void run() {
                    if (++writes > 10000) {
                        failure.complete(null);
                        return;
                    }
                    check(client, recorder.violations);
                    client.writeAndFlush(data(HIGH, writes)).addListener(f -> {
                        if (f.isSuccess()) {
                            client.eventLoop().execute(this);
                        } else {
                            failure.complete(f.cause());
                        }
                    });
                }
            });
            Throwable cause = failure.get(30, TimeUnit.SECONDS);
            assertTrue(cause instanceof IOException, String.valueOf(cause));
            client.closeFuture().await(30, TimeUnit.SECONDS);
            assertEquals(listOf(), recorder.violations);
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /** FileRegions are not counted in bytes (their pending size is 0): splice keeps upstream's accounting. */
    @Test
    public void fileRegionSplice(@TempDir File dir) throws Exception {
        assertTrue(IoUring.isSpliceSupported(), "splice is supported by this kernel");
        File file = new File(dir, "region");
        ByteBuf content = data(256 * 1024, 3);
        byte[] bytes = new byte[content.readableBytes()];
        content.readBytes(bytes);
        content.release();
        Files.write(file.toPath(), bytes);
        CRC32 crc = new CRC32();
        crc.update(bytes);

        Sink sink = new Sink();
        sink.expected = bytes.length;
        Channel server = server(sink, true);
        WritabilityRecorder recorder = new WritabilityRecorder();
        final Channel client = client(recorder).connect(server.localAddress()).sync().channel();
        try {
            final DefaultFileRegion region = new DefaultFileRegion(file, 0, bytes.length);
            ChannelFuture write = onLoop(client, () -> {
                ChannelFuture f = client.writeAndFlush(region);
                assertTrue(client.isWritable());
                assertEquals(0, discount(client));
                return f;
            });
            assertEquals(crc.getValue(), (long) sink.done.get(30, TimeUnit.SECONDS));
            assertTrue(write.await(30, TimeUnit.SECONDS));
            assertTrue(write.isSuccess());
            onLoop(client, () -> {
                assertEquals(0, client.unsafe().outboundBuffer().totalPendingWriteBytes());
                return null;
            });
            assertEquals(listOf(), recorder.events);
            assertEquals(0, region.refCnt());
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /** Data written before a TCP fast-open connect goes with the connect; the accounting is upstream's. */
    @Test
    public void fastOpenConnectCarryingData() throws Exception {
        Sink sink = new Sink();
        ByteBuf data = data(1024, 5);
        sink.expected = data.readableBytes();
        long crc = crc(data);
        Channel server = new ServerBootstrap().group(group).channel(IoUringServerSocketChannel.class)
                .option(ChannelOption.TCP_FASTOPEN, 5)
                .childHandler(sink)
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        WritabilityRecorder recorder = new WritabilityRecorder();
        final Channel client = client(recorder).option(ChannelOption.TCP_FASTOPEN_CONNECT, true)
                .register().sync().channel();
        try {
            ChannelFuture write = client.write(data);
            client.connect(server.localAddress()).sync();
            client.flush();
            assertEquals(crc, (long) sink.done.get(30, TimeUnit.SECONDS));
            assertTrue(write.await(30, TimeUnit.SECONDS));
            assertTrue(write.isSuccess());
            onLoop(client, () -> {
                assertEquals(0, client.unsafe().outboundBuffer().totalPendingWriteBytes());
                assertEquals(HIGH + 1, client.bytesBeforeUnwritable());
                assertTrue(client.isWritable());
                return null;
            });
            assertEquals(listOf(), recorder.violations);
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /** Datagram channels (several sends in flight) keep upstream's accounting, with and without the feature. */
    @Test
    public void datagramAccountingUnchanged() throws Exception {
        final CompletableFuture<Integer> received = new CompletableFuture<Integer>();
        final AtomicLong count = new AtomicLong();
        Channel receiver = new Bootstrap().group(group).channel(IoUringDatagramChannel.class)
                .handler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        ReferenceCountUtil.release(msg);
                        if (count.incrementAndGet() == 3) {
                            received.complete(3);
                        }
                    }
                }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        final WritabilityRecorder recorder = new WritabilityRecorder();
        final Channel sender = new Bootstrap().group(group).channel(IoUringDatagramChannel.class)
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(LOW, HIGH))
                .handler(recorder)
                .connect(receiver.localAddress()).sync().channel();
        try {
            Boolean writable = onLoop(sender, () -> {
                for (int i = 0; i < 3; i++) {
                    sender.write(data(30000, i));
                }
                sender.flush();
                check(sender, recorder.violations);
                assertEquals(0, discount(sender));
                return sender.isWritable();
            });
            // Upstream: the sends are submitted but not completed, their bytes still count.
            assertFalse(writable);
            assertEquals(3, (int) received.get(30, TimeUnit.SECONDS));
        } finally {
            sender.close().sync();
            receiver.close().sync();
        }
    }

    private static List<Object> listOf(Object... values) {
        List<Object> list = new ArrayList<Object>();
        for (Object v : values) {
            list.add(v);
        }
        return list;
    }
}
