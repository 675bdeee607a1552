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
package io.netty.handler.codec.http2;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.stream.ChunkedStream;
import io.netty.handler.stream.ChunkedWriteHandler;
import io.netty.util.NetUtil;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * On a TCP connection over the loopback interface: a response written by a handler that follows its stream channel's
 * writability ({@link ChunkedWriteHandler} on an {@link Http2MultiplexHandler} stream channel) next to bulk responses,
 * to a client that reads slower than the server writes. The server's socket is full most of the time, so the
 * connection's writes complete from {@code OP_WRITE}, outside {@link Http2ConnectionHandler}'s flush. The paced
 * response must get its share of the connection while the bulk responses still have data queued in flow control,
 * rather than wait for them to end. {@link Http2StreamChannelWritabilityTest} models the same without sockets.
 */
public class Http2StreamChannelWritabilitySocketTest {
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
    private static final String PACED_PATH = "/paced";
    private static final String BULK_PATH = "/bulk";

    private EventLoopGroup serverGroup;
    private EventLoopGroup clientGroup;
    private Channel server;
    private Channel client;
    private ByteBuf body;

    @AfterEach
    public void tearDown() throws InterruptedException {
        if (client != null) {
            client.close().sync();
        }
        if (server != null) {
            server.close().sync();
        }
        if (clientGroup != null) {
            clientGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
        if (serverGroup != null) {
            serverGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
        if (body != null) {
            body.release();
        }
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    public void pacedStreamGetsItsShareNextToBulkStreamsOnASlowConnection() throws Exception {
        body = Unpooled.directBuffer(BULK_BODY).writeZero(BULK_BODY);
        final ByteBuf responseBody = body;
        final FullSocketProbe probe = new FullSocketProbe();
        serverGroup = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        clientGroup = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        server = new ServerBootstrap()
                .group(serverGroup)
                .channel(NioServerSocketChannel.class)
                .childOption(ChannelOption.SO_SNDBUF, SOCKET_BUFFER)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast(probe, Http2FrameCodecBuilder.forServer().build());
                        ch.pipeline().addLast(new Http2MultiplexHandler(new ChannelInitializer<Channel>() {
                            @Override
                            protected void initChannel(Channel child) {
                                child.pipeline().addLast(new ChunkedWriteHandler(), new Responder(responseBody));
                            }
                        }));
                    }
                })
                .bind(new InetSocketAddress(NetUtil.LOCALHOST, 0)).sync().channel();

        final Client h2Client = new Client();
        client = new Bootstrap()
                .group(clientGroup)
                .channel(NioSocketChannel.class)
                .option(ChannelOption.AUTO_READ, false)
                .option(ChannelOption.SO_RCVBUF, SOCKET_BUFFER)
                .handler(new ChannelInitializer<Channel>() {
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
                })
                .connect(server.localAddress()).sync().channel();
        final Channel ch = client;
        ch.eventLoop().submit(() -> {
            h2Client.start(ch);
            return null;
        }).sync();

        assertTrue(h2Client.done.await(30, TimeUnit.SECONDS), "responses missing: " + h2Client.done.getCount()
                + " of " + (BULK_STREAMS + 1) + "; " + h2Client.summary());
        assertTrue(h2Client.errors.isEmpty(), "errors: " + h2Client.errors);
        // The condition this test is about: the server's socket was full most of the time, so most flushes ended with
        // bytes still pending (a fast reader leaves none).
        assertTrue(probe.fullFlushes * 2 > probe.flushes, "flushes that ended with bytes pending: "
                + probe.fullFlushes + " of " + probe.flushes
                + " (more than half expected: the client did not read slower than the server wrote)");
        // The paced stream got at least half of its share: the bulk streams received at most twice theirs while its
        // body was sent. Had it waited for them, they would have received all of their bodies.
        assertTrue(h2Client.bulkBytesAtPacedEnd <= 2 * SHARE, h2Client.summary() + " (at most " + 2 * SHARE
                + " expected)");
    }

    /**
     * Answers {@value #PACED_PATH} with headers and an {@link Http2DataChunkedInput} that the
     * {@link ChunkedWriteHandler} writes while the stream channel is writable, anything else with headers and one
     * {@code DATA} frame of the whole body.
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
                    ctx.write(new DefaultHttp2HeadersFrame(new DefaultHttp2Headers().status("200")));
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
     * First in the server's connection pipeline, so it sees each flush end: counts the flushes that ended with bytes
     * still in the outbound buffer (the socket took no more, or a write of the channel was still in progress).
     */
    @ChannelHandler.Sharable
    private static final class FullSocketProbe extends ChannelOutboundHandlerAdapter {
        // Written on the server's event loop only; read once the responses are in.
        volatile int flushes;
        volatile int fullFlushes;

        @Override
        public void flush(ChannelHandlerContext ctx) {
            ctx.flush();
            ChannelOutboundBuffer buffer = ctx.channel().unsafe().outboundBuffer();
            flushes++;
            if (buffer != null && buffer.totalPendingWriteBytes() > 0) {
                fullFlushes++;
            }
        }
    }

    /**
     * Reads once every {@value #READ_INTERVAL_MICROS} microseconds at most (with {@code AUTO_READ} off, one read
     * each): a client slower than the server, whose socket is therefore full most of the time.
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
        // The client's event loop only, until done.
        private final Map<Integer, Long> received = new HashMap<Integer, Long>();
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
            received.put(streamId, 0L);
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
            long bytes = received.get(streamId) + length;
            received.put(streamId, bytes);
            if (streamId != pacedStream) {
                bulkBytes += length;
            }
            if (endOfStream) {
                long expected = streamId == pacedStream ? PACED_BODY : BULK_BODY;
                if (bytes != expected) {
                    errors.add(new AssertionError("stream " + streamId + ": body of " + bytes + " bytes, not "
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
