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
package io.netty.testsuite.transport.socket;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.Http2DataChunkedInput;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.stream.ChunkedStream;
import io.netty.handler.stream.ChunkedWriteHandler;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

import java.util.HashMap;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A response written by a handler that follows its stream channel's writability ({@link ChunkedWriteHandler} on an
 * {@link Http2MultiplexHandler} stream channel) next to bulk responses on the same connection, to a client that reads
 * slower than the server writes: the paced response must get its share of the connection while the bulk responses
 * still have data queued in HTTP/2 flow control, rather than wait for them to end.
 */
public class SocketHttp2StreamChannelWritabilityTest extends AbstractSocketTest {
    private static final int BULK_STREAMS = 3;
    private static final int BULK_BODY = 2 * 1024 * 1024;
    private static final int PACED_BODY = 512 * 1024;
    private static final int PACED_CHUNK = 16 * 1024;
    /** Bulk bytes the client receives while the paced body is sent, if every stream gets an equal share. */
    private static final long SHARE = (long) BULK_STREAMS * PACED_BODY;
    /** Small socket buffers, so that the server's socket is full whenever the slow client has not read. */
    private static final int SOCKET_BUFFER = 32 * 1024;
    private static final long READ_INTERVAL_MICROS = 500;
    private static final int CLIENT_WINDOW = 16 * 1024 * 1024;
    private static final String BULK_PATH = "/bulk";
    private static final String PACED_PATH = "/paced";

    @Test
    @Timeout(value = 60000, unit = TimeUnit.MILLISECONDS)
    public void testPacedStreamGetsItsShareNextToBulkStreams(TestInfo testInfo) throws Throwable {
        run(testInfo, this::testPacedStreamGetsItsShareNextToBulkStreams);
    }

    public void testPacedStreamGetsItsShareNextToBulkStreams(ServerBootstrap sb, Bootstrap cb) throws Throwable {
        final ByteBuf body = Unpooled.directBuffer(BULK_BODY).writeZero(BULK_BODY);
        Channel server = null;
        Channel client = null;
        try {
            sb.childOption(ChannelOption.SO_SNDBUF, SOCKET_BUFFER);
            sb.childHandler(new ChannelInitializer<Channel>() {
                @Override
                protected void initChannel(Channel ch) {
                    ch.pipeline().addLast(Http2FrameCodecBuilder.forServer().build());
                    ch.pipeline().addLast(new Http2MultiplexHandler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel child) {
                            child.pipeline().addLast(new ChunkedWriteHandler(), new Responder(body));
                        }
                    }));
                }
            });
            server = sb.bind().sync().channel();

            final Client h2Client = new Client();
            cb.option(ChannelOption.AUTO_READ, false);
            cb.option(ChannelOption.SO_RCVBUF, SOCKET_BUFFER);
            cb.handler(new ChannelInitializer<Channel>() {
                @Override
                protected void initChannel(Channel ch) {
                    ch.pipeline().addLast(new SlowReader(), h2Client.handler);
                    ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                        @Override
                        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                            h2Client.errors.add(cause);
                        }
                    });
                }
            });
            client = cb.connect(server.localAddress()).sync().channel();
            final Channel ch = client;
            ch.eventLoop().submit(() -> {
                h2Client.start(ch);
                return null;
            }).sync();

            assertTrue(h2Client.done.await(30, TimeUnit.SECONDS), "responses missing: "
                    + h2Client.done.getCount() + " of " + (BULK_STREAMS + 1) + ", " + h2Client.summary());
            assertTrue(h2Client.errors.isEmpty(), "errors: " + h2Client.errors);
            String summary = sb.config().channelFactory() + " <- " + cb.config().channelFactory() + ": "
                    + h2Client.summary();
            logger.info(summary);
            // The paced stream got at least half of its share: the bulk streams received at most twice theirs while
            // its body was sent.
            assertTrue(h2Client.bulkBytesAtPacedEnd <= 2 * SHARE, "the paced response ended after "
                    + h2Client.bulkBytesAtPacedEnd + " bytes of the bulk responses (at most " + 2 * SHARE
                    + " expected): " + summary);
        } finally {
            if (client != null) {
                client.close().sync();
            }
            if (server != null) {
                server.close().sync();
            }
            body.release();
        }
    }

    /**
     * Answers {@value #BULK_PATH} with headers and one {@code DATA} frame, {@value #PACED_PATH} with headers and an
     * {@link Http2DataChunkedInput} that the {@link ChunkedWriteHandler} writes while the stream channel is writable.
     */
    private static final class Responder extends ChannelInboundHandlerAdapter {
        private final ByteBuf body;

        Responder(ByteBuf body) {
            this.body = body;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof Http2HeadersFrame && ((Http2HeadersFrame) msg).isEndStream()) {
                    ctx.write(new DefaultHttp2HeadersFrame(
                            new DefaultHttp2Headers().status(HttpResponseStatus.OK.codeAsText())));
                    if (PACED_PATH.contentEquals(((Http2HeadersFrame) msg).headers().path())) {
                        ctx.writeAndFlush(new Http2DataChunkedInput(new ChunkedStream(
                                new ByteBufInputStream(body.retainedSlice(0, PACED_BODY), true), PACED_CHUNK),
                                ((Http2StreamChannel) ctx.channel()).stream()));
                    } else {
                        ctx.writeAndFlush(new DefaultHttp2DataFrame(body.retainedDuplicate(), true));
                    }
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }
    }

    /**
     * Reads one buffer at a time, every {@value #READ_INTERVAL_MICROS} microseconds at most: a client slower than the
     * server, whose socket is therefore full most of the time.
     */
    private static final class SlowReader extends ChannelDuplexHandler {
        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            ctx.read();
            ctx.fireChannelActive();
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.fireChannelReadComplete();
            ctx.executor().schedule(() -> {
                if (ctx.channel().isActive()) {
                    ctx.read();
                }
            }, READ_INTERVAL_MICROS, TimeUnit.MICROSECONDS);
        }

        @Override
        public void read(ChannelHandlerContext ctx) {
            // Only this handler asks for reads.
        }
    }

    /**
     * An h2c (prior knowledge) client: asks for the bulk responses, then for the paced one, on one connection, and
     * counts the {@code DATA} bytes of each.
     */
    private static final class Client extends Http2FrameAdapter {
        final Http2ConnectionHandler handler = new Http2ConnectionHandlerBuilder().server(false).frameListener(this)
                .initialSettings(new Http2Settings().initialWindowSize(CLIENT_WINDOW)).build();
        final CountDownLatch done = new CountDownLatch(BULK_STREAMS + 1);
        final Queue<Throwable> errors = new ConcurrentLinkedQueue<Throwable>();
        // Written by the client's event loop; read after done.
        private final Map<Integer, Long> bytes = new HashMap<Integer, Long>();
        private int pacedStream;
        private long bulkBytes;
        volatile long bulkBytesAtPacedEnd = -1;

        void start(Channel ch) throws Http2Exception {
            Http2Connection connection = handler.connection();
            connection.local().flowController().incrementWindowSize(connection.connectionStream(),
                    CLIENT_WINDOW - Http2CodecUtil.DEFAULT_WINDOW_SIZE);
            ChannelHandlerContext ctx = ch.pipeline().context(handler);
            for (int i = 0; i < BULK_STREAMS; i++) {
                request(ctx, BULK_PATH);
            }
            pacedStream = request(ctx, PACED_PATH);
            ctx.flush();
        }

        private int request(ChannelHandlerContext ctx, String path) {
            int streamId = handler.connection().local().incrementAndGetNextStreamId();
            bytes.put(streamId, 0L);
            Http2Headers headers = new DefaultHttp2Headers().method("GET").path(path).scheme("http")
                    .authority("localhost");
            handler.encoder().writeHeaders(ctx, streamId, headers, 0, true, ctx.newPromise())
                    .addListener(future -> {
                        if (!future.isSuccess()) {
                            errors.add(future.cause());
                        }
                    });
            return streamId;
        }

        @Override
        public int onDataRead(ChannelHandlerContext ctx, int streamId, ByteBuf data, int padding,
                              boolean endOfStream) {
            int length = data.readableBytes();
            long received = bytes.get(streamId) + length;
            bytes.put(streamId, received);
            if (streamId != pacedStream) {
                bulkBytes += length;
            }
            if (endOfStream) {
                long expected = streamId == pacedStream ? PACED_BODY : BULK_BODY;
                if (received != expected) {
                    errors.add(new AssertionError("stream " + streamId + ": body of " + received + " bytes, not "
                            + expected));
                }
                if (streamId == pacedStream) {
                    bulkBytesAtPacedEnd = bulkBytes;
                }
                done.countDown();
            }
            return length + padding;
        }

        @Override
        public void onRstStreamRead(ChannelHandlerContext ctx, int streamId, long errorCode) {
            errors.add(new AssertionError("stream " + streamId + " reset: " + errorCode));
        }

        String summary() {
            return "bulk bytes received when the paced response ended: " + bulkBytesAtPacedEnd + " (its share: "
                    + SHARE + ")";
        }
    }
}
