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

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2FrameWriter;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2DataChunkedInput;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2FrameTypes;
import io.netty.handler.codec.http2.Http2FrameWriter;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.stream.ChunkedStream;
import io.netty.handler.stream.ChunkedWriteHandler;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.net.SocketAddress;
import java.util.Arrays;

import static io.netty.handler.codec.http2.Http2CodecUtil.FRAME_HEADER_LENGTH;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Finding 6 of the soak (docs/soak.md, Findings, 6), made deterministic, as patch 0003 leaves
 * it: a stream channel paced by its writability ({@link ChunkedWriteHandler} on an {@link Http2MultiplexHandler}
 * stream) gets its share of the connection while three other streams keep data queued in HTTP/2 flow control, also
 * when the connection's writability events come from outside {@code Http2ConnectionHandler}'s own flush: from an
 * io_uring write's completion (upstream's accounting, and the series' 0002), or from NIO's {@code OP_WRITE} with a full
 * socket. The control is NIO with a socket that takes every flush, where it was served before 0003 too.
 * <p>
 * Before 0003 ({@code AbstractHttp2StreamChannel} of 4.2.18), a stream channel whose writes completed while the
 * connection was unwritable stayed unwritable and waited for a {@code channelWritabilityChanged} of the connection
 * that found it writable at {@link Http2MultiplexHandler}. {@code Http2ConnectionHandler} sees that event first and,
 * with data queued in flow control, writes it until the connection is unwritable again, so such an event reaches
 * {@link Http2MultiplexHandler} only when it is fired inside {@code Http2ConnectionHandler}'s own flush (the control):
 * the stream channel sent what it wrote before its high water mark stopped it and then waited for the other streams'
 * bodies. With 0003 a stream channel is writable again once its own writes are written, whatever the connection's
 * writability: the tests show that the connection's events still do not pass {@code Http2FrameCodec} with it writable,
 * and that the stream channel no longer needs them. Run them against the series without 0003 to see them fail.
 */
public class StreamChannelWritabilityTest {
    private static final int STREAM_BODY = 512 * 1024;
    private static final int CHUNK = 8 * 1024;
    private static final int BULK_BODY = 2 * 1024 * 1024;
    private static final int[] BULK_STREAMS = {5, 7, 9};
    // Not 1: Http2MultiplexHandler takes stream 1 for an HTTP/1.1 upgrade on a channel without a server parent.
    private static final int CHUNKED_STREAM = 3;
    private static final byte[] CONTENT = new byte[BULK_BODY];

    private TransportLikeChannel server;
    private Channel chunkedChannel;
    private ByteBuf wire;

    /** How the test's channel writes. */
    enum Writes {
        /**
         * As io_uring does: a flush submits the flushed messages as one write if none is outstanding; the write's
         * completion removes them (notifying their promises) and submits what was flushed meanwhile. The submitted
         * bytes count against the water marks until the completion, as with upstream's io_uring.
         */
        IO_URING,
        /**
         * As the series' io_uring does with 0002's limit set: {@link #IO_URING}, and while a write is outstanding the
         * flushed messages stop counting against the water marks up to the high water mark (the transport hook
         * {@code AbstractUnsafe.setUncountedFlushedLimit}: the high water mark when a write is submitted, 0 once
         * none is outstanding).
         */
        IO_URING_UNCOUNTED_FLUSHED,
        /**
         * As NIO does with a socket that is full after every turn: a flush writes at once what the socket takes,
         * {@link #SOCKET_ROOM} bytes (the high water mark), the rest on the next turn ({@code OP_WRITE}).
         */
        NIO_FULL_SOCKET,
        /** As NIO does with a socket that takes every flush: the control, where the stream channel is served. */
        NIO
    }

    /** Bytes the {@link Writes#NIO_FULL_SOCKET} socket takes per turn. */
    private static final int SOCKET_ROOM = 64 * 1024;

    /**
     * An {@link EmbeddedChannel} that writes as {@link Writes} says, to {@code sink}. Its unsafe is its own, so that it
     * can call the transport hook {@code setUncountedFlushedLimit}; like {@link EmbeddedChannel}'s, it runs the pending
     * tasks after each operation.
     */
    private static final class TransportLikeChannel extends EmbeddedChannel {
        private final Writes writes;
        private final ByteBuf sink;
        private int outstanding;
        private int room;
        // Set by newUnsafe(), which AbstractChannel's constructor calls: no initializer.
        private TransportLikeUnsafe transportUnsafe;

        TransportLikeChannel(Writes writes, ByteBuf sink) {
            super(false, false);
            this.writes = writes;
            this.sink = sink;
            room = roomPerTurn();
        }

        @Override
        protected AbstractUnsafe newUnsafe() {
            transportUnsafe = new TransportLikeUnsafe();
            return transportUnsafe;
        }

        @Override
        public Unsafe unsafe() {
            return transportUnsafe.wrapped;
        }

        private final class TransportLikeUnsafe extends AbstractUnsafe {
            private int executing;

            // As EmbeddedChannel's: runs the pending tasks after each operation that may schedule some.
            final Unsafe wrapped = new Unsafe() {
                @Override
                public RecvByteBufAllocator.Handle recvBufAllocHandle() {
                    return TransportLikeUnsafe.this.recvBufAllocHandle();
                }

                @Override
                public SocketAddress localAddress() {
                    return TransportLikeUnsafe.this.localAddress();
                }

                @Override
                public SocketAddress remoteAddress() {
                    return TransportLikeUnsafe.this.remoteAddress();
                }

                @Override
                public void register(EventLoop eventLoop, ChannelPromise promise) {
                    run(() -> TransportLikeUnsafe.this.register(eventLoop, promise));
                }

                @Override
                public void bind(SocketAddress localAddress, ChannelPromise promise) {
                    run(() -> TransportLikeUnsafe.this.bind(localAddress, promise));
                }

                @Override
                public void connect(SocketAddress remoteAddress, SocketAddress localAddress, ChannelPromise promise) {
                    run(() -> TransportLikeUnsafe.this.connect(remoteAddress, localAddress, promise));
                }

                @Override
                public void disconnect(ChannelPromise promise) {
                    run(() -> TransportLikeUnsafe.this.disconnect(promise));
                }

                @Override
                public void close(ChannelPromise promise) {
                    run(() -> TransportLikeUnsafe.this.close(promise));
                }

                @Override
                public void closeForcibly() {
                    run(TransportLikeUnsafe.this::closeForcibly);
                }

                @Override
                public void deregister(ChannelPromise promise) {
                    run(() -> TransportLikeUnsafe.this.deregister(promise));
                }

                @Override
                public void beginRead() {
                    run(TransportLikeUnsafe.this::beginRead);
                }

                @Override
                public void write(Object msg, ChannelPromise promise) {
                    run(() -> TransportLikeUnsafe.this.write(msg, promise));
                }

                @Override
                public void flush() {
                    run(TransportLikeUnsafe.this::flush);
                }

                @Override
                public ChannelPromise voidPromise() {
                    return TransportLikeUnsafe.this.voidPromise();
                }

                @Override
                public ChannelOutboundBuffer outboundBuffer() {
                    return TransportLikeUnsafe.this.outboundBuffer();
                }
            };

            private void run(Runnable operation) {
                executing++;
                try {
                    operation.run();
                } finally {
                    if (--executing == 0) {
                        runPendingTasks();
                    }
                }
            }

            @Override
            public void connect(SocketAddress remoteAddress, SocketAddress localAddress, ChannelPromise promise) {
                safeSetSuccess(promise);
            }

            /** The transport hook, as io_uring calls it. */
            void uncountedFlushedLimit(long limit) {
                setUncountedFlushedLimit(limit);
            }
        }

        private boolean nio() {
            return writes == Writes.NIO_FULL_SOCKET || writes == Writes.NIO;
        }

        /** What the NIO socket takes per turn. */
        private int roomPerTurn() {
            return writes == Writes.NIO ? Integer.MAX_VALUE : SOCKET_ROOM;
        }

        @Override
        protected void doWrite(ChannelOutboundBuffer in) throws Exception {
            if (nio()) {
                while (room > 0 && in.current() != null) {
                    ByteBuf buf = (ByteBuf) in.current();
                    int n = Math.min(room, buf.readableBytes());
                    sink.writeBytes(buf, buf.readerIndex(), n);
                    room -= n;
                    in.removeBytes(n);
                }
            } else if (outstanding == 0) {
                submit(in);
            }
        }

        private void submit(ChannelOutboundBuffer in) {
            outstanding = in.size();
            if (writes == Writes.IO_URING_UNCOUNTED_FLUSHED && outstanding > 0) {
                // A write is outstanding: 0002's limit at the high water mark.
                transportUnsafe.uncountedFlushedLimit(config().getWriteBufferHighWaterMark());
            }
        }

        /**
         * Completes the outstanding write (io_uring) or gives the socket room again and writes (NIO); returns whether
         * anything was written.
         */
        boolean complete() throws Exception {
            ChannelOutboundBuffer in = unsafe().outboundBuffer();
            boolean wrote;
            if (nio()) {
                room = roomPerTurn();
                unsafe().flush();
                wrote = room < roomPerTurn();
            } else {
                wrote = outstanding > 0;
                for (int i = outstanding; i > 0; i--) {
                    ByteBuf buf = (ByteBuf) in.current();
                    sink.writeBytes(buf, buf.readerIndex(), buf.readableBytes());
                    in.remove();
                }
                submit(in);
                if (outstanding == 0 && writes == Writes.IO_URING_UNCOUNTED_FLUSHED) {
                    // No write is outstanding: everything pending counts again.
                    transportUnsafe.uncountedFlushedLimit(0);
                }
            }
            runPendingTasks();
            return wrote;
        }
    }

    @AfterEach
    void tearDown() {
        if (server != null) {
            server.finishAndReleaseAll();
        }
        if (wire != null) {
            wire.release();
        }
    }

    @Test
    void upstreamIoUringStreamChannelGetsItsShareNextToBulkStreams() throws Exception {
        Result r = run(Writes.IO_URING);
        assertServedAlongside(r);
        // Every writable event of the connection found it writable at its head and unwritable after Http2FrameCodec,
        // which fills it on the event: the stream channel was served without them.
        assertTrue(r.writableAtHead[BEFORE_HALF] > 0, r.toString());
        assertEquals(0, r.writableAfterCodec[BEFORE_HALF], r.toString());
    }

    @Test
    void nioWithAFullSocketStreamChannelGetsItsShareNextToBulkStreams() throws Exception {
        Result r = run(Writes.NIO_FULL_SOCKET);
        assertServedAlongside(r);
        // The events come from OP_WRITE's flush, outside Http2ConnectionHandler's own: at most a few of them pass
        // Http2FrameCodec with the connection writable.
        assertTrue(r.writableAfterCodec[BEFORE_HALF] * 10 < r.writableAtHead[BEFORE_HALF], r.toString());
    }

    @Test
    void seriesIoUringStreamChannelGetsItsShareNextToBulkStreams() throws Exception {
        Result r = run(Writes.IO_URING_UNCOUNTED_FLUSHED);
        assertServedAlongside(r);
        // With 0002's limit events pass Http2FrameCodec now and then, but the connection is filled on most.
        assertTrue(r.writableAfterCodec[BEFORE_HALF] * 10 < r.writableAtHead[BEFORE_HALF], r.toString());
    }

    @Test
    void controlStreamChannelIsServedWhenTheSocketTakesEveryFlush() throws Exception {
        Result r = run(Writes.NIO);
        assertServedAlongside(r);
        // Each flush leaves the outbound buffer at once, inside Http2ConnectionHandler's own flush, whose reentry guard
        // passes the writability events on with the connection writable.
        assertEquals(r.writableAtHead[BEFORE_HALF], r.writableAfterCodec[BEFORE_HALF], r.toString());
    }

    /**
     * The chunked stream got about its share (a quarter: 512 KiB while the bulk streams wrote 1.5 MiB) and at least
     * half of it, the bulk streams were served alongside, and the stream channel was made writable by its own writes.
     */
    private static void assertServedAlongside(Result r) {
        long fairShare = BULK_STREAMS.length * (long) STREAM_BODY;
        assertTrue(r.bulkBytesAtChunkedEnd > 0 && r.bulkBytesAtChunkedEnd <= 2 * fairShare, r.toString());
        assertEquals(STREAM_BODY, r.chunkedBytesAtHalf, r.toString());
        assertTrue(r.streamWritableEvents[BEFORE_HALF] > 0, r.toString());
        assertEquals(0, r.fallbackFlushes, r.toString());
    }

    private static final int BEFORE_HALF = 0;
    private static final int BEFORE_BULK_END = 1;
    private static final int AFTER_BULK_END = 2;

    private static final class Result {
        /** The phase the counters below are in: {@link #BEFORE_HALF} of the bulk bodies, then before their end. */
        int phase = BEFORE_HALF;
        /** Writability events that found the connection writable at the head of its pipeline, and after the codec. */
        final int[] writableAtHead = new int[3];
        final int[] writableAfterCodec = new int[3];
        /** Writability events that made the chunked stream's channel writable. */
        final int[] streamWritableEvents = new int[3];
        long chunkedBytesAtHalf = -1;
        boolean streamChannelWritableAtHalf;
        long streamChannelBytesBeforeWritableAtHalf;
        long chunkedBytesAtBulkEnd;
        /** Bulk bytes received when the chunked stream's body was complete. */
        long bulkBytesAtChunkedEnd = -1;
        int fallbackFlushes;

        @Override
        public String toString() {
            return "half-way: chunked " + chunkedBytesAtHalf + " B, stream channel writable "
                    + streamChannelWritableAtHalf + " bytesBeforeWritable " + streamChannelBytesBeforeWritableAtHalf
                    + "; bulk ended: chunked " + chunkedBytesAtBulkEnd + " B; chunked ended after " + bulkBytesAtChunkedEnd
                    + " B of the bulk bodies; writable events (before half, before"
                    + " the bulk's end, after) at the head " + Arrays.toString(writableAtHead) + ", after"
                    + " Http2FrameCodec " + Arrays.toString(writableAfterCodec) + ", of the stream channel "
                    + Arrays.toString(streamWritableEvents) + "; fallback flushes " + fallbackFlushes;
        }
    }

    /**
     * Three bulk responses queued in flow control and one {@link ChunkedWriteHandler} response on stream channels of
     * one connection, windows wide open; the connection's writes complete until every body is written. Returns what
     * was observed half-way through the bulk bodies and when they ended, and the writability events of each phase.
     */
    private Result run(Writes writes) throws Exception {
        wire = Unpooled.buffer();
        server = new TransportLikeChannel(writes, wire);
        Result r = new Result();
        server.pipeline().addLast(new WritableEvents(r, r.writableAtHead));
        server.pipeline().addLast(Http2FrameCodecBuilder.forServer().build());
        server.pipeline().addLast(new WritableEvents(r, r.writableAfterCodec));
        server.pipeline().addLast(new Http2MultiplexHandler(new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel child) {
                if (((Http2StreamChannel) child).stream().id() == CHUNKED_STREAM) {
                    chunkedChannel = child;
                    child.pipeline().addLast(new WritableEvents(r, r.streamWritableEvents));
                }
                child.pipeline().addLast(new ChunkedWriteHandler(), new Responder());
            }
        }));
        server.register();

        EmbeddedChannel client = new EmbeddedChannel(new ChannelInboundHandlerAdapter());
        try {
            Http2FrameWriter writer = new DefaultHttp2FrameWriter();
            ChannelHandlerContext ctx = client.pipeline().firstContext();
            server.writeInbound(Http2CodecUtil.connectionPrefaceBuf());
            writer.writeSettings(ctx, new Http2Settings().initialWindowSize(Http2CodecUtil.MAX_INITIAL_WINDOW_SIZE),
                    client.newPromise());
            writer.writeWindowUpdate(ctx, 0, Http2CodecUtil.MAX_INITIAL_WINDOW_SIZE
                    - Http2CodecUtil.DEFAULT_WINDOW_SIZE, client.newPromise());
            writer.writeHeaders(ctx, CHUNKED_STREAM, request("/chunked"), 0, true, client.newPromise());
            for (int stream : BULK_STREAMS) {
                writer.writeHeaders(ctx, stream, request("/bulk"), 0, true, client.newPromise());
            }
            client.flush();
            // One read: the server sees every request before it flushes any response.
            ByteBuf requests = Unpooled.buffer();
            for (ByteBuf msg; (msg = client.readOutbound()) != null;) {
                requests.writeBytes(msg);
                msg.release();
            }
            server.writeInbound(requests);
        } finally {
            client.finishAndReleaseAll();
        }

        long[] dataBytes = new long[16];
        read(r, dataBytes);
        observe(r, dataBytes);
        int completions = 0;
        while (r.phase != AFTER_BULK_END || dataBytes[CHUNKED_STREAM] < STREAM_BODY) {
            assertTrue(++completions < 100_000, "the responses were not written: " + r);
            if (!server.complete()) {
                // Nothing was written: flush what flow control holds (not needed in any case so far, and counted).
                r.fallbackFlushes++;
                server.flush();
            }
            read(r, dataBytes);
            observe(r, dataBytes);
        }
        return r;
    }

    /** Records the state half-way through the bulk bodies and the chunked stream's bytes at their end. */
    private void observe(Result r, long[] dataBytes) {
        long bulkTotal = BULK_STREAMS.length * (long) BULK_BODY;
        if (r.phase == BEFORE_HALF && bulkBytes(dataBytes) >= bulkTotal / 2) {
            r.chunkedBytesAtHalf = dataBytes[CHUNKED_STREAM];
            r.streamChannelWritableAtHalf = chunkedChannel.isWritable();
            r.streamChannelBytesBeforeWritableAtHalf = chunkedChannel.bytesBeforeWritable();
            r.phase = BEFORE_BULK_END;
        }
        if (r.phase == BEFORE_BULK_END && bulkBytes(dataBytes) == bulkTotal) {
            r.chunkedBytesAtBulkEnd = dataBytes[CHUNKED_STREAM];
            r.phase = AFTER_BULK_END;
        }
    }

    private static long bulkBytes(long[] dataBytes) {
        long sum = 0;
        for (int stream : BULK_STREAMS) {
            sum += dataBytes[stream];
        }
        return sum;
    }

    private static Http2Headers request(String path) {
        return new DefaultHttp2Headers().method("GET").path(path).scheme("http").authority("localhost");
    }

    /**
     * Decodes the frames the server wrote and adds up the DATA payload of each stream; records the bulk bytes written
     * before the chunked stream's last.
     */
    private void read(Result r, long[] dataBytes) {
        while (wire.readableBytes() >= FRAME_HEADER_LENGTH) {
            int length = wire.getUnsignedMedium(wire.readerIndex());
            if (wire.readableBytes() < FRAME_HEADER_LENGTH + length) {
                break;
            }
            byte type = wire.getByte(wire.readerIndex() + 3);
            int streamId = wire.getInt(wire.readerIndex() + 5) & Integer.MAX_VALUE;
            if (type == Http2FrameTypes.DATA) {
                dataBytes[streamId] += length;
                if (streamId == CHUNKED_STREAM && dataBytes[streamId] == STREAM_BODY) {
                    r.bulkBytesAtChunkedEnd = bulkBytes(dataBytes);
                }
            }
            wire.skipBytes(FRAME_HEADER_LENGTH + length);
        }
        wire.discardReadBytes();
        for (Object msg; (msg = server.readInbound()) != null;) {
            ReferenceCountUtil.release(msg);
        }
    }

    /** Counts, per phase of the run, the writability events that find its channel writable where it sits. */
    private static final class WritableEvents extends ChannelInboundHandlerAdapter {
        private final Result result;
        private final int[] counts;

        WritableEvents(Result result, int[] counts) {
            this.result = result;
            this.counts = counts;
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable()) {
                counts[result.phase]++;
            }
            ctx.fireChannelWritabilityChanged();
        }
    }

    /** Answers {@code /bulk} with one DATA frame, {@code /chunked} through {@link ChunkedWriteHandler}. */
    private static final class Responder extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof Http2HeadersFrame && ((Http2HeadersFrame) msg).isEndStream()) {
                    boolean chunked = "/chunked".contentEquals(((Http2HeadersFrame) msg).headers().path());
                    ctx.write(new DefaultHttp2HeadersFrame(new DefaultHttp2Headers().status("200")));
                    if (chunked) {
                        ctx.writeAndFlush(new Http2DataChunkedInput(new ChunkedStream(
                                new ByteArrayInputStream(CONTENT, 0, STREAM_BODY), CHUNK),
                                ((Http2StreamChannel) ctx.channel()).stream()));
                    } else {
                        ctx.writeAndFlush(new DefaultHttp2DataFrame(Unpooled.wrappedBuffer(CONTENT), true));
                    }
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }
    }
}
