package com.example.grpc;

import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.SslContext;
import io.netty.pkitesting.X509Bundle;
import io.netty.util.Version;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * A measurement harness, not a test: a grpc-java client drives calls at a fixed rate against a grpc-java server in
 * its own configuration (only the transport and the event loops set) and prints one line: the DATA frames the server
 * sent per message (counted from the raw bytes on the client), the server's event-loop CPU per call (thread CPU time
 * of its loop, ThreadMXBean) and the latency percentiles, measured from each call's scheduled start (so a stall
 * counts for every call it delays). Bounded: {@code --warmup} + {@code --calls} calls, then it stops.
 *
 * <pre>
 * --transport io_uring|epoll   the server's transport (the client is always on epoll)
 * --workload unary|stream      unary: one message of --size bytes; stream: --count messages of --size bytes
 * --rate calls/s --calls N --warmup N --size bytes --count N
 * --tls                        over TLS (Tls: GrpcSslContexts, OpenSSL with netty-tcnative, a self-signed certificate
 *                              made at start); frames are counted from the bytes the client's SslHandler decrypted
 * </pre>
 * Run by tools/frameworks-bench.sh, which builds it against the fork and against upstream and prints the table.
 */
public final class GrpcBench {
    private static final String SERVER_THREADS = "bench-server";

    private GrpcBench() {
    }

    public static void main(String[] args) throws Exception {
        Transport transport = Transport.IO_URING;
        String workload = "unary";
        int rate = 200;
        int calls = 1000;
        int warmup = 200;
        int size = -1;
        int count = 16;
        boolean tls = false;
        for (int i = 0; i < args.length; i += 2) {
            if ("--tls".equals(args[i])) {
                tls = true;
                i--;
                continue;
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("missing value for " + args[i]);
            }
            String v = args[i + 1];
            switch (args[i]) {
                case "--transport": transport = Transport.of(v); break;
                case "--workload": workload = v; break;
                case "--rate": rate = Integer.parseInt(v); break;
                case "--calls": calls = Integer.parseInt(v); break;
                case "--warmup": warmup = Integer.parseInt(v); break;
                case "--size": size = Integer.parseInt(v); break;
                case "--count": count = Integer.parseInt(v); break;
                default: throw new IllegalArgumentException("unknown option: " + args[i]);
            }
        }
        boolean unary;
        if ("unary".equals(workload)) {
            unary = true;
            count = 1;
            size = size < 0 ? 1024 * 1024 : size;
        } else if ("stream".equals(workload)) {
            unary = false;
            size = size < 0 ? 64 * 1024 : size;
        } else {
            throw new IllegalArgumentException("unknown workload: " + workload + " (unary or stream)");
        }
        transport.ensureAvailable();
        SslContext serverSsl = null;
        SslContext clientSsl = null;
        if (tls) {
            if (!OpenSsl.isAvailable()) {
                throw new IllegalStateException("--tls measures OpenSSL: netty-tcnative is not available",
                        OpenSsl.unavailabilityCause());
            }
            X509Bundle certificate = Tls.selfSignedFor127001();
            serverSsl = Tls.server(certificate);
            clientSsl = Tls.client(certificate);
        }

        EventLoopGroup boss = transport.newGroup(1, "bench-boss");
        EventLoopGroup workers = transport.newGroup(1, SERVER_THREADS);
        EventLoopGroup clientGroup = Transport.EPOLL.newGroup(1, "bench-client");
        Server server = Bytes.startServer(transport, boss, workers, serverSsl);
        FrameCounter.Counts counts = new FrameCounter.Counts();
        ManagedChannel channel = Bytes.channel(Transport.EPOLL, clientGroup, server.getPort(), clientSsl, counts);
        try {
            Driver driver = new Driver(channel, unary, size, count);
            driver.run(warmup, rate, new long[warmup]);
            counts.reset();
            long[] cpu0 = serverLoopCpuNanos();
            long[] latencies = new long[calls];
            driver.run(calls, rate, latencies);
            long[] cpu1 = serverLoopCpuNanos();
            long cpu = cpu1[0] - cpu0[0];
            long user = cpu1[1] - cpu0[1];
            Arrays.sort(latencies);
            long messages = (long) calls * count;
            System.out.printf(Locale.ROOT, "RESULT framework=grpc transport=%s workload=%s%s netty=%s rate=%d calls=%d"
                            + " messageBytes=%d dataFramesPerMessage=%.2f bytesPerDataFrame=%.0f"
                            + " serverCpuUsPerCall=%.1f serverUserUsPerCall=%.1f p50us=%d p99us=%d%n",
                    transport.name().toLowerCase(Locale.ROOT), workload, tls ? "-tls" : "",
                    Version.identify().get("netty-codec-http2").artifactVersion(), rate, calls, size,
                    (double) counts.dataFrames() / messages, (double) counts.dataBytes() / counts.dataFrames(),
                    cpu / 1000.0 / calls, user / 1000.0 / calls, latencies[calls / 2] / 1000,
                    latencies[calls * 99 / 100] / 1000);
        } finally {
            channel.shutdownNow().awaitTermination(30, TimeUnit.SECONDS);
            server.shutdownNow().awaitTermination(30, TimeUnit.SECONDS);
            boss.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
            workers.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
            clientGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
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

    /** Starts calls at a fixed rate, records each one's latency from its scheduled start, waits for all. */
    private static final class Driver {
        private final ManagedChannel channel;
        private final boolean unary;
        private final int size;
        private final int count;

        Driver(ManagedChannel channel, boolean unary, int size, int count) {
            this.channel = channel;
            this.unary = unary;
            this.size = size;
            this.count = count;
        }

        void run(int calls, int rate, long[] latencies) throws InterruptedException {
            CountDownLatch done = new CountDownLatch(calls);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            long interval = TimeUnit.SECONDS.toNanos(1) / rate;
            long start = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                long scheduled = start + i * interval;
                long wait;
                while ((wait = scheduled - System.nanoTime()) > 0) {
                    LockSupport.parkNanos(wait);
                }
                int call = i;
                StreamObserver<byte[]> observer = new StreamObserver<>() {
                    private long bytes;

                    @Override
                    public void onNext(byte[] value) {
                        bytes += value.length;
                    }

                    @Override
                    public void onError(Throwable t) {
                        failure.compareAndSet(null, t);
                        done.countDown();
                    }

                    @Override
                    public void onCompleted() {
                        latencies[call] = System.nanoTime() - scheduled;
                        if (bytes != (long) size * count) {
                            failure.compareAndSet(null, new IllegalStateException("call " + call + ": " + bytes
                                    + " bytes, expected " + (long) size * count));
                        }
                        done.countDown();
                    }
                };
                byte[] request = Bytes.request(size, count, call);
                if (unary) {
                    ClientCalls.asyncUnaryCall(channel.newCall(Bytes.UNARY, CallOptions.DEFAULT), request, observer);
                } else {
                    ClientCalls.asyncServerStreamingCall(channel.newCall(Bytes.STREAM, CallOptions.DEFAULT), request,
                            observer);
                }
            }
            if (!done.await(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException("calls still running after 120 s: " + done.getCount());
            }
            if (failure.get() != null) {
                throw new IllegalStateException("a call failed", failure.get());
            }
        }
    }
}
