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
package io.netty.microbench.http2;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http2.DefaultHttp2Connection;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2Stream;
import io.netty.handler.codec.http2.HttpConversionUtil;
import io.netty.handler.codec.http2.HttpToHttp2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.InboundHttp2ToHttpAdapterBuilder;
import io.netty.handler.codec.http2.StreamByteDistributor;
import io.netty.handler.codec.http2.UniformStreamByteDistributor;
import io.netty.handler.codec.http2.WeightedFairQueueByteDistributor;
import io.netty.microbench.util.AbstractMicrobenchmark;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The scenario users hit: an HTTP/2 server ({@code HttpToHttp2ConnectionHandler} with
 * {@code InboundHttp2ToHttpAdapter}, one event-loop thread on {@code transport}) answers every request with
 * {@code writeAndFlush(FullHttpResponse)} of a cached {@code bodySize} body; an h2c client on NIO sends bursts of
 * {@code burst} requests on one connection. One operation is one burst, all responses received. Counters (rates;
 * divide by {@code responses} for values per response): {@code serverByteBufs} ByteBufs written at the head of the
 * server pipeline, {@code dataFrames} DATA frames received, {@code serverCpuNanos} CPU time of the server's
 * event-loop thread. {@link #inFlightWritabilityOff} runs in a JVM with
 * {@code -Dio.netty.iouring.inFlightWritability=false}; it compiles and runs against upstream's artifacts too.
 */
@State(Scope.Benchmark)
public class Http2ResponseBenchmark extends AbstractMicrobenchmark {

    public enum Transport {
        NIO {
            @Override
            IoHandlerFactory factory() {
                return NioIoHandler.newFactory();
            }

            @Override
            Class<? extends ServerChannel> serverChannel() {
                return NioServerSocketChannel.class;
            }
        },
        EPOLL {
            @Override
            IoHandlerFactory factory() {
                return EpollIoHandler.newFactory();
            }

            @Override
            Class<? extends ServerChannel> serverChannel() {
                return EpollServerSocketChannel.class;
            }
        },
        IO_URING {
            @Override
            IoHandlerFactory factory() {
                return IoUringIoHandler.newFactory();
            }

            @Override
            Class<? extends ServerChannel> serverChannel() {
                return IoUringServerSocketChannel.class;
            }
        };

        abstract IoHandlerFactory factory();

        abstract Class<? extends ServerChannel> serverChannel();
    }

    public enum Distributor {
        /** Whatever the Netty on the class path defaults to. */
        DEFAULT {
            @Override
            StreamByteDistributor newDistributor(Http2Connection connection) {
                return null;
            }
        },
        WFQ {
            @Override
            StreamByteDistributor newDistributor(Http2Connection connection) {
                return new WeightedFairQueueByteDistributor(connection);
            }
        },
        UNIFORM_1K {
            @Override
            StreamByteDistributor newDistributor(Http2Connection connection) {
                return new UniformStreamByteDistributor(connection);
            }
        },
        UNIFORM_16K {
            @Override
            StreamByteDistributor newDistributor(Http2Connection connection) {
                UniformStreamByteDistributor distributor = new UniformStreamByteDistributor(connection);
                distributor.minAllocationChunk(16 * 1024);
                return distributor;
            }
        };

        abstract StreamByteDistributor newDistributor(Http2Connection connection);
    }

    @Param({ "IO_URING", "NIO", "EPOLL" })
    public Transport transport;

    @Param({ "WFQ", "DEFAULT" })
    public Distributor distributor;

    @Param({ "65536", "16384" })
    public int bodySize;

    @Param({ "4", "16" })
    public int burst;

    private static final int CLIENT_WINDOW = 1 << 24;

    private EventLoopGroup serverGroup;
    private EventLoopGroup clientGroup;
    private Channel server;
    private Channel client;
    private ByteBuf body;
    private Client clientHandler;
    private long serverThreadId;
    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    // Written by the server's event loop, read by the benchmark thread after each burst.
    private volatile long serverByteBufs;

    /** Per-operation costs, reported as rates. */
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class Costs {
        public long responses;
        public long serverByteBufs;
        public long dataFrames;
        public long serverCpuNanos;

        @Setup(Level.Iteration)
        public void reset() {
            responses = 0;
            serverByteBufs = 0;
            dataFrames = 0;
            serverCpuNanos = 0;
        }
    }

    /** Counts the ByteBufs the server writes, at the head of its pipeline. */
    private final class WriteCounter extends ChannelOutboundHandlerAdapter {
        private long count;

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            if (msg instanceof ByteBuf) {
                serverByteBufs = ++count;
            }
            ctx.write(msg, promise);
        }
    }

    @ChannelHandler.Sharable
    private final class Responder extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
            FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK,
                    body.retainedDuplicate());
            String streamId = HttpConversionUtil.ExtensionHeaderNames.STREAM_ID.text().toString();
            response.headers().set(streamId, request.headers().get(streamId));
            response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, bodySize);
            ctx.writeAndFlush(response);
        }
    }

    /** The client: sends a burst of GETs and counts the DATA frames until every response ended. */
    private static final class Client extends Http2FrameAdapter {
        Http2ConnectionHandler handler;
        ChannelHandlerContext ctx;
        long dataFrames;
        private int pending;
        private CountDownLatch done;

        void burst(int requests, CountDownLatch latch) {
            done = latch;
            pending = requests;
            Http2Connection connection = handler.connection();
            for (int i = 0; i < requests; i++) {
                int id = connection.local().incrementAndGetNextStreamId();
                Http2Headers headers = new DefaultHttp2Headers().method("GET").path("/").scheme("http")
                        .authority("localhost");
                handler.encoder().writeHeaders(ctx, id, headers, 0, true, ctx.newPromise());
            }
            ctx.flush();
        }

        @Override
        public int onDataRead(ChannelHandlerContext ctx, int streamId, ByteBuf data, int padding,
                              boolean endOfStream) {
            dataFrames++;
            if (endOfStream && --pending == 0) {
                done.countDown();
            }
            return data.readableBytes() + padding;
        }
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        body = Unpooled.unreleasableBuffer(Unpooled.directBuffer(bodySize).writeZero(bodySize));
        serverGroup = new MultiThreadIoEventLoopGroup(1, transport.factory());
        clientGroup = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        final Responder responder = new Responder();
        server = new ServerBootstrap().group(serverGroup).channel(transport.serverChannel())
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        Http2Connection connection = new DefaultHttp2Connection(true);
                        StreamByteDistributor d = distributor.newDistributor(connection);
                        if (d != null) {
                            connection.remote().flowController(new DefaultHttp2RemoteFlowController(connection, d));
                        }
                        ch.pipeline().addLast(new WriteCounter());
                        ch.pipeline().addLast(new HttpToHttp2ConnectionHandlerBuilder()
                                .connection(connection)
                                .frameListener(new InboundHttp2ToHttpAdapterBuilder(connection)
                                        .maxContentLength(1024 * 1024).propagateSettings(false).build())
                                .build());
                        ch.pipeline().addLast(responder);
                    }
                }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        serverThreadId = serverGroup.submit(() -> Thread.currentThread().getId()).get();

        clientHandler = new Client();
        client = new Bootstrap().group(clientGroup).channel(NioSocketChannel.class)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        Http2ConnectionHandler handler = new Http2ConnectionHandlerBuilder().server(false)
                                .frameListener(clientHandler)
                                .initialSettings(new Http2Settings().initialWindowSize(CLIENT_WINDOW)
                                        .maxConcurrentStreams(1000))
                                .build();
                        clientHandler.handler = handler;
                        ch.pipeline().addLast(handler);
                    }
                }).connect(server.localAddress()).sync().channel();
        clientGroup.submit(() -> {
            clientHandler.ctx = client.pipeline().context(clientHandler.handler);
            Http2Connection connection = clientHandler.handler.connection();
            Http2Stream connectionStream = connection.connectionStream();
            connection.local().flowController().incrementWindowSize(connectionStream, CLIENT_WINDOW);
            client.flush();
            return null;
        }).get();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        client.close().sync();
        server.close().sync();
        clientGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        serverGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
    }

    private void burst(Costs costs) throws Exception {
        final CountDownLatch done = new CountDownLatch(1);
        long cpuBefore = threads.getThreadCpuTime(serverThreadId);
        long bufsBefore = serverByteBufs;
        long framesBefore = clientGroup.submit(() -> clientHandler.dataFrames).get();
        clientGroup.execute(() -> clientHandler.burst(burst, done));
        if (!done.await(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("burst did not complete");
        }
        costs.serverCpuNanos += threads.getThreadCpuTime(serverThreadId) - cpuBefore;
        costs.serverByteBufs += serverByteBufs - bufsBefore;
        costs.dataFrames += clientGroup.submit(() -> clientHandler.dataFrames).get() - framesBefore;
        costs.responses += burst;
    }

    /**
     * {@code -Dh2bench.<param>=v1,v2} narrows a parameter (transport, distributor, bodySize, burst) when the
     * benchmark runs through {@link #run()}.
     */
    @Override
    protected ChainedOptionsBuilder newOptionsBuilder() throws Exception {
        ChainedOptionsBuilder builder = super.newOptionsBuilder();
        for (String param : new String[] { "transport", "distributor", "bodySize", "burst" }) {
            String values = System.getProperty("h2bench." + param);
            if (values != null) {
                builder.param(param, values.split(","));
            }
        }
        return builder;
    }

    @Benchmark
    public void fork(Costs costs) throws Exception {
        burst(costs);
    }

    @Benchmark
    @Fork(jvmArgsAppend = "-Dio.netty.iouring.inFlightWritability=false")
    public void inFlightWritabilityOff(Costs costs) throws Exception {
        burst(costs);
    }
}
