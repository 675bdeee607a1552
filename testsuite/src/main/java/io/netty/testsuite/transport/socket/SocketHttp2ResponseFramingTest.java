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
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http2.DefaultHttp2Connection;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2SecurityUtil;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.HttpConversionUtil;
import io.netty.handler.codec.http2.HttpToHttp2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.InboundHttp2ToHttpAdapterBuilder;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolConfig.Protocol;
import io.netty.handler.ssl.ApplicationProtocolConfig.SelectedListenerFailureBehavior;
import io.netty.handler.ssl.ApplicationProtocolConfig.SelectorFailureBehavior;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.ReferenceCountedOpenSslContext;
import io.netty.handler.ssl.ReferenceCountedOpenSslEngine;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.netty.handler.ssl.SupportedCipherSuiteFilter;
import io.netty.pkitesting.CertificateBuilder;
import io.netty.pkitesting.X509Bundle;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * HTTP/2 servers answering bursts of requests with 64 KiB bodies, as users run them: every response must leave in
 * exactly four whole 16 KiB DATA frames on every transport, whatever the transport's write completion model (the
 * windows are large enough never to end a frame), and arrive complete and intact; in clear text (h2c) and over TLS
 * with ALPN h2, on the JDK's engine and on OpenSSL's.
 */
public class SocketHttp2ResponseFramingTest extends AbstractSocketTest {
    private static final int BODY_SIZE = 64 * 1024;
    private static final int CONNECTIONS = 2;
    private static final int BURSTS = 4;
    private static final int BURST_SIZE = 16;
    private static final int BURST_INTERVAL_MILLIS = 10;
    private static final int DATA_FRAMES = BODY_SIZE / (16 * 1024);
    private static final int CLIENT_WINDOW = 16 * 1024 * 1024;
    private static final String HOST = "localhost";

    /** How the connections carry HTTP/2. */
    public enum Tls {
        /** h2c with prior knowledge. */
        NONE(null),
        /** TLS with ALPN h2 on the JDK's {@code SSLEngine}, at both ends. */
        JDK(SslProvider.JDK),
        /** TLS with ALPN h2 on OpenSSL's engine (netty-tcnative), at both ends. */
        OPENSSL(SslProvider.OPENSSL);

        final SslProvider provider;

        Tls(SslProvider provider) {
            this.provider = provider;
        }
    }

    @ParameterizedTest(name = "{index}: tls = {0}")
    @EnumSource(Tls.class)
    @Timeout(value = 60000, unit = TimeUnit.MILLISECONDS)
    public void testConnectionHandlerResponses(Tls tls, TestInfo testInfo) throws Throwable {
        run(testInfo, (sb, cb) -> testConnectionHandlerResponses(sb, cb, tls));
    }

    public void testConnectionHandlerResponses(ServerBootstrap sb, Bootstrap cb, Tls tls) throws Throwable {
        testResponses(sb, cb, tls, body -> new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
                Http2Connection connection = new DefaultHttp2Connection(true);
                ch.pipeline().addLast(new HttpToHttp2ConnectionHandlerBuilder()
                        .connection(connection)
                        .frameListener(new InboundHttp2ToHttpAdapterBuilder(connection)
                                .maxContentLength(1024).propagateSettings(false).build())
                        .build());
                ch.pipeline().addLast(new FullResponder(body));
            }
        });
    }

    @ParameterizedTest(name = "{index}: tls = {0}")
    @EnumSource(Tls.class)
    @Timeout(value = 60000, unit = TimeUnit.MILLISECONDS)
    public void testMultiplexHandlerResponses(Tls tls, TestInfo testInfo) throws Throwable {
        run(testInfo, (sb, cb) -> testMultiplexHandlerResponses(sb, cb, tls));
    }

    public void testMultiplexHandlerResponses(ServerBootstrap sb, Bootstrap cb, Tls tls) throws Throwable {
        testResponses(sb, cb, tls, body -> new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
                ch.pipeline().addLast(Http2FrameCodecBuilder.forServer().build());
                ch.pipeline().addLast(new Http2MultiplexHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel child) {
                        child.pipeline().addLast(new StreamResponder(body));
                    }
                }));
            }
        });
    }

    /**
     * Whether responses must leave in whole DATA frames; a subclass that runs with other defaults only reports the
     * framing it sees.
     */
    protected boolean expectWholeFrames() {
        return true;
    }

    private static ByteBuf newBody() {
        byte[] bytes = new byte[BODY_SIZE];
        new Random(42).nextBytes(bytes);
        return Unpooled.directBuffer(BODY_SIZE).writeBytes(bytes);
    }

    /**
     * Runs the clients against a server whose connections {@code serverInitializer} sets up to answer with
     * {@code body}, behind a server {@link SslHandler} unless {@code tls} is {@link Tls#NONE}.
     */
    private void testResponses(ServerBootstrap sb, Bootstrap cb, Tls tls,
                               Function<ByteBuf, ChannelHandler> serverInitializer) throws Throwable {
        SslContext serverContext = null;
        SslContext clientContext = null;
        ByteBuf body = newBody();
        try {
            if (tls != Tls.NONE) {
                if (tls == Tls.OPENSSL) {
                    if (!OpenSsl.isAvailable()) {
                        throw new AssertionError("OpenSSL (netty-tcnative) is not available: the " + tls
                                + " rows need it on the class path", OpenSsl.unavailabilityCause());
                    }
                    assertTrue(OpenSsl.isAlpnSupported(), "OpenSSL " + OpenSsl.versionString() + " without ALPN");
                }
                X509Bundle certificate = new CertificateBuilder()
                        .subject("CN=" + HOST)
                        .addSanDnsName(HOST)
                        .setIsCertificateAuthority(true)
                        .buildSelfSigned();
                serverContext = h2(SslContextBuilder.forServer(certificate.getKeyPair().getPrivate(),
                        certificate.getCertificatePath()), tls);
                clientContext = h2(SslContextBuilder.forClient().trustManager(certificate.getCertificate()), tls);
            }
            final SslContext serverSslContext = serverContext;
            final ChannelHandler serverHandler = serverInitializer.apply(body);
            final Queue<SslHandler> serverSslHandlers = new ConcurrentLinkedQueue<SslHandler>();
            sb.childHandler(new ChannelInitializer<Channel>() {
                @Override
                protected void initChannel(Channel ch) {
                    if (serverSslContext != null) {
                        SslHandler sslHandler = serverSslContext.newHandler(ch.alloc());
                        serverSslHandlers.add(sslHandler);
                        ch.pipeline().addLast(sslHandler);
                    }
                    ch.pipeline().addLast(serverHandler);
                }
            });
            testResponses(sb, cb, tls, clientContext, body);
            if (tls != Tls.NONE) {
                assertEquals(CONNECTIONS, serverSslHandlers.size(), "server connections");
                for (SslHandler sslHandler : serverSslHandlers) {
                    assertNegotiated(tls, sslHandler, "server");
                }
            }
        } finally {
            body.release();
            ReferenceCountUtil.release(serverContext);
            ReferenceCountUtil.release(clientContext);
        }
    }

    /**
     * A context of {@code tls}'s provider offering only h2 by ALPN, with HTTP/2's ciphers; OpenSSL's are
     * {@link ReferenceCountedOpenSslContext}s, the JDK's {@link JdkSslContext}s.
     */
    private static SslContext h2(SslContextBuilder builder, Tls tls) throws Exception {
        SslContext context = builder.sslProvider(tls.provider)
                .ciphers(Http2SecurityUtil.CIPHERS, SupportedCipherSuiteFilter.INSTANCE)
                .applicationProtocolConfig(new ApplicationProtocolConfig(Protocol.ALPN,
                        SelectorFailureBehavior.NO_ADVERTISE, SelectedListenerFailureBehavior.ACCEPT,
                        ApplicationProtocolNames.HTTP_2))
                .build();
        Class<? extends SslContext> expected =
                tls == Tls.OPENSSL ? ReferenceCountedOpenSslContext.class : JdkSslContext.class;
        assertInstanceOf(expected, context, tls + " context");
        return context;
    }

    /** Asserts that {@code sslHandler}'s handshake negotiated h2 by ALPN, on the engine {@code tls} names. */
    private static void assertNegotiated(Tls tls, SslHandler sslHandler, String side) {
        String engine = side + " engine " + sslHandler.engine().getClass().getName();
        assertTrue(sslHandler.handshakeFuture().isSuccess(), engine + ": handshake " + sslHandler.handshakeFuture());
        assertEquals(ApplicationProtocolNames.HTTP_2, sslHandler.applicationProtocol(), engine + ": ALPN");
        assertEquals(tls == Tls.OPENSSL, sslHandler.engine() instanceof ReferenceCountedOpenSslEngine,
                engine + " for " + tls);
    }

    private void testResponses(ServerBootstrap sb, Bootstrap cb, Tls tls, final SslContext clientContext,
                               ByteBuf body) throws Throwable {
        int responses = CONNECTIONS * BURSTS * BURST_SIZE;
        CountDownLatch done = new CountDownLatch(responses);
        Queue<Integer> framesPerResponse = new ConcurrentLinkedQueue<Integer>();
        Queue<Throwable> errors = new ConcurrentLinkedQueue<Throwable>();
        List<Channel> clients = new ArrayList<Channel>();
        String connections = "h2c";
        Channel server = sb.bind().sync().channel();
        final int port = ((InetSocketAddress) server.localAddress()).getPort();
        try {
            for (int i = 0; i < CONNECTIONS; i++) {
                final Client client = new Client(body, done, framesPerResponse, errors);
                cb.handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        if (clientContext != null) {
                            // The client reads its frames from the TLS handler; it checks the server's name too.
                            ch.pipeline().addLast(clientContext.newHandler(ch.alloc(), HOST, port));
                        }
                        ch.pipeline().addLast(client.handler);
                        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                errors.add(cause);
                            }
                        });
                    }
                });
                Channel ch = cb.connect(server.localAddress()).sync().channel();
                clients.add(ch);
                SslHandler sslHandler = ch.pipeline().get(SslHandler.class);
                if (sslHandler != null) {
                    // Requests only once h2 is agreed (the connection preface waits in the SslHandler until then).
                    sslHandler.handshakeFuture().sync();
                    assertNegotiated(tls, sslHandler, "client");
                    connections = sslHandler.engine().getSession().getProtocol() + " "
                            + sslHandler.engine().getSession().getCipherSuite() + " on "
                            + sslHandler.engine().getClass().getSimpleName() + ", ALPN "
                            + sslHandler.applicationProtocol();
                }
                ch.eventLoop().submit(() -> {
                    client.start(ch);
                    return null;
                }).sync();
            }
            assertTrue(done.await(30, TimeUnit.SECONDS),
                    "responses missing: " + done.getCount() + " of " + responses + ", errors: " + errors);
            assertTrue(errors.isEmpty(), "errors: " + errors);

            Map<Integer, Integer> histogram = new TreeMap<Integer, Integer>();
            for (int frames : framesPerResponse) {
                histogram.merge(frames, 1, Integer::sum);
            }
            String summary = sb.config().channelFactory() + " <- " + cb.config().channelFactory() + ", tls " + tls
                    + " (" + connections + "): " + responses + " responses of " + BODY_SIZE
                    + " bytes; DATA frames per response (frames=count): " + histogram;
            logger.info(summary);
            assertEquals(responses, framesPerResponse.size(), summary);
            if (expectWholeFrames()) {
                assertEquals(Collections.singletonMap(DATA_FRAMES, responses), histogram,
                        "every response in " + DATA_FRAMES + " DATA frames: " + summary);
            }
        } finally {
            for (Channel ch : clients) {
                ch.close().sync();
            }
            server.close().sync();
        }
    }

    /** Answers each aggregated request with the cached body, as an {@code HttpToHttp2ConnectionHandler} user. */
    private static final class FullResponder extends SimpleChannelInboundHandler<FullHttpRequest> {
        private final ByteBuf body;

        FullResponder(ByteBuf body) {
            this.body = body;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
            FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK,
                    body.retainedDuplicate());
            String streamId = HttpConversionUtil.ExtensionHeaderNames.STREAM_ID.text().toString();
            response.headers().set(streamId, request.headers().get(streamId));
            response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes());
            ctx.writeAndFlush(response);
        }
    }

    /** Answers the request of its stream with the cached body, as an {@code Http2MultiplexHandler} user. */
    private static final class StreamResponder extends ChannelInboundHandlerAdapter {
        private final ByteBuf body;

        StreamResponder(ByteBuf body) {
            this.body = body;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof Http2HeadersFrame && ((Http2HeadersFrame) msg).isEndStream()) {
                    Http2Headers headers = new DefaultHttp2Headers().status(HttpResponseStatus.OK.codeAsText())
                            .setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes());
                    ctx.write(new DefaultHttp2HeadersFrame(headers));
                    ctx.writeAndFlush(new DefaultHttp2DataFrame(body.retainedDuplicate(), true));
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }
    }

    /**
     * An h2c (prior knowledge) client connection: sends {@code BURSTS} bursts of {@code BURST_SIZE} GETs, one every
     * {@code BURST_INTERVAL_MILLIS} without waiting for responses, checks every body byte and counts DATA frames.
     */
    private static final class Client extends Http2FrameAdapter {
        final Http2ConnectionHandler handler;
        private final byte[] expected;
        private final CountDownLatch done;
        private final Queue<Integer> framesPerResponse;
        private final Queue<Throwable> errors;
        private final Map<Integer, int[]> streams = new HashMap<Integer, int[]>();

        Client(ByteBuf body, CountDownLatch done, Queue<Integer> framesPerResponse, Queue<Throwable> errors) {
            expected = ByteBufUtil.getBytes(body);
            this.done = done;
            this.framesPerResponse = framesPerResponse;
            this.errors = errors;
            handler = new Http2ConnectionHandlerBuilder().server(false).frameListener(this)
                    .initialSettings(new Http2Settings().initialWindowSize(CLIENT_WINDOW)).build();
        }

        void start(Channel ch) throws Http2Exception {
            Http2Connection connection = handler.connection();
            connection.local().flowController().incrementWindowSize(connection.connectionStream(),
                    CLIENT_WINDOW - Http2CodecUtil.DEFAULT_WINDOW_SIZE);
            ch.flush();
            for (int i = 0; i < BURSTS; i++) {
                ch.eventLoop().schedule(() -> burst(ch), (long) i * BURST_INTERVAL_MILLIS, TimeUnit.MILLISECONDS);
            }
        }

        private void burst(Channel ch) {
            ChannelHandlerContext ctx = ch.pipeline().context(handler);
            for (int i = 0; i < BURST_SIZE; i++) {
                int streamId = handler.connection().local().incrementAndGetNextStreamId();
                streams.put(streamId, new int[2]);
                Http2Headers headers = new DefaultHttp2Headers().method("GET").path("/").scheme("http")
                        .authority("localhost");
                handler.encoder().writeHeaders(ctx, streamId, headers, 0, true, ctx.newPromise())
                        .addListener(future -> {
                            if (!future.isSuccess()) {
                                errors.add(future.cause());
                            }
                        });
            }
            ctx.flush();
        }

        @Override
        public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers, int padding,
                                  boolean endOfStream) {
            if (!HttpResponseStatus.OK.codeAsText().contentEquals(headers.status()) || endOfStream) {
                errors.add(new AssertionError("stream " + streamId + ": unexpected response " + headers));
            }
        }

        @Override
        public int onDataRead(ChannelHandlerContext ctx, int streamId, ByteBuf data, int padding,
                              boolean endOfStream) {
            int length = data.readableBytes();
            // [0]: body bytes received so far, [1]: DATA frames.
            int[] state = streams.get(streamId);
            if (state == null || !sameBytes(data, state[0])) {
                errors.add(new AssertionError("stream " + streamId + ": body corrupted at offset "
                        + (state == null ? -1 : state[0])));
            } else {
                state[0] += length;
                state[1]++;
                if (endOfStream) {
                    if (state[0] != expected.length) {
                        errors.add(new AssertionError("stream " + streamId + ": body ended after " + state[0]
                                + " bytes"));
                    }
                    framesPerResponse.add(state[1]);
                    streams.remove(streamId);
                    done.countDown();
                }
            }
            return length + padding;
        }

        private boolean sameBytes(ByteBuf data, int offset) {
            int length = data.readableBytes();
            if (offset + length > expected.length) {
                return false;
            }
            // One access to the buffer: the leak detector records every one at paranoid level.
            byte[] received = ByteBufUtil.getBytes(data);
            for (int i = 0; i < length; i++) {
                if (received[i] != expected[offset + i]) {
                    return false;
                }
            }
            return true;
        }
    }
}
