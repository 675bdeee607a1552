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
package io.netty.testsuite.fork.soak;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufHolder;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.DuplexChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.uring.IoUringChannelOption;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringIoHandlerConfig;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpChunkedInput;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http2.DefaultHttp2Connection;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2RemoteFlowController;
import io.netty.handler.codec.http2.Http2Stream;
import io.netty.handler.codec.http2.Http2DataChunkedInput;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2FrameStreamException;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.HttpConversionUtil;
import io.netty.handler.codec.http2.HttpToHttp2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.InboundHttp2ToHttpAdapterBuilder;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.ApplicationProtocolNegotiationHandler;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeTimeoutException;
import io.netty.handler.stream.ChunkedStream;
import io.netty.handler.stream.ChunkedWriteHandler;
import io.netty.testsuite.fork.uring.IoUringSocketTestPermutation;
import io.netty.util.AttributeKey;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ScheduledFuture;

import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

import javax.net.ssl.SSLException;

/** One server of the soak: a transport and an HTTP/2 pipeline, answering {@link SoakBodies} paths. */
final class SoakServer {
    /** The server's SETTINGS_MAX_CONCURRENT_STREAMS; the greedy clients open more. */
    static final int MAX_CONCURRENT_STREAMS = 100;
    /**
     * Netty's default water marks: the bound's unit. The servers keep their transport's default marks (io_uring's are
     * twice these, NIO's and epoll's these), so a connection holds at most twice this high water mark and a message.
     */
    static final WriteBufferWaterMark WATER_MARK = WriteBufferWaterMark.DEFAULT;
    private static final int ZERO_COPY_THRESHOLD = 16 * 1024;
    private static final int CHUNK = 8 * 1024;
    /** Runs {@code ss} for the stalls' kernel view, off the event loops. */
    private static final ExecutorService STALL_PROBES = Executors.newSingleThreadExecutor(
            new DefaultThreadFactory("soak-stall-probe", true));

    enum Transport {
        NIO, IO_URING, IO_URING_RING, IO_URING_ZC;

        String label() {
            switch (this) {
                case NIO: return "nio";
                case IO_URING: return "io_uring";
                case IO_URING_RING: return "io_uring+ring";
                default: return "io_uring+zc";
            }
        }
    }

    enum Pipeline {
        /** {@code HttpToHttp2ConnectionHandler} + {@code InboundHttp2ToHttpAdapter}, full HTTP messages. */
        HANDLER,
        /** {@code Http2FrameCodec} + {@code Http2MultiplexHandler}, a child channel per stream. */
        CODEC;

        String label() {
            return this == HANDLER ? "h2-handler" : "frame-codec";
        }
    }

    /**
     * {@code soak.closingLoops} (default {@code true}): the server runs on {@link ClosingIoEventLoopGroup}, whose loops
     * close their channels also when upstream's loop skips it at shutdown; {@code false} runs upstream's loops as they
     * are (the event-loop shutdown fault then fails now and then, docs/soak.md).
     */
    static final boolean CLOSING_LOOPS = booleanProperty("soak.closingLoops", true);

    /**
     * {@code soak.tlsLinger} (milliseconds, default 5000; 0 turns it off): a TLS server connection closed through its
     * pipeline (the HTTP/2 handler's close once a graceful GOAWAY's streams are done) sends close_notify and FIN, then
     * keeps reading until its client closes, for at most this long ({@link LingeringClose}). Netty's close closes the
     * socket as soon as close_notify is written: the client's frames still in flight (WINDOW_UPDATEs for the
     * responses it is reading) reach a closed socket, whose RST makes the client lose the responses it had not read
     * yet; {@code SslHandler}'s close_notify read timeout does not help on OpenSSL, whose engine reports every unwrap
     * after its own close_notify as CLOSED, which {@code SslHandler} takes for the client's (docs/soak.md).
     */
    static final long TLS_LINGER_MILLIS = Long.getLong("soak.tlsLinger", 5000);

    /** The server's connections by their peer's port: the clients look up the server side of a stalled stream. */
    static final Map<Integer, Channel> CONNECTIONS_BY_PEER_PORT = new ConcurrentHashMap<>();
    /** Every connection the server accepted (also the closed ones) by its peer's port. */
    static final Map<Integer, Channel> ACCEPTED_BY_PEER_PORT = new ConcurrentHashMap<>();
    /**
     * The ports of the TLS clients that broke their TLS on purpose (closed mid-handshake, sent a truncated record),
     * added by the client before it does: a failed handshake or a TLS decoding error of the server's connection is
     * explained by its client only if the client's port is here. An entry goes once the server's connection has
     * counted its handshake's outcome and closed.
     */
    static final Set<Integer> TLS_BROKEN_BY_PEER_PORT = ConcurrentHashMap.newKeySet();
    /**
     * A frame-codec connection's open stream channels by stream id, for a stall's view: read and written on the
     * connection's event loop only (its stream channels share it).
     */
    private static final AttributeKey<Map<Integer, Channel>> STREAM_CHANNELS =
            AttributeKey.valueOf(SoakServer.class, "streamChannels");

    private final Transport transport;
    private final Pipeline pipeline;
    /** {@code null} for h2c. */
    private final SoakTls tls;
    private final SoakStats stats;
    /**
     * A test-only fault ({@code Http2SoakLeakAttributionTest}): every connection holds a buffer that is never released,
     * reachable from the connection until the configuration ends.
     */
    private static final AttributeKey<ByteBuf> LEAK_PROBE = AttributeKey.valueOf(SoakServer.class, "leakProbe");

    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    private final boolean leakProbe;
    private Channel serverChannel;

    SoakServer(Transport transport, Pipeline pipeline, SoakTls tls, SoakStats stats) {
        this(transport, pipeline, tls, stats, false);
    }

    SoakServer(Transport transport, Pipeline pipeline, SoakTls tls, SoakStats stats, boolean leakProbe) {
        this.transport = transport;
        this.pipeline = pipeline;
        this.tls = tls;
        this.stats = stats;
        this.leakProbe = leakProbe;
        String name = "soak-" + transport.label() + "-" + pipeline.label()
                + (tls == null ? "" : "-" + tls.mode.key());
        IoHandlerFactory bossFactory;
        IoHandlerFactory workerFactory;
        if (transport == Transport.NIO) {
            bossFactory = NioIoHandler.newFactory();
            workerFactory = NioIoHandler.newFactory();
        } else {
            // Small ring, small buffers: the ring runs dry under load and recv falls back, as it may in use.
            IoUringIoHandlerConfig config = IoUringSocketTestPermutation.handlerConfig(
                    transport == Transport.IO_URING_RING);
            bossFactory = IoUringIoHandler.newFactory();
            workerFactory = IoUringIoHandler.newFactory(config);
        }
        ThreadFactory bossThreads = new DefaultThreadFactory(name + "-boss", true);
        ThreadFactory workerThreads = new DefaultThreadFactory(name + "-worker", true);
        if (CLOSING_LOOPS) {
            boss = new ClosingIoEventLoopGroup(1, bossThreads, bossFactory);
            workers = new ClosingIoEventLoopGroup(2, workerThreads, workerFactory);
        } else {
            boss = new MultiThreadIoEventLoopGroup(1, bossThreads, bossFactory);
            workers = new MultiThreadIoEventLoopGroup(2, workerThreads, workerFactory);
        }
    }

    /**
     * The server's event loops that reached their shutdown's confirmation without having closed their channels
     * (upstream's {@code SingleThreadIoEventLoop}, see {@link ClosingIoEventLoopGroup}), so that the soak's loops
     * closed them; 0 with {@code soak.closingLoops=false}, whose loops leave them open.
     */
    int loopsThatSkippedClose() {
        int skipped = 0;
        for (EventLoopGroup group : new EventLoopGroup[] {boss, workers}) {
            if (group instanceof ClosingIoEventLoopGroup) {
                skipped += ((ClosingIoEventLoopGroup) group).skippedCloses();
            }
        }
        return skipped;
    }

    InetSocketAddress start() throws InterruptedException {
        ServerBootstrap sb = new ServerBootstrap().group(boss, workers)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        initConnection(ch);
                    }
                });
        if (transport == Transport.NIO) {
            sb.channel(NioServerSocketChannel.class);
        } else {
            sb.channel(IoUringServerSocketChannel.class);
            if (transport == Transport.IO_URING_RING) {
                sb.childOption(IoUringChannelOption.IO_URING_BUFFER_GROUP_ID,
                        IoUringSocketTestPermutation.BUFFER_GROUP_ID);
            } else if (transport == Transport.IO_URING_ZC) {
                sb.childOption(IoUringChannelOption.IO_URING_WRITE_ZERO_COPY_THRESHOLD, ZERO_COPY_THRESHOLD);
            }
        }
        serverChannel = sb.bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        return (InetSocketAddress) serverChannel.localAddress();
    }

    private static boolean booleanProperty(String name, boolean defaultValue) {
        String value = System.getProperty(name, "").trim();
        if (value.isEmpty()) {
            return defaultValue;
        }
        if ("true".equalsIgnoreCase(value) || "false".equalsIgnoreCase(value)) {
            return Boolean.parseBoolean(value);
        }
        throw new IllegalArgumentException(name + ": '" + value + "' is not true or false");
    }

    /** Starts every event loop (and so its io_uring ring and buffers) before the baseline of direct memory. */
    void startEventLoops() throws InterruptedException {
        for (EventExecutor loop : workers) {
            loop.submit(() -> { }).sync();
        }
    }

    /** Fault: shuts the event loops down at once (no quiet period) with whatever streams are pending. */
    boolean shutdownNow(long timeout, TimeUnit unit) throws InterruptedException {
        boss.shutdownGracefully(0, timeout, unit);
        workers.shutdownGracefully(0, timeout, unit);
        return boss.awaitTermination(timeout, unit) & workers.awaitTermination(timeout, unit);
    }

    /**
     * Once the event loops have terminated: counts and releases the zero-copy references they abandoned
     * ({@link AbandonedZeroCopyWrites}; -1: not inspected), then forgets the configuration's connections, so that
     * nothing the configuration made stays reachable from the run's static state.
     */
    long endOfConfiguration() {
        long abandoned = workers.isTerminated() ? AbandonedZeroCopyWrites.release(ACCEPTED_BY_PEER_PORT.values())
                : -1;
        CONNECTIONS_BY_PEER_PORT.clear();
        ACCEPTED_BY_PEER_PORT.clear();
        TLS_BROKEN_BY_PEER_PORT.clear();
        return abandoned;
    }

    private static Http2Settings settings() {
        return Http2Settings.defaultSettings().maxConcurrentStreams(MAX_CONCURRENT_STREAMS);
    }

    private void initConnection(Channel ch) {
        ch.pipeline().addLast(new ConnectionCounter());
        if (tls == null) {
            addHttp2(ch.pipeline());
            return;
        }
        // HTTP/2 over TLS as its users set it up: the HTTP/2 handlers once the handshake agreed on h2 by ALPN.
        SslHandler sslHandler = tls.newServerHandler(ch.alloc());
        sslHandler.handshakeFuture().addListener(f -> handshakeDone(ch, f.cause()));
        ch.pipeline().addLast(sslHandler);
        if (TLS_LINGER_MILLIS > 0) {
            ch.pipeline().addLast(new LingeringClose(sslHandler));
        }
        ch.pipeline().addLast(new H2Negotiation());
    }

    /**
     * TLS: turns a close that comes through the pipeline, once the handshake is done, into a lingering close:
     * close_notify, then FIN (shutdownOutput) once it is written, then reading on until the client closes (the
     * channel closes at the client's FIN or RST) or {@link #TLS_LINGER_MILLIS} pass (listed with the unexpected
     * events: the clients close at the server's FIN). The faults' abrupt closes (the pipeline's first context, the
     * event loops' shutdown) do not pass here.
     */
    private final class LingeringClose extends ChannelOutboundHandlerAdapter {
        private final SslHandler sslHandler;
        private boolean lingering;

        LingeringClose(SslHandler sslHandler) {
            this.sslHandler = sslHandler;
        }

        @Override
        public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
            Channel ch = ctx.channel();
            if (lingering) {
                // A later close (the HTTP/2 handler's, once a frame it answers the client with could not be written
                // on the closed output) waits for the lingering one.
                ch.closeFuture().addListener(f -> promise.trySuccess());
                return;
            }
            if (!ch.isActive() || !sslHandler.handshakeFuture().isSuccess()) {
                ctx.close(promise);
                return;
            }
            lingering = true;
            ScheduledFuture<?> timeout = ctx.executor().schedule(() -> {
                stats.sample("server " + ch + ": its client did not close within " + TLS_LINGER_MILLIS
                        + " ms of the server's close_notify and FIN", null);
                ctx.close();
            }, TLS_LINGER_MILLIS, TimeUnit.MILLISECONDS);
            ch.closeFuture().addListener(f -> {
                timeout.cancel(false);
                promise.trySuccess();
            });
            // FIN in a task of its own: not from the write's completion, whose outbound buffer is still being worked
            // through (shutdownOutput fails what is left in it).
            sslHandler.closeOutbound().addListener(f -> ch.eventLoop().execute(() -> {
                if (ch.isActive()) {
                    ((DuplexChannel) ch).shutdownOutput();
                }
            }));
        }
    }

    /** Counts a server handshake's outcome; a failure is a breach unless the client broke its TLS on purpose. */
    private void handshakeDone(Channel ch, Throwable cause) {
        if (cause == null) {
            stats.tlsHandshakes.increment();
            return;
        }
        int peerPort = ((InetSocketAddress) ch.remoteAddress()).getPort();
        if (TLS_BROKEN_BY_PEER_PORT.remove(peerPort)) {
            stats.tlsBrokenByClient(cause);
            if (cause instanceof SslHandshakeTimeoutException) {
                // The client had closed its connection (RST or FIN) at once, the server noticed only now (io_uring,
                // upstream too: docs/soak.md): reported with the server's and the kernel's view, not judged.
                stats.tlsBrokenNoticedLate.increment();
                String server = "server " + ch + " active " + ch.isActive() + ioUringWriteState(ch);
                CompletableFuture.supplyAsync(() -> sockets(peerPort), STALL_PROBES)
                        .exceptionally(t -> "ss failed: " + t)
                        .thenAccept(kernel -> stats.sample(server + ": its client broke the TLS handshake and closed,"
                                + " the server's handshake timed out; kernel: " + kernel, null));
            }
        } else {
            stats.tlsHandshakeFailures.increment();
            stats.sample("server " + ch + ": TLS handshake failed, its client did not break it", cause);
        }
    }

    /** The HTTP/2 handlers of the connection, at the end of its pipeline. */
    private void addHttp2(ChannelPipeline p) {
        if (pipeline == Pipeline.HANDLER) {
            Http2Connection connection = new DefaultHttp2Connection(true);
            p.addLast(new HttpToHttp2ConnectionHandlerBuilder()
                    .connection(connection)
                    .initialSettings(settings())
                    .frameListener(new InboundHttp2ToHttpAdapterBuilder(connection)
                            .maxContentLength(1024).propagateSettings(false).build())
                    .build());
            p.addLast(new HeldBytes());
            p.addLast(new ChunkedWriteHandler());
            p.addLast(new FullRequestRoute());
            p.addLast(new ExceptionRecorder());
        } else {
            p.addLast(Http2FrameCodecBuilder.forServer().initialSettings(settings()).build());
            p.addLast(new Http2MultiplexHandler(new ChannelInitializer<Channel>() {
                @Override
                protected void initChannel(Channel child) {
                    Map<Integer, Channel> streams = streamChannels(child.parent());
                    int id = ((Http2StreamChannel) child).stream().id();
                    streams.put(id, child);
                    child.closeFuture().addListener(f -> streams.remove(id, child));
                    child.pipeline().addLast(new HeldBytes());
                    child.pipeline().addLast(new ChunkedWriteHandler());
                    child.pipeline().addLast(new StreamRoute());
                    child.pipeline().addLast(new ExceptionRecorder());
                }
            }));
            p.addLast(new ExceptionRecorder());
        }
    }

    /**
     * Adds the HTTP/2 handlers once the handshake agreed on h2 (the contexts offer nothing else: anything else is an
     * unexpected exception). A failed handshake closes the connection ({@link #handshakeDone} counts it); other
     * exceptions before the HTTP/2 handlers are there are judged as at the end of the pipeline.
     */
    private final class H2Negotiation extends ApplicationProtocolNegotiationHandler {
        H2Negotiation() {
            super(ApplicationProtocolNames.HTTP_1_1);
        }

        @Override
        protected void configurePipeline(ChannelHandlerContext ctx, String protocol) {
            String problem = tls.problem(ctx.pipeline().get(SslHandler.class));
            if (problem != null) {
                throw new IllegalStateException("server: " + problem);
            }
            addHttp2(ctx.pipeline());
        }

        @Override
        protected void handshakeFailure(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) throws Exception {
            if (cause instanceof DecoderException && cause.getCause() instanceof SSLException) {
                // The handshake's failure: handshakeFailure(...), then this handler leaves the pipeline.
                super.exceptionCaught(ctx, cause);
            } else {
                recordException(ctx, cause, stats);
            }
        }
    }

    /** The connection's {@link #STREAM_CHANNELS}, created on first use; on the connection's event loop only. */
    private static Map<Integer, Channel> streamChannels(Channel connection) {
        Map<Integer, Channel> streams = connection.attr(STREAM_CHANNELS).get();
        if (streams == null) {
            streams = new HashMap<>();
            connection.attr(STREAM_CHANNELS).set(streams);
        }
        return streams;
    }

    /** Faults and graceful close after a response was written: on the connection, under its in-flight writes. */
    private static void afterResponse(char route, Channel connection) {
        switch (route) {
            case SoakBodies.CLOSE:
                // Past the HTTP/2 handler (whose close is graceful): the transport closes with writes in flight.
                connection.pipeline().firstContext().close();
                break;
            case SoakBodies.SHUTDOWN_OUTPUT:
                ((DuplexChannel) connection).shutdownOutput();
                break;
            case SoakBodies.GOAWAY:
                // Through the HTTP/2 handler: GOAWAY, then the open streams finish.
                connection.close();
                break;
            default:
                break;
        }
    }

    /** Counts the connection, and its writability changes (the first handler: it sees every change). */
    private final class ConnectionCounter extends ChannelInboundHandlerAdapter {
        @Override
        public void channelActive(ChannelHandlerContext ctx) throws Exception {
            stats.serverConnections.increment();
            SoakStats.addAndTrackPeak(stats.openServerConnections, stats.peakServerConnections, 1);
            int peerPort = ((InetSocketAddress) ctx.channel().remoteAddress()).getPort();
            CONNECTIONS_BY_PEER_PORT.put(peerPort, ctx.channel());
            ACCEPTED_BY_PEER_PORT.put(peerPort, ctx.channel());
            if (leakProbe) {
                // A trace of its own (the detector reports each distinct trace once): every probe is reported.
                ctx.channel().attr(LEAK_PROBE).set(ctx.alloc().directBuffer(16).writeLong(peerPort)
                        .touch("leak probe of the connection from port " + peerPort));
            }
            super.channelActive(ctx);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) throws Exception {
            stats.openServerConnections.decrementAndGet();
            int peerPort = ((InetSocketAddress) ctx.channel().remoteAddress()).getPort();
            CONNECTIONS_BY_PEER_PORT.remove(peerPort, ctx.channel());
            SslHandler sslHandler = ctx.pipeline().get(SslHandler.class);
            if (sslHandler != null && sslHandler.handshakeFuture().isDone()) {
                // Otherwise the handshake fails in SslHandler's channelInactive, after this one, and handshakeDone
                // takes the entry.
                TLS_BROKEN_BY_PEER_PORT.remove(peerPort);
            }
            super.channelInactive(ctx);
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) throws Exception {
            stats.writabilityChanges.increment();
            super.channelWritabilityChanged(ctx);
        }
    }

    /**
     * Response bytes written by the handlers above it and not completed yet (the bound of the direct memory counts
     * them: the application holds them, not the transport), and response bytes written.
     */
    private final class HeldBytes extends ChannelOutboundHandlerAdapter {
        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) throws Exception {
            final long bytes;
            if (msg instanceof ByteBufHolder) {
                bytes = ((ByteBufHolder) msg).content().readableBytes();
            } else if (msg instanceof ByteBuf) {
                bytes = ((ByteBuf) msg).readableBytes();
            } else {
                bytes = 0;
            }
            if (bytes > 0) {
                SoakStats.addAndTrackPeak(stats.heldBytes, stats.peakHeldBytes, bytes);
                promise = promise.unvoid();
                promise.addListener(f -> {
                    stats.heldBytes.addAndGet(-bytes);
                    if (f.isSuccess()) {
                        stats.bodyBytesWritten.add(bytes);
                    }
                });
            }
            ctx.write(msg, promise);
        }
    }

    /** The {@code HttpToHttp2ConnectionHandler} pipeline's route: full requests in, HTTP/1 style responses out. */
    private static final class FullRequestRoute extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
            SoakBodies.Request r = new SoakBodies.Request(request.uri());
            String streamIdHeader = HttpConversionUtil.ExtensionHeaderNames.STREAM_ID.text().toString();
            String streamId = request.headers().get(streamIdHeader);
            if (r.route == SoakBodies.CHUNKED) {
                HttpResponse response = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
                response.headers().set(streamIdHeader, streamId);
                response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, r.size);
                ctx.write(response);
                ctx.writeAndFlush(new HttpChunkedInput(new ChunkedStream(
                        new ByteArrayInputStream(SoakBodies.master(), r.offset, r.size), CHUNK)));
            } else {
                ByteBuf body = ctx.alloc().directBuffer(r.size).writeBytes(SoakBodies.master(), r.offset, r.size);
                DefaultFullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                        HttpResponseStatus.OK, body);
                response.headers().set(streamIdHeader, streamId);
                response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, r.size);
                ctx.writeAndFlush(response);
            }
            afterResponse(r.route, ctx.channel());
        }
    }

    /** The {@code Http2MultiplexHandler} pipeline's route: a stream channel per request. */
    private static final class StreamRoute extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof Http2HeadersFrame && ((Http2HeadersFrame) msg).isEndStream()) {
                    respond(ctx, ((Http2HeadersFrame) msg).headers());
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        private static void respond(ChannelHandlerContext ctx, Http2Headers requestHeaders) {
            SoakBodies.Request r = new SoakBodies.Request(requestHeaders.path());
            Http2Headers headers = new DefaultHttp2Headers().status(HttpResponseStatus.OK.codeAsText())
                    .setInt(HttpHeaderNames.CONTENT_LENGTH, r.size);
            if (r.route == SoakBodies.CHUNKED) {
                ctx.write(new DefaultHttp2HeadersFrame(headers));
                ctx.writeAndFlush(new Http2DataChunkedInput(new ChunkedStream(
                        new ByteArrayInputStream(SoakBodies.master(), r.offset, r.size), CHUNK),
                        ((Http2StreamChannel) ctx.channel()).stream()));
            } else if (r.size == 0) {
                ctx.writeAndFlush(new DefaultHttp2HeadersFrame(headers, true));
            } else {
                ctx.write(new DefaultHttp2HeadersFrame(headers));
                ByteBuf body = ctx.alloc().directBuffer(r.size).writeBytes(SoakBodies.master(), r.offset, r.size);
                ctx.writeAndFlush(new DefaultHttp2DataFrame(body, true));
            }
            afterResponse(r.route, ctx.channel().parent());
        }
    }

    /**
     * The end of every pipeline: exceptions the peers' faults explain (I/O errors of reset or closed connections,
     * streams the peer cancelled, which {@code InboundHttp2ToHttpAdapter} reports as exceptions) are expected,
     * anything else is counted as unexpected and closes the channel.
     */
    private final class ExceptionRecorder extends ChannelDuplexHandler {
        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            recordException(ctx, cause, stats);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            // Frames no route takes (resets, window updates of child channels): released, nothing else.
            ReferenceCountUtil.release(msg);
        }
    }

    /**
     * Records a stall with three views: the client's ({@code clientView}), the server's (its connection and the
     * stream, read on the server's event loop) and the kernel's (the two sockets of the connection as {@code ss}
     * shows them: queues, timers, windows, retransmissions), so that a stall tells where the bytes wait: in the
     * server's HTTP/2 flow control, in its outbound buffer (flushed or not), in the kernel's send or receive queue, or
     * nowhere.
     */
    static void describeStall(String clientView, int clientPort, int streamId, SoakStats stats) {
        if (!stats.wantsStallText()) {
            return; // The report keeps the first stalls only; the count is the client's.
        }
        CompletableFuture<String> kernel = CompletableFuture.supplyAsync(() -> sockets(clientPort), STALL_PROBES)
                .exceptionally(t -> "ss failed: " + t)
                .completeOnTimeout("ss gave no answer within 15 s", 15, TimeUnit.SECONDS);
        Channel ch = CONNECTIONS_BY_PEER_PORT.get(clientPort);
        CompletableFuture<String> server;
        if (ch == null) {
            server = CompletableFuture.completedFuture("server: no connection from port " + clientPort);
        } else {
            CompletableFuture<String> view = new CompletableFuture<String>().completeOnTimeout(
                    "server: " + ch + ", its loop did not take the view within 15 s", 15, TimeUnit.SECONDS);
            try {
                ch.eventLoop().execute(() -> {
                    try {
                        view.complete(serverView(ch, streamId));
                    } catch (Throwable t) {
                        view.complete("server: " + ch + " view failed: " + t);
                    }
                });
            } catch (RejectedExecutionException e) {
                view.complete("server: " + ch + " on a loop that no longer runs tasks");
            }
            server = view;
        }
        server.thenCombine(kernel, (sv, k) -> clientView + "; " + sv + "; kernel: " + k)
                .thenAccept(stats::stall);
    }

    /** The server's connection and stream as the connection's event loop sees them; called on that loop. */
    private static String serverView(Channel ch, int streamId) {
        StringBuilder sb = new StringBuilder("server: " + ch
                + " active " + ch.isActive() + " writable " + ch.isWritable() + " bytesBeforeUnwritable "
                + ch.bytesBeforeUnwritable() + " bytesBeforeWritable " + ch.bytesBeforeWritable());
        ChannelOutboundBuffer out = ch.unsafe().outboundBuffer();
        if (out != null) {
            // Flushed messages not yet written by the transport, and the bytes of all messages (flushed or not).
            sb.append(", outbound buffer: flushed messages ").append(out.size())
                    .append(", pending bytes ").append(out.totalPendingWriteBytes());
        }
        sb.append(ioUringWriteState(ch));
        SslHandler sslHandler = ch.pipeline().get(SslHandler.class);
        if (sslHandler != null) {
            Future<Channel> handshake = sslHandler.handshakeFuture();
            if (!handshake.isDone()) {
                sb.append(", TLS handshake not done");
            } else if (handshake.isSuccess()) {
                sb.append(", TLS handshake done, ALPN ").append(sslHandler.applicationProtocol());
            } else {
                sb.append(", TLS handshake failed: ").append(handshake.cause());
            }
        }
        Http2ConnectionHandler h = ch.pipeline().get(Http2ConnectionHandler.class);
        if (h == null) {
            h = ch.pipeline().get(Http2FrameCodec.class);
        }
        if (h != null) {
            Http2Stream stream = h.connection().stream(streamId);
            Http2RemoteFlowController flow = h.connection().remote().flowController();
            sb.append(", connection window ").append(flow.windowSize(h.connection().connectionStream()));
            sb.append(", last stream created ").append(h.connection().remote().lastStreamCreated())
                    .append(", active streams ").append(h.connection().numActiveStreams());
            if (stream == null) {
                sb.append(", stream gone (closed or never opened)");
            } else {
                sb.append(", stream ").append(stream.state()).append(" window ").append(flow.windowSize(stream))
                        .append(" writable ").append(flow.isWritable(stream))
                        .append(" hasFlowControlled ").append(flow.hasFlowControlled(stream));
            }
            Map<Integer, Channel> streams = ch.attr(STREAM_CHANNELS).get();
            Channel child = streams == null ? null : streams.get(streamId);
            if (child != null) {
                // The frame-codec pipeline's stream channel, whose own water marks pace ChunkedWriteHandler.
                sb.append(", stream channel writable ").append(child.isWritable())
                        .append(" bytesBeforeUnwritable ").append(child.bytesBeforeUnwritable())
                        .append(" bytesBeforeWritable ").append(child.bytesBeforeWritable());
            }
        }
        return sb.toString();
    }

    /**
     * For an io_uring channel, its scheduled-I/O bits and outstanding writes (private fields of Netty's
     * {@code AbstractIoUringChannel}, read by reflection for this diagnostic only), to tell a channel that waits for a
     * write's completion from one that submitted none; empty for other channels.
     */
    private static String ioUringWriteState(Channel ch) {
        for (Class<?> c = ch.getClass(); c != null; c = c.getSuperclass()) {
            if ("io.netty.channel.uring.AbstractIoUringChannel".equals(c.getName())) {
                try {
                    Field ioState = c.getDeclaredField("ioState");
                    Field writes = c.getDeclaredField("numOutstandingWrites");
                    ioState.setAccessible(true);
                    writes.setAccessible(true);
                    return ", io_uring ioState 0x" + Integer.toHexString(ioState.getByte(ch) & 0xff)
                            + " outstanding writes " + writes.getShort(ch);
                } catch (ReflectiveOperationException | RuntimeException e) {
                    return ", io_uring state: " + e;
                }
            }
        }
        return "";
    }

    /** The TCP sockets of the connection whose client port is {@code clientPort}, as {@code ss -tnoim} prints them. */
    private static String sockets(int clientPort) {
        File out = null;
        try {
            out = File.createTempFile("soak-ss", ".txt");
            Process p = new ProcessBuilder("ss", "-tnoimH", "( sport = :" + clientPort + " or dport = :"
                    + clientPort + " )").redirectErrorStream(true).redirectOutput(out).start();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return "ss did not finish within 10 s";
            }
            String text = new String(Files.readAllBytes(out.toPath()), StandardCharsets.UTF_8).trim();
            return text.isEmpty() ? "no socket of port " + clientPort + " left" : text.replaceAll("\\s+", " ");
        } catch (IOException e) {
            return "ss unavailable: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        } finally {
            if (out != null && !out.delete()) {
                out.deleteOnExit();
            }
        }
    }

    private static void recordException(ChannelHandlerContext ctx, Throwable cause, SoakStats stats) {
        if (isExpected(ctx.channel(), cause)) {
            // The transport closes after its I/O errors; a stream's error ends only the stream.
            stats.expected(cause);
        } else {
            stats.unexpectedExceptions.increment();
            stats.sample("server " + ctx.channel() + " exceptionCaught", cause);
            ctx.close();
        }
    }

    /**
     * Whether the peer's faults explain {@code cause}: I/O errors, streams the peer cancelled, and TLS records that
     * did not decode on a connection whose client broke its TLS on purpose.
     */
    static boolean isExpected(Channel ch, Throwable cause) {
        if (cause instanceof DecoderException && cause.getCause() instanceof SSLException) {
            Channel connection = ch instanceof Http2StreamChannel ? ch.parent() : ch;
            return connection.remoteAddress() instanceof InetSocketAddress && TLS_BROKEN_BY_PEER_PORT.contains(
                    ((InetSocketAddress) connection.remoteAddress()).getPort());
        }
        return isExpected(cause);
    }

    private static boolean isExpected(Throwable cause) {
        if (cause instanceof IOException) {
            return true;
        }
        if (cause instanceof Http2FrameStreamException) {
            Http2Error error = ((Http2FrameStreamException) cause).error();
            return error == Http2Error.CANCEL || error == Http2Error.STREAM_CLOSED;
        }
        if (cause instanceof Http2Exception.StreamException) {
            Http2Error error = ((Http2Exception) cause).error();
            return error == Http2Error.CANCEL || error == Http2Error.STREAM_CLOSED;
        }
        return cause instanceof Http2Exception && cause.getCause() instanceof IOException;
    }
}
