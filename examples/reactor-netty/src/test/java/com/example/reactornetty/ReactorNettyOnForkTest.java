package com.example.reactornetty;

import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.Version;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import reactor.core.publisher.Flux;
import reactor.netty.DisposableServer;
import reactor.util.function.Tuple2;
import reactor.util.function.Tuples;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Reactor Netty h2c over the Netty the BOM gives, on io_uring and on epoll: the right jars, every byte intact. */
class ReactorNettyOnForkTest {
    private static final Set<String> PATCHED = Set.of("netty-transport", "netty-codec-http2",
            "netty-transport-classes-io_uring", "netty-transport-native-io_uring");
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
