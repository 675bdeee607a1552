package com.example.grpc;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.AbstractChannel;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.ssl.DelegatingSslContext;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.ReferenceCountedOpenSslEngine;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;
import io.netty.pkitesting.X509Bundle;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.Version;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLSession;
import java.nio.file.Path;
import java.security.cert.Certificate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * gRPC-java over the Netty the BOM gives, on io_uring and on epoll, in h2c and over TLS (OpenSSL): the right jars,
 * every byte intact.
 */
class GrpcOnForkTest {
    /** The patched modules, from the build ({@code -Dfork.patchedModules}), as artifact ids. */
    private static final Set<String> PATCHED = Arrays.stream(System.getProperty("fork.patchedModules").split(","))
            .map(module -> "netty-" + module.trim()).collect(Collectors.toSet());
    private static final int CALLS = 32;

    @Test
    void patchedModulesAtBomVersionOthersAtBase() {
        Map<String, Version> versions = Version.identify();
        assertTrue(versions.keySet().containsAll(PATCHED), versions.keySet().toString());
        assertTrue(versions.containsKey("netty-handler-proxy"), "grpc-netty's other Netty modules");
        for (Map.Entry<String, Version> e : versions.entrySet()) {
            String expected = PATCHED.contains(e.getKey()) ? System.getProperty("netty.bom.version")
                    : System.getProperty("netty.base.version");
            assertEquals(expected, e.getValue().artifactVersion(), e.getKey());
        }
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void concurrentUnaryCallsOfOneMebibyte(Transport transport) throws Exception {
        int size = 1024 * 1024;
        withServerAndChannel(transport, channel -> {
            List<Future<byte[]>> calls = new ArrayList<>();
            for (int c = 0; c < CALLS; c++) {
                calls.add(ClientCalls.futureUnaryCall(channel.newCall(Bytes.UNARY, CallOptions.DEFAULT),
                        Bytes.request(size, 1, c)));
            }
            for (int c = 0; c < CALLS; c++) {
                assertMessage(calls.get(c).get(60, TimeUnit.SECONDS), size, c, "call " + c);
            }
        });
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void concurrentServerStreamsOf64KiBMessages(Transport transport) throws Exception {
        int size = 64 * 1024;
        int count = 16;
        withServerAndChannel(transport, channel -> {
            List<CompletableFuture<List<byte[]>>> calls = new ArrayList<>();
            for (int c = 0; c < CALLS; c++) {
                calls.add(serverStream(channel.newCall(Bytes.STREAM, CallOptions.DEFAULT),
                        Bytes.request(size, count, c * count)));
            }
            for (int c = 0; c < CALLS; c++) {
                assertMessages(calls.get(c).get(60, TimeUnit.SECONDS), count, size, c * count, "call " + c);
            }
        });
    }

    /**
     * TLS as gRPC-java's users add it: netty-tcnative-boringssl-static on the class path, contexts from
     * {@code GrpcSslContexts} given to {@code NettyServerBuilder.sslContext} and {@code NettyChannelBuilder.sslContext}
     * ({@link Tls}), a self-signed certificate made now. 16 unary calls of 1 MiB and a server stream of 32 messages
     * of 256 KiB at once on one connection, every byte checked; then, with the connection still open: every call
     * went over TLS, the one client and the one server engine are OpenSSL's (BoringSSL) and negotiated h2 by ALPN,
     * the client was shown the certificate made here, and the classes that carried it are the fork's where patched.
     */
    @ParameterizedTest
    @EnumSource(Transport.class)
    void tlsWithOpenSslUnaryCallsAndAServerStream(Transport transport) throws Exception {
        assertTrue(OpenSsl.isAvailable(), () -> "netty-tcnative: " + OpenSsl.unavailabilityCause());
        assertTrue(OpenSsl.versionString().startsWith("BoringSSL"), OpenSsl.versionString());
        X509Bundle certificate = Tls.selfSignedFor127001();
        EngineRecorder serverSsl = new EngineRecorder(Tls.server(certificate));
        EngineRecorder clientSsl = new EngineRecorder(Tls.client(certificate));
        int unarySize = 1024 * 1024;
        int unaryCalls = 16;
        int streamSize = 256 * 1024;
        int streamCount = 32;
        int streamSeed = 1000;
        withServerAndChannel(transport, serverSsl, clientSsl, channel -> {
            List<ClientCall<byte[], byte[]>> calls = new ArrayList<>();
            List<Future<byte[]>> unary = new ArrayList<>();
            for (int c = 0; c < unaryCalls; c++) {
                ClientCall<byte[], byte[]> call = channel.newCall(Bytes.UNARY, CallOptions.DEFAULT);
                calls.add(call);
                unary.add(ClientCalls.futureUnaryCall(call, Bytes.request(unarySize, 1, c)));
            }
            ClientCall<byte[], byte[]> streamCall = channel.newCall(Bytes.STREAM, CallOptions.DEFAULT);
            calls.add(streamCall);
            CompletableFuture<List<byte[]>> stream = serverStream(streamCall,
                    Bytes.request(streamSize, streamCount, streamSeed));
            for (int c = 0; c < unaryCalls; c++) {
                assertMessage(unary.get(c).get(60, TimeUnit.SECONDS), unarySize, c, "call " + c);
            }
            assertMessages(stream.get(60, TimeUnit.SECONDS), streamCount, streamSize, streamSeed, "stream");

            for (ClientCall<byte[], byte[]> call : calls) {
                SSLSession session = call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION);
                assertNotNull(session, "a call without a TLS session");
                assertEquals("TLSv1.3", session.getProtocol());
            }
            assertEquals(1, serverSsl.engines.size(), "server engines (connections)");
            assertEquals(1, clientSsl.engines.size(), "client engines (connections)");
            SSLEngine server = serverSsl.engines.peek();
            SSLEngine client = clientSsl.engines.peek();
            for (SSLEngine engine : List.of(server, client)) {
                assertInstanceOf(ReferenceCountedOpenSslEngine.class, engine, "OpenSSL's engine");
                assertEquals("h2", engine.getApplicationProtocol(), "ALPN");
                assertEquals("TLSv1.3", engine.getSession().getProtocol());
            }
            Certificate[] shown = client.getSession().getPeerCertificates();
            assertArrayEquals(certificate.getCertificatePath(), shown, "the server's certificate chain");

            assertLoadedFrom(Http2ConnectionHandler.class, "netty-codec-http2");
            assertLoadedFrom(AbstractChannel.class, "netty-transport");
            assertLoadedFrom(transport.channel(), transport == Transport.IO_URING
                    ? "netty-transport-classes-io_uring" : "netty-transport-classes-epoll");
            assertLoadedFrom(SslHandler.class, "netty-handler");
            assertLoadedFrom(server.getClass(), "netty-handler");
        });
    }

    /** Starts a server-streaming call; the future completes with its messages. */
    private static CompletableFuture<List<byte[]>> serverStream(ClientCall<byte[], byte[]> call, byte[] request) {
        CompletableFuture<List<byte[]>> done = new CompletableFuture<>();
        List<byte[]> messages = new ArrayList<>();
        ClientCalls.asyncServerStreamingCall(call, request, new StreamObserver<byte[]>() {
            @Override
            public void onNext(byte[] value) {
                messages.add(value);
            }

            @Override
            public void onError(Throwable t) {
                done.completeExceptionally(t);
            }

            @Override
            public void onCompleted() {
                done.complete(messages);
            }
        });
        return done;
    }

    /** {@code count} messages of {@code size} bytes, the first made with {@code seed}, the next ones seed + 1, ... */
    private static void assertMessages(List<byte[]> messages, int count, int size, int seed, String what) {
        assertEquals(count, messages.size(), what + " messages");
        for (int m = 0; m < count; m++) {
            assertMessage(messages.get(m), size, seed + m, what + " message " + m);
        }
    }

    private static void assertMessage(byte[] message, int size, int seed, String what) {
        assertEquals(size, message.length, what);
        assertEquals(-1, Bytes.firstMismatch(message, seed), what + ": first wrong byte");
    }

    /** {@code type} came from the jar of {@code artifactId} at the fork's version if patched, the base's if not. */
    private static void assertLoadedFrom(Class<?> type, String artifactId) throws Exception {
        String version = PATCHED.contains(artifactId) ? System.getProperty("netty.bom.version")
                : System.getProperty("netty.base.version");
        Path jar = Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
        assertEquals(artifactId + '-' + version + ".jar", jar.getFileName().toString(), type.getName());
    }

    /**
     * The context grpc-java is given, recording each engine grpc-java makes with it (one per connection: its TLS
     * handlers call {@code newEngine} and build the {@link SslHandler} themselves); changes nothing.
     */
    private static final class EngineRecorder extends DelegatingSslContext {
        final Queue<SSLEngine> engines = new ConcurrentLinkedQueue<>();

        EngineRecorder(SslContext context) {
            super(context);
        }

        @Override
        protected void initEngine(SSLEngine engine) {
            engines.add(engine);
        }
    }

    /** Paranoid leak detection reports when a leaked buffer is collected; collect, then let it report. */
    @AfterAll
    static void noLeakReported() {
        for (int i = 0; i < 3; i++) {
            System.gc();
            ReferenceCountUtil.release(ByteBufAllocator.DEFAULT.buffer(1));
        }
        assertTrue(CountingLeakDetector.LEAKS.isEmpty(), () -> String.join("\n", CountingLeakDetector.LEAKS));
    }

    private interface ChannelTest {
        void run(ManagedChannel channel) throws Exception;
    }

    private static void withServerAndChannel(Transport transport, ChannelTest test) throws Exception {
        withServerAndChannel(transport, null, null, test);
    }

    /** Server and client on {@code transport}, over TLS with the two contexts, h2c without. */
    private static void withServerAndChannel(Transport transport, SslContext serverSsl, SslContext clientSsl,
                                             ChannelTest test) throws Exception {
        transport.ensureAvailable();
        EventLoopGroup boss = transport.newGroup(1, "boss");
        EventLoopGroup workers = transport.newGroup(2, "server");
        EventLoopGroup clientGroup = transport.newGroup(2, "client");
        Server server = Bytes.startServer(transport, boss, workers, serverSsl);
        ManagedChannel channel = Bytes.channel(transport, clientGroup, server.getPort(), clientSsl, null);
        try {
            test.run(channel);
        } finally {
            channel.shutdownNow().awaitTermination(30, TimeUnit.SECONDS);
            server.shutdownNow().awaitTermination(30, TimeUnit.SECONDS);
            boss.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
            workers.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
            clientGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }
}
