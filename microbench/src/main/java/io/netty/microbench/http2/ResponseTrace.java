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

import io.netty.channel.Channel;
import io.netty.util.concurrent.Future;
import io.netty.util.internal.SystemPropertyUtil;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Where the latency of each response goes, with {@code -Dh2bench.trace=true}: the client and the server of
 * {@code Http2ResponseBenchmark} run in one JVM and stamp every response with {@link System#nanoTime()} at five
 * points: {@link #SENT} (the client's burst of requests began), {@link #READ} (the server's handler read the
 * request), {@link #LAST_DATA} (the response's {@code DATA} frame with {@code END_STREAM} reached the head of the
 * server's pipeline), {@link #WRITTEN} (the server's event loop completed the response's write promise: the write
 * system call returned, or the io_uring completion was processed) and {@link #RECEIVED} (the client read
 * {@code END_STREAM}). {@link #report(PrintStream)} prints the mean of the four legs in bands of client latency:
 * {@code request} (to the server's handler), {@code queued} (until the whole body was handed to the transport: HTTP/2
 * flow control, which waits for the channel's writability, the distributor's order and, with
 * {@code Http2MultiplexHandler}, the flush of the child channels), {@code socketWrite} (until the write completed)
 * and {@code delivery} (the kernel and the client). The client can read the last bytes before the server's loop
 * processes the write's completion, so {@code delivery} can be negative. A response without {@code DATA} (an empty
 * body) is never complete and is not reported. Off by default: each response then costs a few map operations and
 * allocations, which is part of what is measured.
 */
final class ResponseTrace {
    static final String PROPERTY = "h2bench.trace";
    static final boolean ENABLED = SystemPropertyUtil.getBoolean(PROPERTY, false);

    static final int SENT = 0;
    static final int READ = 1;
    static final int LAST_DATA = 2;
    static final int WRITTEN = 3;
    static final int RECEIVED = 4;
    private static final String[] LEGS = { "request", "queued", "socketWrite", "delivery" };
    /** Bands of client latency, in thousandths of the responses sorted by it; the last one ends with the slowest. */
    private static final int[] BAND_BOUNDS = { 0, 500, 990, 999, 1000 };

    /**
     * The stamps of each response (written by the client's and the server's event loops), by a key of the client's
     * port (the server's remote port) in the upper half and the stream id in the lower.
     */
    private static final Map<Long, AtomicLongArray> STAMPS = new ConcurrentHashMap<>();

    private ResponseTrace() {
    }

    /**
     * Stamps {@code point} of the response on stream {@code streamId} of {@code connection}, a server connection if
     * {@code server}, else a client one, with the current time.
     */
    static void stamp(Channel connection, boolean server, int streamId, int point) {
        stamp(connection, server, streamId, point, System.nanoTime());
    }

    /** Stamps {@code point} of the response on stream {@code streamId} of {@code connection} with {@code nanos}. */
    static void stamp(Channel connection, boolean server, int streamId, int point, long nanos) {
        STAMPS.computeIfAbsent(key(connection, server, streamId), k -> new AtomicLongArray(RECEIVED + 1))
                .set(point, nanos);
    }

    /**
     * Stamps {@link #WRITTEN} of the response on stream {@code streamId} of the server connection {@code connection}
     * when {@code write} succeeds, or forgets the response if it fails.
     */
    static void written(final Channel connection, final int streamId, Future<?> write) {
        write.addListener(f -> {
            if (f.isSuccess()) {
                stamp(connection, true, streamId, WRITTEN);
            } else {
                STAMPS.remove(key(connection, true, streamId));
            }
        });
    }

    private static long key(Channel connection, boolean server, int streamId) {
        InetSocketAddress client = (InetSocketAddress) (server ? connection.remoteAddress()
                : connection.localAddress());
        return (long) client.getPort() << 32 | streamId;
    }

    /**
     * Prints, for the responses completed since the last call, the mean of each leg in microseconds per band of
     * client latency, and the stamps of the responses of the slowest one's burst; forgets them.
     */
    static void report(PrintStream out) {
        List<long[]> done = new ArrayList<>();
        for (Iterator<AtomicLongArray> i = STAMPS.values().iterator(); i.hasNext();) {
            AtomicLongArray stamps = i.next();
            long[] copy = new long[stamps.length()];
            boolean complete = true;
            for (int point = 0; point < copy.length; point++) {
                copy[point] = stamps.get(point);
                complete &= copy[point] != 0;
            }
            if (complete) {
                done.add(copy);
                i.remove();
            }
        }
        if (done.isEmpty()) {
            return;
        }
        done.sort((a, b) -> Long.compare(a[RECEIVED] - a[SENT], b[RECEIVED] - b[SENT]));
        int n = done.size();
        for (int band = 0; band + 1 < BAND_BOUNDS.length; band++) {
            int from = (int) ((long) n * BAND_BOUNDS[band] / 1000);
            int to = (int) ((long) n * BAND_BOUNDS[band + 1] / 1000);
            boolean last = band + 2 == BAND_BOUNDS.length;
            StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "trace [%.3f-%.3f%c n=%d mean us:",
                    BAND_BOUNDS[band] / 1000.0, BAND_BOUNDS[band + 1] / 1000.0, last ? ']' : ')', to - from));
            for (int leg = 0; leg < LEGS.length; leg++) {
                line.append(' ').append(LEGS[leg]).append(' ');
                if (to == from) {
                    line.append('-');
                    continue;
                }
                long sum = 0;
                for (int i = from; i < to; i++) {
                    sum += done.get(i)[leg + 1] - done.get(i)[leg];
                }
                line.append(String.format(Locale.ROOT, "%.1f", sum / 1000.0 / (to - from)));
            }
            out.println(line);
        }
        // The responses of the slowest one's burst (the same connection and send time), in the order they were read.
        long[] slowest = done.get(n - 1);
        List<long[]> burst = new ArrayList<>();
        for (long[] stamps : done) {
            if (stamps[SENT] == slowest[SENT]) {
                burst.add(stamps);
            }
        }
        burst.sort((a, b) -> Long.compare(a[READ], b[READ]));
        StringBuilder line = new StringBuilder("trace slowest burst, us after sent (read lastData written received):");
        for (long[] stamps : burst) {
            line.append(" [");
            for (int point = READ; point <= RECEIVED; point++) {
                line.append(point == READ ? "" : " ").append((stamps[point] - stamps[SENT]) / 1000);
            }
            line.append(']');
        }
        out.println(line);
    }
}
