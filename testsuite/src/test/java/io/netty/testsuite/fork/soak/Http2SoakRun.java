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
package io.netty.testsuite.fork.soak;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.uring.IoUring;
import io.netty.handler.ssl.OpenSsl;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import io.netty.util.ResourceLeakTracker;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.Future;
import io.netty.util.internal.PlatformDependent;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;
import org.junit.jupiter.api.Test;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The soak and fault run of HTTP/2 servers under hostile clients (issue 13): not a timed test but a run with a
 * report, started only by the {@code soak} profile ({@code ./mvnw -pl testsuite verify -Psoak -Dsoak.duration=60s}).
 * <p>
 * Each server configuration (transport x pipeline, h2c or HTTP/2 over TLS with ALPN h2 on OpenSSL or the JDK's
 * engine, issue 27) runs in turn for its share of {@code soak.duration}: tens of client connections of every
 * {@link SoakClient.Kind} at once (over TLS also those that break their TLS), then a drain, then the event-loop
 * shutdown fault, then the leak check. The table at the end judges every configuration; any breach fails the run.
 * <p>
 * A leak is charged to the configuration that made it: each configuration ends with its own leak check, once its
 * server, clients and connections are unreachable (its event loops terminated, the run's maps of its connections
 * cleared), before the next one starts; {@code Http2SoakLeakAttributionTest} checks it.
 */
public class Http2SoakRun {
    private static final InternalLogger logger;
    private static final AtomicLong LEAKS = new AtomicLong();
    /** The detectors made by this JVM's factory ({@link RecordingLeakDetectorFactory}). */
    private static final List<ResourceLeakDetector<Object>> DETECTORS = new CopyOnWriteArrayList<>();
    private static final List<String> LEAK_REPORTS = new ArrayList<>();
    private static final int MAX_LEAK_REPORTS = 8;
    private static final ResourceLeakDetector.LeakListener LEAK_LISTENER = (type, records) -> recordLeak(
            type + (records.isEmpty() ? " (untraced)" : records));
    /** The configuration whose objects the next leak reports are about (for their text). */
    private static volatile String leakOwner = "before the first configuration";
    /** {@link #LEAKS} at the last leak check, and the configuration it charged. Used by the run's thread only. */
    private static long leaksChecked;
    private static SoakStats lastChecked;

    static {
        // Before any ByteBuf class exists if this class comes first (the soak's JVM): every leak detector of this JVM
        // reports to the run. The ByteBuf detector also when an earlier test made it (a test JVM).
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new RecordingLeakDetectorFactory());
        ByteBufUtil.setLeakListener(LEAK_LISTENER);
        logger = InternalLoggerFactory.getInstance(Http2SoakRun.class);
    }

    private static final int CONCURRENT_SESSIONS = 16;
    private static final int PENDING_SESSIONS = 4;
    private static final long DRAIN_SECONDS = 60;
    private static final long SHUTDOWN_SECONDS = 15;
    private static final long MIN_PHASE_MILLIS = 3000;
    /**
     * Direct memory per connection that the transport and HTTP/2 may hold beyond the application's response bodies:
     * twice Netty's default write high water mark (io_uring's default high water mark), one message (a 16 KiB DATA
     * frame and its 9-byte header) and HTTP/2's 32 KiB floor ({@code Http2RemoteFlowController}'s minimum writable
     * chunk).
     */
    static final long PER_CONNECTION_BOUND = 2L * SoakServer.WATER_MARK.high() + 16 * 1024 + 9 + 32 * 1024;
    /**
     * The allocator's retained and fragmented chunks (Netty's adaptive allocator keeps whole chunks per size class
     * and thread), the only part of the bound that is not per connection or per response byte.
     */
    static final long ALLOCATOR_SLACK = 64L * 1024 * 1024;
    /**
     * What a TLS connection's {@code SslHandler} may hold in direct memory beyond the above: one record being
     * wrapped (its plaintext and its ciphertext) and one partial record received, each at most a TLS record of 16 KiB
     * of plaintext, its 2 KiB of expansion and its 5-byte header.
     */
    static final long TLS_PER_CONNECTION = 3L * (16 * 1024 + 2048 + 5);
    /** The TLS configurations of a run without {@code soak.configs}, next to every h2c one. */
    static final String[] DEFAULT_TLS_CONFIGS = {"io_uring/codec/openssl", "io_uring/handler/jdk"};

    /** The clients of an h2c configuration, in turn: each new connection is of the next kind. */
    private static final SoakClient.Kind[] ROTATION = {
        SoakClient.Kind.NORMAL, SoakClient.Kind.SLOW, SoakClient.Kind.STORM, SoakClient.Kind.FLIP,
        SoakClient.Kind.NORMAL, SoakClient.Kind.RESET, SoakClient.Kind.ABORT_RST, SoakClient.Kind.GREEDY,
        SoakClient.Kind.NORMAL, SoakClient.Kind.FAULT, SoakClient.Kind.ABORT_HALF, SoakClient.Kind.SLOW,
    };
    /** The clients of a TLS configuration: those of h2c and the ones that break their TLS. */
    private static final SoakClient.Kind[] TLS_ROTATION = {
        SoakClient.Kind.NORMAL, SoakClient.Kind.SLOW, SoakClient.Kind.HANDSHAKE_ABORT, SoakClient.Kind.STORM,
        SoakClient.Kind.FLIP, SoakClient.Kind.NORMAL, SoakClient.Kind.RESET, SoakClient.Kind.TRUNCATED_RECORD,
        SoakClient.Kind.ABORT_RST, SoakClient.Kind.GREEDY, SoakClient.Kind.NORMAL, SoakClient.Kind.FAULT,
        SoakClient.Kind.CLOSE_NOTIFY, SoakClient.Kind.ABORT_HALF, SoakClient.Kind.SLOW,
    };

    private static final BufferPoolMXBean DIRECT_POOL = directPool();

    @Test
    public void soak() throws Exception {
        IoUring.ensureAvailability();
        long totalMillis = parseDuration(System.getProperty("soak.duration", "30s"));
        List<String[]> configs = configs(System.getProperty("soak.configs", ""));
        long seed = Long.getLong("soak.seed", System.nanoTime());
        long phaseMillis = Math.max(MIN_PHASE_MILLIS, totalMillis / configs.size());
        String header = "HTTP/2 soak: " + configs.size() + " server configurations x " + phaseMillis
                + " ms of load (soak.duration=" + System.getProperty("soak.duration", "30s") + "), seed " + seed
                + ", " + CONCURRENT_SESSIONS + " client connections at once, leak detection "
                + ResourceLeakDetector.getLevel() + ", io.netty.http2.defaultStreamByteDistributor="
                + System.getProperty("io.netty.http2.defaultStreamByteDistributor", "(default)")
                + ", io.netty.iouring.uncountedFlushedLimit="
                + System.getProperty("io.netty.iouring.uncountedFlushedLimit", "(default)")
                + ", io.netty.iouring.defaultWriteBufferHighWaterMark="
                + System.getProperty("io.netty.iouring.defaultWriteBufferHighWaterMark", "(default)")
                + ", io_uring multishot accept " + IoUring.isAcceptMultishotEnabled()
                + ", soak.closingLoops " + SoakServer.CLOSING_LOOPS
                + ", allocator " + ByteBufAllocator.DEFAULT.getClass().getSimpleName()
                + ", send_zc " + (sendZcSupported() ? "supported" : "NOT supported (io_uring+zc writes copy)")
                + tlsHeader(configs);
        logger.info(header);
        // The allocator grows its retained chunks once, in the first phase of the JVM; later phases start with them in
        // their baseline. A short warm-up phase of the first configuration takes that growth, so that the first
        // measured phase is judged against the same kind of baseline as the others. The warm-up is judged too, except
        // for its direct memory.
        String[] first = configs.get(0);
        SoakStats warmUp = runAndCheck(SoakServer.Transport.valueOf(first[0]), SoakServer.Pipeline.valueOf(first[1]),
                SoakTls.Mode.valueOf(first[2]), MIN_PHASE_MILLIS, seed - 1, null, false);
        warmUp.warmUp = true;
        logger.info("soak: warm-up " + warmUp.config + " done (direct memory not judged): " + row(warmUp));
        List<SoakStats> results = new ArrayList<>();
        for (String[] config : configs) {
            SoakServer.Transport transport = SoakServer.Transport.valueOf(config[0]);
            SoakServer.Pipeline pipeline = SoakServer.Pipeline.valueOf(config[1]);
            SoakStats stats = runAndCheck(transport, pipeline, SoakTls.Mode.valueOf(config[2]), phaseMillis, seed++,
                    null, false);
            results.add(stats);
            logger.info("soak: " + stats.config + " done: " + row(stats));
        }
        String report = report(header, results);
        System.out.println(report);
        logger.info(report);
        String reportFile = System.getProperty("soak.report");
        if (reportFile != null && !reportFile.isEmpty()) {
            Path path = Paths.get(reportFile);
            Files.createDirectories(path.toAbsolutePath().getParent());
            Files.write(path, report.getBytes(StandardCharsets.UTF_8));
        }
        List<String> breaches = new ArrayList<>();
        for (String breach : warmUp.breaches()) {
            breaches.add("warm-up " + warmUp.config + ": " + breach);
        }
        for (SoakStats stats : results) {
            for (String breach : stats.breaches()) {
                breaches.add(stats.config + ": " + breach);
            }
        }
        assertTrue(breaches.isEmpty(), "soak breaches: " + breaches + "\n" + report);
    }

    /**
     * Runs one configuration and then its leak check, which charges it with the leaks reported once everything it
     * made is unreachable: {@link #runConfig} has returned (its locals are gone) and has cleared the run's static
     * state of its connections.
     *
     * @param rotation the clients' kinds in turn, {@code null} for the soak's own
     * @param leakProbe a test-only fault: every server connection holds a buffer it never releases
     */
    static SoakStats runAndCheck(SoakServer.Transport transport, SoakServer.Pipeline pipeline, SoakTls.Mode tlsMode,
                                 long phaseMillis, long seed, SoakClient.Kind[] rotation, boolean leakProbe)
            throws Exception {
        SoakStats stats = runConfig(transport, pipeline, tlsMode, phaseMillis, seed, rotation, leakProbe);
        flushLeaks();
        stats.leaks += takeLeaks();
        lastChecked = stats;
        return stats;
    }

    private static SoakStats runConfig(SoakServer.Transport transport, SoakServer.Pipeline pipeline,
                                       SoakTls.Mode tlsMode, long phaseMillis, long seed, SoakClient.Kind[] rotation,
                                       boolean leakProbe) throws Exception {
        boolean overTls = tlsMode != SoakTls.Mode.NONE;
        SoakStats stats = new SoakStats(transport.label() + " " + pipeline.label()
                + (overTls ? " " + tlsMode.label() : "") + (leakProbe ? " (leak probe)" : ""), overTls);
        long start = System.nanoTime();
        // Whatever the collector finds now was made before this configuration: charged to the last one checked.
        flushLeaks();
        long late = takeLeaks();
        if (late != 0 && lastChecked == null) {
            // Made before the run's first configuration (an earlier test of the same JVM): no configuration's.
            logger.warn("soak: " + late + " leaks reported before the first configuration, charged to none");
        } else if (late != 0) {
            lastChecked.leaks += late;
            lastChecked.lateLeaks += late;
            logger.warn("soak: " + late + " leaks reported after the check of " + lastChecked.config
                    + ", charged to it");
        }
        leakOwner = stats.config;
        SoakTls tls = overTls ? new SoakTls(tlsMode) : null;
        SoakServer server = new SoakServer(transport, pipeline, tls, stats, leakProbe);
        EventLoopGroup clients = new MultiThreadIoEventLoopGroup(2,
                new DefaultThreadFactory("soak-client", true), NioIoHandler.newFactory());
        DirectMemorySampler sampler = new DirectMemorySampler();
        try {
            InetSocketAddress address = server.start();
            server.startEventLoops();
            // Its leaks, if the collector finds any now, are this configuration's: counted at its check.
            flushLeaks();
            stats.baselineDirect = directMemory();
            sampler.start();

            // Load: CONCURRENT_SESSIONS connections at any time, each of the next kind, until the phase ends.
            if (rotation == null) {
                rotation = tls == null ? ROTATION : TLS_ROTATION;
            }
            Semaphore permits = new Semaphore(CONCURRENT_SESSIONS);
            Set<SoakClient> live = ConcurrentHashMap.newKeySet();
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(phaseMillis);
            int session = 0;
            while (System.nanoTime() < deadline) {
                if (!permits.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                    continue;
                }
                SoakClient client = new SoakClient(rotation[session % rotation.length], tls, stats,
                        seed * 31 + session, session);
                session++;
                live.add(client);
                client.start(clients, address).addListener(f -> {
                    live.remove(client);
                    permits.release();
                });
            }
            // Drain: the sessions are bounded; whatever is still open after DRAIN_SECONDS is unfinished.
            if (!permits.tryAcquire(CONCURRENT_SESSIONS, DRAIN_SECONDS, TimeUnit.SECONDS)) {
                logger.warn("soak: " + stats.config + ": " + live.size() + " sessions still open after the drain");
                for (SoakClient client : live) {
                    client.forceClose();
                }
                permits.tryAcquire(CONCURRENT_SESSIONS, 10, TimeUnit.SECONDS);
            }

            // Fault: the server's event loops shut down while responses are pending (windows closed, bodies queued).
            CountDownLatch pendingStarted = new CountDownLatch(PENDING_SESSIONS);
            List<SoakClient> pending = new ArrayList<>();
            List<Future<Void>> pendingDone = new ArrayList<>();
            for (int i = 0; i < PENDING_SESSIONS; i++) {
                SoakClient client = new SoakClient(SoakClient.Kind.PENDING, tls, stats, seed * 31 + session,
                        session);
                session++;
                client.onFirstData(pendingStarted::countDown);
                pending.add(client);
                pendingDone.add(client.start(clients, address));
            }
            boolean started = pendingStarted.await(SHUTDOWN_SECONDS, TimeUnit.SECONDS);
            boolean terminated = server.shutdownNow(SHUTDOWN_SECONDS, TimeUnit.SECONDS);
            // What Netty guarantees once the loops terminated: every server connection closed (channelInactive,
            // its handlers' buffers released: the leak check) and, through its socket, every client's.
            boolean closed = true;
            long closeDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(SHUTDOWN_SECONDS);
            for (int i = 0; i < pending.size(); i++) {
                if (pendingDone.get(i).await(Math.max(0, closeDeadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    continue;
                }
                io.netty.channel.Channel ch = pending.get(i).channel();
                io.netty.channel.Channel serverSide = ch == null || ch.localAddress() == null ? null
                        : SoakServer.ACCEPTED_BY_PEER_PORT.get(((InetSocketAddress) ch.localAddress()).getPort());
                if (serverSide != null && serverSide.closeFuture().isDone() && !serverSide.isOpen()) {
                    // Closed for Netty, but the socket never closed (io_uring, upstream; docs/soak.md).
                    stats.clientsLeftOpenByClosedServer++;
                    closed &= ch.close().await(SHUTDOWN_SECONDS, TimeUnit.SECONDS)
                            && pendingDone.get(i).await(SHUTDOWN_SECONDS, TimeUnit.SECONDS);
                } else {
                    closed = false;
                }
            }
            boolean serverClosed = SoakServer.CONNECTIONS_BY_PEER_PORT.isEmpty();
            stats.shutdownFaultDone = started && terminated && closed && serverClosed;
            stats.loopsThatSkippedClose = server.loopsThatSkippedClose();
            if (!stats.shutdownFaultDone) {
                // The server's connections whose channelInactive never came, after their event loops terminated.
                List<String> open = new ArrayList<>();
                for (io.netty.channel.Channel ch : SoakServer.CONNECTIONS_BY_PEER_PORT.values()) {
                    open.add(ch + " open " + ch.isOpen() + " active " + ch.isActive() + " registered "
                            + ch.isRegistered());
                }
                stats.sample("shutdown fault: streams started " + started + ", server terminated " + terminated
                        + ", client connections closed " + closed + " (left open by a closed server socket "
                        + stats.clientsLeftOpenByClosedServer + "), server loops that skipped their close "
                        + stats.loopsThatSkippedClose + ", server connections never inactive: "
                        + open, null);
            }
        } finally {
            server.shutdownNow(SHUTDOWN_SECONDS, TimeUnit.SECONDS);
            clients.shutdownGracefully(0, SHUTDOWN_SECONDS, TimeUnit.SECONDS).await(SHUTDOWN_SECONDS,
                    TimeUnit.SECONDS);
            sampler.stop();
            if (tls != null) {
                // Before the leak check: OpenSSL's contexts are reference counted and tracked.
                tls.close();
            }
            // Once the loops and the clients are done: the zero-copy references the loops abandoned (upstream), and
            // the run's maps of the connections, which would keep them reachable past the leak check.
            stats.zeroCopyAbandoned = server.endOfConfiguration();
        }
        stats.peakDirect = sampler.peak();
        stats.directBound = stats.baselineDirect + ALLOCATOR_SLACK + stats.peakHeldBytes.get()
                + (PER_CONNECTION_BOUND + (tls == null ? 0 : TLS_PER_CONNECTION))
                * (stats.peakServerConnections.get() + stats.peakClientConnections.get());
        stats.durationMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        return stats;
    }

    /** The leaks reported since the last call. */
    private static long takeLeaks() {
        long now = LEAKS.get();
        long leaks = now - leaksChecked;
        leaksChecked = now;
        return leaks;
    }

    /** Runs the collector until a fresh weak reference is cleared, then has the leak detectors drain their queues. */
    private static void flushLeaks() throws InterruptedException {
        for (int round = 0; round < 3; round++) {
            ReferenceQueue<Object> queue = new ReferenceQueue<>();
            WeakReference<Object> sentinel = new WeakReference<>(new Object(), queue);
            do {
                System.gc();
            } while (queue.remove(100) == null);
            assert sentinel.get() == null;
            // Every tracked allocation first reports what the collector found leaked: buffers, and one object
            // tracked and closed by each other detector (OpenSSL's contexts and engines report only so).
            for (int i = 0; i < 16; i++) {
                ByteBufAllocator.DEFAULT.directBuffer(1).release();
                ByteBufAllocator.DEFAULT.heapBuffer(1).release();
            }
            for (ResourceLeakDetector<Object> detector : DETECTORS) {
                Object probe = new Object();
                ResourceLeakTracker<Object> tracker = detector.track(probe);
                if (tracker != null) {
                    tracker.close(probe);
                }
            }
        }
    }

    static long directMemory() {
        long netty = PlatformDependent.usedDirectMemory();
        return Math.max(0, netty) + (DIRECT_POOL == null ? 0 : DIRECT_POOL.getMemoryUsed());
    }

    private static BufferPoolMXBean directPool() {
        for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if ("direct".equals(pool.getName())) {
                return pool;
            }
        }
        return null;
    }

    /** The TLS providers of the run's configurations, for the report's header. */
    private static String tlsHeader(List<String[]> configs) {
        boolean openSsl = false;
        boolean jdk = false;
        for (String[] config : configs) {
            openSsl |= SoakTls.Mode.valueOf(config[2]) == SoakTls.Mode.OPENSSL;
            jdk |= SoakTls.Mode.valueOf(config[2]) == SoakTls.Mode.JDK;
        }
        if (!openSsl && !jdk) {
            return "";
        }
        return ", TLS with ALPN h2 (self-signed certificate made for the run) on "
                + (openSsl ? OpenSsl.versionString() + " (netty-tcnative)" : "")
                + (openSsl && jdk ? " and " : "")
                + (jdk ? "the JDK's engine (Java " + System.getProperty("java.version") + ")" : "")
                + ", soak.tlsLinger " + SoakServer.TLS_LINGER_MILLIS + " ms";
    }

    private static boolean sendZcSupported() {
        try {
            java.lang.reflect.Method m = IoUring.class.getDeclaredMethod("isSendZcSupported");
            m.setAccessible(true);
            return (Boolean) m.invoke(null);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return false;
        }
    }

    /** "60s", "10m", "500ms", "1h"; a bare number is seconds. */
    static long parseDuration(String value) {
        Matcher m = Pattern.compile("(\\d+)(ms|s|m|h)?").matcher(value.trim().toLowerCase(Locale.ROOT));
        if (!m.matches()) {
            throw new IllegalArgumentException("soak.duration: '" + value
                    + "' is not a duration (examples: 30s, 10m, 500ms)");
        }
        long n = Long.parseLong(m.group(1));
        String unit = m.group(2) == null ? "s" : m.group(2);
        switch (unit) {
            case "ms": return n;
            case "s": return TimeUnit.SECONDS.toMillis(n);
            case "m": return TimeUnit.MINUTES.toMillis(n);
            default: return TimeUnit.HOURS.toMillis(n);
        }
    }

    /**
     * Every h2c configuration and {@link #DEFAULT_TLS_CONFIGS}, or those named in {@code soak.configs} (e.g.
     * {@code io_uring/codec,nio/handler,io_uring/codec/openssl}): transport/pipeline for h2c, transport/pipeline/tls
     * with tls {@code openssl} or {@code jdk} for HTTP/2 over TLS.
     */
    static List<String[]> configs(String names) {
        Map<String, String[]> all = new LinkedHashMap<>();
        for (SoakTls.Mode tls : SoakTls.Mode.values()) {
            for (SoakServer.Transport t : SoakServer.Transport.values()) {
                for (SoakServer.Pipeline p : SoakServer.Pipeline.values()) {
                    all.put(t.label() + "/" + (p == SoakServer.Pipeline.HANDLER ? "handler" : "codec")
                                    + (tls == SoakTls.Mode.NONE ? "" : "/" + tls.key()),
                            new String[] {t.name(), p.name(), tls.name()});
                }
            }
        }
        if (names.trim().isEmpty()) {
            List<String[]> chosen = new ArrayList<>();
            for (String[] config : all.values()) {
                if (SoakTls.Mode.valueOf(config[2]) == SoakTls.Mode.NONE) {
                    chosen.add(config);
                }
            }
            for (String name : DEFAULT_TLS_CONFIGS) {
                chosen.add(all.get(name));
            }
            return chosen;
        }
        List<String[]> chosen = new ArrayList<>();
        for (String name : names.split(",")) {
            String[] config = all.get(name.trim());
            if (config == null) {
                throw new IllegalArgumentException("soak.configs: unknown configuration '" + name.trim()
                        + "', known: " + all.keySet());
            }
            chosen.add(config);
        }
        return chosen;
    }

    private static String report(String header, List<SoakStats> results) {
        StringBuilder sb = new StringBuilder();
        sb.append('\n').append(header).append("\n\n");
        sb.append("| server | conns | TLS handshakes (broken by client; of them, timed out on the server)"
                + " | requests | intact | RST by client"
                + " | refused (server RST) | other server RST | refused by GOAWAY | aborted by fault | lost"
                + " | unfinished | corrupt | stalled | leaks"
                + " | unexpected exc (expected) | client errors | peak direct / bound MiB | held bodies peak MiB"
                + " | writability ev/MiB | MiB received | loops that skipped their close"
                + " | clients left open by a closed server"
                + " | zero-copy refs abandoned by terminated loops | verdict |\n");
        sb.append("|---|");
        for (int i = 0; i < 23; i++) {
            sb.append("---:|");
        }
        sb.append("---|\n");
        for (SoakStats s : results) {
            sb.append(row(s)).append('\n');
        }
        boolean samples = false;
        for (SoakStats s : results) {
            for (String sample : s.samples()) {
                if (!samples) {
                    sb.append("\nFirst unexpected events:\n");
                    samples = true;
                }
                sb.append("- ").append(s.config).append(": ").append(sample).append('\n');
            }
        }
        for (SoakStats s : results) {
            for (String stall : s.stalls()) {
                sb.append("- stall, ").append(s.config).append(": ").append(stall).append('\n');
            }
        }
        sb.append("\nExpected exceptions (the peers' faults explain them):\n");
        for (SoakStats s : results) {
            s.expectedKinds.forEach((k, v) -> sb.append("- ").append(s.config).append(": ").append(v.sum())
                    .append(" x ").append(k).append('\n'));
        }
        if (results.stream().anyMatch(s -> s.tls)) {
            sb.append("\nTLS sessions of the clients, and the server's handshakes the clients broke (their cause):")
                    .append('\n');
            for (SoakStats s : results) {
                s.tlsSessions.forEach((k, v) -> sb.append("- ").append(s.config).append(": ").append(v.sum())
                        .append(" x ").append(k).append('\n'));
                s.tlsBrokenKinds.forEach((k, v) -> sb.append("- ").append(s.config).append(": ").append(v.sum())
                        .append(" x broken: ").append(k).append('\n'));
            }
        }
        synchronized (LEAK_REPORTS) {
            for (String leak : LEAK_REPORTS) {
                sb.append("\nLEAK: ").append(leak).append('\n');
            }
        }
        return sb.toString();
    }

    private static String row(SoakStats s) {
        List<String> breaches = s.breaches();
        double mib = 1024.0 * 1024.0;
        return "| " + s.config
                + " | " + s.clientConnections.sum()
                + " | " + (s.tls ? s.tlsHandshakes.sum() + " (" + s.tlsHandshakesBrokenByClient.sum() + "; "
                        + s.tlsBrokenNoticedLate.sum() + ")" : "-")
                + " | " + s.requests.sum()
                + " | " + s.intact.sum()
                + " | " + s.resetByClient.sum()
                + " | " + s.refusedByServer.sum()
                + " | " + s.resetByServerOther.sum()
                + " | " + s.refusedByGoAway.sum()
                + " | " + s.abortedByFault.sum()
                + " | " + s.lost.sum()
                + " | " + s.unfinished.sum()
                + " | " + s.corrupt.sum()
                + " | " + s.stalled.sum()
                + " | " + s.leaks + (s.lateLeaks == 0 ? "" : " (" + s.lateLeaks + " late)")
                + " | " + s.unexpectedExceptions.sum() + " (" + s.expectedExceptions.sum() + ")"
                + " | " + s.clientErrors.sum()
                + " | " + String.format(Locale.ROOT, "%.1f / %.1f", s.peakDirect / mib, s.directBound / mib)
                + " | " + String.format(Locale.ROOT, "%.1f", s.peakHeldBytes.get() / mib)
                + " | " + String.format(Locale.ROOT, "%.2f", s.writabilityChangesPerMiB())
                + " | " + String.format(Locale.ROOT, "%.0f", s.bodyBytesReceived.sum() / mib)
                + " | " + s.loopsThatSkippedClose
                + " | " + s.clientsLeftOpenByClosedServer
                + " | " + (s.zeroCopyAbandoned < 0 ? "not inspected" : String.valueOf(s.zeroCopyAbandoned))
                + " | " + (breaches.isEmpty() ? "pass" : "FAIL: " + String.join("; ", breaches)) + " |";
    }

    /** Samples the JVM's direct memory every few milliseconds and keeps the peak. */
    private static final class DirectMemorySampler implements Runnable {
        private final AtomicLong peak = new AtomicLong();
        private volatile boolean running = true;
        private Thread thread;

        void start() {
            thread = new Thread(this, "soak-direct-memory");
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        public void run() {
            while (running) {
                long used = directMemory();
                if (used > peak.get()) {
                    peak.set(used);
                }
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        void stop() throws InterruptedException {
            running = false;
            if (thread != null) {
                thread.join();
            }
        }

        long peak() {
            return peak.get();
        }
    }

    /** Counts a leak a detector reported (it logs it too), with the configuration it is charged to. */
    private static void recordLeak(String leak) {
        LEAKS.incrementAndGet();
        synchronized (LEAK_REPORTS) {
            if (LEAK_REPORTS.size() < MAX_LEAK_REPORTS) {
                LEAK_REPORTS.add("(charged to " + leakOwner + ") " + leak);
            }
        }
    }

    /** Creates detectors that count every leak they report (and still log it), and keeps them for the checks. */
    private static final class RecordingLeakDetectorFactory extends ResourceLeakDetectorFactory {
        @Override
        @SuppressWarnings("unchecked")
        public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval,
                                                                   long maxActive) {
            RecordingLeakDetector<T> detector = new RecordingLeakDetector<>(resource, samplingInterval);
            DETECTORS.add((ResourceLeakDetector<Object>) (ResourceLeakDetector<?>) detector);
            return detector;
        }
    }

    private static final class RecordingLeakDetector<T> extends ResourceLeakDetector<T> {
        RecordingLeakDetector(Class<?> resourceType, int samplingInterval) {
            super(resourceType, samplingInterval);
            setLeakListener(LEAK_LISTENER);
        }

        @Override
        protected boolean needReport() {
            return true;
        }
    }
}
