package com.example.reactornetty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.HttpProtocol;
import reactor.netty.http.server.HttpServer;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.resources.LoopResources;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An h2c server (prior knowledge) whose bodies hold {@link #pattern(int, int) pattern(N % 64, i)} at index {@code i},
 * so a client can check every byte. Reactor Netty's own HTTP/2 settings: only the protocol and the loop resources are
 * set.
 * <ul>
 * <li>{@code GET /bytes/N}: {@link #SIZE} bytes.</li>
 * <li>{@code GET /bulk/N/SIZE}: {@code SIZE} bytes, written at once (one {@code byte[]}): a bulk response, which HTTP/2
 * flow control then sends as fast as the connection takes it.</li>
 * <li>{@code GET /flux/N/SIZE}: {@code SIZE} bytes (a multiple of {@link #CHUNK}), a {@code Flux} of {@link #CHUNK}
 * byte buffers made only when Reactor Netty asks for them: it asks for {@code reactor.netty.send.maxPrefetchSize}
 * (128) at first and for more as the written ones complete, so a longer response is paced by its writes
 * (back-pressure), not buffered.</li>
 * <li>{@code GET /file/N/SIZE}: {@code SIZE} bytes from a file ({@code sendFile}). On an HTTP/2 stream Reactor Netty
 * sends a file through a {@code ChunkedWriteHandler} (1 KiB chunks), which writes only while the stream channel is
 * writable: the writer of issue 29.</li>
 * </ul>
 */
public final class BytesServer {
    public static final int SIZE = 64 * 1024;
    public static final int CHUNK = 16 * 1024;
    private static final byte[][] BODIES = new byte[64][];
    private static final Map<Long, byte[]> BULK_BODIES = new ConcurrentHashMap<>();
    private static final Map<Long, Path> FILES = new ConcurrentHashMap<>();

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
        return (int) firstMismatch(body, body.length, seed, 0);
    }

    /**
     * The offset in the body of the first of the {@code length} bytes of {@code part}, the body's bytes from
     * {@code offset} on, that is not {@code pattern(seed % 64, offset + i)}, or -1.
     */
    public static long firstMismatch(byte[] part, int length, int seed, long offset) {
        for (int i = 0; i < length; i++) {
            if (part[i] != pattern(seed % 64, (int) (offset + i))) {
                return offset + i;
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
                .route(routes -> routes
                        .get("/bytes/{seed}", (request, response) -> response
                                .header("content-type", "application/octet-stream")
                                .sendByteArray(Mono.just(BODIES[Math.floorMod(param(request, "seed"), 64)])))
                        .get("/bulk/{seed}/{size}", (request, response) -> response
                                .header("content-type", "application/octet-stream")
                                .sendByteArray(Mono.just(bulkBody(param(request, "seed"), param(request, "size")))))
                        .get("/flux/{seed}/{size}", (request, response) -> response
                                .header("content-type", "application/octet-stream")
                                .send(chunks(response.alloc(), param(request, "seed"), param(request, "size"))))
                        .get("/file/{seed}/{size}", (request, response) -> response
                                .header("content-type", "application/octet-stream")
                                .sendFile(file(param(request, "seed"), param(request, "size")))))
                .bindNow();
    }

    private static int param(HttpServerRequest request, String name) {
        return Integer.parseInt(request.param(name));
    }

    /** Made once per seed and size, so that a bulk response costs the server its writes only. */
    private static byte[] bulkBody(int seed, int size) {
        return BULK_BODIES.computeIfAbsent((long) size << 6 | Math.floorMod(seed, 64), key -> body(seed, size));
    }

    private static byte[] body(int seed, int size) {
        byte[] body = new byte[size];
        for (int i = 0; i < size; i++) {
            body[i] = pattern(seed % 64, i);
        }
        return body;
    }

    /** A temporary file, made once per seed and size (deleted when the JVM exits). */
    private static Path file(int seed, int size) {
        return FILES.computeIfAbsent((long) size << 6 | Math.floorMod(seed, 64), key -> {
            try {
                Path file = Files.createTempFile("bytes-" + seed + '-' + size + '-', ".bin");
                file.toFile().deleteOnExit();
                return Files.write(file, body(seed, size));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    /**
     * {@code size / CHUNK} chunks of {@link #CHUNK} bytes, each made (a pooled buffer, filled with one write: a buffer
     * under paranoid leak detection records every access) when it is requested.
     */
    private static Flux<ByteBuf> chunks(ByteBufAllocator alloc, int seed, int size) {
        if (size % CHUNK != 0) {
            throw new IllegalArgumentException("not a multiple of " + CHUNK + ": " + size);
        }
        return Flux.range(0, size / CHUNK).map(chunk -> {
            byte[] bytes = new byte[CHUNK];
            for (int i = 0; i < CHUNK; i++) {
                bytes[i] = pattern(seed % 64, chunk * CHUNK + i);
            }
            return alloc.buffer(CHUNK).writeBytes(bytes);
        });
    }
}
