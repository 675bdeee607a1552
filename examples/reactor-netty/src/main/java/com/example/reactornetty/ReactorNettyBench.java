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
 * A measurement harness, not a test: Reactor Netty's client sends {@code GET}s at a fixed rate, alternating over 2
 * h2c connections, to a Reactor Netty h2c server in its own configuration (only the protocol and the loop resources
 * set) answering 64 KiB each, and prints one line: the DATA frames the server sent per response (counted from the raw
 * bytes on the client), the server's event-loop CPU per request (thread CPU time of its loop, ThreadMXBean) and the
 * latency percentiles, measured from each request's scheduled start. Bounded: {@code --warmup} + {@code --requests}
 * requests, then it stops.
 *
 * <pre>
 * --transport io_uring|epoll   the server's transport (the client is always on epoll)
 * --rate requests/s --requests N --warmup N
 * </pre>
 * Run by tools/frameworks-bench.sh, which builds it against the fork and against upstream and prints the table.
 */
public final class ReactorNettyBench {
    private static final String SERVER_THREADS = "bench-server";

    private ReactorNettyBench() {
    }

    public static void main(String[] args) throws Exception {
        NativeLoopResources.Transport transport = NativeLoopResources.Transport.IO_URING;
        int rate = 2000;
        int requests = 10000;
        int warmup = 2000;
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("missing value for " + args[i]);
            }
            String v = args[i + 1];
            switch (args[i]) {
                case "--transport": transport = NativeLoopResources.Transport.of(v); break;
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
        } finally {
            server.disposeNow(Duration.ofSeconds(30));
            clientLoops.dispose();
            serverLoops.dispose();
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
