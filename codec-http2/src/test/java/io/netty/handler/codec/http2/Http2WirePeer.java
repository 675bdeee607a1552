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
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ReferenceCountUtil;

import java.util.ArrayList;
import java.util.List;

import static io.netty.handler.codec.http2.Http2CodecUtil.FRAME_HEADER_LENGTH;
import static io.netty.handler.codec.http2.Http2CodecUtil.connectionPrefaceBuf;

/**
 * A server-side {@link Http2ConnectionHandler} on an {@link EmbeddedChannel}, driven by a client peer whose frames
 * are encoded by a real {@link DefaultHttp2FrameWriter}; every frame the server writes is decoded back from the
 * wire so that tests can count {@code DATA} frames and their sizes.
 */
final class Http2WirePeer {
    /** A frame the server wrote, in wire order; {@code sentBefore} counts the DATA payload bytes written before. */
    static final class Frame {
        final byte type;
        final short flags;
        final int streamId;
        final int length;
        final long sentBefore;

        Frame(byte type, short flags, int streamId, int length, long sentBefore) {
            this.type = type;
            this.flags = flags;
            this.streamId = streamId;
            this.length = length;
            this.sentBefore = sentBefore;
        }

        boolean isData() {
            return type == Http2FrameTypes.DATA;
        }

        boolean endOfStream() {
            return (flags & Http2Flags.END_STREAM) != 0;
        }

        @Override
        public String toString() {
            return "Frame(type=" + type + ", stream=" + streamId + ", length=" + length + ", flags=" + flags + ')';
        }
    }

    private final Http2ConnectionHandler handler;
    private final EmbeddedChannel channel;
    private final EmbeddedChannel client = new EmbeddedChannel(new ChannelInboundHandlerAdapter());
    private final Http2FrameWriter clientWriter = new DefaultHttp2FrameWriter();
    private final ByteBuf wire = Unpooled.buffer();
    private final List<Frame> frames = new ArrayList<Frame>();
    private long dataBytes;

    /**
     * @param handler a server handler, not yet added to a channel.
     * @param waterMark the channel's write water marks: the flow controller's budget is
     * {@link io.netty.channel.Channel#bytesBeforeUnwritable()}.
     * @param settings the client's SETTINGS.
     */
    Http2WirePeer(Http2ConnectionHandler handler, WriteBufferWaterMark waterMark, Http2Settings settings)
            throws Exception {
        this.handler = handler;
        channel = new EmbeddedChannel();
        channel.config().setWriteBufferWaterMark(waterMark);
        channel.pipeline().addLast(handler);
        ByteBuf preface = connectionPrefaceBuf();
        channel.writeInbound(preface);
        clientWriter.writeSettings(clientContext(), settings, client.newPromise());
        sendClientFrames();
    }

    ChannelHandlerContext context() {
        return channel.pipeline().context(handler);
    }

    private ChannelHandlerContext clientContext() {
        return client.pipeline().firstContext();
    }

    /** The client opens streams with a GET request each (END_STREAM on HEADERS). */
    void openStreams(int... streamIds) throws Exception {
        for (int streamId : streamIds) {
            Http2Headers headers = new DefaultHttp2Headers().method("GET").path("/").scheme("http")
                    .authority("localhost");
            clientWriter.writeHeaders(clientContext(), streamId, headers, 0, true, client.newPromise());
        }
        sendClientFrames();
    }

    void windowUpdate(int streamId, int increment) throws Exception {
        clientWriter.writeWindowUpdate(clientContext(), streamId, increment, client.newPromise());
        sendClientFrames();
    }

    void reset(int streamId) throws Exception {
        clientWriter.writeRstStream(clientContext(), streamId, Http2Error.CANCEL.code(), client.newPromise());
        sendClientFrames();
    }

    private void sendClientFrames() {
        client.flush();
        for (;;) {
            Object msg = client.readOutbound();
            if (msg == null) {
                break;
            }
            channel.writeInbound(msg);
        }
        drain();
    }

    /** The server starts a 200 response on a stream (not flushed). */
    ChannelFuture respondHeaders(int streamId) {
        ChannelHandlerContext ctx = context();
        return handler.encoder().writeHeaders(ctx, streamId, new DefaultHttp2Headers().status("200"), 0, false,
                ctx.newPromise());
    }

    /** The server queues a response body on a stream, ending it if asked (not flushed); the server releases it. */
    ChannelFuture respondData(int streamId, ByteBuf body, boolean endStream) {
        ChannelHandlerContext ctx = context();
        return handler.encoder().writeData(ctx, streamId, body, 0, endStream, ctx.newPromise());
    }

    void flush() {
        channel.flush();
        drain();
    }

    private void drain() {
        channel.runPendingTasks();
        for (;;) {
            Object msg = channel.readOutbound();
            if (msg == null) {
                break;
            }
            try {
                wire.writeBytes((ByteBuf) msg);
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }
        while (wire.readableBytes() >= FRAME_HEADER_LENGTH) {
            int length = wire.getUnsignedMedium(wire.readerIndex());
            if (wire.readableBytes() < FRAME_HEADER_LENGTH + length) {
                break;
            }
            byte type = wire.getByte(wire.readerIndex() + 3);
            short flags = wire.getUnsignedByte(wire.readerIndex() + 4);
            int streamId = wire.getInt(wire.readerIndex() + 5) & Integer.MAX_VALUE;
            frames.add(new Frame(type, flags, streamId, length, dataBytes));
            if (type == Http2FrameTypes.DATA) {
                dataBytes += length;
            }
            wire.skipBytes(FRAME_HEADER_LENGTH + length);
        }
        wire.discardReadBytes();
        // Inbound messages the handlers passed on (frame codecs fire frames); nothing in these tests reads them.
        for (;;) {
            Object msg = channel.readInbound();
            if (msg == null) {
                break;
            }
            ReferenceCountUtil.release(msg);
        }
    }

    /** The DATA frames the server wrote so far, for one stream or (streamId 0) for all streams. */
    List<Frame> dataFrames(int streamId) {
        List<Frame> data = new ArrayList<Frame>();
        for (Frame frame : frames) {
            if (frame.isData() && (streamId == 0 || frame.streamId == streamId)) {
                data.add(frame);
            }
        }
        return data;
    }

    /** The sum of the DATA payload lengths of one stream. */
    long dataBytes(int streamId) {
        long sum = 0;
        for (Frame frame : dataFrames(streamId)) {
            sum += frame.length;
        }
        return sum;
    }

    void close() {
        try {
            channel.finishAndReleaseAll();
        } finally {
            client.finishAndReleaseAll();
            wire.release();
        }
    }

    static Http2Settings settings(int initialWindowSize, int maxFrameSize) {
        return new Http2Settings().initialWindowSize(initialWindowSize).maxFrameSize(maxFrameSize);
    }

    /** A body of {@code size} bytes with a recognisable pattern. */
    static ByteBuf body(int size) {
        ByteBuf body = Unpooled.buffer(size);
        for (int i = 0; i < size; i++) {
            body.writeByte((byte) i);
        }
        return body;
    }
}
