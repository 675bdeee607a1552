package com.example.reactornetty;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.UniformStreamByteDistributor;
import io.netty.handler.codec.http2.WeightedFairQueueByteDistributor;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.Version;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.HttpProtocol;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.server.HttpServer;
import reactor.netty.resources.ConnectionProvider;
import reactor.util.function.Tuple2;
import reactor.util.function.Tuples;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Reactor Netty h2c over the Netty the BOM gives, on io_uring and on epoll: the right jars, every byte intact. */
class ReactorNettyOnForkTest {
    /** The patched modules, from the build ({@code -Dfork.patchedModules}), as artifact ids. */
    private static final Set<String> PATCHED = Arrays.stream(System.getProperty("fork.patchedModules").split(","))
            .map(module -> "netty-" + module.trim()).collect(Collectors.toSet());
    private static final int STREAMS = 64;

    @Test
    void patchedModulesAtBomVersionOthersAtBase() {
        Map<String, Version> versions = Version.identify();
        assertTrue(versions.keySet().containsAll(PATCHED), versions.keySet().toString());
        assertTrue(versions.containsKey("netty-resolver-dns"), "reactor-netty's other Netty modules");
        for (Map.Entry<String, Version> e : versions.entrySet()) {
            String expected = PATCHED.contains(e.getKey()) ? System.getProperty("netty.bom.version")
                    : System.getProperty("netty.base.version");
            assertEquals(expected, e.getValue().artifactVersion(), e.getKey());
        }
    }

    /**
     * Reactor Netty's HTTP/2 server builds its Http2FrameCodec without a distributor, so Netty's default applies:
     * with the fork's BOM the fork's (UniformStreamByteDistributor), with upstream's WeightedFairQueue.
     */
    @Test
    void serverTakesNettysDefaultDistributor() throws Exception {
        boolean fork = !System.getProperty("netty.bom.version").equals(System.getProperty("netty.base.version"));
        Class<?> expected = fork ? UniformStreamByteDistributor.class : WeightedFairQueueByteDistributor.class;
        NativeLoopResources loops = new NativeLoopResources(NativeLoopResources.Transport.IO_URING, 1, "server");
        CompletableFuture<Class<?>> distributor = new CompletableFuture<>();
        DisposableServer server = HttpServer.create().host("127.0.0.1").port(0).protocol(HttpProtocol.H2C)
                .runOn(loops)
                .handle((request, response) -> {
                    request.withConnection(c -> distributor.complete(distributorOf(c.channel().parent())));
                    return response.sendString(Mono.just("ok"));
                })
                .bindNow();
        ConnectionProvider provider = ConnectionProvider.create("d", 1);
        try {
            String body = HttpClient.create(provider).protocol(HttpProtocol.H2C).runOn(loops)
                    .remoteAddress(server::address).get().uri("/").responseContent().aggregate().asString()
                    .block(Duration.ofSeconds(30));
            assertEquals("ok", body);
            assertEquals(expected, distributor.get(30, TimeUnit.SECONDS));
        } finally {
            provider.disposeLater().block(Duration.ofSeconds(30));
            server.disposeNow(Duration.ofSeconds(30));
            loops.dispose();
        }
    }

    private static Class<?> distributorOf(Channel connection) {
        try {
            Http2FrameCodec codec = connection.pipeline().get(Http2FrameCodec.class);
            Object controller = codec.connection().remote().flowController();
            Field field = DefaultHttp2RemoteFlowController.class.getDeclaredField("streamByteDistributor");
            field.setAccessible(true);
            return field.get(controller).getClass();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /** 64 concurrent streams, 32 on each of 2 connections, each a 64 KiB body checked byte by byte. */
    @ParameterizedTest
    @EnumSource(NativeLoopResources.Transport.class)
    void concurrentResponsesOn2Connections(NativeLoopResources.Transport transport) {
        NativeLoopResources serverLoops = new NativeLoopResources(transport, 2, "server");
        NativeLoopResources clientLoops = new NativeLoopResources(transport, 2, "client");
        AtomicInteger connections = new AtomicInteger();
        DisposableServer server = BytesServer.start(serverLoops, connections);
        try (BytesClient a = new BytesClient("a", clientLoops, server, null);
             BytesClient b = new BytesClient("b", clientLoops, server, null)) {
            List<Tuple2<Integer, byte[]>> bodies = Flux.range(0, STREAMS)
                    .flatMap(seed -> (seed % 2 == 0 ? a : b).get(seed).map(body -> Tuples.of(seed, body)),
                            STREAMS)
                    .collectList()
                    .block(Duration.ofSeconds(60));
            assertEquals(STREAMS, bodies.size());
            for (Tuple2<Integer, byte[]> t : bodies) {
                assertEquals(BytesServer.SIZE, t.getT2().length, "stream " + t.getT1());
                assertEquals(-1, BytesServer.firstMismatch(t.getT2(), t.getT1()),
                        "stream " + t.getT1() + ": first wrong byte");
            }
            assertEquals(2, connections.get(), "connections accepted");
        } finally {
            server.disposeNow(Duration.ofSeconds(30));
            clientLoops.dispose();
            serverLoops.dispose();
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
}
