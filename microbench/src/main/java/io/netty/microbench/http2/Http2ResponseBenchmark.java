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

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.ReferenceCountedOpenSslEngine;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;
import io.netty.microbench.http2.Http2ResponseServer.Distributor;
import io.netty.microbench.http2.Http2ResponseServer.Pipeline;
import io.netty.microbench.http2.Http2ResponseServer.Tls;
import io.netty.microbench.http2.Http2ResponseServer.Transport;
import io.netty.microbench.util.AbstractMicrobenchmark;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.collection.IntObjectHashMap;
import io.netty.util.collection.IntObjectMap;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import javax.net.ssl.SSLSession;

/**
 * The scenario users hit: an HTTP/2 server on one event-loop thread of {@code transport} (see
 * {@link Http2ResponseServer}: {@code HttpToHttp2ConnectionHandler} or {@code Http2MultiplexHandler} users) answers
 * every request with a cached {@code bodySize} body; an h2c client on NIO holds {@code connections} connections and,
 * open loop, sends a burst of {@code burst} GETs on each of them every 10 ms, whether or not earlier responses
 * arrived (a tick waits only while a burst would take a connection over the server's limit of concurrent streams,
 * {@value #MAX_CONCURRENT_STREAMS}: an overloaded server then paces the client). One operation is one tick.
 * Counters (rates; divide by {@code responses} for values per response): {@code responses} completed (so
 * {@code responses} is requests/s),
 * {@code serverByteBufs} ByteBufs written at the head of the server pipeline ({@code serverBytes} their bytes,
 * so {@code serverBytes / serverByteBufs} is their mean size), {@code dataFrames} DATA frames
 * received, {@code serverCpuNanos} CPU time of the server's event-loop thread, {@code latencyNanos} the sum of
 * request latencies at the client (send to end of stream); {@code latencyP50Us}, {@code latencyP99Us} and
 * {@code latencyP999Us} the 50th, 99th and 99.9th percentiles of those latencies in the iteration so far, in
 * microseconds to within 3%, multiplied by {@code responses} (so that, like the other counters, they read per
 * response with {@code --per responses}). Latency p50/p99/p999 of each iteration are printed too, and with
 * {@code -Dh2bench.trace=true} where each response's latency went ({@link ResponseTrace}).
 * {@code tls} runs the connections over TLS with ALPN h2 (client and server on the same engine: {@code JDK}, or
 * {@code OPENSSL}, netty-tcnative, which must be available: the run fails at once otherwise) instead of h2c
 * ({@code NONE}, the default; {@code -Dh2bench.tls=NONE,JDK,OPENSSL} runs all three); {@code serverByteBufs},
 * {@code serverBytes} are then what the HTTP/2 codec writes into the server's {@code SslHandler} (as in clear text),
 * and {@code serverTlsRecords} ({@code serverTlsSmallRecords} those with a body under 256 bytes),
 * {@code serverTlsByteBufs} and {@code serverTlsBytes} count the TLS records (from their
 * 5-byte headers), {@code ByteBuf}s and bytes the {@code SslHandler} writes to the transport (0 without TLS). The
 * client checks the length of every body (a wrong one fails the run).
 * {@code -Dh2bench.jvmArgs='-Dk=v ...'} passes JVM arguments (separated by white space) to the benchmark's forks.
 * {@code writeBufferHighWaterMark} sets the server connections' write buffer high water mark (0: Netty's default,
 * 64 KiB; the low one is half of it).
 * The benchmark compiles and runs against upstream's artifacts too.
 */
@State(Scope.Benchmark)
public class Http2ResponseBenchmark extends AbstractMicrobenchmark {
    private static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    // What Netty's servers announce as SETTINGS_MAX_CONCURRENT_STREAMS by default.
    private static final int MAX_CONCURRENT_STREAMS = 100;
    private static final long STALL_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final int CLIENT_WINDOW = 1 << 24;
    private static final double[] QUANTILES = { 0.50, 0.99, 0.999 };
    /** JVM arguments (separated by white space) passed to the benchmark's forks, e.g. system properties. */
    private static final String JVM_ARGS_PROPERTY = "h2bench.jvmArgs";

    @Param({ "IO_URING", "NIO", "EPOLL" })
    public Transport transport;

    @Param({ "HTTP_TO_HTTP2", "MULTIPLEX" })
    public Pipeline pipeline;

    @Param({ "DEFAULT", "WFQ", "UNIFORM_1K" })
    public Distributor distributor;

    @Param({ "65536", "16384" })
    public int bodySize;

    @Param({ "4", "16" })
    public int burst;

    @Param("2")
    public int connections;

    @Param("0")
    public int writeBufferHighWaterMark;

    @Param("NONE")
    public Tls tls;

    private Http2ResponseServer server;
    private EventLoopGroup clientGroup;
    private SslContext clientSslContext;
    private final List<Client> clients = new ArrayList<Client>();
    private long nextTick;
    private final Delta responsesDelta = new Delta();
    private final Delta byteBufsDelta = new Delta();
    private final Delta bytesDelta = new Delta();
    private final Delta dataFramesDelta = new Delta();
    private final Delta tlsRecordsDelta = new Delta();
    private final Delta tlsSmallRecordsDelta = new Delta();
    private final Delta tlsByteBufsDelta = new Delta();
    private final Delta tlsBytesDelta = new Delta();
    private final Delta cpuNanosDelta = new Delta();
    private final Delta latencyNanosDelta = new Delta();
    private final double[] percentiles = new double[QUANTILES.length];

    // Written by the client's event loop, read by the benchmark thread.
    private volatile long responses;
    private volatile long dataFrames;
    private volatile long latencyNanos;
    private long[] latencies = new long[1024];
    private int latencyCount;
    // Written by the client's event loop, read by the benchmark thread at every tick.
    private final LatencyHistogram histogram = new LatencyHistogram();

    /** Per-operation costs, reported as rates. */
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class Costs {
        public long responses;
        public long serverByteBufs;
        public long serverBytes;
        public long dataFrames;
        public long serverTlsRecords;
        public long serverTlsSmallRecords;
        public long serverTlsByteBufs;
        public long serverTlsBytes;
        public long serverCpuNanos;
        public long latencyNanos;
        public double latencyP50Us;
        public double latencyP99Us;
        public double latencyP999Us;

        @Setup(Level.Iteration)
        public void reset() {
            responses = 0;
            serverByteBufs = 0;
            serverBytes = 0;
            dataFrames = 0;
            serverTlsRecords = 0;
            serverTlsSmallRecords = 0;
            serverTlsByteBufs = 0;
            serverTlsBytes = 0;
            serverCpuNanos = 0;
            latencyNanos = 0;
            latencyP50Us = 0;
            latencyP99Us = 0;
            latencyP999Us = 0;
        }
    }

    /**
     * Counts latencies in log-linear buckets: exact below 64 us, then 32 buckets per power of two (within 3%), so
     * that percentiles can be read at every tick without sorting.
     */
    static final class LatencyHistogram {
        private static final int SUB_BUCKET_BITS = 5;
        private static final int LINEAR = 64;
        // Up to 2^40 us (12 days): more than any run.
        private final AtomicLongArray counts = new AtomicLongArray(LINEAR + (40 - 6 + 1) * (1 << SUB_BUCKET_BITS));

        static int index(long micros) {
            if (micros < LINEAR) {
                return (int) Math.max(0, micros);
            }
            int exponent = 63 - Long.numberOfLeadingZeros(micros);
            int sub = (int) (micros >>> (exponent - SUB_BUCKET_BITS)) & ((1 << SUB_BUCKET_BITS) - 1);
            return LINEAR + (exponent - 6) * (1 << SUB_BUCKET_BITS) + sub;
        }

        /** The smallest latency, in microseconds, that falls into bucket {@code index}. */
        static long lowestMicros(int index) {
            if (index < LINEAR) {
                return index;
            }
            int exponent = (index - LINEAR) / (1 << SUB_BUCKET_BITS) + 6;
            int sub = (index - LINEAR) % (1 << SUB_BUCKET_BITS);
            return ((long) ((1 << SUB_BUCKET_BITS) + sub)) << (exponent - SUB_BUCKET_BITS);
        }

        void record(long nanos) {
            counts.incrementAndGet(Math.min(counts.length() - 1, index(nanos / 1000)));
        }

        void reset() {
            for (int i = 0; i < counts.length(); i++) {
                counts.set(i, 0);
            }
        }

        /** Fills {@code out} with the latencies, in microseconds, of {@code quantiles}; false if none counted. */
        boolean percentiles(double[] quantiles, double[] out) {
            long total = 0;
            for (int i = 0; i < counts.length(); i++) {
                total += counts.get(i);
            }
            if (total == 0) {
                return false;
            }
            int q = 0;
            long seen = 0;
            for (int i = 0; i < counts.length() && q < quantiles.length; i++) {
                seen += counts.get(i);
                while (q < quantiles.length && seen > (long) (quantiles[q] * total)) {
                    out[q++] = lowestMicros(i);
                }
            }
            while (q < quantiles.length) {
                out[q++] = lowestMicros(counts.length() - 1);
            }
            return true;
        }
    }

    /** A running total read at every tick: its growth since the previous read (Http2MixedWorkloadBenchmark too). */
    static final class Delta {
        private long last;

        long next(long total) {
            long delta = total - last;
            last = total;
            return delta;
        }
    }

    /** A request sent and not answered completely yet. */
    private static final class Pending {
        final long sentNanos;
        int bodyBytes;

        Pending(long sentNanos) {
            this.sentNanos = sentNanos;
        }
    }

    /**
     * One HTTP/2 connection (h2c, or over TLS): sends bursts of GETs and records DATA frames and latencies until each
     * stream ends, checking the length of each body.
     */
    private final class Client extends Http2FrameAdapter {
        final Http2ConnectionHandler handler = new Http2ConnectionHandlerBuilder().server(false)
                .frameListener(this)
                .initialSettings(new Http2Settings().initialWindowSize(CLIENT_WINDOW).maxConcurrentStreams(1000))
                .build();
        final IntObjectMap<Pending> sent = new IntObjectHashMap<Pending>();
        ChannelHandlerContext ctx;
        // Streams requested (by the benchmark thread) and not ended yet (on the client's event loop).
        final AtomicInteger outstanding = new AtomicInteger();
        volatile Throwable failure;

        void start(Channel ch) throws Exception {
            ctx = ch.pipeline().context(handler);
            Http2Connection connection = handler.connection();
            connection.local().flowController().incrementWindowSize(connection.connectionStream(),
                    CLIENT_WINDOW - Http2CodecUtil.DEFAULT_WINDOW_SIZE);
            ch.flush();
        }

        void burst() {
            long now = System.nanoTime();
            Http2Connection connection = handler.connection();
            for (int i = 0; i < burst; i++) {
                int id = connection.local().incrementAndGetNextStreamId();
                sent.put(id, new Pending(now));
                if (ResponseTrace.ENABLED) {
                    ResponseTrace.stamp(ctx.channel(), false, id, ResponseTrace.SENT, now);
                }
                Http2Headers headers = new DefaultHttp2Headers().method("GET").path("/")
                        .scheme(tls == Tls.NONE ? "http" : "https").authority(Http2ResponseServer.HOST);
                handler.encoder().writeHeaders(ctx, id, headers, 0, true, ctx.newPromise()).addListener(f -> {
                    if (!f.isSuccess()) {
                        failure = f.cause();
                    }
                });
            }
            ctx.flush();
        }

        @Override
        public int onDataRead(ChannelHandlerContext ctx, int streamId, ByteBuf data, int padding,
                              boolean endOfStream) {
            dataFrames++;
            Pending pending = sent.get(streamId);
            pending.bodyBytes += data.readableBytes();
            if (endOfStream) {
                sent.remove(streamId);
                if (pending.bodyBytes != bodySize) {
                    failure = new IllegalStateException("stream " + streamId + ": a body of " + pending.bodyBytes
                            + " bytes, expected " + bodySize);
                }
                long latency = System.nanoTime() - pending.sentNanos;
                if (ResponseTrace.ENABLED) {
                    ResponseTrace.stamp(ctx.channel(), false, streamId, ResponseTrace.RECEIVED);
                }
                latencyNanos += latency;
                if (latencyCount == latencies.length) {
                    latencies = Arrays.copyOf(latencies, latencyCount * 2);
                }
                latencies[latencyCount++] = latency;
                histogram.record(latency);
                responses++;
                outstanding.decrementAndGet();
            }
            return data.readableBytes() + padding;
        }
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        server = Http2ResponseServer.start(transport, distributor, pipeline, bodySize,
                new InetSocketAddress("127.0.0.1", 0), 0, writeBufferHighWaterMark, tls);
        if (tls != Tls.NONE) {
            clientSslContext = server.newClientSslContext();
        }
        clientGroup = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        final int port = ((InetSocketAddress) server.localAddress()).getPort();
        for (int i = 0; i < connections; i++) {
            final Client client = new Client();
            final Channel ch = new Bootstrap().group(clientGroup).channel(NioSocketChannel.class)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            if (clientSslContext != null) {
                                // Checks the server's name too; the connection preface waits for the handshake.
                                ch.pipeline().addLast(clientSslContext.newHandler(ch.alloc(),
                                        Http2ResponseServer.HOST, port));
                            }
                            ch.pipeline().addLast(client.handler);
                        }
                    }).connect(server.localAddress()).sync().channel();
            SslHandler sslHandler = ch.pipeline().get(SslHandler.class);
            if (sslHandler != null) {
                checkNegotiated(sslHandler, i == 0);
            }
            clientGroup.submit(() -> {
                client.start(ch);
                return null;
            }).get();
            clients.add(client);
        }
        // What the server counted while the connections were set up is not part of any tick.
        byteBufsDelta.next(server.byteBufs());
        bytesDelta.next(server.bytes());
        tlsRecordsDelta.next(server.tlsRecords());
        tlsSmallRecordsDelta.next(server.tlsSmallRecords());
        tlsByteBufsDelta.next(server.tlsByteBufs());
        tlsBytesDelta.next(server.tlsBytes());
        cpuNanosDelta.next(server.cpuNanos());
        nextTick = System.nanoTime();
    }

    /**
     * Waits for the client's TLS handshake and checks that it agreed on h2 on the engine {@link #tls} names; prints
     * the session's protocol and cipher if {@code print}.
     */
    private void checkNegotiated(SslHandler sslHandler, boolean print) throws Exception {
        if (!sslHandler.handshakeFuture().await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("TLS handshake (" + tls + ") not done in 30 s");
        }
        if (!sslHandler.handshakeFuture().isSuccess()) {
            throw new IllegalStateException("TLS handshake (" + tls + ") failed", sslHandler.handshakeFuture().cause());
        }
        String engine = sslHandler.engine().getClass().getName();
        if (!ApplicationProtocolNames.HTTP_2.equals(sslHandler.applicationProtocol())) {
            throw new IllegalStateException("ALPN agreed on " + sslHandler.applicationProtocol() + ", not h2 ("
                    + engine + ")");
        }
        if ((tls == Tls.OPENSSL) != (sslHandler.engine() instanceof ReferenceCountedOpenSslEngine)) {
            throw new IllegalStateException("tls=" + tls + " runs on " + engine);
        }
        if (print) {
            SSLSession session = sslHandler.engine().getSession();
            System.out.println("tls " + tls + ": " + session.getProtocol() + " " + session.getCipherSuite() + " on "
                    + engine + ", ALPN " + sslHandler.applicationProtocol());
        }
    }

    @Setup(Level.Iteration)
    public void resetHistogram() throws Exception {
        clientGroup.submit(histogram::reset).get();
    }

    @TearDown(Level.Iteration)
    public void printLatencies() throws Exception {
        long[] sorted = clientGroup.submit(() -> {
            long[] copy = Arrays.copyOf(latencies, latencyCount);
            latencyCount = 0;
            return copy;
        }).get();
        Arrays.sort(sorted);
        if (ResponseTrace.ENABLED) {
            ResponseTrace.report(System.out);
        }
        if (sorted.length > 0) {
            System.out.printf("latency p50 %.1f us, p99 %.1f us, p999 %.1f us (%d responses)%n",
                    sorted[(int) (sorted.length * 0.50)] / 1000.0,
                    sorted[Math.min(sorted.length - 1, (int) (sorted.length * 0.99))] / 1000.0,
                    sorted[Math.min(sorted.length - 1, (int) (sorted.length * 0.999))] / 1000.0, sorted.length);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        try {
            clientGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
            server.close();
        } finally {
            ReferenceCountUtil.release(clientSslContext);
        }
    }

    private void tick(Costs costs) throws Exception {
        long now = System.nanoTime();
        while (nextTick - now > 0) {
            LockSupport.parkNanos(nextTick - now);
            now = System.nanoTime();
        }
        // Open loop: the next burst is due one tick later, not one tick after the responses (never a catch-up
        // storm after a stall, though).
        nextTick = Math.max(nextTick + TICK_NANOS, now);
        for (Client client : clients) {
            for (;;) {
                if (client.failure != null) {
                    throw new IllegalStateException("request failed", client.failure);
                }
                if (client.outstanding.get() + burst <= MAX_CONCURRENT_STREAMS) {
                    break;
                }
                if (System.nanoTime() - now > STALL_NANOS) {
                    throw new IllegalStateException(client.outstanding.get() + " responses outstanding for 30 s");
                }
                LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(100));
            }
            client.outstanding.addAndGet(burst);
        }
        clientGroup.execute(() -> {
            for (Client client : clients) {
                client.burst();
            }
        });

        costs.responses += responsesDelta.next(responses);
        costs.serverByteBufs += byteBufsDelta.next(server.byteBufs());
        costs.serverBytes += bytesDelta.next(server.bytes());
        costs.dataFrames += dataFramesDelta.next(dataFrames);
        costs.serverTlsRecords += tlsRecordsDelta.next(server.tlsRecords());
        costs.serverTlsSmallRecords += tlsSmallRecordsDelta.next(server.tlsSmallRecords());
        costs.serverTlsByteBufs += tlsByteBufsDelta.next(server.tlsByteBufs());
        costs.serverTlsBytes += tlsBytesDelta.next(server.tlsBytes());
        if (server.tlsRecordErrors() != 0) {
            throw new IllegalStateException("the server's TLS records could not be counted: "
                    + server.tlsRecordErrors() + " connection(s) lost their record boundaries");
        }
        costs.serverCpuNanos += cpuNanosDelta.next(server.cpuNanos());
        costs.latencyNanos += latencyNanosDelta.next(latencyNanos);
        if (histogram.percentiles(QUANTILES, percentiles)) {
            // Counters are rates: the percentile times the responses so far reads as the percentile per response.
            costs.latencyP50Us = percentiles[0] * costs.responses;
            costs.latencyP99Us = percentiles[1] * costs.responses;
            costs.latencyP999Us = percentiles[2] * costs.responses;
        }
    }

    /**
     * {@code -Dh2bench.<param>=v1,v2} sets the values of a parameter (transport, pipeline, distributor, bodySize,
     * burst, connections, writeBufferHighWaterMark, tls) when the benchmark runs through {@link #run()} (with
     * {@code OPENSSL} among the {@code tls} values, it fails at once if OpenSSL is not available).
     */
    @Override
    protected ChainedOptionsBuilder newOptionsBuilder() throws Exception {
        ChainedOptionsBuilder builder = super.newOptionsBuilder();
        String method = System.getProperty("h2bench.method");
        if (method != null && !"openLoop".equals(method)) {
            throw new IllegalArgumentException("h2bench.method=" + method + " is not a method of this benchmark"
                    + " (openLoop)");
        }
        for (String param : new String[] { "transport", "pipeline", "distributor", "bodySize", "burst",
                "connections", "writeBufferHighWaterMark", "tls" }) {
            String values = System.getProperty("h2bench." + param);
            if (values != null) {
                builder.param(param, values.split(","));
            }
        }
        String tlsValues = System.getProperty("h2bench.tls");
        if (tlsValues != null && Arrays.asList(tlsValues.split(",")).contains(Tls.OPENSSL.name())) {
            // Here already (the forks have the same class path), rather than as an error of each row: JMH runs the
            // other rows and the run itself would pass.
            Tls.OPENSSL.checkAvailable();
        }
        return builder;
    }

    /**
     * The harness's JVM arguments, {@code -Dh2bench.trace=true} if set, and those of {@code -Dh2bench.jvmArgs}
     * (separated by white space). Given as JMH's {@code jvmArgs}.
     */
    @Override
    protected String[] jvmArgs() {
        List<String> args = new ArrayList<String>(Arrays.asList(super.jvmArgs()));
        if (ResponseTrace.ENABLED) {
            args.add("-D" + ResponseTrace.PROPERTY + "=true");
        }
        for (String arg : System.getProperty(JVM_ARGS_PROPERTY, "").trim().split("\\s+")) {
            if (!arg.isEmpty()) {
                args.add(arg);
            }
        }
        return args.toArray(new String[0]);
    }

    @Benchmark
    public void openLoop(Costs costs) throws Exception {
        tick(costs);
    }
}
