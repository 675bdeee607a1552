/*
 * Fork tooling (not part of any upstream PR): one JVM distributes 64 KiB on each of STREAMS streams, BUDGET bytes
 * per distribute() call, with either the UniformStreamByteDistributor on the class path (the fork's) or upstream's
 * class of the base release, renamed UpstreamUniformStreamByteDistributor by tools/distributor-cpu.sh; both with a
 * 16 KiB minimum chunk. Prints: variant budget streams cpu-ns-per-op allocations-per-op. The CPU time is the
 * thread's (ThreadMXBean), so time the thread spends descheduled on a busy machine does not count.
 */
package io.netty.handler.codec.http2;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

import static io.netty.handler.codec.http2.Http2CodecUtil.DEFAULT_MAX_FRAME_SIZE;

public final class DistributorCpu {
    private static final int BODY_SIZE = 64 * 1024;
    private static final int WARMUP_SLICES = 6;
    private static final int SLICES = 12;
    private static final long SLICE_CPU_NANOS = 100_000_000L;

    private DistributorCpu() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            throw new IllegalArgumentException("usage: DistributorCpu fork|upstream BUDGET STREAMS");
        }
        String variant = args[0];
        int budget = Integer.parseInt(args[1]);
        int streams = Integer.parseInt(args[2]);
        Http2Connection connection = new DefaultHttp2Connection(false);
        final StreamByteDistributor distributor;
        if ("fork".equals(variant)) {
            UniformStreamByteDistributor d = new UniformStreamByteDistributor(connection);
            d.minAllocationChunk(DEFAULT_MAX_FRAME_SIZE);
            distributor = d;
        } else if ("upstream".equals(variant)) {
            // Loaded by name: the class exists only in the scratch build of tools/distributor-cpu.sh.
            distributor = (StreamByteDistributor) Class.forName(
                    "io.netty.handler.codec.http2.UpstreamUniformStreamByteDistributor")
                    .getConstructor(Http2Connection.class).newInstance(connection);
            distributor.getClass().getMethod("minAllocationChunk", int.class)
                    .invoke(distributor, DEFAULT_MAX_FRAME_SIZE);
        } else {
            throw new IllegalArgumentException("unknown variant: " + variant + " (expected fork or upstream)");
        }

        final long[] pending = new long[streams];
        final long[] counts = new long[2]; // bytes written in this operation, allocations since the last reset
        final StreamByteDistributor.StreamState[] states = new StreamByteDistributor.StreamState[streams];
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
        StreamByteDistributor.Writer writer = new StreamByteDistributor.Writer() {
            @Override
            public void write(Http2Stream stream, int numBytes) {
                int index = stream.id() >>> 1;
                pending[index] -= numBytes;
                counts[0] += numBytes;
                counts[1]++;
                distributor.updateStreamableBytes(states[index]);
            }
        };

        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long total = (long) streams * BODY_SIZE;
        double[] nanosPerOp = new double[SLICES];
        long measuredOps = 0;
        for (int slice = -WARMUP_SLICES; slice < SLICES; slice++) {
            if (slice == 0) {
                counts[1] = 0;
            }
            long start = threads.getCurrentThreadCpuTime();
            long ops = 0;
            long cpu;
            do {
                for (int k = 0; k < 64; k++) {
                    counts[0] = 0;
                    for (int i = 0; i < streams; i++) {
                        pending[i] = BODY_SIZE;
                        distributor.updateStreamableBytes(states[i]);
                    }
                    while (counts[0] < total) {
                        distributor.distribute(budget, writer);
                    }
                }
                ops += 64;
                cpu = threads.getCurrentThreadCpuTime() - start;
            } while (cpu < SLICE_CPU_NANOS);
            if (slice >= 0) {
                nanosPerOp[slice] = (double) cpu / ops;
                measuredOps += ops;
            }
        }
        Arrays.sort(nanosPerOp);
        System.out.printf("%s %d %d %.1f %.2f%n", variant, budget, streams, nanosPerOp[SLICES / 2],
                (double) counts[1] / measuredOps);
    }
}
