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

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/** What one server configuration of the soak did, counted from the server's and the clients' sides. */
final class SoakStats {
    private static final int MAX_SAMPLES = 16;

    final String config;
    /** Whether the configuration's connections are TLS (the TLS columns apply). */
    final boolean tls;

    // Client side: every stream the clients opened ends in exactly one of these outcomes.
    final LongAdder requests = new LongAdder();
    final LongAdder intact = new LongAdder();
    final LongAdder corrupt = new LongAdder();
    final LongAdder resetByClient = new LongAdder();
    final LongAdder refusedByServer = new LongAdder();
    final LongAdder resetByServerOther = new LongAdder();
    final LongAdder refusedByGoAway = new LongAdder();
    final LongAdder abortedByFault = new LongAdder();
    final LongAdder lost = new LongAdder();
    final LongAdder unfinished = new LongAdder();
    // Liveness: streams with data to receive and an open window that saw no progress for the stall time.
    final LongAdder stalled = new LongAdder();
    final LongAdder bodyBytesReceived = new LongAdder();
    final LongAdder clientErrors = new LongAdder();
    /** HEADERS or DATA for a stream that had ended complete (or was never opened): frames delivered twice or astray. */
    final LongAdder framesAfterEnd = new LongAdder();
    final LongAdder clientConnections = new LongAdder();
    final LongAdder serverGoAwaysWithError = new LongAdder();

    // Server side.
    final LongAdder serverConnections = new LongAdder();
    final LongAdder expectedExceptions = new LongAdder();
    final LongAdder unexpectedExceptions = new LongAdder();
    final LongAdder writabilityChanges = new LongAdder();
    final LongAdder bodyBytesWritten = new LongAdder();
    /** TLS: the server's handshakes that completed (h2 by ALPN is checked when they do). */
    final LongAdder tlsHandshakes = new LongAdder();
    /** TLS: the server's handshakes that failed because their client broke them on purpose. */
    final LongAdder tlsHandshakesBrokenByClient = new LongAdder();
    /**
     * TLS: of {@link #tlsHandshakesBrokenByClient}, those the server's handshake timeout ended: the server had not
     * noticed that the client closed its connection (reported, not judged: upstream's io_uring, docs/soak.md).
     */
    final LongAdder tlsBrokenNoticedLate = new LongAdder();
    /** TLS: the server's handshakes that failed although their client did not break them. */
    final LongAdder tlsHandshakeFailures = new LongAdder();
    final AtomicLong openServerConnections = new AtomicLong();
    final AtomicLong peakServerConnections = new AtomicLong();
    final AtomicLong openClientConnections = new AtomicLong();
    final AtomicLong peakClientConnections = new AtomicLong();
    /** Response bytes the server's handlers wrote whose write has not completed yet (held by HTTP/2 or the channel). */
    final AtomicLong heldBytes = new AtomicLong();
    final AtomicLong peakHeldBytes = new AtomicLong();

    // The JVM.
    /**
     * Leaks the detector reported at this configuration's leak check, once everything the configuration made was
     * unreachable (and any it reported before the next configuration's load: {@link #lateLeaks}).
     */
    long leaks;
    /** Of {@link #leaks}, those reported after this configuration's check, before the next one's load began. */
    long lateLeaks;
    /**
     * References that io_uring's zero-copy sends kept for the kernel and that the server's event loops, once
     * terminated, never released: their notification was outstanding when the loop closed its ring (upstream,
     * docs/soak.md, Findings, 11). The run releases them before its leak check, so that they are counted here and not
     * as leaks; -1 if the channels could not be inspected (then nothing was released, and they count as leaks).
     */
    long zeroCopyAbandoned;
    long baselineDirect;
    long peakDirect;
    long directBound;
    /** The warm-up phase before the measured ones: its direct memory is not judged (see Http2SoakRun). */
    boolean warmUp;
    long durationMillis;
    boolean shutdownFaultDone;
    /**
     * Server event loops that reached their shutdown's confirmation without having closed their channels (upstream,
     * see {@link ClosingIoEventLoopGroup}): not a breach, the soak's loops close them; the fault's checks still apply.
     */
    int loopsThatSkippedClose;
    /**
     * Client connections of the shutdown fault still open 15 s after the server's loops terminated although their
     * server channel was closed (inactive, its socket marked closed): io_uring's close never reached the socket
     * (upstream, docs/soak.md). Not a breach; the run then closes those clients.
     */
    int clientsLeftOpenByClosedServer;

    private final List<String> samples = new ArrayList<>();
    /** The first stalls, each with the server's view of its stream. */
    final List<String> stalls = new ArrayList<>();
    /** The expected exceptions by type and message. */
    final Map<String, LongAdder> expectedKinds = new ConcurrentHashMap<>();
    /** The causes of the server's handshakes that their clients broke, by type and message. */
    final Map<String, LongAdder> tlsBrokenKinds = new ConcurrentHashMap<>();
    /** The clients' completed handshakes by protocol, cipher suite, engine and ALPN. */
    final Map<String, LongAdder> tlsSessions = new ConcurrentHashMap<>();

    SoakStats(String config, boolean tls) {
        this.config = config;
        this.tls = tls;
    }

    static void addAndTrackPeak(AtomicLong value, AtomicLong peak, long delta) {
        long now = value.addAndGet(delta);
        long p;
        while (now > (p = peak.get()) && !peak.compareAndSet(p, now)) {
            // retry
        }
    }

    /** Keeps the first few unexpected events for the report. */
    void sample(String what, Throwable cause) {
        synchronized (samples) {
            if (samples.size() < MAX_SAMPLES) {
                String text = what;
                if (cause != null) {
                    StringWriter w = new StringWriter();
                    cause.printStackTrace(new PrintWriter(w));
                    text += ": " + w;
                }
                samples.add(text);
            }
        }
    }

    void expected(Throwable cause) {
        expectedExceptions.increment();
        expectedKinds.computeIfAbsent(cause.getClass().getSimpleName() + ": " + cause.getMessage(),
                k -> new LongAdder()).increment();
    }

    void tlsBrokenByClient(Throwable cause) {
        tlsHandshakesBrokenByClient.increment();
        tlsBrokenKinds.computeIfAbsent(cause.getClass().getSimpleName() + ": " + cause.getMessage(),
                k -> new LongAdder()).increment();
    }

    void tlsSession(String description) {
        tlsSessions.computeIfAbsent(description, k -> new LongAdder()).increment();
    }

    void stall(String text) {
        synchronized (stalls) {
            if (stalls.size() < MAX_SAMPLES) {
                stalls.add(text);
            }
        }
    }

    /** Whether the report still keeps the text of a new stall (it keeps the first {@value #MAX_SAMPLES}). */
    boolean wantsStallText() {
        synchronized (stalls) {
            return stalls.size() < MAX_SAMPLES;
        }
    }

    List<String> stalls() {
        synchronized (stalls) {
            return new ArrayList<>(stalls);
        }
    }

    List<String> samples() {
        synchronized (samples) {
            return new ArrayList<>(samples);
        }
    }

    long accounted() {
        return intact.sum() + corrupt.sum() + resetByClient.sum() + refusedByServer.sum() + resetByServerOther.sum()
                + refusedByGoAway.sum() + abortedByFault.sum() + lost.sum() + unfinished.sum();
    }

    /** Every breach of the soak's rules, empty if none. */
    List<String> breaches() {
        List<String> breaches = new ArrayList<>();
        if (intact.sum() == 0) {
            breaches.add("no intact response at all");
        }
        check(breaches, "corrupt responses", corrupt.sum());
        check(breaches, "streams lost without a fault", lost.sum());
        check(breaches, "streams unfinished at the end", unfinished.sum());
        check(breaches, "stalled streams", stalled.sum());
        check(breaches, "leaks", leaks);
        check(breaches, "unexpected server exceptions", unexpectedExceptions.sum());
        check(breaches, "client errors", clientErrors.sum());
        check(breaches, "frames after the end of their stream", framesAfterEnd.sum());
        check(breaches, "server GOAWAYs with an error", serverGoAwaysWithError.sum());
        check(breaches, "TLS handshakes failed on the server although their client did not break them",
                tlsHandshakeFailures.sum());
        if (tls && tlsHandshakes.sum() == 0) {
            breaches.add("no TLS handshake completed");
        }
        if (accounted() != requests.sum()) {
            breaches.add("streams not accounted for: " + requests.sum() + " requests, " + accounted()
                    + " outcomes");
        }
        if (peakDirect > directBound && !warmUp) {
            breaches.add("peak direct memory " + peakDirect + " above the bound " + directBound);
        }
        if (!shutdownFaultDone) {
            breaches.add("the event-loop shutdown fault did not complete");
        }
        return breaches;
    }

    private static void check(List<String> breaches, String what, long count) {
        if (count != 0) {
            breaches.add(what + ": " + count);
        }
    }

    double writabilityChangesPerMiB() {
        long bytes = bodyBytesWritten.sum();
        return bytes == 0 ? 0 : writabilityChanges.sum() / (bytes / (1024.0 * 1024.0));
    }
}
