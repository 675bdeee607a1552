package com.example.grpc;

import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.InternalNettyChannelBuilder;
import io.grpc.netty.InternalProtocolNegotiator;
import io.grpc.netty.InternalProtocolNegotiators;
import io.grpc.netty.GrpcHttp2ConnectionHandler;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerAdapter;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.AsciiString;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.function.Supplier;

/**
 * A gRPC service without protobuf: messages are byte arrays (a {@link MethodDescriptor.Marshaller} of its own). A
 * request is 12 bytes: size, count, seed. {@code Unary} answers one message of {@code size} bytes, {@code Stream}
 * answers {@code count} messages of {@code size} bytes; message {@code m} of a call holds
 * {@link #pattern(int, int) pattern(seed + m, i)} at index {@code i}, so a client can check every byte.
 */
public final class Bytes {
    public static final String SERVICE = "example.Bytes";

    static final MethodDescriptor.Marshaller<byte[]> MARSHALLER = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };

    public static final MethodDescriptor<byte[], byte[]> UNARY = MethodDescriptor.<byte[], byte[]>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Unary"))
            .setRequestMarshaller(MARSHALLER).setResponseMarshaller(MARSHALLER).build();

    public static final MethodDescriptor<byte[], byte[]> STREAM = MethodDescriptor.<byte[], byte[]>newBuilder()
            .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
            .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Stream"))
            .setRequestMarshaller(MARSHALLER).setResponseMarshaller(MARSHALLER).build();

    private Bytes() {
    }

    public static byte pattern(int seed, int i) {
        return (byte) (i * 31 + (i >>> 9) + seed * 131);
    }

    public static byte[] message(int seed, int size) {
        byte[] m = new byte[size];
        for (int i = 0; i < size; i++) {
            m[i] = pattern(seed, i);
        }
        return m;
    }

    /** The index of the first byte of {@code m} that is not {@code pattern(seed, i)}, or -1. */
    public static int firstMismatch(byte[] m, int seed) {
        for (int i = 0; i < m.length; i++) {
            if (m[i] != pattern(seed, i)) {
                return i;
            }
        }
        return -1;
    }

    public static byte[] request(int size, int count, int seed) {
        return ByteBuffer.allocate(12).putInt(size).putInt(count).putInt(seed).array();
    }

    public static ServerServiceDefinition service() {
        return ServerServiceDefinition.builder(SERVICE)
                .addMethod(UNARY, ServerCalls.asyncUnaryCall((byte[] request, StreamObserver<byte[]> out) -> {
                    ByteBuffer r = ByteBuffer.wrap(request);
                    int size = r.getInt();
                    r.getInt();
                    out.onNext(message(r.getInt(), size));
                    out.onCompleted();
                }))
                .addMethod(STREAM, ServerCalls.asyncServerStreamingCall((byte[] request, StreamObserver<byte[]> out) -> {
                    ByteBuffer r = ByteBuffer.wrap(request);
                    int size = r.getInt();
                    int count = r.getInt();
                    int seed = r.getInt();
                    for (int m = 0; m < count; m++) {
                        out.onNext(message(seed + m, size));
                    }
                    out.onCompleted();
                }))
                .build();
    }

    /**
     * The server on {@code transport}, loopback, an ephemeral port, grpc-java's own HTTP/2 settings: only the
     * channel type and the event loop groups are set.
     */
    public static Server startServer(Transport transport, EventLoopGroup boss, EventLoopGroup workers)
            throws IOException {
        return startServer(transport, boss, workers, null);
    }

    /** As {@link #startServer(Transport, EventLoopGroup, EventLoopGroup)}, over TLS when {@code sslContext} is set. */
    public static Server startServer(Transport transport, EventLoopGroup boss, EventLoopGroup workers,
                                     SslContext sslContext) throws IOException {
        NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                .channelType(transport.serverChannel())
                .bossEventLoopGroup(boss)
                .workerEventLoopGroup(workers)
                .addService(service());
        if (sslContext != null) {
            builder.sslContext(sslContext);
        }
        return builder.build().start();
    }

    /** A plaintext client channel on {@code transport}; with {@code counts}, every frame the server sends is counted. */
    public static ManagedChannel channel(Transport transport, EventLoopGroup group, int port,
                                         FrameCounter.Counts counts) {
        return channel(transport, group, port, null, counts);
    }

    /**
     * A client channel on {@code transport}: over TLS with {@code sslContext} ({@code NettyChannelBuilder.sslContext}),
     * plaintext without. With {@code counts}, every frame the server sends is counted (over TLS, the bytes the
     * {@link SslHandler} decrypted): grpc-java's own negotiation, wrapped through its Internal* API, replaces the
     * builder's.
     */
    public static ManagedChannel channel(Transport transport, EventLoopGroup group, int port, SslContext sslContext,
                                         FrameCounter.Counts counts) {
        NettyChannelBuilder builder = NettyChannelBuilder.forAddress("127.0.0.1", port)
                .channelType(transport.channel())
                .eventLoopGroup(group);
        if (sslContext != null) {
            builder.sslContext(sslContext);
        } else {
            builder.usePlaintext();
        }
        if (counts != null) {
            InternalNettyChannelBuilder.setProtocolNegotiatorFactory(builder, sslContext != null
                    ? new Counting(counts, () -> InternalProtocolNegotiators.tls(sslContext, null, null), 443)
                    : new Counting(counts, InternalProtocolNegotiators::plaintext, 80));
        }
        return builder.build();
    }

    /**
     * grpc-java's plaintext or TLS negotiation with a {@link FrameCounter} where it sees the server's HTTP/2 bytes:
     * first in the connection's pipeline for plaintext, right after the {@link SslHandler} for TLS. grpc-java has no
     * public hook into a client connection's pipeline; this uses its Internal* negotiator API.
     */
    private static final class Counting implements InternalProtocolNegotiator.ClientFactory {
        private final FrameCounter.Counts counts;
        private final Supplier<InternalProtocolNegotiator.ProtocolNegotiator> negotiators;
        private final int defaultPort;

        Counting(FrameCounter.Counts counts, Supplier<InternalProtocolNegotiator.ProtocolNegotiator> negotiators,
                 int defaultPort) {
            this.counts = counts;
            this.negotiators = negotiators;
            this.defaultPort = defaultPort;
        }

        @Override
        public InternalProtocolNegotiator.ProtocolNegotiator newNegotiator() {
            InternalProtocolNegotiator.ProtocolNegotiator negotiator = negotiators.get();
            return new InternalProtocolNegotiator.ProtocolNegotiator() {
                @Override
                public AsciiString scheme() {
                    return negotiator.scheme();
                }

                @Override
                public ChannelHandler newHandler(GrpcHttp2ConnectionHandler grpcHandler) {
                    ChannelHandler negotiation = negotiator.newHandler(grpcHandler);
                    return new ChannelHandlerAdapter() {
                        @Override
                        public void handlerAdded(ChannelHandlerContext ctx) {
                            ctx.pipeline().addFirst(new CounterPlacement(counts));
                            ctx.pipeline().replace(this, null, negotiation);
                        }
                    };
                }

                @Override
                public void close() {
                    negotiator.close();
                }
            };
        }

        @Override
        public int getDefaultPort() {
            return defaultPort;
        }
    }

    /**
     * First in the pipeline until the connection's first read: then the {@link SslHandler}, if any, is in place (TLS
     * negotiation adds it when the channel becomes active), and this puts the {@link FrameCounter} right after it, or
     * in its own place without TLS, and leaves.
     */
    private static final class CounterPlacement extends ChannelInboundHandlerAdapter {
        private final FrameCounter.Counts counts;

        CounterPlacement(FrameCounter.Counts counts) {
            this.counts = counts;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            FrameCounter counter = new FrameCounter(counts);
            ChannelHandlerContext tls = ctx.pipeline().context(SslHandler.class);
            if (tls != null) {
                ctx.pipeline().addAfter(tls.name(), null, counter);
                ctx.pipeline().remove(this);
            } else {
                ctx.pipeline().replace(this, null, counter);
            }
            ctx.fireChannelRead(msg);
        }
    }
}
