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
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultFileRegion;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannelConfig;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.File;
import java.io.RandomAccessFile;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@link IoUringChannelOption#IO_URING_UNCOUNTED_FLUSHED_LIMIT} on real io_uring sockets: the messages an io_uring
 * stream channel has taken for writing (its outstanding write and what is flushed behind it, also while it waits for
 * {@code POLLOUT}) stop counting against the water marks up to the limit, the memory a channel holds for a peer that
 * stops reading stays at the high water mark plus the limit plus a message, a listener that writes during a
 * completion leaves the channel as writable as on NIO, a change of the limit or the water marks reaches a
 * connection whose write never completes (with a task: no setter fires an event), writers on other threads keep the
 * accounting consistent, and flushing on a loop that shuts down throws nothing. The tests set the limit they
 * exercise; those of the default also hold with {@code -Dio.netty.iouring.uncountedFlushedLimit=N} (to check it, run
 * the class with that property).
 */
public class IoUringUncountedFlushedLimitTest {
    private static final int LOW = 32 * 1024;
    private static final int HIGH = 64 * 1024;
    private static final int MESSAGE = 16 * 1024;
    /** ChannelOutboundBuffer's per-message overhead, as the JVM is configured. */
    private static final int OVERHEAD = Integer.getInteger("io.netty.transport.outboundBufferEntrySizeOverhead", 96);
    /**
     * The default limit of this JVM at the default water marks: the property's value, else the unset default
     * ({@code -1} follows the high water mark).
     */
    private static final int DEFAULT_LIMIT = defaultLimit(HIGH);

    private static EventLoopGroup group;

    @BeforeAll
    public static void setUp() {
        assumeTrue(IoUring.isAvailable(), "io_uring is not available");
        group = new MultiThreadIoEventLoopGroup(2, IoUringIoHandler.newFactory());
    }

    @AfterAll
    public static void tearDown() throws Exception {
        if (group != null) {
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }

    /** Reads and checks what a server connection receives, or never reads. */
    private static final class Sink extends ChannelInboundHandlerAdapter {
        final CRC32 crc = new CRC32();
        final CompletableFuture<Long> done = new CompletableFuture<>();
        long expected = Long.MAX_VALUE;
        long received;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf buf = (ByteBuf) msg;
            try {
                byte[] bytes = new byte[buf.readableBytes()];
                buf.readBytes(bytes);
                crc.update(bytes);
                received += bytes.length;
                if (received >= expected) {
                    done.complete(crc.getValue());
                }
            } finally {
                buf.release();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    /** Records isWritable() at every writability event. */
    private static class Events extends ChannelInboundHandlerAdapter {
        final List<Boolean> seen = Collections.synchronizedList(new ArrayList<>());
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            seen.add(ctx.channel().isWritable());
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            errors.add(cause);
        }

        List<Boolean> snapshot() {
            synchronized (seen) {
                return new ArrayList<>(seen);
            }
        }
    }

    private static Channel server(Sink sink, boolean autoRead) throws InterruptedException {
        return server(sink, autoRead, 16 * 1024);
    }

    /** A server whose accepted channels have the receive buffer {@code rcvBuf}, or the kernel's if {@code 0}. */
    private static Channel server(Sink sink, boolean autoRead, int rcvBuf) throws InterruptedException {
        ServerBootstrap b = new ServerBootstrap().group(group).channel(IoUringServerSocketChannel.class)
                .childOption(ChannelOption.AUTO_READ, autoRead)
                .childHandler(sink);
        if (rcvBuf > 0) {
            b.childOption(ChannelOption.SO_RCVBUF, rcvBuf);
        }
        return b.bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    }

    private static Bootstrap client(EventLoopGroup group, ChannelHandler handler) {
        return new Bootstrap().group(group).channel(IoUringSocketChannel.class)
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(LOW, HIGH))
                .handler(handler);
    }

    private static <T> T onLoop(Channel ch, Callable<T> task) throws Exception {
        return ch.eventLoop().submit(task).get(30, TimeUnit.SECONDS);
    }

    private static ByteBuf data(int size, int seed) {
        byte[] bytes = new byte[size];
        for (int i = 0; i < size; i++) {
            bytes[i] = (byte) (i * 31 + seed);
        }
        return ByteBufAllocator.DEFAULT.directBuffer(size).writeBytes(bytes);
    }

    /** The pending size that does not count, as the public API shows it. */
    private static long uncounted(Channel ch) {
        long pending = ch.unsafe().outboundBuffer().totalPendingWriteBytes();
        long counted = ch.isWritable() ? HIGH + 1 - ch.bytesBeforeUnwritable() : ch.bytesBeforeWritable() + LOW - 1;
        return pending - counted;
    }

    /** The default limit for a channel whose high water mark is {@code high}. */
    private static int defaultLimit(int high) {
        String property = System.getProperty(IoUringStreamChannelConfig.UNCOUNTED_FLUSHED_LIMIT_PROPERTY);
        int limit = property == null ? IoUringStreamChannelConfig.UNSET_UNCOUNTED_FLUSHED_LIMIT
                : Integer.parseInt(property.trim());
        return limit < 0 ? high : limit;
    }

    @Test
    public void optionDefaultIsTheUnsetLimitOrTheProperty() {
        IoUringSocketChannel ch = new IoUringSocketChannel();
        try {
            SocketChannelConfig config = ch.config();
            assertTrue(config.getOptions().containsKey(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT));
            assertEquals(defaultLimit(config.getWriteBufferHighWaterMark()),
                    config.getOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT));
            config.setWriteBufferWaterMark(new WriteBufferWaterMark(LOW, 4 * HIGH));
            assertEquals(defaultLimit(4 * HIGH),
                    config.getOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT));
            assertTrue(config.setOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT, 1000));
            assertEquals(1000, config.getOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT));
            config.setWriteBufferWaterMark(new WriteBufferWaterMark(LOW, HIGH));
            assertEquals(1000, config.getOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT));
            assertThrows(IllegalArgumentException.class,
                    () -> config.setOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT, -1));
        } finally {
            ch.unsafe().closeForcibly();
        }
    }

    @Test
    public void invalidPropertyValueIsReportedAndIgnored() {
        List<String> warnings = new ArrayList<>();
        InternalLogger logger = InternalLoggerFactory.getInstance(getClass());
        int unset = IoUringStreamChannelConfig.UNSET_UNCOUNTED_FLUSHED_LIMIT;
        assertEquals(unset, IoUringStreamChannelConfig.parseUncountedFlushedLimit("-5", recording(logger, warnings)));
        assertEquals(unset, IoUringStreamChannelConfig.parseUncountedFlushedLimit("lots",
                recording(logger, warnings)));
        assertEquals(2, warnings.size());
        assertTrue(warnings.get(1).contains("lots"), warnings.get(1));
        assertEquals(0, IoUringStreamChannelConfig.parseUncountedFlushedLimit(" 0 ", recording(logger, warnings)));
        assertEquals(4096, IoUringStreamChannelConfig.parseUncountedFlushedLimit("4096",
                recording(logger, warnings)));
        assertEquals(unset, IoUringStreamChannelConfig.parseUncountedFlushedLimit(null, recording(logger, warnings)));
        assertEquals(2, warnings.size());
    }

    private static InternalLogger recording(InternalLogger delegate, List<String> warnings) {
        return (InternalLogger) java.lang.reflect.Proxy.newProxyInstance(
                InternalLogger.class.getClassLoader(), new Class<?>[] {InternalLogger.class}, (proxy, m, args) -> {
                    if ("warn".equals(m.getName()) && args != null && args[0] instanceof String) {
                        warnings.add(args[0] + " " + Arrays.deepToString(Arrays.copyOfRange(args, 1, args.length)));
                    }
                    return m.invoke(delegate, args);
                });
    }

    /**
     * Messages written and flushed in one task, more than the high water mark: the flush hands them to io_uring, so
     * up to the limit of them stops counting and the channel is writable again before the task ends; with the limit
     * at 0 it stays unwritable until the completion. Once per write operation io_uring uses.
     */
    @ParameterizedTest
    @ValueSource(strings = {"send", "writev", "send_zc", "sendmsg_zc"})
    public void flushMakesTheChannelWritableAgain(String op) throws Exception {
        int[] sizes = op.startsWith("send") && !op.startsWith("sendmsg")
                ? new int[] {HIGH + LOW / 2} : new int[] {HIGH / 2, HIGH / 2, LOW / 2};
        boolean zeroCopy = op.endsWith("_zc");
        assumeTrue(!zeroCopy || IoUring.isSendZcSupported() && IoUring.isSendmsgZcSupported(),
                "zero-copy sends are not supported by this kernel");
        for (int limit : new int[] {-1, 0, 4 * HIGH}) {
            Events events = new Events();
            Bootstrap b = client(group, events);
            if (zeroCopy) {
                b.option(IoUringChannelOption.IO_URING_WRITE_ZERO_COPY_THRESHOLD, 1);
            }
            if (limit >= 0) {
                b.option(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT, limit);
            }
            int effective = limit >= 0 ? limit : DEFAULT_LIMIT;
            writeAndFlushInOneTask(b, events, effective, sizes);
        }
    }

    private static void writeAndFlushInOneTask(Bootstrap bootstrap, Events events, int limit, int... sizes)
            throws Exception {
        Sink sink = new Sink();
        Channel server = server(sink, true);
        Channel client = bootstrap.connect(server.localAddress()).sync().channel();
        try {
            ByteBuf[] bufs = new ByteBuf[sizes.length];
            CRC32 crc = new CRC32();
            long total = 0;
            for (int i = 0; i < sizes.length; i++) {
                bufs[i] = data(sizes[i], i);
                byte[] bytes = new byte[sizes[i]];
                bufs[i].getBytes(0, bytes);
                crc.update(bytes);
                total += sizes[i];
            }
            sink.expected = total;
            long pendingSize = total + (long) OVERHEAD * sizes.length;
            List<ChannelFuture> writes = new ArrayList<>();
            List<Boolean> eventsInTask = new ArrayList<>();
            long[] seen = onLoop(client, () -> {
                for (ByteBuf buf : bufs) {
                    writes.add(client.write(buf));
                }
                long afterWrite = client.isWritable() ? 1 : 0;
                client.flush();
                eventsInTask.addAll(events.snapshot());
                return new long[] {afterWrite, client.isWritable() ? 1 : 0, uncounted(client)};
            });
            assertEquals(0, seen[0], "unwritable once written");
            long uncounted = Math.min(pendingSize, limit);
            boolean writable = pendingSize - uncounted <= HIGH;
            assertEquals(writable ? 1 : 0, seen[1], "writable after the flush, limit " + limit);
            assertEquals(uncounted, seen[2], "uncounted after the flush, limit " + limit);
            assertEquals(writable ? Arrays.asList(false, true) : Collections.singletonList(false), eventsInTask);
            assertEquals(crc.getValue(), (long) sink.done.get(30, TimeUnit.SECONDS));
            for (ChannelFuture write : writes) {
                assertTrue(write.await(30, TimeUnit.SECONDS));
                assertTrue(write.isSuccess());
            }
            // Completion processed: nothing pending, nothing uncounted, writable; one event per change.
            assertEquals(0L, (long) onLoop(client, () -> client.unsafe().outboundBuffer().totalPendingWriteBytes()));
            assertTrue(client.isWritable());
            assertEquals(Arrays.asList(false, true), events.snapshot());
            assertEquals(Collections.emptyList(), events.errors);
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /**
     * Writes 16 KiB messages, each flushed, while the channel is writable, to a peer that never reads; checks on the
     * event loop, at every write and event, that the pending size never exceeds the high water mark plus the limit
     * plus one message. {@link #stalled} completes once the channel turned unwritable with more than the high water
     * mark pending: io_uring's write is outstanding. The kernel may still take some of it; each completion then lets
     * the writer write again, until the socket's and the peer's buffers are full.
     */
    private static final class Writer extends ChannelInboundHandlerAdapter {
        final List<String> violations = Collections.synchronizedList(new ArrayList<>());
        final List<Boolean> events = Collections.synchronizedList(new ArrayList<>());
        final CompletableFuture<Long> stalled = new CompletableFuture<>();
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        volatile long bound;
        long maxPending;
        int seed;

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            errors.add(cause);
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            write(ctx);
            ctx.fireChannelActive();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            events.add(ctx.channel().isWritable());
            write(ctx);
            ctx.fireChannelWritabilityChanged();
        }

        private void write(ChannelHandlerContext ctx) {
            Channel ch = ctx.channel();
            while (ch.isWritable() && ch.isActive()) {
                ctx.writeAndFlush(data(MESSAGE, seed++)).addListener(f -> check(ch));
                check(ch);
            }
            long pending = ch.unsafe().outboundBuffer() == null ? 0
                    : ch.unsafe().outboundBuffer().totalPendingWriteBytes();
            if (!ch.isWritable() && pending > HIGH) {
                stalled.complete(pending);
            }
        }

        void check(Channel ch) {
            if (ch.unsafe().outboundBuffer() == null) {
                return;
            }
            long pending = ch.unsafe().outboundBuffer().totalPendingWriteBytes();
            maxPending = Math.max(maxPending, pending);
            if (pending > bound && violations.size() < 3) {
                violations.add(pending + " pending, bound " + bound);
            }
        }
    }

    /** A client that {@code writer} fills, with a small send buffer so that a peer that never reads stalls it soon. */
    private static Bootstrap writerClient(EventLoopGroup group, Writer writer) {
        return client(group, writer).option(ChannelOption.SO_SNDBUF, 16 * 1024);
    }

    /**
     * Closes the client and checks that its writer never exceeded the bound, from the first write to the close (the
     * kernel may take more after the channel stalled, and the writer then writes more).
     */
    private static void closeAndCheck(Channel client, Writer writer) throws InterruptedException {
        client.close().sync();
        assertEquals(Collections.emptyList(), writer.violations);
    }

    private static long bound(int limit) {
        return HIGH + limit + MESSAGE + OVERHEAD;
    }

    /**
     * A listener of a written message's promise that writes, as ChunkedWriteHandler and many framework handlers do,
     * leaves the channel as it would on NIO: one task writes 64 KiB whose listener writes a byte, flushes, and writes
     * 40 KiB without flushing. Once the 64 KiB are written the channel is writable with 41,153 bytes pending, after
     * one unwritable and one writable event, on NIO (which writes inside the flush) and on io_uring with the limit at
     * the high water mark. (While its listeners run the written message still counts on NIO, and no longer on
     * io_uring; only the state after the completion and the events are the same.)
     */
    @ParameterizedTest
    @ValueSource(strings = {"nio", "io_uring"})
    public void listenerThatWritesDuringACompletionEndsWritableAsOnNio(String transport) throws Exception {
        EventLoopGroup nio = "nio".equals(transport) ? new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory())
                : null;
        Sink sink = new Sink();
        Channel server = server(sink, true);
        Events events = new Events();
        Bootstrap b = nio == null ? client(group, events).option(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT,
                HIGH) : new Bootstrap().group(nio).channel(NioSocketChannel.class)
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(LOW, HIGH)).handler(events);
        // The socket takes the 64 KiB at once.
        Channel client = b.option(ChannelOption.SO_SNDBUF, 1024 * 1024).connect(server.localAddress()).sync().channel();
        try {
            CompletableFuture<ChannelFuture> fromListener = new CompletableFuture<>();
            ChannelFuture first = onLoop(client, () -> {
                ChannelFuture write = client.write(data(HIGH, 1));
                write.addListener(f -> fromListener.complete(client.write(data(1, 2))));
                client.flush();
                client.write(data(40 * 1024, 3));
                return write;
            });
            assertTrue(fromListener.get(30, TimeUnit.SECONDS) != null);
            assertTrue(first.isSuccess());
            long[] state = onLoop(client, () -> new long[] {client.isWritable() ? 1 : 0,
                    client.unsafe().outboundBuffer().totalPendingWriteBytes()});
            assertEquals(1, state[0], transport + ": writable once the 64 KiB are written");
            assertEquals(40 * 1024 + 1 + 2 * OVERHEAD, state[1]);
            assertEquals(Arrays.asList(false, true), events.snapshot());
            sink.expected = HIGH + 1 + 40 * 1024;
            client.flush();
            sink.done.get(30, TimeUnit.SECONDS);
            assertEquals(Collections.emptyList(), events.errors);
        } finally {
            client.close().sync();
            server.close().sync();
            if (nio != null) {
                nio.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
            }
        }
    }

    /**
     * Writers on other threads than the event loop, as many applications write: each writes and flushes messages of
     * random sizes while the channel is writable and waits for a writable event otherwise, to a peer that reads
     * everything; the loop completes their writes meanwhile. Every write succeeds, the peer receives every byte, no
     * writer waits for an event that never comes, the pending size stays within the high water mark plus the limit
     * plus a message per writer, and at the end nothing is pending, nothing is uncounted and the channel is writable.
     */
    @Test
    public void writersOnOtherThreadsKeepTheAccountingConsistent() throws Exception {
        int writers = 4;
        int perWriter = 2 * 1024 * 1024;
        int maxMessage = 24 * 1024;
        Sink sink = new Sink();
        sink.expected = (long) writers * perWriter;
        // The kernel's receive buffer: a 16 KiB one, set after the handshake, leaves a window below the MSS the
        // sender took from the SYN, and the sender then waits for its probe timer (200 ms and more) each time.
        Channel server = server(sink, true, 0);
        Object writable = new Object();
        AtomicLong maxPending = new AtomicLong();
        Events events = new Events() {
            @Override
            public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                if (ctx.channel().isWritable()) {
                    synchronized (writable) {
                        writable.notifyAll();
                    }
                }
                super.channelWritabilityChanged(ctx);
            }
        };
        Channel client = client(group, events).option(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT, HIGH)
                .option(ChannelOption.SO_SNDBUF, 32 * 1024).connect(server.localAddress()).sync().channel();
        ExecutorService threads = Executors.newFixedThreadPool(writers);
        try {
            List<Future<List<ChannelFuture>>> results = new ArrayList<>();
            for (int w = 0; w < writers; w++) {
                int seed = w;
                results.add(threads.submit(() -> {
                    List<ChannelFuture> writes = new ArrayList<>();
                    int left = perWriter;
                    while (left > 0) {
                        synchronized (writable) {
                            // The event's notifyAll needs the monitor, so it cannot slip between the check and the
                            // wait: a writer that waits 30 s missed a writable event.
                            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                            while (!client.isWritable()) {
                                long wait = deadline - System.nanoTime();
                                assertTrue(wait > 0, "no writable event came");
                                TimeUnit.NANOSECONDS.timedWait(writable, wait);
                            }
                        }
                        int size = Math.min(left, 1 + ThreadLocalRandom.current().nextInt(maxMessage));
                        writes.add(client.writeAndFlush(data(size, seed)));
                        left -= size;
                        maxPending.accumulateAndGet(client.unsafe().outboundBuffer().totalPendingWriteBytes(),
                                Math::max);
                    }
                    return writes;
                }));
            }
            for (Future<List<ChannelFuture>> result : results) {
                List<ChannelFuture> writes;
                try {
                    writes = result.get(60, TimeUnit.SECONDS);
                } catch (java.util.concurrent.TimeoutException e) {
                    throw new AssertionError("a writer is still writing after 60 s: writable " + client.isWritable()
                            + ", pending " + client.unsafe().outboundBuffer().totalPendingWriteBytes() + ", uncounted "
                            + onLoop(client, () -> uncounted(client)) + ", received " + sink.received + ", events "
                            + events.snapshot().size(), e);
                }
                for (ChannelFuture write : writes) {
                    assertTrue(write.await(30, TimeUnit.SECONDS));
                    assertTrue(write.isSuccess(), String.valueOf(write.cause()));
                }
            }
            sink.done.get(30, TimeUnit.SECONDS);
            assertEquals((long) writers * perWriter, sink.received);
            long bound = HIGH + HIGH + (long) writers * (maxMessage + 2 * OVERHEAD);
            assertTrue(maxPending.get() <= bound, maxPending.get() + " <= " + bound);
            long[] end = onLoop(client, () -> new long[] {client.unsafe().outboundBuffer().totalPendingWriteBytes(),
                    uncounted(client), client.isWritable() ? 1 : 0});
            assertEquals(0, end[0]);
            assertEquals(0, end[1]);
            assertEquals(1, end[2]);
            List<Boolean> seen = events.snapshot();
            assertTrue(seen.isEmpty() || seen.get(seen.size() - 1), "last event: " + seen);
            assertEquals(Collections.emptyList(), events.errors);
        } finally {
            threads.shutdownNow();
            client.close().sync();
            server.close().sync();
        }
    }

    /**
     * io_uring waits for {@code POLLOUT} when a splice of a file region finds the socket full (a peer that stops
     * reading); it then writes the rest, and what is flushed behind it, without handler action, so the limit stays:
     * the 80 KiB flushed behind the region do not count up to the limit, and the channel stays writable. It turns
     * unwritable if the transport drops the limit while it waits for {@code POLLOUT}.
     */
    @Test
    public void waitingForPollOutKeepsTheLimit() throws Exception {
        File file = File.createTempFile("uncounted-flushed-limit", ".bin");
        file.deleteOnExit();
        int fileSize = 16 * 1024 * 1024;
        try (RandomAccessFile raf = new RandomAccessFile(file, "rw")) {
            raf.setLength(fileSize);
        }
        Sink sink = new Sink();
        Channel server = server(sink, false);
        Events events = new Events();
        Channel client = client(group, events).option(ChannelOption.SO_SNDBUF, 16 * 1024)
                .option(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT, HIGH)
                .connect(server.localAddress()).sync().channel();
        try {
            int behind = HIGH + LOW / 2;
            onLoop(client, () -> {
                client.write(new DefaultFileRegion(file, 0, fileSize));
                client.write(data(behind, 4));
                client.flush();
                return null;
            });
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!onLoop(client, () -> pollOutScheduled(client))) {
                assertTrue(System.nanoTime() < deadline, "io_uring never waited for POLLOUT");
                // Wait for the loop to process what the kernel completes, one task at a time.
                onLoop(client, () -> null);
            }
            long[] state = onLoop(client, () -> new long[] {uncounted(client), client.isWritable() ? 1 : 0,
                    client.unsafe().outboundBuffer().totalPendingWriteBytes()});
            assertEquals(Math.min(HIGH, state[2]), state[0], "uncounted while waiting for POLLOUT");
            assertEquals(1, state[1], "writable while waiting for POLLOUT");
            assertEquals(Collections.emptyList(), events.errors);
        } finally {
            client.close().sync();
            server.close().sync();
            assertTrue(file.delete());
        }
    }

    /** Whether io_uring waits for {@code POLLOUT} to write the rest (its private state, read for this test only). */
    private static boolean pollOutScheduled(Channel ch) throws ReflectiveOperationException {
        Field state = AbstractIoUringChannel.class.getDeclaredField("ioState");
        Field pollOut = AbstractIoUringChannel.class.getDeclaredField("POLL_OUT_SCHEDULED");
        state.setAccessible(true);
        pollOut.setAccessible(true);
        return (state.getByte(ch) & pollOut.getInt(null)) != 0;
    }

    /**
     * A peer that stops reading: with the limit at the high water mark the channel holds at most twice the high water
     * mark plus a message (in pending size), and more than the accounting without the limit lets it (the uncounted
     * part is used).
     */
    @Test
    public void peerThatStopsReadingHoldsAtMostTwiceTheHighWaterMark() throws Exception {
        Sink sink = new Sink();
        Channel server = server(sink, false);
        Writer writer = new Writer();
        writer.bound = bound(HIGH);
        Channel client = writerClient(group, writer)
                .option(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT, HIGH)
                .connect(server.localAddress()).sync().channel();
        try {
            long pending = writer.stalled.get(30, TimeUnit.SECONDS);
            long max = onLoop(client, () -> writer.maxPending);
            assertTrue(max <= bound(HIGH), max + " <= " + bound(HIGH));
            // Unwritable only once more than the high water mark counts, with the limit's worth uncounted.
            assertTrue(pending > 2 * HIGH, pending + " > 2 x high");
            assertEquals(HIGH, (long) onLoop(client, () -> uncounted(client)));
            closeAndCheck(client, writer);
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /**
     * A peer that stops reading, so the outstanding write never completes: lowering the limit from another thread,
     * raising it and changing the water marks on the event loop change the writability at once, with one event per
     * change. The kernel may still take some of what the first writes left (each completion lets the writer write
     * again), so the event counts are compared within one event-loop task, where no completion can come between.
     */
    @Test
    public void changesReachAConnectionWhoseWriteNeverCompletes() throws Exception {
        Sink sink = new Sink();
        Channel server = server(sink, false);
        Writer writer = new Writer();
        writer.bound = bound(4 * HIGH);
        Channel client = writerClient(group, writer)
                .option(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT, 4 * HIGH)
                .connect(server.localAddress()).sync().channel();
        try {
            long pending = writer.stalled.get(30, TimeUnit.SECONDS);
            assertTrue(pending > 5 * HIGH, pending + " > high + limit");
            assertEquals(4L * HIGH, (long) onLoop(client, () -> uncounted(client)));

            // Lowered from this thread: everything counts at once (the task it queues), though no completion comes.
            client.config().setOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT, 0);
            long[] lowered = onLoop(client, () -> new long[] {uncounted(client),
                    client.unsafe().outboundBuffer().totalPendingWriteBytes() - LOW + 1, client.bytesBeforeWritable(),
                    client.isWritable() ? 1 : 0});
            assertEquals(0, lowered[0]);
            assertEquals(lowered[1], lowered[2]);
            assertEquals(0, lowered[3]);

            // Raised far enough, on the event loop: the setter itself fires nothing; the task it queues makes the
            // channel writable, and the writer writes until unwritable again.
            writer.bound = bound(8 * HIGH);
            long[] inSetter = onLoop(client, () -> {
                int before = writer.events.size();
                long pendingBefore = client.unsafe().outboundBuffer().totalPendingWriteBytes();
                client.config().setOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT, 8 * HIGH);
                return new long[] {before, writer.events.size(), pendingBefore, client.isWritable() ? 1 : 0};
            });
            assertEquals(inSetter[0], inSetter[1], "no event from within the setter");
            assertEquals(0, inSetter[3]);
            long[] raised = onLoop(client, () -> new long[] {
                    client.unsafe().outboundBuffer().totalPendingWriteBytes(), client.isWritable() ? 1 : 0});
            assertEquals(Arrays.asList(true, false), new ArrayList<>(writer.events.subList((int) inSetter[1],
                    writer.events.size())));
            assertTrue(raised[0] > inSetter[2] + 3 * HIGH, raised[0] + " > " + inSetter[2] + " + 3 x high");
            assertEquals(0, raised[1]);

            // A limit that was set does not follow the water marks; ChannelOutboundBuffer's own rule: a higher high
            // water mark alone makes no event until the next change.
            onLoop(client, () -> {
                int before = writer.events.size();
                client.config().setWriteBufferWaterMark(new WriteBufferWaterMark(LOW, 16 * HIGH));
                assertEquals(8L * HIGH, uncounted(client), "an explicit limit does not follow the water marks");
                assertEquals(before, writer.events.size());
                return null;
            });
            closeAndCheck(client, writer);
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /**
     * The default limit and the water marks of a connection whose write never completes: where the default follows
     * the high water mark, raising the water marks lets the channel hold more (the writer resumes); where it is a
     * number (0 unless the property sets one), nothing follows them.
     */
    @Test
    public void defaultLimitAndTheWaterMarksOfAStalledConnection() throws Exception {
        Sink sink = new Sink();
        Channel server = server(sink, false);
        Writer writer = new Writer();
        writer.bound = bound(DEFAULT_LIMIT);
        Channel client = writerClient(group, writer).connect(server.localAddress()).sync().channel();
        try {
            writer.stalled.get(30, TimeUnit.SECONDS);
            writer.bound = 4 * HIGH + 4 * HIGH + MESSAGE + OVERHEAD;
            // The setter fires nothing and changes nothing at once; the task it queues applies the change (no
            // completion comes between: the peer reads nothing).
            long[] inSetter = onLoop(client, () -> {
                int before = writer.events.size();
                long pending = client.unsafe().outboundBuffer().totalPendingWriteBytes();
                client.config().setWriteBufferWaterMark(new WriteBufferWaterMark(LOW, 4 * HIGH));
                assertEquals(pending, client.unsafe().outboundBuffer().totalPendingWriteBytes());
                return new long[] {before, writer.events.size(), pending};
            });
            assertEquals(inSetter[0], inSetter[1], "no event from within the setter");
            onLoop(client, () -> {
                long after = client.unsafe().outboundBuffer().totalPendingWriteBytes();
                List<Boolean> events = new ArrayList<>(writer.events.subList((int) inSetter[1],
                        writer.events.size()));
                if (defaultLimit(4 * HIGH) == 4 * HIGH) {
                    // The limit is now 4 x high: the channel turned writable and the writer filled it to the new
                    // marks (8 x high), far above the old bound of 2 x high.
                    assertEquals(Arrays.asList(true, false), events);
                    assertTrue(after > 8 * HIGH, after + " > 8 x high");
                    assertEquals(4L * HIGH, uncounted(client));
                } else {
                    // Nothing follows the water marks: the writer wrote nothing more.
                    assertEquals(inSetter[2], after);
                    assertEquals(Collections.emptyList(), events);
                    assertEquals((long) DEFAULT_LIMIT, uncounted(client));
                }
                return null;
            });
            closeAndCheck(client, writer);
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /**
     * A loop shuts down with a write outstanding to a peer that stopped reading; the close listener of another channel
     * of the loop writes to the second channel, which turns it unwritable, and flushes it, which makes it writable
     * from inside the flush (under the limit set for it, what is flushed stops counting). Neither
     * that flush nor a change of the limit or the water marks after the loop terminated (the channels are
     * deregistered by then, so it changes nothing) throws, and no handler sees an exception. The loop closes its
     * channels in the order of its registrations, {@code first} before {@code second}; the listener checks that
     * {@code second} is still active. (A change from another thread that finds the channel registered and then the
     * loop terminated has its task rejected, which the channel ignores; that race is not reproduced here.)
     */
    @Test
    public void flushWhileTheLoopShutsDownThrowsNothing() throws Exception {
        EventLoopGroup loop = new MultiThreadIoEventLoopGroup(1, IoUringIoHandler.newFactory());
        // A server per client: a Sink serves one connection (a second child of one server would be closed).
        Channel server = server(new Sink(), false);
        Channel writerServer = server(new Sink(), false);
        try {
            Events events = new Events();
            Events secondEvents = new Events();
            Channel first = client(loop, events).connect(server.localAddress()).sync().channel();
            Channel second = client(loop, secondEvents).option(ChannelOption.SO_SNDBUF, 16 * 1024)
                    .option(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT, 16 * HIGH)
                    .connect(writerServer.localAddress()).sync().channel();
            // More than the socket buffers take: a write stays outstanding, and what it has not written yet does not
            // count.
            ChannelFuture stalledWrite = second.writeAndFlush(data(4 * HIGH, 0));
            long outstanding = onLoop(second, () -> uncounted(second));
            assertTrue(outstanding > 0, "uncounted while the write is outstanding: " + outstanding);
            CompletableFuture<Throwable> thrown = new CompletableFuture<>();
            List<ChannelFuture> lateWrites = Collections.synchronizedList(new ArrayList<>());
            List<Boolean> seenInListener = new ArrayList<>();
            first.closeFuture().addListener(f -> {
                try {
                    // Unflushed: counts, and turns the channel unwritable. The flush hands it to io_uring under the
                    // limit, which makes the channel writable from inside the flush, with the loop shutting down.
                    lateWrites.add(second.write(data(2 * HIGH, 1)));
                    int before = secondEvents.seen.size();
                    seenInListener.add(second.isActive());
                    seenInListener.add(second.isWritable());
                    seenInListener.add(stalledWrite.isDone());
                    second.flush();
                    seenInListener.add(secondEvents.seen.size() > before && secondEvents.seen.get(before));
                    lateWrites.add(second.writeAndFlush(data(1, 2)));
                    thrown.complete(null);
                } catch (Throwable t) {
                    thrown.complete(t);
                }
            });
            // A quiet period: a 4.2 loop whose shutdown, with none, is confirmed while it runs tasks terminates
            // without closing its channels, and the listener would never run.
            assertTrue(loop.shutdownGracefully(100, 30_000, TimeUnit.MILLISECONDS).await(30, TimeUnit.SECONDS));
            assertEquals(null, thrown.get(30, TimeUnit.SECONDS));
            assertEquals(Arrays.asList(true, false, false, true), seenInListener,
                    "active, unwritable before the flush, a write outstanding, made writable by the flush");
            for (Channel ch : new Channel[] {first, second}) {
                assertFalse(ch.isRegistered());
                ch.config().setOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT, 0);
                ch.config().setWriteBufferWaterMark(new WriteBufferWaterMark(LOW, 2 * HIGH));
            }
            lateWrites.add(stalledWrite);
            for (ChannelFuture write : lateWrites) {
                assertTrue(write.await(30, TimeUnit.SECONDS));
            }
            assertEquals(Collections.emptyList(), events.errors);
            assertEquals(Collections.emptyList(), secondEvents.errors);
        } finally {
            loop.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
            server.close().sync();
            writerServer.close().sync();
        }
    }
}
