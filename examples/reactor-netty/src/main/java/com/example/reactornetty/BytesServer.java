package com.example.reactornetty;

import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.HttpProtocol;
import reactor.netty.http.server.HttpServer;
import reactor.netty.resources.LoopResources;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * An h2c server (prior knowledge) whose {@code GET /bytes/N} answers {@link #SIZE} bytes holding
 * {@link #pattern(int, int) pattern(N % 64, i)} at index {@code i}, so a client can check every byte. Reactor Netty's
 * own HTTP/2 settings: only the protocol and the loop resources are set.
 */
public final class BytesServer {
    public static final int SIZE = 64 * 1024;
    private static final byte[][] BODIES = new byte[64][];

    static {
        for (int seed = 0; seed < BODIES.length; seed++) {
            BODIES[seed] = new byte[SIZE];
            for (int i = 0; i < SIZE; i++) {
                BODIES[seed][i] = pattern(seed, i);
            }
        }
    }

    private BytesServer() {
    }

    public static byte pattern(int seed, int i) {
        return (byte) (i * 31 + (i >>> 9) + seed * 131);
    }

    /** The index of the first byte of {@code body} that is not {@code pattern(seed % 64, i)}, or -1. */
    public static int firstMismatch(byte[] body, int seed) {
        for (int i = 0; i < body.length; i++) {
            if (body[i] != pattern(seed % 64, i)) {
                return i;
            }
        }
        return -1;
    }

    /** Binds on loopback, an ephemeral port; {@code connections} counts the connections it accepts. */
    public static DisposableServer start(LoopResources loops, AtomicInteger connections) {
        return HttpServer.create()
                .host("127.0.0.1")
                .port(0)
                .protocol(HttpProtocol.H2C)
                .runOn(loops)
                .doOnChannelInit((observer, channel, address) -> connections.incrementAndGet())
                .handle((request, response) -> {
                    String uri = request.uri();
                    int seed = Integer.parseInt(uri.substring(uri.lastIndexOf('/') + 1));
                    return response.header("content-type", "application/octet-stream")
                            .sendByteArray(Mono.just(BODIES[Math.floorMod(seed, BODIES.length)]));
                })
                .bindNow();
    }
}
