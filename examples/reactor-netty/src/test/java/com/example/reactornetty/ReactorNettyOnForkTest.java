package com.example.reactornetty;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.WeightedFairQueueByteDistributor;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.Version;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
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
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Reactor Netty h2c over the Netty the BOM gives, on io_uring, epoll and NIO: the right jars, every byte intact, and a
 * streamed response not starved by bulk responses on its connection.
 */
class ReactorNettyOnForkTest {
    /** The patched modules, from the build ({@code -Dfork.patchedModules}), as artifact ids. */
    private static final Set<String> PATCHED = Arrays.stream(System.getProperty("fork.patchedModules").split(","))
            .map(module -> "netty-" + module.trim()).collect(Collectors.toSet());
    private static final int STREAMS = 64;
    /**
     * The bound on one round of {@link #streamedResponseNextToBulkResponsesOnOneConnection} (68 MiB on loopback, every
     * buffer under paranoid leak detection): 0.45-2.8 s on the fork and 2.1-4.6 s on upstream's 4.2.18, on this
     * project's 2-core machine with other builds running (load 2-9). 30 s, 6 times upstream's slowest, fails a
     * response that stalls (a writer no event wakes again), not a noisy machine; a response held back only until the
     * bulk responses end is what the share below catches.
     */
    private static final Duration BOUND = Duration.ofSeconds(30);
    private static final int BULK_STREAMS = 8;
    private static final int BULK_SIZE = 8 << 20;
    /** 256 chunks of 16 KiB: twice Reactor Netty's prefetch (128 chunks), so the Flux is asked for more twice. */
    private static final int STREAM_SIZE = 4 << 20;
    /** The client's windows, stream and connection (a browser's are of this order; HTTP/2's initial: 64 KiB). */
    private static final int CLIENT_WINDOW = 16 << 20;
    /**
     * A streamed response starved behind the bulk ones ends after all their bytes (100%); one that gets its share
     * (1/9 of the connection) ends when about half of them have arrived. On io_uring, measured 51-65% on the fork
     * (both writers) and 100% with upstream's 4.2.18 for {@code sendFile} in every round.
     */
    private static final double MAX_BULK_FRACTION_AT_STREAM_END = 0.9;

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
     * with the fork's BOM the fork's (WholeChunkStreamByteDistributor), with upstream's WeightedFairQueue.
     */
    @Test
    void serverTakesNettysDefaultDistributor() throws Exception {
        boolean fork = !System.getProperty("netty.bom.version").equals(System.getProperty("netty.base.version"));
        // By name: the class exists only in the fork's codec-http2.
        String expected = fork ? "io.netty.handler.codec.http2.WholeChunkStreamByteDistributor"
                : WeightedFairQueueByteDistributor.class.getName();
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
            assertEquals(expected, distributor.get(30, TimeUnit.SECONDS).getName());
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

    static Stream<Arguments> streamedResponses() {
        return Arrays.stream(NativeLoopResources.Transport.values()).flatMap(transport ->
                Arrays.stream(StreamNextToBulk.Streamed.values()).map(streamed -> Arguments.of(transport, streamed)));
    }

    /**
     * On one connection, 8 bulk responses of 8 MiB (each one write of a {@code byte[]}) and, once all have started, a
     * streamed response of 4 MiB: a {@code Flux} of 16 KiB buffers made as Reactor Netty asks for them (paced by its
     * write completions), or {@code sendFile} (a {@code ChunkedWriteHandler} on the stream channel, paced by its
     * writability: the writer that upstream's {@code Http2MultiplexHandler} starves next to bulk streams, issue 29).
     * The client, with windows large enough that the server's flow controller decides who sends, reads every byte and
     * checks it. On every transport: done within {@link #BOUND}, every byte right, one connection, no leak (checked
     * after all tests). On io_uring also: the streamed response ends before 90% of the bulk bytes have arrived (its
     * share; upstream's 4.2.18 fails this with {@code sendFile}). Not asserted on epoll and NIO: there the loopback
     * client reads faster than the server, slowed by paranoid leak detection, writes, the socket seldom fills, and
     * the share varies from round to round: 55-100% on the fork and on upstream alike (printed; without leak
     * detection upstream's {@code sendFile} ends after all bulk bytes on NIO too, the fork's at 55-67%:
     * {@code ReactorNettyBench}).
     */
    @ParameterizedTest
    @MethodSource("streamedResponses")
    void streamedResponseNextToBulkResponsesOnOneConnection(NativeLoopResources.Transport transport,
                                                            StreamNextToBulk.Streamed streamed) {
        NativeLoopResources serverLoops = new NativeLoopResources(transport, 1, "server");
        NativeLoopResources clientLoops = new NativeLoopResources(transport, 1, "client");
        AtomicInteger connections = new AtomicInteger();
        DisposableServer server = BytesServer.start(serverLoops, connections);
        try (BytesClient client = new BytesClient("c", clientLoops, server, null, CLIENT_WINDOW)) {
            StreamNextToBulk.Result r = StreamNextToBulk.run(client, BULK_STREAMS, BULK_SIZE, streamed, STREAM_SIZE,
                    BOUND).block();
            System.out.printf(Locale.ROOT, "%s %s next to %d x %d MiB: streamed response in %d ms, all in %d ms;"
                            + " bulk bytes read when it was requested %.1f%%, when it ended %.1f%%%n", transport,
                    streamed, BULK_STREAMS, BULK_SIZE >> 20, r.streamNanos / 1_000_000, r.totalNanos / 1_000_000,
                    r.bulkFractionAtStreamStart() * 100, r.bulkFractionAtStreamEnd() * 100);
            if (transport == NativeLoopResources.Transport.IO_URING) {
                assertTrue(r.bulkFractionAtStreamEnd() < MAX_BULK_FRACTION_AT_STREAM_END, () -> String.format(
                        Locale.ROOT, "the streamed response ended after %.1f%% of the bulk bytes: starved",
                        r.bulkFractionAtStreamEnd() * 100));
            }
            assertEquals(1, connections.get(), "connections accepted");
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
