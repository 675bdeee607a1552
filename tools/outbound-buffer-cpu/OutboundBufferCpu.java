/*
 * Fork tooling (not part of any upstream PR): ChannelOutboundBuffer's cycle (BufferCycle) with upstream's
 * netty-transport and with the fork's, side by side in one JVM. tools/outbound-buffer-cpu.sh puts netty-common,
 * netty-buffer and netty-resolver of the base release on the class path and passes two class paths, each with
 * BufferCycle and one netty-transport jar; each is loaded by its own class loader, so the JIT compiles each
 * ChannelOutboundBuffer on its own. After a warm-up of both, PAIRS pairs of slices of about 20 ms each, upstream and
 * fork in turn (the order alternates from pair to pair), see the same machine at the same moments; a slice's cost is
 * the thread's CPU time (ThreadMXBean: descheduled time does not count) divided by its operations.
 * Prints one line: messages pending upstream-ns-per-op fork-ns-per-op (medians over the slices) and the first
 * quartile, median and third quartile of the per-pair ratio fork/upstream.
 */
import java.io.File;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.Arrays;
import java.util.function.LongUnaryOperator;

public final class OutboundBufferCpu {
    private static final long WARMUP_CPU_NANOS = 3_000_000_000L;
    private static final long SLICE_CPU_NANOS = 20_000_000L;
    private static final int PAIRS = 60;

    private OutboundBufferCpu() {
    }

    private static LongUnaryOperator load(String classPath, int messages, String pending) throws Exception {
        String[] entries = classPath.split(File.pathSeparator);
        URL[] urls = new URL[entries.length];
        for (int i = 0; i < entries.length; i++) {
            urls[i] = new File(entries[i]).toURI().toURL();
        }
        ClassLoader loader = new URLClassLoader(urls, OutboundBufferCpu.class.getClassLoader());
        Class<?> type = Class.forName("BufferCycle", true, loader);
        if (type.getClassLoader() != loader) {
            throw new IllegalStateException("BufferCycle must not be on the harness's class path");
        }
        return (LongUnaryOperator) type.getConstructor(int.class, String.class).newInstance(messages, pending);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            throw new IllegalArgumentException(
                    "usage: OutboundBufferCpu MESSAGES PENDING UPSTREAM_CP FORK_CP upstream|fork (warmed up first)");
        }
        int messages = Integer.parseInt(args[0]);
        String pending = args[1];
        LongUnaryOperator[] cycles = { load(args[2], messages, pending), load(args[3], messages, pending) };
        int first = "fork".equals(args[4]) ? 1 : 0;

        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long sink = 0;
        long start = threads.getCurrentThreadCpuTime();
        while (threads.getCurrentThreadCpuTime() - start < WARMUP_CPU_NANOS) {
            sink += cycles[first].applyAsLong(1024);
            sink += cycles[1 - first].applyAsLong(1024);
        }
        start = threads.getCurrentThreadCpuTime();
        sink += cycles[first].applyAsLong(65536);
        long opsPerSlice = Math.max(1024,
                SLICE_CPU_NANOS * 65536 / Math.max(1, threads.getCurrentThreadCpuTime() - start));

        double[][] nanosPerOp = new double[2][PAIRS];
        double[] ratios = new double[PAIRS];
        for (int pair = 0; pair < PAIRS; pair++) {
            for (int turn = 0; turn < 2; turn++) {
                int which = (first + pair + turn) & 1;
                long before = threads.getCurrentThreadCpuTime();
                sink += cycles[which].applyAsLong(opsPerSlice);
                nanosPerOp[which][pair] = (double) (threads.getCurrentThreadCpuTime() - before) / opsPerSlice;
            }
            ratios[pair] = nanosPerOp[1][pair] / nanosPerOp[0][pair];
        }
        Arrays.sort(nanosPerOp[0]);
        Arrays.sort(nanosPerOp[1]);
        Arrays.sort(ratios);
        System.out.printf("%d %s %.1f %.1f %.3f %.3f %.3f%s%n", messages, pending,
                nanosPerOp[0][PAIRS / 2], nanosPerOp[1][PAIRS / 2],
                ratios[PAIRS / 4], ratios[PAIRS / 2], ratios[3 * PAIRS / 4], sink == 42 ? " " : "");
    }
}
