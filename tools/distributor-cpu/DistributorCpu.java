/*
 * Fork tooling (not part of any upstream PR): one JVM distributes 64 KiB on each of STREAMS streams, BUDGET bytes
 * per distribute() call, with two distributors side by side: the fork's WholeChunkStreamByteDistributor and
 * UniformStreamByteDistributor, which the series does not change (upstream's class, from the fork's jar); both with
 * 16 KiB chunks, each on its own connection and streams (the
 * harness's call sites see both classes, so their type profiles are shared; the third argument says which class
 * warms up and runs first, and the script alternates it from JVM to JVM). After a warm-up of both, it measures
 * PAIRS pairs of slices of about 20 ms each, upstream and fork in turn (the order alternates from pair to pair), so
 * that both see the same machine at the same moments; a slice's cost is the
 * thread's CPU time (ThreadMXBean: time the thread spends descheduled does not count) divided by its operations.
 * Prints one line: budget streams upstream-ns-per-op fork-ns-per-op (medians over the slices), the first quartile,
 * median and third quartile of the per-pair ratio fork/upstream, and the allocations per operation of each.
 */
package io.netty.handler.codec.http2;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

import static io.netty.handler.codec.http2.Http2CodecUtil.DEFAULT_MAX_FRAME_SIZE;

public final class DistributorCpu {
    private static final int BODY_SIZE = 64 * 1024;
    private static final long WARMUP_CPU_NANOS = 1_500_000_000L;
    private static final long SLICE_CPU_NANOS = 20_000_000L;
    private static final int PAIRS = 60;

    private DistributorCpu() {
    }

    /** One distributor with its own connection, streams and writer; an operation drains 64 KiB from each stream. */
    private static final class Setup {
        final StreamByteDistributor distributor;
        final long[] pending;
        final long[] counts = new long[2]; // bytes written in this operation, allocations since the last reset
        final StreamByteDistributor.StreamState[] states;
        final StreamByteDistributor.Writer writer;
        final int budget;
        final long total;

        Setup(StreamByteDistributor distributor, Http2Connection connection, int budget, int streams)
                throws Http2Exception {
            this.distributor = distributor;
            this.budget = budget;
            total = (long) streams * BODY_SIZE;
            pending = new long[streams];
            states = new StreamByteDistributor.StreamState[streams];
            for (int i = 0; i < streams; i++) {
                final Http2Stream stream = connection.local().createStream(2 * i + 1, false);
                final int index = i;
                states[i] = new StreamByteDistributor.StreamState() {
                    @Override
                    public Http2Stream stream() {
                        return stream;
                    }

                    @Override
                    public long pendingBytes() {
                        return pending[index];
                    }

                    @Override
                    public boolean hasFrame() {
                        return pending[index] > 0;
                    }

                    @Override
                    public int windowSize() {
                        return Integer.MAX_VALUE;
                    }
                };
            }
            writer = new StreamByteDistributor.Writer() {
                @Override
                public void write(Http2Stream stream, int numBytes) {
                    int index = stream.id() >>> 1;
                    pending[index] -= numBytes;
                    counts[0] += numBytes;
                    counts[1]++;
                    Setup.this.distributor.updateStreamableBytes(states[index]);
                }
            };
        }

        void run(long ops) throws Http2Exception {
            for (long k = 0; k < ops; k++) {
                counts[0] = 0;
                for (int i = 0; i < pending.length; i++) {
                    pending[i] = BODY_SIZE;
                    distributor.updateStreamableBytes(states[i]);
                }
                while (counts[0] < total) {
                    distributor.distribute(budget, writer);
                }
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            throw new IllegalArgumentException("usage: DistributorCpu BUDGET STREAMS upstream|fork (warmed up first)");
        }
        int budget = Integer.parseInt(args[0]);
        int streams = Integer.parseInt(args[1]);
        int first = "fork".equals(args[2]) ? 1 : 0;

        Http2Connection forkConnection = new DefaultHttp2Connection(false);
        StreamByteDistributor fork = new WholeChunkStreamByteDistributor(forkConnection);
        Http2Connection upstreamConnection = new DefaultHttp2Connection(false);
        // The series does not change UniformStreamByteDistributor: the fork's jar has upstream's class.
        UniformStreamByteDistributor upstream = new UniformStreamByteDistributor(upstreamConnection);
        upstream.minAllocationChunk(DEFAULT_MAX_FRAME_SIZE);
        Setup[] setups = {
                new Setup(upstream, upstreamConnection, budget, streams),
                new Setup(fork, forkConnection, budget, streams)
        };

        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long start = threads.getCurrentThreadCpuTime();
        while (threads.getCurrentThreadCpuTime() - start < WARMUP_CPU_NANOS) {
            setups[first].run(16);
            setups[1 - first].run(16);
        }
        start = threads.getCurrentThreadCpuTime();
        setups[first].run(256);
        long opsPerSlice = Math.max(16, SLICE_CPU_NANOS * 256 / Math.max(1, threads.getCurrentThreadCpuTime() - start));

        double[][] nanosPerOp = new double[2][PAIRS];
        double[] ratios = new double[PAIRS];
        setups[0].counts[1] = 0;
        setups[1].counts[1] = 0;
        for (int pair = 0; pair < PAIRS; pair++) {
            for (int turn = 0; turn < 2; turn++) {
                int which = (first + pair + turn) & 1;
                long before = threads.getCurrentThreadCpuTime();
                setups[which].run(opsPerSlice);
                nanosPerOp[which][pair] = (double) (threads.getCurrentThreadCpuTime() - before) / opsPerSlice;
            }
            ratios[pair] = nanosPerOp[1][pair] / nanosPerOp[0][pair];
        }
        long measuredOps = PAIRS * opsPerSlice;
        Arrays.sort(nanosPerOp[0]);
        Arrays.sort(nanosPerOp[1]);
        Arrays.sort(ratios);
        System.out.printf("%d %d %.1f %.1f %.3f %.3f %.3f %.2f %.2f%n", budget, streams,
                nanosPerOp[0][PAIRS / 2], nanosPerOp[1][PAIRS / 2],
                ratios[PAIRS / 4], ratios[PAIRS / 2], ratios[3 * PAIRS / 4],
                (double) setups[0].counts[1] / measuredOps, (double) setups[1].counts[1] / measuredOps);
    }
}
