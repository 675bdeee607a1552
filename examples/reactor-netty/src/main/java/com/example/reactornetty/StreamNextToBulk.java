package com.example.reactornetty;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A streamed response next to bulk responses on one connection: {@code bulkStreams} {@code GET /bulk} responses of
 * {@code bulkSize} bytes are requested at once, and as soon as the first bulk bytes arrive, a streamed response of
 * {@code streamSize} bytes ({@link Streamed}; {@link BytesServer}). The client reads all of them as they arrive and
 * checks every byte. What the streamed response gets while the bulk ones have bytes queued is up to the server's
 * HTTP/2 flow controller (its distributor) and to what makes the server's writer of the streamed response write more:
 * a response starved behind the bulk ones ends only after them.
 */
public final class StreamNextToBulk {
    /** The seed of the streamed response's bytes (the bulk responses have 0 to {@code bulkStreams - 1}). */
    private static final int STREAM_SEED = 63;

    /** How the server writes the streamed response. */
    public enum Streamed {
        /**
         * {@code GET /flux}: a {@code Flux} of 16 KiB buffers made on demand; Reactor Netty asks for more as its
         * writes complete (128 at first), whatever the stream channel's writability.
         */
        FLUX("/flux/"),
        /**
         * {@code GET /file}: {@code sendFile}, which Reactor Netty sends on an HTTP/2 stream through a
         * {@code ChunkedWriteHandler}: it writes while the stream channel is writable.
         */
        FILE("/file/");

        final String path;

        Streamed(String path) {
            this.path = path;
        }
    }

    /** What one round measured. */
    public static final class Result {
        /** From the streamed response's request to its last byte read. */
        public final long streamNanos;
        /** From the first request to the last byte of all responses read. */
        public final long totalNanos;
        public final long streamBytes;
        public final long bulkBytes;
        /** The bulk bytes the client had read when it requested the streamed response (its head start). */
        public final long bulkBytesAtStreamStart;
        /** The bulk bytes the client had read when it read the streamed response's last byte. */
        public final long bulkBytesAtStreamEnd;

        Result(long streamNanos, long totalNanos, long streamBytes, long bulkBytes, long bulkBytesAtStreamStart,
               long bulkBytesAtStreamEnd) {
            this.streamNanos = streamNanos;
            this.totalNanos = totalNanos;
            this.streamBytes = streamBytes;
            this.bulkBytes = bulkBytes;
            this.bulkBytesAtStreamStart = bulkBytesAtStreamStart;
            this.bulkBytesAtStreamEnd = bulkBytesAtStreamEnd;
        }

        /**
         * The share of the bulk bytes that arrived before the streamed response was complete: 1 when it ended after
         * them (starved), about {@code streamBytes x bulkStreams / bulkBytes} when the connection was shared evenly.
         */
        public double bulkFractionAtStreamEnd() {
            return (double) bulkBytesAtStreamEnd / bulkBytes;
        }

        /** The same when the streamed response was requested. */
        public double bulkFractionAtStreamStart() {
            return (double) bulkBytesAtStreamStart / bulkBytes;
        }
    }

    private StreamNextToBulk() {
    }

    /**
     * One round on {@code client}'s connection; an error when a body is wrong or short, or when the round is not done
     * within {@code bound} (the error then says how far each kind of response got).
     */
    public static Mono<Result> run(BytesClient client, int bulkStreams, int bulkSize, Streamed streamed,
                                   int streamSize, Duration bound) {
        return Mono.defer(() -> {
            long start = System.nanoTime();
            AtomicLong bulkRead = new AtomicLong();
            AtomicLong streamRead = new AtomicLong();
            CompletableFuture<Void> bulkArriving = new CompletableFuture<>();
            Mono<Long> bulk = Flux.range(0, bulkStreams)
                    .flatMap(seed -> client.check("/bulk/" + seed + '/' + bulkSize, seed, n -> {
                        bulkRead.addAndGet(n);
                        bulkArriving.complete(null);
                    }), bulkStreams)
                    .reduce(0L, Long::sum);
            Mono<long[]> stream = Mono.fromFuture(bulkArriving).then(Mono.defer(() -> {
                long requested = System.nanoTime();
                long headStart = bulkRead.get();
                String path = streamed.path + STREAM_SEED + '/' + streamSize;
                return client.check(path, STREAM_SEED, streamRead::addAndGet)
                        .map(length -> new long[] {length, System.nanoTime() - requested, headStart, bulkRead.get()});
            }));
            long expectedBulk = (long) bulkStreams * bulkSize;
            long expectedStream = streamSize;
            return Mono.zip(bulk, stream)
                    .timeout(bound, Mono.error(() -> new IllegalStateException(String.format(
                            "not done within %s: streamed response %d of %d bytes, bulk responses %d of %d bytes",
                            bound, streamRead.get(), expectedStream, bulkRead.get(), expectedBulk))))
                    .map(t -> {
                        if (t.getT1() != expectedBulk || t.getT2()[0] != expectedStream) {
                            throw new IllegalStateException("bulk responses: " + t.getT1() + " of " + expectedBulk
                                    + " bytes, streamed response: " + t.getT2()[0] + " of " + expectedStream);
                        }
                        return new Result(t.getT2()[1], System.nanoTime() - start, t.getT2()[0], t.getT1(),
                                t.getT2()[2], t.getT2()[3]);
                    });
        });
    }
}
