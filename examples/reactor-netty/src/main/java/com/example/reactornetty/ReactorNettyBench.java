package com.example.reactornetty;

import io.netty.util.Version;
import reactor.netty.DisposableServer;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * A measurement harness, not a test, with two workloads.
 * <p>
 * {@code get64k} (the default): Reactor Netty's client sends {@code GET}s at a fixed rate, alternating over 2 h2c
 * connections, to a Reactor Netty h2c server in its own configuration (only the protocol and the loop resources set)
 * answering 64 KiB each, and prints one line: the DATA frames the server sent per response (counted from the raw
 * bytes on the client), the server's event-loop CPU per request (thread CPU time of its loop, ThreadMXBean) and the
 * latency percentiles, measured from each request's scheduled start. Bounded: {@code --warmup} + {@code --requests}
 * requests, then it stops.
 * <p>
 * {@code fluxNextToBulk}, {@code fileNextToBulk}: {@code --rounds} rounds (after {@code --warmup} ones) of
 * {@link StreamNextToBulk} on one h2c connection, {@code --bulk-streams} responses of {@code --bulk-size} bytes and a
 * streamed one of {@code --stream-size} bytes (a {@code Flux} of 16 KiB buffers, or {@code sendFile}), one round
 * after the other; prints the streamed response's completion time (p50, max), the round's (p50), and how much of the
 * bulk bytes had arrived when the streamed response was complete (median). Each round is bounded (60 s, then it
 * fails).
 *
 * <pre>
 * --transport io_uring|epoll|nio   the server's transport (the client is always on epoll)
 * --workload get64k|fluxNextToBulk|fileNextToBulk
 * get64k:           --rate requests/s --requests N --warmup N (defaults 2000, 10000, 2000)
 * ...NextToBulk:    --rounds N --warmup N --bulk-streams N --bulk-size BYTES --stream-size BYTES (k, m: KiB, MiB;
 *                   defaults 20, 3, 8, 8m, 4m) --window BYTES (the client's HTTP/2 windows, of each stream and of the
 *                   connection; default 0: Reactor Netty's, 64 KiB; a workload name gets "-windowNk" otherwise)
 * </pre>
 * Run by tools/frameworks-bench.sh, which builds it against the fork and against upstream and prints the table.
 */
public final class ReactorNettyBench {
    private static final String SERVER_THREADS = "bench-server";

    private ReactorNettyBench() {
    }

    public static void main(String[] args) throws Exception {
        NativeLoopResources.Transport transport = NativeLoopResources.Transport.IO_URING;
        String workload = "get64k";
        int rate = 2000;
        int requests = 10000;
        int warmup = -1;
        int rounds = 20;
        int bulkStreams = 8;
        int bulkSize = 8 << 20;
        int streamSize = 4 << 20;
        int window = 0;
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("missing value for " + args[i]);
            }
            String v = args[i + 1];
            switch (args[i]) {
                case "--transport": transport = NativeLoopResources.Transport.of(v); break;
                case "--workload": workload = v; break;
                case "--rounds": rounds = Integer.parseInt(v); break;
                case "--bulk-streams": bulkStreams = Integer.parseInt(v); break;
                case "--bulk-size": bulkSize = size(v); break;
                case "--stream-size": streamSize = size(v); break;
                case "--window": window = size(v); break;
                case "--rate": rate = Integer.parseInt(v); break;
                case "--requests": requests = Integer.parseInt(v); break;
                case "--warmup": warmup = Integer.parseInt(v); break;
                default: throw new IllegalArgumentException("unknown option: " + args[i]);
            }
        }
        NativeLoopResources serverLoops = new NativeLoopResources(transport, 1, SERVER_THREADS);
        NativeLoopResources clientLoops = new NativeLoopResources(NativeLoopResources.Transport.EPOLL, 1,
                "bench-client");
        DisposableServer server = BytesServer.start(serverLoops, new AtomicInteger());
        try {
            switch (workload) {
                case "get64k":
                    get64k(transport, server, clientLoops, rate, requests, warmup < 0 ? 2000 : warmup);
                    break;
                case "fluxNextToBulk":
                case "fileNextToBulk":
                    StreamNextToBulk.Streamed streamed = workload.startsWith("flux") ? StreamNextToBulk.Streamed.FLUX
                            : StreamNextToBulk.Streamed.FILE;
                    streamNextToBulk(transport, server, clientLoops, workload, streamed, rounds,
                            warmup < 0 ? 3 : warmup, bulkStreams, bulkSize, streamSize, window);
                    break;
                default:
                    throw new IllegalArgumentException("unknown workload: " + workload
                            + " (get64k, fluxNextToBulk or fileNextToBulk)");
            }
        } finally {
            server.disposeNow(Duration.ofSeconds(30));
            clientLoops.dispose();
            serverLoops.dispose();
        }
    }

    /** {@code 4194304}, {@code 4096k} or {@code 4m}. */
    private static int size(String v) {
        String s = v.toLowerCase(Locale.ROOT);
        if (s.endsWith("k")) {
            return Integer.parseInt(s.substring(0, s.length() - 1)) << 10;
        }
        if (s.endsWith("m")) {
            return Integer.parseInt(s.substring(0, s.length() - 1)) << 20;
        }
        return Integer.parseInt(s);
    }

    private static void streamNextToBulk(NativeLoopResources.Transport transport, DisposableServer server,
                                         NativeLoopResources clientLoops, String workload,
                                         StreamNextToBulk.Streamed streamed, int rounds, int warmup, int bulkStreams,
                                         int bulkSize, int streamSize, int window) {
        if (streamSize % BytesServer.CHUNK != 0) {
            throw new IllegalArgumentException("--stream-size: a multiple of " + BytesServer.CHUNK);
        }
        long[] streamNanos = new long[rounds];
        long[] totalNanos = new long[rounds];
        double[] bulkFraction = new double[rounds];
        try (BytesClient client = new BytesClient("c", clientLoops, server, null, window)) {
            for (int i = -warmup; i < rounds; i++) {
                StreamNextToBulk.Result r = StreamNextToBulk.run(client, bulkStreams, bulkSize, streamed,
                        streamSize, Duration.ofSeconds(60)).block();
                if (i >= 0) {
                    streamNanos[i] = r.streamNanos;
                    totalNanos[i] = r.totalNanos;
                    bulkFraction[i] = r.bulkFractionAtStreamEnd();
                }
            }
        }
        Arrays.sort(streamNanos);
        Arrays.sort(totalNanos);
        Arrays.sort(bulkFraction);
        System.out.printf(Locale.ROOT, "RESULT framework=reactor-netty transport=%s workload=%s netty=%s"
                        + " calls=%d bulkStreams=%d bulkBytes=%d streamBytes=%d streamP50ms=%.1f streamMaxMs=%.1f"
                        + " totalP50ms=%.1f bulkReadAtStreamEndPct=%.1f bulkReadAtStreamEndMaxPct=%.1f window=%d%n",
                transport.name().toLowerCase(Locale.ROOT), window > 0 ? workload + "-window" + (window >> 10) + "k"
                        : workload,
                Version.identify().get("netty-codec-http2").artifactVersion(), rounds, bulkStreams, bulkSize,
                streamSize, streamNanos[rounds / 2] / 1e6, streamNanos[rounds - 1] / 1e6,
                totalNanos[rounds / 2] / 1e6, bulkFraction[rounds / 2] * 100, bulkFraction[rounds - 1] * 100,
                window);
    }

    private static void get64k(NativeLoopResources.Transport transport, DisposableServer server,
                               NativeLoopResources clientLoops, int rate, int requests, int warmup)
            throws InterruptedException {
        FrameCounter.Counts counts = new FrameCounter.Counts();
        try (BytesClient a = new BytesClient("a", clientLoops, server, counts);
             BytesClient b = new BytesClient("b", clientLoops, server, counts)) {
            BytesClient[] clients = {a, b};
            run(clients, warmup, rate, new long[warmup]);
            counts.reset();
            long[] cpu0 = serverLoopCpuNanos();
            long[] latencies = new long[requests];
            run(clients, requests, rate, latencies);
            long[] cpu1 = serverLoopCpuNanos();
            long cpu = cpu1[0] - cpu0[0];
            long user = cpu1[1] - cpu0[1];
            Arrays.sort(latencies);
            System.out.printf(Locale.ROOT, "RESULT framework=reactor-netty transport=%s workload=get64k netty=%s"
                            + " rate=%d calls=%d messageBytes=%d dataFramesPerMessage=%.2f bytesPerDataFrame=%.0f"
                            + " serverCpuUsPerCall=%.1f serverUserUsPerCall=%.1f p50us=%d p99us=%d%n",
                    transport.name().toLowerCase(Locale.ROOT),
                    Version.identify().get("netty-codec-http2").artifactVersion(), rate, requests, BytesServer.SIZE,
                    (double) counts.dataFrames() / requests, (double) counts.dataBytes() / counts.dataFrames(),
                    cpu / 1000.0 / requests, user / 1000.0 / requests, latencies[requests / 2] / 1000,
                    latencies[requests * 99 / 100] / 1000);
        }
    }

    private static void run(BytesClient[] clients, int requests, int rate, long[] latencies)
            throws InterruptedException {
        CountDownLatch done = new CountDownLatch(requests);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long interval = TimeUnit.SECONDS.toNanos(1) / rate;
        long start = System.nanoTime();
        for (int i = 0; i < requests; i++) {
            long scheduled = start + i * interval;
            long wait;
            while ((wait = scheduled - System.nanoTime()) > 0) {
                LockSupport.parkNanos(wait);
            }
            int request = i;
            clients[i % clients.length].get(i).subscribe(body -> {
                latencies[request] = System.nanoTime() - scheduled;
                if (body.length != BytesServer.SIZE) {
                    failure.compareAndSet(null, new IllegalStateException("request " + request + ": "
                            + body.length + " bytes"));
                }
                done.countDown();
            }, t -> {
                failure.compareAndSet(null, t);
                done.countDown();
            });
        }
        if (!done.await(120, TimeUnit.SECONDS)) {
            throw new IllegalStateException("requests still running after 120 s: " + done.getCount());
        }
        if (failure.get() != null) {
            throw new IllegalStateException("a request failed", failure.get());
        }
    }

    /**
     * The CPU time of the server's event-loop threads, in one pass: {@code [all of it, the part in user mode]} (the
     * rest is the kernel's, e.g. the TCP send path, which on loopback may also run the receiving side's processing).
     */
    private static long[] serverLoopCpuNanos() {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long[] sum = new long[2];
        for (ThreadInfo info : mx.getThreadInfo(mx.getAllThreadIds())) {
            if (info != null && info.getThreadName().startsWith(SERVER_THREADS)) {
                sum[0] += mx.getThreadCpuTime(info.getThreadId());
                sum[1] += mx.getThreadUserTime(info.getThreadId());
            }
        }
        return sum;
    }
}
