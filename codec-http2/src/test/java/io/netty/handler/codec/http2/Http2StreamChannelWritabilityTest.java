/*
 * Copyright 2026 The Netty Project
 *
 * The Netty Project licenses this file to you under the Apache License, version 2.0 (the
 * "License"); you may not use this file except in compliance with the License. You may obtain a
 * copy of the License at:
 *
 * https://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software distributed under the License
 * is distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express
 * or implied. See the License for the specific language governing permissions and limitations under
 * the License.
 */
package io.netty.handler.codec.http2;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.stream.ChunkedInput;
import io.netty.handler.stream.ChunkedStream;
import io.netty.handler.stream.ChunkedWriteHandler;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.ByteArrayInputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static io.netty.handler.codec.http2.Http2CodecUtil.DEFAULT_MAX_FRAME_SIZE;
import static io.netty.handler.codec.http2.Http2CodecUtil.FRAME_HEADER_LENGTH;
import static io.netty.handler.codec.http2.Http2CodecUtil.MAX_INITIAL_WINDOW_SIZE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The writability of an {@link Http2MultiplexHandler} stream channel follows its own pending bytes: once the writes it
 * made are written by the parent channel, it is writable again, whether or not the parent channel is writable at that
 * moment.
 * <p>
 * The parent channel here completes its writes as a transport does when the socket does not take them within the
 * flush: a flush leaves the messages in the {@link ChannelOutboundBuffer}, and a later completion removes them,
 * outside {@link Http2ConnectionHandler}'s flush (an io_uring write's completion, NIO's {@code OP_WRITE}). The parent
 * becomes writable again in the middle of such a completion, and {@link Http2ConnectionHandler}, which sees that event
 * before {@link Http2MultiplexHandler}, writes the data other streams queued in flow control at once: the parent is
 * not writable again by the time {@link Http2MultiplexHandler} gets the event, nor when the rest of the completion
 * completes the stream channel's writes.
 */
public class Http2StreamChannelWritabilityTest {
    private static final int CHUNK = 8 * 1024;
    private static final int STREAM_BODY = 256 * 1024;
    private static final int BULK_BODY = 1024 * 1024;
    // Not 1: Http2MultiplexHandler takes stream 1 for an HTTP/1.1 upgrade on a channel without a server parent.
    private static final int PACED_STREAM = 3;
    private static final int[] BULK_STREAMS = {5, 7, 9};
    private static final byte[] CONTENT = new byte[BULK_BODY];
    /** What the socket takes per {@code OP_WRITE} in {@link Writes#PARTIAL}: less than a flush. */
    private static final int SOCKET_ROOM = 24 * 1024;

    /** How the parent channel's writes complete. */
    enum Writes {
        /** As io_uring's: a completion removes, in one pass, every message flushed before it. */
        COMPLETION,
        /** As NIO's with a full socket: each {@code OP_WRITE} writes {@link #SOCKET_ROOM} bytes of what is flushed. */
        PARTIAL,
        /** As NIO's with a socket that takes every flush: within the flush (the case that already worked). */
        IMMEDIATE
    }

    /** The distributors of {@link DefaultHttp2RemoteFlowController}; the paced stream's share must not depend on it. */
    enum Distributor {
        WEIGHTED_FAIR_QUEUE,
        UNIFORM,
        UNIFORM_ONE_FRAME_CHUNK;

        StreamByteDistributor newDistributor(Http2Connection connection) {
            switch (this) {
                case WEIGHTED_FAIR_QUEUE:
                    return new WeightedFairQueueByteDistributor(connection);
                case UNIFORM:
                    return new UniformStreamByteDistributor(connection);
                default:
                    UniformStreamByteDistributor distributor = new UniformStreamByteDistributor(connection);
                    distributor.minAllocationChunk(DEFAULT_MAX_FRAME_SIZE);
                    return distributor;
            }
        }
    }

    static List<Arguments> writesAndDistributors() {
        List<Arguments> arguments = new ArrayList<Arguments>();
        for (Writes writes : Writes.values()) {
            for (Distributor distributor : Distributor.values()) {
                arguments.add(Arguments.of(writes, distributor));
            }
        }
        return arguments;
    }

    /**
     * A parent channel whose flushed messages stay in its outbound buffer until {@link #complete()} writes them to
     * {@link #wire}, unless it writes as {@link Writes#IMMEDIATE}.
     */
    private static final class TransportChannel extends EmbeddedChannel {
        final ByteBuf wire = Unpooled.buffer();
        private final Writes writes;
        private boolean draining;

        TransportChannel(Writes writes) {
            super(false, false);
            this.writes = writes;
        }

        @Override
        protected void doWrite(ChannelOutboundBuffer in) {
            if (writes == Writes.IMMEDIATE || draining) {
                write(in, Integer.MAX_VALUE, Integer.MAX_VALUE);
            }
        }

        /** From now on, writes complete within the flush; then closes the channel and releases what is left. */
        void finishAndRelease() {
            draining = true;
            unsafe().flush();
            finishAndReleaseAll();
            wire.release();
        }

        /** Completes a write as the transport would, outside of any flush; returns whether anything was written. */
        boolean complete() {
            ChannelOutboundBuffer in = unsafe().outboundBuffer();
            boolean wrote = in.current() != null;
            if (writes == Writes.COMPLETION) {
                // Only what was flushed before: what is flushed meanwhile is the next write.
                write(in, in.size(), Integer.MAX_VALUE);
            } else {
                // What is flushed meanwhile is written too, as long as the socket takes it.
                write(in, Integer.MAX_VALUE, SOCKET_ROOM);
            }
            runPendingTasks();
            return wrote;
        }

        private void write(ChannelOutboundBuffer in, int messages, int bytes) {
            for (Object msg; messages > 0 && bytes > 0 && (msg = in.current()) != null;) {
                ByteBuf buf = (ByteBuf) msg;
                int n = Math.min(bytes, buf.readableBytes());
                wire.writeBytes(buf, buf.readerIndex(), n);
                bytes -= n;
                if (n == buf.readableBytes()) {
                    messages--;
                }
                // Completes the message's promise once all of it is written, then lowers the pending bytes.
                in.removeBytes(n);
            }
        }
    }

    /** What the client received so far, decoded from {@link TransportChannel#wire}. */
    private static final class Received {
        final long[] dataBytes = new long[16];
        /** Bulk DATA bytes received before the END_STREAM of the paced stream, or -1 if it has not ended yet. */
        long bulkBytesBeforePacedEnd = -1;
        /** Each bulk stream's DATA bytes when the paced stream ended. */
        final long[] bulkStreamBytesAtPacedEnd = new long[BULK_STREAMS.length];

        long bulkBytes() {
            long sum = 0;
            for (int stream : BULK_STREAMS) {
                sum += dataBytes[stream];
            }
            return sum;
        }

        boolean done() {
            return bulkBytes() == BULK_STREAMS.length * (long) BULK_BODY && dataBytes[PACED_STREAM] == STREAM_BODY;
        }

        void read(ByteBuf wire) {
            while (wire.readableBytes() >= FRAME_HEADER_LENGTH) {
                int length = wire.getUnsignedMedium(wire.readerIndex());
                if (wire.readableBytes() < FRAME_HEADER_LENGTH + length) {
                    break;
                }
                byte type = wire.getByte(wire.readerIndex() + 3);
                short flags = wire.getUnsignedByte(wire.readerIndex() + 4);
                int streamId = wire.getInt(wire.readerIndex() + 5) & Integer.MAX_VALUE;
                if (type == Http2FrameTypes.DATA) {
                    dataBytes[streamId] += length;
                    if (streamId == PACED_STREAM && (flags & Http2Flags.END_STREAM) != 0) {
                        bulkBytesBeforePacedEnd = bulkBytes();
                        for (int i = 0; i < BULK_STREAMS.length; i++) {
                            bulkStreamBytesAtPacedEnd[i] = dataBytes[BULK_STREAMS[i]];
                        }
                    }
                }
                wire.skipBytes(FRAME_HEADER_LENGTH + length);
            }
            wire.discardReadBytes();
        }
    }

    /** Counts the DATA bytes a stream channel's handlers wrote and those whose write completed. */
    private static final class PendingBytes extends ChannelOutboundHandlerAdapter {
        long written;
        long completed;
        long maxPending;

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            if (msg instanceof Http2DataFrame) {
                final int bytes = ((Http2DataFrame) msg).content().readableBytes();
                written += bytes;
                maxPending = Math.max(maxPending, written - completed);
                promise = promise.unvoid();
                promise.addListener(future -> completed += bytes);
            }
            ctx.write(msg, promise);
        }
    }

    /** Counts the writability changes of a stream channel, and the changes to writable once it is not active. */
    private static final class WritabilityChanges extends ChannelInboundHandlerAdapter {
        int toWritable;
        int toUnwritable;
        int toWritableWhileInactive;

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable()) {
                toWritable++;
                if (!ctx.channel().isActive()) {
                    toWritableWhileInactive++;
                }
            } else {
                toUnwritable++;
            }
            ctx.fireChannelWritabilityChanged();
        }
    }

    private TransportChannel parent;

    @AfterEach
    public void tearDown() {
        if (parent != null) {
            parent.finishAndRelease();
        }
    }

    /**
     * A {@link ChunkedWriteHandler} response (it writes while its channel is writable and resumes when it becomes
     * writable) next to three bulk responses queued in flow control: it gets a fair share of the connection (its
     * 256 KiB would be written by the time the bulk streams have 768 KiB), not what it wrote before its channel became
     * unwritable first and then nothing until the bulk responses are written (3 MiB), and it does not hold more than
     * its high water mark in flow control.
     */
    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("writesAndDistributors")
    public void pacedStreamGetsItsShareNextToBulkStreams(Writes writes, Distributor distributor) throws Exception {
        final PendingBytes paced = new PendingBytes();
        parent = newParent(writes, distributor, new ChannelInitializer<Http2StreamChannel>() {
            @Override
            protected void initChannel(Http2StreamChannel ch) {
                if (ch.stream().id() == PACED_STREAM) {
                    ch.pipeline().addLast(paced, new ChunkedWriteHandler());
                }
                ch.pipeline().addLast(new Responder());
            }
        });
        openStreams(parent);

        Received received = new Received();
        for (int completions = 0; !received.done(); completions++) {
            assertTrue(completions < 10_000, "the responses were not written: " + describe(received, paced));
            received.read(parent.wire);
            if (!received.done()) {
                assertTrue(parent.complete(), "nothing to write: " + describe(received, paced));
            }
        }

        long fairShare = BULK_STREAMS.length * (long) STREAM_BODY;
        assertTrue(received.bulkBytesBeforePacedEnd <= 2 * fairShare, describe(received, paced));
        // Not at the expense of the bulk streams: each was served alongside.
        for (long bulkStreamBytes : received.bulkStreamBytesAtPacedEnd) {
            assertTrue(bulkStreamBytes >= STREAM_BODY / 2, describe(received, paced));
        }
        // It held no more than its high water mark (and the chunk that crossed it) in HTTP/2 flow control.
        assertTrue(paced.maxPending <= 64 * 1024 + CHUNK, describe(received, paced));
    }

    private static String describe(Received received, PendingBytes paced) {
        return "paced stream: " + received.dataBytes[PACED_STREAM] + " B received, ended after "
                + received.bulkBytesBeforePacedEnd + " B of the bulk streams (each bulk stream then: "
                + Arrays.toString(received.bulkStreamBytesAtPacedEnd) + "), " + paced.written
                + " B written, at most " + paced.maxPending + " B pending; bulk streams: " + received.bulkBytes()
                + " B received";
    }

    /** Answers the paced stream through its {@link ChunkedWriteHandler}, a bulk stream with one DATA frame. */
    private static final class Responder extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof Http2HeadersFrame && ((Http2HeadersFrame) msg).isEndStream()) {
                    Http2StreamChannel channel = (Http2StreamChannel) ctx.channel();
                    ctx.write(new DefaultHttp2HeadersFrame(new DefaultHttp2Headers().status("200")));
                    if (channel.stream().id() == PACED_STREAM) {
                        ctx.writeAndFlush(new Http2DataChunkedInput(new ChunkedStream(
                                new ByteArrayInputStream(CONTENT, 0, STREAM_BODY), CHUNK), channel.stream()));
                    } else {
                        ctx.writeAndFlush(new DefaultHttp2DataFrame(Unpooled.wrappedBuffer(CONTENT), true));
                    }
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }
    }

    /**
     * The contract itself: a stream channel whose writes are all written is writable and told so, while the parent
     * channel is not writable and other streams' data waits in flow control.
     */
    @Test
    public void streamChannelIsWritableOnceItsWritesAreWrittenWhileTheParentIsNot() throws Exception {
        final WritabilityChanges changes = new WritabilityChanges();
        final Http2StreamChannel[] pacedChannel = new Http2StreamChannel[1];
        parent = newParent(Writes.COMPLETION, Distributor.WEIGHTED_FAIR_QUEUE,
                new ChannelInitializer<Http2StreamChannel>() {
            @Override
            protected void initChannel(Http2StreamChannel ch) {
                if (ch.stream().id() == PACED_STREAM) {
                    pacedChannel[0] = ch;
                    ch.pipeline().addLast(changes);
                } else {
                    ch.pipeline().addLast(new Responder());
                }
            }
        });
        openStreams(parent);
        Http2StreamChannel paced = pacedChannel[0];

        // 80 KiB: above the stream channel's high water mark (64 KiB).
        paced.write(new DefaultHttp2HeadersFrame(new DefaultHttp2Headers().status("200")));
        ChannelFuture first = paced.write(new DefaultHttp2DataFrame(Unpooled.wrappedBuffer(CONTENT, 0, 40 * 1024)));
        ChannelFuture second = paced.writeAndFlush(new DefaultHttp2DataFrame(
                Unpooled.wrappedBuffer(CONTENT, 0, 40 * 1024)));
        assertFalse(paced.isWritable());
        assertEquals(1, changes.toUnwritable);

        Received received = new Received();
        for (int completions = 0; !second.isDone(); completions++) {
            assertTrue(completions < 100, "the paced stream's writes did not complete");
            assertTrue(parent.complete());
            received.read(parent.wire);
        }
        assertTrue(first.isSuccess());
        assertTrue(second.isSuccess());
        assertEquals(80 * 1024, received.dataBytes[PACED_STREAM]);
        // The bulk streams' data, queued in flow control, keeps the parent channel full.
        assertTrue(received.bulkBytes() < BULK_STREAMS.length * (long) BULK_BODY);
        assertFalse(parent.isWritable());

        assertTrue(paced.isWritable());
        assertTrue(paced.bytesBeforeUnwritable() > 0);
        assertEquals(1, changes.toUnwritable);
        assertEquals(1, changes.toWritable);
    }

    /**
     * The parent channel closes while a paced stream channel has writes pending in it and is unwritable: its writes
     * fail, which makes it writable again (its own pending bytes drop) after it became inactive, before its
     * {@code channelInactive}. Its {@link ChunkedWriteHandler} then reads no more chunks, the stream channel closes,
     * the handler closes its input, and every chunk it read is released. A stream channel that is marked writable only
     * while its parent is writable gets no such event, and the test fails on that assertion alone.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = Writes.class, names = {"COMPLETION", "PARTIAL"})
    public void parentCloseWithAPacedStreamPendingReleasesItsChunks(Writes writes) throws Exception {
        final TrackedInput input = new TrackedInput();
        final WritabilityChanges closing = new WritabilityChanges();
        final Http2StreamChannel[] pacedChannel = new Http2StreamChannel[1];
        parent = newParent(writes, Distributor.WEIGHTED_FAIR_QUEUE, new ChannelInitializer<Http2StreamChannel>() {
            @Override
            protected void initChannel(Http2StreamChannel ch) {
                if (ch.stream().id() == PACED_STREAM) {
                    pacedChannel[0] = ch;
                    ch.pipeline().addLast(closing, new ChunkedWriteHandler(), new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                            ReferenceCountUtil.release(msg);
                            ctx.write(new DefaultHttp2HeadersFrame(new DefaultHttp2Headers().status("200")));
                            ctx.writeAndFlush(new Http2DataChunkedInput(input, pacedChannel[0].stream()));
                        }
                    });
                } else {
                    ch.pipeline().addLast(new Responder());
                }
            }
        });
        openStreams(parent);
        Http2StreamChannel paced = pacedChannel[0];

        // Some of the paced body is written, and more is pending in flow control: the stream channel is unwritable.
        Received received = new Received();
        for (int completions = 0; received.dataBytes[PACED_STREAM] == 0 || paced.isWritable(); completions++) {
            assertTrue(completions < 1_000, "the paced stream did not get to wait with bytes pending");
            assertTrue(parent.complete());
            received.read(parent.wire);
        }
        assertTrue(received.dataBytes[PACED_STREAM] < STREAM_BODY);
        assertTrue(paced.bytesBeforeWritable() > 0);
        int chunksRead = input.chunks.size();

        parent.close().sync();
        parent.runPendingTasks();

        // The path this test is about: the failed writes made the inactive stream channel writable.
        assertTrue(closing.toWritableWhileInactive > 0, "no writable event after the stream channel became inactive");
        assertEquals(chunksRead, input.chunks.size(), "chunks read after the stream channel became inactive");
        assertFalse(paced.isActive());
        assertTrue(paced.closeFuture().isDone());
        assertTrue(input.closed, "the ChunkedWriteHandler did not close its input");
        assertTrue(input.chunks.size() > 1);
        for (ByteBuf chunk : input.chunks) {
            assertEquals(0, chunk.refCnt(), "a chunk of the paced body was not released");
        }
    }

    /** A body of {@value #STREAM_BODY} bytes in chunks of {@value #CHUNK}; keeps each chunk it gave out. */
    private static final class TrackedInput implements ChunkedInput<ByteBuf> {
        final List<ByteBuf> chunks = new ArrayList<ByteBuf>();
        boolean closed;
        private long offset;

        @Override
        public boolean isEndOfInput() {
            return offset == STREAM_BODY;
        }

        @Override
        public void close() {
            closed = true;
        }

        @Deprecated
        @Override
        public ByteBuf readChunk(ChannelHandlerContext ctx) {
            return readChunk(ctx.alloc());
        }

        @Override
        public ByteBuf readChunk(ByteBufAllocator allocator) {
            if (isEndOfInput()) {
                return null;
            }
            ByteBuf chunk = Unpooled.wrappedBuffer(CONTENT, 0, CHUNK);
            offset += CHUNK;
            chunks.add(chunk);
            return chunk;
        }

        @Override
        public long length() {
            return STREAM_BODY;
        }

        @Override
        public long progress() {
            return offset;
        }
    }

    /** A server: {@link Http2FrameCodec} with the given distributor and {@link Http2MultiplexHandler}. */
    private static TransportChannel newParent(Writes writes, Distributor distributor,
                                              ChannelInitializer<Http2StreamChannel> childInitializer)
            throws Exception {
        DefaultHttp2Connection connection = new DefaultHttp2Connection(true);
        connection.remote().flowController(
                new DefaultHttp2RemoteFlowController(connection, distributor.newDistributor(connection)));
        Http2FrameCodec codec = new Http2FrameCodecBuilder() { }.connection(connection)
                .gracefulShutdownTimeoutMillis(0).build();
        TransportChannel parent = new TransportChannel(writes);
        parent.pipeline().addLast(codec, new Http2MultiplexHandler(childInitializer));
        parent.register();
        return parent;
    }

    /**
     * The client's preface, SETTINGS and connection WINDOW_UPDATE (windows wide open: only the parent channel paces
     * the responses), then a request on the paced stream and on each bulk stream.
     */
    private static void openStreams(TransportChannel parent) throws Exception {
        EmbeddedChannel client = new EmbeddedChannel(new ChannelInboundHandlerAdapter());
        try {
            Http2FrameWriter writer = new DefaultHttp2FrameWriter();
            ChannelHandlerContext ctx = client.pipeline().firstContext();
            client.write(Http2CodecUtil.connectionPrefaceBuf());
            writer.writeSettings(ctx, new Http2Settings().initialWindowSize(MAX_INITIAL_WINDOW_SIZE),
                    client.newPromise());
            writer.writeWindowUpdate(ctx, 0, MAX_INITIAL_WINDOW_SIZE - Http2CodecUtil.DEFAULT_WINDOW_SIZE,
                    client.newPromise());
            Http2Headers request = new DefaultHttp2Headers().method("GET").path("/").scheme("http")
                    .authority("localhost");
            writer.writeHeaders(ctx, PACED_STREAM, request, 0, true, client.newPromise());
            for (int stream : BULK_STREAMS) {
                writer.writeHeaders(ctx, stream, request, 0, true, client.newPromise());
            }
            client.flush();
            // One read: the server sees every request before it flushes any response.
            ByteBuf requests = Unpooled.buffer();
            for (ByteBuf msg; (msg = client.readOutbound()) != null;) {
                requests.writeBytes(msg);
                msg.release();
            }
            parent.writeInbound(requests);
        } finally {
            client.finishAndReleaseAll();
        }
        for (Object msg; (msg = parent.readInbound()) != null;) {
            ReferenceCountUtil.release(msg);
        }
    }
}
