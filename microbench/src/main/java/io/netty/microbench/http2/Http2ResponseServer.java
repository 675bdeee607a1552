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

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
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
import io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2DataChunkedInput;
import io.netty.handler.codec.http2.Http2Flags;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2SecurityUtil;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.HttpConversionUtil;
import io.netty.handler.codec.http2.HttpToHttp2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.InboundHttp2ToHttpAdapterBuilder;
import io.netty.handler.codec.http2.StreamByteDistributor;
import io.netty.handler.codec.http2.UniformStreamByteDistributor;
import io.netty.handler.codec.http2.WeightedFairQueueByteDistributor;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolConfig.Protocol;
import io.netty.handler.ssl.ApplicationProtocolConfig.SelectedListenerFailureBehavior;
import io.netty.handler.ssl.ApplicationProtocolConfig.SelectorFailureBehavior;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.ApplicationProtocolNegotiationHandler;
import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.ReferenceCountedOpenSslContext;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.netty.handler.ssl.SupportedCipherSuiteFilter;
import io.netty.handler.stream.ChunkedStream;
import io.netty.handler.stream.ChunkedWriteHandler;
import io.netty.pkitesting.CertificateBuilder;
import io.netty.pkitesting.X509Bundle;
import io.netty.util.CharsetUtil;
import io.netty.util.ReferenceCountUtil;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The HTTP/2 server of {@code Http2ResponseBenchmark}, also runnable on its own for external clients such as
 * {@code h2load}: on one event-loop thread of the chosen transport, it answers every request with a cached body,
 * either as an {@code HttpToHttp2ConnectionHandler} user ({@code writeAndFlush(FullHttpResponse)} of a
 * {@code retainedDuplicate()}) or as an {@code Http2MultiplexHandler} user (headers and data frames on the stream's
 * child channel). It counts, at the head of each connection's pipeline, the {@link ByteBuf}s written, their bytes
 * and the {@code DATA} frames among them, and measures its event-loop thread's CPU time. {@code GET /stats}
 * answers with those counters as text (that response is not counted as a response); {@code GET /bytes/N} with a
 * body of {@code N} bytes instead of the cached one (up to {@value #MAX_BYTES_BODY} bytes). {@code GET /paced/N}
 * (with {@code Http2MultiplexHandler} only) answers with {@code N} bytes written as a handler paced by its stream
 * channel's writability writes them: a {@link ChunkedWriteHandler} added to the stream channel's pipeline writes an
 * {@link Http2DataChunkedInput} of {@value #PACED_CHUNK}-byte {@code DATA} frames while the stream channel is
 * writable and resumes on its {@code channelWritabilityChanged}. With {@code Http2MultiplexHandler} it also counts
 * the writability events of the stream channels, and the connection's writability events that reach
 * {@code Http2MultiplexHandler} with the connection writable, with the streams active at each.
 * <p>
 * With a {@link Tls} other than {@link Tls#NONE}, the connections carry HTTP/2 over TLS with ALPN h2 (the JDK's
 * {@code SSLEngine} or OpenSSL's, with a self-signed certificate for {@value #HOST} made at start): the
 * {@link ByteBuf}s, bytes and {@code DATA} frames are then counted where the HTTP/2 codec writes them into the
 * {@link SslHandler} (so they read as in clear text), and between the {@link SslHandler} and the transport the TLS
 * records, {@link ByteBuf}s and bytes it writes (the records from their 5-byte headers). The HTTP/2 handlers are added
 * once ALPN agreed on h2, as users of {@link ApplicationProtocolNegotiationHandler} do; a connection that did not
 * agree on h2 is closed.
 */
public final class Http2ResponseServer implements AutoCloseable {
    static final String STATS_PATH = "/stats";
    static final String BYTES_PATH = "/bytes/";
    static final String PACED_PATH = "/paced/";
    static final int PACED_CHUNK = 16 * 1024;
    static final int MAX_BYTES_BODY = 64 * 1024 * 1024;
    private static final int DATA_FRAME_TYPE = 0;
    private static final int FRAME_HEADER_LENGTH = 9;
    /** The name in the certificate of the TLS rows (its subject and DNS SAN). */
    static final String HOST = "localhost";
    private static final int TLS_RECORD_HEADER_LENGTH = 5;
    // TLS content types: change_cipher_spec (20) to heartbeat (24).
    private static final int TLS_MIN_CONTENT_TYPE = 20;
    private static final int TLS_MAX_CONTENT_TYPE = 24;

    /** The transport of the server. */
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

    /** The stream byte distributor of each connection. */
    public enum Distributor {
        /** Whatever the Netty on the class path defaults to. */
        DEFAULT {
            @Override
            StreamByteDistributor newDistributor(Http2Connection connection) {
                return null;
            }
        },
        /** {@link WeightedFairQueueByteDistributor}, Netty's default up to 4.2.18. */
        WFQ {
            @Override
            StreamByteDistributor newDistributor(Http2Connection connection) {
                return new WeightedFairQueueByteDistributor(connection);
            }
        },
        /**
         * {@link WeightedFairQueueByteDistributor} with a 16 KiB allocation quantum (grpc-java's setting until 2025):
         * priorities kept, whole frames for streams of equal weight.
         */
        WFQ_16K {
            @Override
            StreamByteDistributor newDistributor(Http2Connection connection) {
                WeightedFairQueueByteDistributor distributor = new WeightedFairQueueByteDistributor(connection);
                distributor.allocationQuantum(16 * 1024);
                return distributor;
            }
        },
        /** {@link UniformStreamByteDistributor} with its default 1 KiB minimum chunk (Vert.x 5's default). */
        UNIFORM_1K {
            @Override
            StreamByteDistributor newDistributor(Http2Connection connection) {
                return new UniformStreamByteDistributor(connection);
            }
        },
        /** {@link UniformStreamByteDistributor} with a 16 KiB minimum chunk set through the existing setter. */
        UNIFORM_16K {
            @Override
            StreamByteDistributor newDistributor(Http2Connection connection) {
                UniformStreamByteDistributor distributor = new UniformStreamByteDistributor(connection);
                distributor.minAllocationChunk(16 * 1024);
                return distributor;
            }
        },
        /**
         * {@code WholeChunkStreamByteDistributor} with its default 16 KiB chunk, passed explicitly; found by name, so
         * that upstream's artifacts run it when the class is put on the class path next to them.
         */
        WHOLE_CHUNK {
            @Override
            StreamByteDistributor newDistributor(Http2Connection connection) {
                String name = "io.netty.handler.codec.http2.WholeChunkStreamByteDistributor";
                try {
                    return (StreamByteDistributor) Class.forName(name).getConstructor(Http2Connection.class)
                            .newInstance(connection);
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(name + " is not on the class path", e);
                }
            }
        };

        abstract StreamByteDistributor newDistributor(Http2Connection connection);
    }

    /** How the connections carry HTTP/2. */
    public enum Tls {
        /** h2c with prior knowledge. */
        NONE(null),
        /** TLS with ALPN h2 on the JDK's {@code SSLEngine}. */
        JDK(SslProvider.JDK),
        /**
         * TLS with ALPN h2 on OpenSSL's engine (netty-tcnative); fails, does not fall back to the JDK's, if OpenSSL is
         * not available.
         */
        OPENSSL(SslProvider.OPENSSL);

        private final SslProvider provider;

        Tls(SslProvider provider) {
            this.provider = provider;
        }

        /**
         * A context of this provider offering only h2 by ALPN, with HTTP/2's ciphers, for the server (the builder of
         * {@link SslContextBuilder#forServer}) or a client.
         */
        SslContext h2Context(SslContextBuilder builder) throws Exception {
            checkAvailable();
            SslContext context = builder.sslProvider(provider)
                    .ciphers(Http2SecurityUtil.CIPHERS, SupportedCipherSuiteFilter.INSTANCE)
                    .applicationProtocolConfig(new ApplicationProtocolConfig(Protocol.ALPN,
                            SelectorFailureBehavior.NO_ADVERTISE, SelectedListenerFailureBehavior.ACCEPT,
                            ApplicationProtocolNames.HTTP_2))
                    .build();
            Class<? extends SslContext> expected = this == OPENSSL ? ReferenceCountedOpenSslContext.class
                    : JdkSslContext.class;
            if (!expected.isInstance(context)) {
                ReferenceCountUtil.release(context);
                throw new IllegalStateException("tls=" + this + " made a " + context.getClass().getName());
            }
            return context;
        }

        /** Throws if this engine cannot run here: OpenSSL not available, or without ALPN. */
        void checkAvailable() {
            if (this == OPENSSL) {
                if (!OpenSsl.isAvailable()) {
                    throw new IllegalStateException("OpenSSL (netty-tcnative) is not available: tls=" + this
                            + " needs netty-tcnative-boringssl-static on the class path",
                            OpenSsl.unavailabilityCause());
                }
                if (!OpenSsl.isAlpnSupported()) {
                    throw new IllegalStateException("OpenSSL " + OpenSsl.versionString() + " without ALPN: tls="
                            + this + " needs it");
                }
            }
        }

        /** The provider and its version, e.g. for a report. */
        String describe() {
            if (this == NONE) {
                return "none";
            }
            return this == OPENSSL ? "OpenSSL " + OpenSsl.versionString()
                    : "JDK " + System.getProperty("java.version");
        }
    }

    /** How the server uses the HTTP/2 codec. */
    public enum Pipeline {
        /** {@code HttpToHttp2ConnectionHandler} with {@code InboundHttp2ToHttpAdapter} aggregating requests. */
        HTTP_TO_HTTP2,
        /** {@code Http2FrameCodec} with {@code Http2MultiplexHandler}: one child channel per stream. */
        MULTIPLEX
    }

    private final EventLoopGroup group;
    private final Channel channel;
    private final Tls tls;
    // SETTINGS_MAX_CONCURRENT_STREAMS of the connections; 0: Netty's default.
    private final int maxConcurrentStreams;
    // With TLS only: the self-signed certificate and the server's context.
    private final X509Bundle certificate;
    private final SslContext sslContext;
    private final ByteBuf body;
    // The bodies of /bytes/N: slices of one buffer, grown on the event loop when a larger body is asked for.
    private ByteBuf bytesBody = Unpooled.EMPTY_BUFFER;
    private final Thread eventLoopThread;
    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    // Stateless, shared by all connections and streams.
    private final FullResponder fullResponder = new FullResponder();
    private final StreamResponder streamResponder = new StreamResponder();

    // Written by the event-loop thread only, read from any thread.
    /** Records with a body shorter than this count as small ({@link #tlsSmallRecords()}). */
    static final int TLS_SMALL_RECORD = 256;
    private volatile long responses;
    private volatile long byteBufs;
    private volatile long bytes;
    private volatile long dataFrames;
    private volatile long tlsRecords;
    private volatile long tlsSmallRecords;
    private volatile long tlsByteBufs;
    private volatile long tlsBytes;
    private volatile long tlsRecordErrors;
    private volatile long unwritableEvents;
    private volatile long streamWritabilityEvents;
    private volatile long connectionWritableEvents;
    private volatile long activeStreamsAtWritableEvents;
    private volatile long writableEventNanos;

    private Http2ResponseServer(Transport transport, final Distributor distributor, final Pipeline pipeline,
                                int bodySize, SocketAddress address, int sendBufferSize,
                                int writeBufferHighWaterMark, Tls tls, int maxConcurrentStreams) throws Exception {
        this.tls = tls;
        this.maxConcurrentStreams = maxConcurrentStreams;
        if (tls == Tls.NONE) {
            certificate = null;
            sslContext = null;
        } else {
            certificate = new CertificateBuilder()
                    .subject("CN=" + HOST)
                    .addSanDnsName(HOST)
                    .setIsCertificateAuthority(true)
                    .buildSelfSigned();
            sslContext = tls.h2Context(SslContextBuilder.forServer(certificate.getKeyPair().getPrivate(),
                    certificate.getCertificatePath()));
        }
        body = Unpooled.unreleasableBuffer(Unpooled.directBuffer(bodySize).writeZero(bodySize));
        group = new MultiThreadIoEventLoopGroup(1, transport.factory());
        try {
            ServerBootstrap bootstrap = new ServerBootstrap();
            if (sendBufferSize > 0) {
                bootstrap.childOption(ChannelOption.SO_SNDBUF, sendBufferSize);
            }
            if (writeBufferHighWaterMark > 0) {
                // The low water mark keeps Netty's default ratio (32 KiB to 64 KiB).
                bootstrap.childOption(ChannelOption.WRITE_BUFFER_WATER_MARK,
                        new WriteBufferWaterMark(writeBufferHighWaterMark / 2, writeBufferHighWaterMark));
            }
            channel = bootstrap.group(group).channel(transport.serverChannel())
                    .childHandler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            if (sslContext == null) {
                                ch.pipeline().addLast(new WriteCounter());
                                initHttp2(ch.pipeline(), pipeline, distributor);
                            } else {
                                ch.pipeline().addLast(new TlsRecordCounter(), sslContext.newHandler(ch.alloc()),
                                        new WriteCounter(), new H2Negotiation(pipeline, distributor));
                            }
                        }
                    }).bind(address).sync().channel();
            eventLoopThread = group.submit(Thread::currentThread).get();
        } catch (Exception e) {
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS);
            ReferenceCountUtil.release(sslContext);
            throw e;
        }
    }

    /**
     * Starts a server on one event-loop thread of {@code transport}, bound to {@code address}.
     */
    public static Http2ResponseServer start(Transport transport, Distributor distributor, Pipeline pipeline,
                                            int bodySize, SocketAddress address) throws Exception {
        return start(transport, distributor, pipeline, bodySize, address, 0);
    }

    /**
     * Starts a server on one event-loop thread of {@code transport}, bound to {@code address}, whose connections
     * have a send buffer ({@code SO_SNDBUF}) of {@code sendBufferSize} bytes, or the kernel's autotuned one for 0.
     */
    public static Http2ResponseServer start(Transport transport, Distributor distributor, Pipeline pipeline,
                                            int bodySize, SocketAddress address, int sendBufferSize)
            throws Exception {
        return start(transport, distributor, pipeline, bodySize, address, sendBufferSize, 0);
    }

    /**
     * Starts a server on one event-loop thread of {@code transport}, bound to {@code address}, whose connections
     * have a send buffer ({@code SO_SNDBUF}) of {@code sendBufferSize} bytes (0: the kernel's autotuned one) and a
     * write buffer high water mark ({@link ChannelOption#WRITE_BUFFER_WATER_MARK}, with the low one at half of it) of
     * {@code writeBufferHighWaterMark} bytes (0: Netty's default, 64 KiB).
     */
    public static Http2ResponseServer start(Transport transport, Distributor distributor, Pipeline pipeline,
                                            int bodySize, SocketAddress address, int sendBufferSize,
                                            int writeBufferHighWaterMark) throws Exception {
        return start(transport, distributor, pipeline, bodySize, address, sendBufferSize, writeBufferHighWaterMark,
                Tls.NONE);
    }

    /**
     * {@link #start(Transport, Distributor, Pipeline, int, SocketAddress, int, int)} with HTTP/2 over TLS with ALPN h2
     * on {@code tls}'s engine, or h2c for {@link Tls#NONE}; {@link #newClientSslContext()} makes its clients'
     * contexts.
     */
    public static Http2ResponseServer start(Transport transport, Distributor distributor, Pipeline pipeline,
                                            int bodySize, SocketAddress address, int sendBufferSize,
                                            int writeBufferHighWaterMark, Tls tls) throws Exception {
        return start(transport, distributor, pipeline, bodySize, address, sendBufferSize, writeBufferHighWaterMark,
                tls, 0);
    }

    /**
     * {@link #start(Transport, Distributor, Pipeline, int, SocketAddress, int, int, Tls)} whose connections allow
     * {@code maxConcurrentStreams} concurrent streams ({@code SETTINGS_MAX_CONCURRENT_STREAMS}; 0: Netty's default,
     * 100).
     */
    public static Http2ResponseServer start(Transport transport, Distributor distributor, Pipeline pipeline,
                                            int bodySize, SocketAddress address, int sendBufferSize,
                                            int writeBufferHighWaterMark, Tls tls, int maxConcurrentStreams)
            throws Exception {
        if (writeBufferHighWaterMark < 0) {
            throw new IllegalArgumentException("writeBufferHighWaterMark: " + writeBufferHighWaterMark
                    + " (expected: >= 0)");
        }
        if (maxConcurrentStreams < 0) {
            throw new IllegalArgumentException("maxConcurrentStreams: " + maxConcurrentStreams
                    + " (expected: >= 0)");
        }
        return new Http2ResponseServer(transport, distributor, pipeline, bodySize, address, sendBufferSize,
                writeBufferHighWaterMark, tls, maxConcurrentStreams);
    }

    /**
     * A client context of the server's {@link Tls} engine that trusts the server's certificate (for the name
     * {@value #HOST}) and offers h2 only by ALPN; the caller releases it.
     */
    public SslContext newClientSslContext() throws Exception {
        if (tls == Tls.NONE) {
            throw new IllegalStateException("the server runs h2c (tls=NONE)");
        }
        return tls.h2Context(SslContextBuilder.forClient().trustManager(certificate.getCertificate()));
    }

    /** The address the server listens on. */
    public SocketAddress localAddress() {
        return channel.localAddress();
    }

    /** Responses written (not counting {@code /stats}). */
    public long responses() {
        return responses;
    }

    /** {@link ByteBuf}s written at the head of the connections' pipelines. */
    public long byteBufs() {
        return byteBufs;
    }

    /** Bytes of the {@link ByteBuf}s written at the head of the connections' pipelines. */
    public long bytes() {
        return bytes;
    }

    /** {@code DATA} frames written. */
    public long dataFrames() {
        return dataFrames;
    }

    /** TLS records written to the transport by the connections' {@link SslHandler}s (0 without TLS). */
    public long tlsRecords() {
        return tlsRecords;
    }

    /**
     * Those of {@link #tlsRecords()} with less than {@value #TLS_SMALL_RECORD} bytes of body: a HEADERS frame wrapped
     * on its own, for example.
     */
    public long tlsSmallRecords() {
        return tlsSmallRecords;
    }

    /** {@link ByteBuf}s written to the transport by the connections' {@link SslHandler}s (0 without TLS). */
    public long tlsByteBufs() {
        return tlsByteBufs;
    }

    /** Bytes written to the transport by the connections' {@link SslHandler}s (0 without TLS). */
    public long tlsBytes() {
        return tlsBytes;
    }

    /**
     * Connections whose ciphertext stopped reading as TLS records (a header of an unknown content type): their
     * records are not counted from there on; 0 unless the counting is wrong.
     */
    public long tlsRecordErrors() {
        return tlsRecordErrors;
    }

    /** Writability events of the stream channels ({@code Http2MultiplexHandler} only), both ways. */
    public long streamWritabilityEvents() {
        return streamWritabilityEvents;
    }

    /**
     * The connections' writability events that reached {@code Http2MultiplexHandler} with the connection writable
     * ({@code Http2MultiplexHandler} only): each makes it visit the connection's active streams.
     */
    public long connectionWritableEvents() {
        return connectionWritableEvents;
    }

    /** The active streams of the connection at each of {@link #connectionWritableEvents()}, added up. */
    public long activeStreamsAtWritableEvents() {
        return activeStreamsAtWritableEvents;
    }

    /**
     * Wall-clock time, in nanoseconds, that {@code Http2MultiplexHandler} and what it wakes took on each of
     * {@link #connectionWritableEvents()}, added up: its visit of the active streams, and the writes of the stream
     * channels it made writable.
     */
    public long writableEventNanos() {
        return writableEventNanos;
    }

    /** CPU time of the server's event-loop thread, in nanoseconds. */
    public long cpuNanos() {
        return threads.getThreadCpuTime(eventLoopThread.getId());
    }

    /** CPU time of the server's event-loop thread in user mode, in nanoseconds (the rest is the kernel's). */
    public long userNanos() {
        return threads.getThreadUserTime(eventLoopThread.getId());
    }

    /** How many times a connection became unwritable ({@code channelWritabilityChanged} with it unwritable). */
    public long unwritableEvents() {
        return unwritableEvents;
    }

    @Override
    public void close() throws InterruptedException {
        try {
            channel.close().sync();
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        } finally {
            ReferenceCountUtil.release(sslContext);
        }
    }

    private String stats() {
        return "responses=" + responses + " byteBufs=" + byteBufs + " bytes=" + bytes + " dataFrames=" + dataFrames
                + " cpuNanos=" + cpuNanos() + " userNanos=" + userNanos() + " unwritable=" + unwritableEvents
                + " tlsRecords=" + tlsRecords + " tlsSmallRecords=" + tlsSmallRecords + " tlsByteBufs=" + tlsByteBufs
                + " tlsBytes=" + tlsBytes + " tlsRecordErrors=" + tlsRecordErrors
                + " streamWritabilityEvents=" + streamWritabilityEvents
                + " connectionWritableEvents=" + connectionWritableEvents
                + " activeStreamsAtWritableEvents=" + activeStreamsAtWritableEvents
                + " writableEventNanos=" + writableEventNanos + '\n';
    }

    private static Http2Connection newConnection(Distributor distributor) {
        Http2Connection connection = new DefaultHttp2Connection(true);
        StreamByteDistributor d = distributor.newDistributor(connection);
        if (d != null) {
            connection.remote().flowController(new DefaultHttp2RemoteFlowController(connection, d));
        }
        return connection;
    }

    private void initHttp2(ChannelPipeline p, Pipeline pipeline, Distributor distributor) {
        if (pipeline == Pipeline.HTTP_TO_HTTP2) {
            initHttpToHttp2(p, distributor);
        } else {
            initMultiplex(p, distributor);
        }
    }

    private void initHttpToHttp2(ChannelPipeline p, Distributor distributor) {
        Http2Connection connection = newConnection(distributor);
        p.addLast(new HttpToHttp2ConnectionHandlerBuilder()
                .initialSettings(initialSettings())
                .connection(connection)
                .frameListener(new InboundHttp2ToHttpAdapterBuilder(connection)
                        .maxContentLength(1024 * 1024).propagateSettings(false).build())
                .build());
        p.addLast(fullResponder);
    }

    private void initMultiplex(ChannelPipeline p, Distributor distributor) {
        Http2FrameCodecBuilder builder = distributor == Distributor.DEFAULT ? Http2FrameCodecBuilder.forServer()
                : new ConnectionFrameCodecBuilder(newConnection(distributor));
        Http2FrameCodec codec = builder.initialSettings(initialSettings()).build();
        p.addLast(codec);
        p.addLast(new ConnectionWritableEvents(codec.connection()));
        p.addLast(new Http2MultiplexHandler(new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel child) {
                child.pipeline().addLast(streamResponder);
            }
        }));
    }

    /** Netty's default settings, with {@link #maxConcurrentStreams} if set. */
    private Http2Settings initialSettings() {
        Http2Settings settings = Http2Settings.defaultSettings();
        if (maxConcurrentStreams > 0) {
            settings.maxConcurrentStreams(maxConcurrentStreams);
        }
        return settings;
    }

    /**
     * Counts, just before {@code Http2MultiplexHandler}, the connection's writability events that find it writable
     * (those on which {@code Http2MultiplexHandler} visits the active streams), and the active streams at each.
     */
    private final class ConnectionWritableEvents extends ChannelInboundHandlerAdapter {
        private final Http2Connection connection;

        ConnectionWritableEvents(Http2Connection connection) {
            this.connection = connection;
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (!ctx.channel().isWritable()) {
                ctx.fireChannelWritabilityChanged();
                return;
            }
            connectionWritableEvents++;
            activeStreamsAtWritableEvents += connection.numActiveStreams();
            long start = System.nanoTime();
            ctx.fireChannelWritabilityChanged();
            writableEventNanos += System.nanoTime() - start;
        }
    }

    /** {@link Http2FrameCodecBuilder#forServer()} for a given connection (so with a given flow controller). */
    private static final class ConnectionFrameCodecBuilder extends Http2FrameCodecBuilder {
        ConnectionFrameCodecBuilder(Http2Connection connection) {
            connection(connection);
            gracefulShutdownTimeoutMillis(0);
        }
    }

    /** Adds the HTTP/2 handlers once ALPN agreed on h2; closes the connection otherwise. */
    private final class H2Negotiation extends ApplicationProtocolNegotiationHandler {
        private final Pipeline pipeline;
        private final Distributor distributor;

        H2Negotiation(Pipeline pipeline, Distributor distributor) {
            // A client that does not use ALPN reads as one of HTTP/1.1, which is refused.
            super(ApplicationProtocolNames.HTTP_1_1);
            this.pipeline = pipeline;
            this.distributor = distributor;
        }

        @Override
        protected void configurePipeline(ChannelHandlerContext ctx, String protocol) {
            if (!ApplicationProtocolNames.HTTP_2.equals(protocol)) {
                throw new IllegalStateException("ALPN agreed on " + protocol + ", not h2");
            }
            initHttp2(ctx.pipeline(), pipeline, distributor);
        }
    }

    /**
     * Counts the TLS records, {@link ByteBuf}s and bytes the {@link SslHandler} writes to the transport: it reads the
     * 5-byte header of each record (its content type and length, wherever the header and the record's end fall in
     * the buffers) and skips the record's body, so a record costs a few byte reads whatever its size.
     */
    private final class TlsRecordCounter extends ChannelOutboundHandlerAdapter {
        // Bytes of the current record's body not written yet.
        private int bodyRemaining;
        // Bytes of the next record's header seen so far (0 to 4), and its length as far as read.
        private int headerRead;
        private int recordLength;
        private boolean lost;

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            if (msg instanceof ByteBuf) {
                ByteBuf buf = (ByteBuf) msg;
                tlsByteBufs++;
                int index = buf.readerIndex();
                int end = buf.writerIndex();
                tlsBytes += end - index;
                while (index < end && !lost) {
                    if (bodyRemaining > 0) {
                        int skip = Math.min(bodyRemaining, end - index);
                        bodyRemaining -= skip;
                        index += skip;
                        continue;
                    }
                    int b = buf.getUnsignedByte(index++);
                    if (headerRead == 0 && (b < TLS_MIN_CONTENT_TYPE || b > TLS_MAX_CONTENT_TYPE)) {
                        lost = true;
                        tlsRecordErrors++;
                    } else if (headerRead == TLS_RECORD_HEADER_LENGTH - 2) {
                        recordLength = b << 8;
                    } else if (headerRead == TLS_RECORD_HEADER_LENGTH - 1) {
                        bodyRemaining = recordLength | b;
                        headerRead = -1;
                        tlsRecords++;
                        if (bodyRemaining < TLS_SMALL_RECORD) {
                            tlsSmallRecords++;
                        }
                    }
                    headerRead++;
                }
            }
            ctx.write(msg, promise);
        }
    }

    /**
     * Counts what the HTTP/2 codec writes: at the head of the pipeline, or into the {@link SslHandler} with TLS; and
     * how often the connection becomes unwritable.
     */
    private final class WriteCounter extends ChannelDuplexHandler {
        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (!ctx.channel().isWritable()) {
                unwritableEvents++;
            }
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            if (msg instanceof ByteBuf) {
                byteBufs++;
                ByteBuf buf = (ByteBuf) msg;
                int readable = buf.readableBytes();
                bytes += readable;
                // DefaultHttp2FrameWriter writes the header of a DATA frame as a buffer of its own.
                if (readable == FRAME_HEADER_LENGTH
                        && buf.getByte(buf.readerIndex() + 3) == DATA_FRAME_TYPE) {
                    dataFrames++;
                    if (ResponseTrace.ENABLED && (buf.getByte(buf.readerIndex() + 4) & Http2Flags.END_STREAM) != 0) {
                        ResponseTrace.stamp(ctx.channel(), true, buf.getInt(buf.readerIndex() + 5) & Integer.MAX_VALUE,
                                ResponseTrace.LAST_DATA);
                    }
                }
            }
            ctx.write(msg, promise);
        }
    }

    /**
     * The content that answers a request for {@code path}: the counters for {@code /stats}, {@code N} bytes for
     * {@code /bytes/N} and {@code /paced/N}, else the body.
     */
    private ByteBuf content(CharSequence path) {
        if (path != null && STATS_PATH.contentEquals(path)) {
            return Unpooled.copiedBuffer(stats(), CharsetUtil.US_ASCII);
        }
        responses++;
        int size = size(path, BYTES_PATH);
        if (size < 0) {
            size = size(path, PACED_PATH);
        }
        if (size >= 0) {
            if (bytesBody.capacity() < size) {
                bytesBody = Unpooled.unreleasableBuffer(Unpooled.directBuffer(size).writeZero(size));
            }
            return bytesBody.retainedSlice(0, size);
        }
        return body.retainedDuplicate();
    }

    /** The {@code N} of a {@code path} of {@code prefix + N}, or -1 if {@code path} does not start with it. */
    private static int size(CharSequence path, String prefix) {
        if (path == null || path.length() <= prefix.length()
                || !prefix.contentEquals(path.subSequence(0, prefix.length()))) {
            return -1;
        }
        int size = Integer.parseInt(path.subSequence(prefix.length(), path.length()).toString());
        if (size < 0 || size > MAX_BYTES_BODY) {
            throw new IllegalArgumentException("body size out of range: " + path);
        }
        return size;
    }

    @ChannelHandler.Sharable
    private final class FullResponder extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
            String streamId = HttpConversionUtil.ExtensionHeaderNames.STREAM_ID.text().toString();
            int id = 0;
            if (ResponseTrace.ENABLED) {
                id = Integer.parseInt(request.headers().get(streamId));
                ResponseTrace.stamp(ctx.channel(), true, id, ResponseTrace.READ);
            }
            FullHttpResponse response;
            if (size(request.uri(), PACED_PATH) >= 0) {
                response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.NOT_IMPLEMENTED,
                        Unpooled.copiedBuffer("paced responses need the MULTIPLEX pipeline\n", CharsetUtil.US_ASCII));
            } else {
                response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK,
                        content(request.uri()));
            }
            ByteBuf content = response.content();
            response.headers().set(streamId, request.headers().get(streamId));
            response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes());
            ChannelFuture write = ctx.writeAndFlush(response);
            if (ResponseTrace.ENABLED) {
                ResponseTrace.written(ctx.channel(), id, write);
            }
        }
    }

    @ChannelHandler.Sharable
    private final class StreamResponder extends ChannelInboundHandlerAdapter {
        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            streamWritabilityEvents++;
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof Http2HeadersFrame && ((Http2HeadersFrame) msg).isEndStream()) {
                    Channel connection = null;
                    int id = 0;
                    if (ResponseTrace.ENABLED) {
                        connection = ctx.channel().parent();
                        id = ((Http2StreamChannel) ctx.channel()).stream().id();
                        ResponseTrace.stamp(connection, true, id, ResponseTrace.READ);
                    }
                    CharSequence path = ((Http2HeadersFrame) msg).headers().path();
                    ByteBuf content = content(path);
                    Http2Headers headers = new DefaultHttp2Headers().status(HttpResponseStatus.OK.codeAsText())
                            .setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes());
                    ChannelFuture write;
                    if (size(path, PACED_PATH) >= 0) {
                        // Only in the pipelines of paced streams: a ChunkedWriteHandler holds every write while its
                        // channel is unwritable, which would change how the other responses are written.
                        ctx.pipeline().addBefore(ctx.name(), null, new ChunkedWriteHandler());
                        ctx.write(new DefaultHttp2HeadersFrame(headers));
                        write = ctx.writeAndFlush(new Http2DataChunkedInput(
                                new ChunkedStream(new ByteBufInputStream(content, true), PACED_CHUNK),
                                ((Http2StreamChannel) ctx.channel()).stream()));
                    } else {
                        ctx.write(new DefaultHttp2HeadersFrame(headers));
                        write = ctx.writeAndFlush(new DefaultHttp2DataFrame(content, true));
                    }
                    if (ResponseTrace.ENABLED) {
                        ResponseTrace.written(connection, id, write);
                    }
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }
    }

    /**
     * Runs the server until the process is stopped, then prints its counters:
     * {@code [--transport=NIO|EPOLL|IO_URING] [--distributor=DEFAULT|WFQ|UNIFORM_1K|UNIFORM_16K|WHOLE_CHUNK]
     * [--pipeline=HTTP_TO_HTTP2|MULTIPLEX] [--body=BYTES] [--host=ADDRESS] [--port=PORT] [--sndbuf=BYTES]
     * [--hwm=BYTES] [--tls=NONE|JDK|OPENSSL]} (defaults: IO_URING, DEFAULT, HTTP_TO_HTTP2, 65536, 127.0.0.1, 8080, 0:
     * the kernel's autotuned send buffer, 0: Netty's write buffer high water mark, NONE: h2c). It listens on
     * {@code --host} only (loopback by default; {@code tools/netlab.sh} gives it a lab's address); with TLS, its
     * self-signed certificate names {@value #HOST} (clients such as h2load do not check it).
     */
    public static void main(String[] args) throws Exception {
        Transport transport = Transport.IO_URING;
        Distributor distributor = Distributor.DEFAULT;
        Pipeline pipeline = Pipeline.HTTP_TO_HTTP2;
        int bodySize = 65536;
        int port = 8080;
        String host = "127.0.0.1";
        int sendBufferSize = 0;
        int writeBufferHighWaterMark = 0;
        Tls tls = Tls.NONE;
        for (String arg : args) {
            int eq = arg.indexOf('=');
            String name = eq < 0 ? arg : arg.substring(0, eq);
            String value = eq < 0 ? "" : arg.substring(eq + 1);
            if ("--transport".equals(name)) {
                transport = parse(Transport.class, name, value);
            } else if ("--distributor".equals(name)) {
                distributor = parse(Distributor.class, name, value);
            } else if ("--pipeline".equals(name)) {
                pipeline = parse(Pipeline.class, name, value);
            } else if ("--body".equals(name)) {
                bodySize = Integer.parseInt(value);
            } else if ("--host".equals(name)) {
                host = value;
            } else if ("--port".equals(name)) {
                port = Integer.parseInt(value);
            } else if ("--sndbuf".equals(name)) {
                sendBufferSize = Integer.parseInt(value);
            } else if ("--hwm".equals(name)) {
                writeBufferHighWaterMark = Integer.parseInt(value);
            } else if ("--tls".equals(name)) {
                tls = parse(Tls.class, name, value);
            } else {
                throw new IllegalArgumentException("unknown option: " + arg + " (known: --transport, --distributor, "
                        + "--pipeline, --body, --host, --port, --sndbuf, --hwm, --tls)");
            }
        }
        if (ResponseTrace.ENABLED) {
            throw new IllegalArgumentException("-D" + ResponseTrace.PROPERTY
                    + " is for Http2ResponseBenchmark, whose client stamps and reports the responses");
        }
        final Http2ResponseServer server = start(transport, distributor, pipeline, bodySize,
                new InetSocketAddress(host, port), sendBufferSize, writeBufferHighWaterMark, tls);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.print("final " + server.stats());
            System.out.flush();
        }));
        System.out.println("listening on " + server.localAddress() + " transport=" + transport + " distributor="
                + distributor + " pipeline=" + pipeline + " body=" + bodySize + " hwm=" + writeBufferHighWaterMark
                + " tls=" + tls + " (" + tls.describe() + ") netty="
                + Http2Connection.class.getPackage().getImplementationVersion());
        System.out.flush();
        server.channel.closeFuture().sync();
    }

    private static <E extends Enum<E>> E parse(Class<E> type, String option, String value) {
        try {
            return Enum.valueOf(type, value.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(option + "=" + value + " is not one of "
                    + Arrays.toString(type.getEnumConstants()), e);
        }
    }
}
