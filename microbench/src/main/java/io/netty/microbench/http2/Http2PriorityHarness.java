/*
 * Copyright 2026 The Netty Project
 *
 * The Netty Project licenses this file to you under the Apache License, version 2.0 (the
 * "License"); you may not use this file except in compliance with the License. You may obtain a
 * copy of the License at:
 *
 * https://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software distributed under the License
 * is distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express
 * or implied. See the License for the specific language governing permissions and limitations under
 * the License.
 */
package io.netty.microbench.http2;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.WeightedFairQueueByteDistributor;
import io.netty.handler.codec.http2.WholeChunkStreamByteDistributor;
import io.netty.microbench.http2.Http2ResponseServer.Distributor;
import io.netty.util.concurrent.Promise;
import io.netty.util.internal.SystemPropertyUtil;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What RFC 7540 priorities buy a browser-like client, and what serving new streams first costs bulk streams:
 * {@link WeightedFairQueueByteDistributor} (which schedules by priority; its default 1 KiB quantum, or 16 KiB with
 * {@code -Dh2prio.baseline=WFQ_16K}) against
 * {@link WholeChunkStreamByteDistributor} (which ignores it), in the same JVM, alternating, printing a table. Not a
 * JMH benchmark: each value is the time of one run, a page load or a set of downloads.
 * <p>
 * Bed: an HTTP/2 server (one epoll event loop, {@code SO_SNDBUF} 64 KiB, default water marks) and an HTTP/2 client
 * (one epoll event loop, {@code SO_RCVBUF} 64 KiB, windows of 6 MiB per stream and 15 MiB per connection, as
 * Chrome's) on 127.0.0.1, one connection per run. The client reads at {@code -Dh2prio.readMiBps} (20 by default), as
 * behind a slower link, so that responses wait in the server's flow controller and the distributor chooses their
 * order. Scenarios, each on a new connection:
 * <ul>
 * <li>{@code chrome}: a page load. At once, in document order: 2 style sheets (24 and 64 KiB) and 3 scripts of the
 * head (48, 128, 256 KiB), render-blocking, then 30 images (16-256 KiB, 2,976 KiB in all); 2 fonts (48 KiB each)
 * once the first style sheet is complete (fonts are found in style sheets). Priorities as Chrome sent them: each
 * request's {@code HEADERS} depends exclusively on the last open stream of the same or a higher priority, with the
 * weight of its priority (style sheets and fonts 256, scripts 220, images 147).</li>
 * <li>{@code firefox}: the same page with priorities as Firefox sent them: {@code PRIORITY} frames make the idle
 * streams 3 (leaders, weight 201), 5 (unblocked, 101), 7 (background, 1), 9 (speculative, 1, on 7) and 11
 * (followers, 1, on 3); style sheets, scripts and fonts depend on 3, images on 11, with weight 32 (requests from
 * stream 13 on).</li>
 * <li>{@code churn}: no priorities. 8 downloads of 2 MiB at once, and a request for 32 KiB every
 * {@code -Dh2prio.churnIntervalMillis} ms (4 by default) until the downloads are complete.</li>
 * </ul>
 * Figures: for a page load, the time from the requests to the end of the last render-blocking response (a browser
 * can render then), of the last font and of the last response; for churn, the median and the last completion of the
 * downloads and the median and 99th percentile latency of the 32 KiB responses. Rounds: {@code -Dh2prio.rounds} (7
 * by default) after {@code -Dh2prio.warmups} (3) of each; each round runs both distributors, the first one
 * alternating. The table gives every round and the median, and ratios whole chunk / WFQ.
 * <pre>
 *   ./mvnw -pl microbench compile dependency:build-classpath -Dmdep.outputFile=$PWD/microbench/target/cp.txt
 *   java -cp microbench/target/classes:$(cat microbench/target/cp.txt) io.netty.microbench.http2.Http2PriorityHarness
 * </pre>
 */
public final class Http2PriorityHarness {
    private static final int KIB = 1024;
    private static final int SOCKET_BUFFER = 64 * KIB;
    private static final int STREAM_WINDOW = 6 * KIB * KIB;
    private static final int CONNECTION_WINDOW = 15 * KIB * KIB;
    private static final long TIMEOUT_SECONDS = 120;

    private static final int ROUNDS = SystemPropertyUtil.getInt("h2prio.rounds", 7);
    private static final int WARMUPS = SystemPropertyUtil.getInt("h2prio.warmups", 3);
    private static final int READ_MIBPS = SystemPropertyUtil.getInt("h2prio.readMiBps", 20);
    /** What WholeChunk is compared with: {@code WFQ} (the default) or {@code WFQ_16K} ({@link Distributor}). */
    private static final Distributor BASELINE = Distributor.valueOf(SystemPropertyUtil.get("h2prio.baseline", "WFQ"));
    private static final int CHURN_INTERVAL_MILLIS = SystemPropertyUtil.getInt("h2prio.churnIntervalMillis", 4);
    private static final int BULK_STREAMS = 8;
    private static final int BULK_SIZE = 2 * KIB * KIB;
    private static final int SMALL_SIZE = 32 * KIB;

    /** What a response is to the page. */
    enum Kind {
        CSS(true, 0), SCRIPT(true, 1), FONT(false, 0), IMAGE(false, 3), BULK(false, -1), SMALL(false, -1);

        /** Whether rendering waits for it. */
        final boolean blocking;
        /** Chrome's priority: 0 highest (weight 256), 1 (220), 2 (183), 3 (147), 4 lowest (110). */
        final int chromePriority;

        Kind(boolean blocking, int chromePriority) {
            this.blocking = blocking;
            this.chromePriority = chromePriority;
        }

        short chromeWeight() {
            return CHROME_WEIGHTS[chromePriority];
        }
    }

    /** Chrome's weight of each of its priorities (highest first). */
    private static final short[] CHROME_WEIGHTS = { 256, 220, 183, 147, 110 };

    enum Scenario {
        CHROME, FIREFOX, CHURN
    }

    private static final int[] CSS_SIZES = { 24 * KIB, 64 * KIB };
    private static final int[] SCRIPT_SIZES = { 48 * KIB, 128 * KIB, 256 * KIB };
    private static final int[] IMAGE_SIZES = { 16 * KIB, 32 * KIB, 64 * KIB, 128 * KIB, 256 * KIB };
    private static final int IMAGES = 30;
    private static final int FONTS = 2;
    private static final int FONT_SIZE = 48 * KIB;
    private static final int FIREFOX_LEADERS = 3;
    private static final int FIREFOX_FOLLOWERS = 11;
    private static final int FIREFOX_FIRST_STREAM = 13;

    private Http2PriorityHarness() {
    }

    /** One response: what it is, when it was asked for and when its last byte arrived (client's clock). */
    static final class Response {
        final Kind kind;
        final int size;
        long requested;
        long done;

        Response(Kind kind, int size) {
            this.kind = kind;
            this.size = size;
        }
    }

    /** The server's side: answers {@code GET /N} with N bytes. */
    private static final class Responder extends Http2FrameAdapter {
        Http2ConnectionHandler handler;

        @Override
        public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers, int padding,
                                  boolean endOfStream) {
            int size = Integer.parseInt(headers.path().toString().substring(1));
            handler.encoder().writeHeaders(ctx, streamId, new DefaultHttp2Headers().status("200"), 0, false,
                    ctx.newPromise());
            handler.encoder().writeData(ctx, streamId, ctx.alloc().buffer(size).writeZero(size), 0, true,
                    ctx.newPromise());
            // Http2ConnectionHandler flushes when the read completes.
        }

        @Override
        public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers, int streamDependency,
                                  short weight, boolean exclusive, int padding, boolean endOfStream) {
            onHeadersRead(ctx, streamId, headers, padding, endOfStream);
        }
    }

    /** The client of one run: sends the scenario's requests and records when each response ends. */
    private static final class Run extends Http2FrameAdapter {
        final Scenario scenario;
        final Http2ConnectionHandler handler;
        final Map<Integer, Response> responses = new LinkedHashMap<Integer, Response>();
        /** Open streams in the order they were opened, for Chrome's dependencies. */
        final List<Integer> open = new ArrayList<Integer>();
        Promise<Void> done;
        ChannelHandlerContext ctx;
        long start;
        int nextStream;
        boolean fontsRequested;
        int bulkLeft;

        Run(Scenario scenario) {
            this.scenario = scenario;
            handler = new Http2ConnectionHandlerBuilder().server(false).frameListener(this)
                    .initialSettings(new Http2Settings().initialWindowSize(STREAM_WINDOW))
                    .build();
            nextStream = scenario == Scenario.FIREFOX ? FIREFOX_FIRST_STREAM : 1;
        }

        void start(Channel ch) throws Http2Exception {
            ctx = ch.pipeline().context(handler);
            done = ctx.executor().newPromise();
            Http2Connection connection = handler.connection();
            connection.local().flowController().incrementWindowSize(connection.connectionStream(),
                    CONNECTION_WINDOW - Http2CodecUtil.DEFAULT_WINDOW_SIZE);
            start = System.nanoTime();
            switch (scenario) {
                case CHROME:
                case FIREFOX:
                    if (scenario == Scenario.FIREFOX) {
                        priority(3, 0, 201);
                        priority(5, 0, 101);
                        priority(7, 0, 1);
                        priority(9, 7, 1);
                        priority(11, FIREFOX_LEADERS, 1);
                    }
                    for (int size : CSS_SIZES) {
                        request(Kind.CSS, size);
                    }
                    for (int size : SCRIPT_SIZES) {
                        request(Kind.SCRIPT, size);
                    }
                    for (int i = 0; i < IMAGES; i++) {
                        request(Kind.IMAGE, IMAGE_SIZES[i % IMAGE_SIZES.length]);
                    }
                    break;
                case CHURN:
                    bulkLeft = BULK_STREAMS;
                    for (int i = 0; i < BULK_STREAMS; i++) {
                        request(Kind.BULK, BULK_SIZE);
                    }
                    ctx.executor().schedule(this::small, CHURN_INTERVAL_MILLIS, TimeUnit.MILLISECONDS);
                    break;
                default:
                    throw new AssertionError(scenario);
            }
            ctx.flush();
        }

        private void small() {
            if (bulkLeft > 0 && ctx.channel().isActive()) {
                request(Kind.SMALL, SMALL_SIZE);
                ctx.flush();
                ctx.executor().schedule(this::small, CHURN_INTERVAL_MILLIS, TimeUnit.MILLISECONDS);
            }
        }

        private void priority(int streamId, int dependency, int weight) {
            handler.encoder().writePriority(ctx, streamId, dependency, (short) weight, false, ctx.newPromise());
        }

        private void request(Kind kind, int size) {
            int id = nextStream;
            nextStream += 2;
            Response response = new Response(kind, size);
            response.requested = System.nanoTime();
            responses.put(id, response);
            Http2Headers headers = new DefaultHttp2Headers().method("GET").path("/" + size).scheme("http")
                    .authority("localhost");
            if (scenario == Scenario.CHROME) {
                // Exclusively on the last open stream of the same or a higher priority.
                int parent = 0;
                for (int i = open.size() - 1; i >= 0; i--) {
                    if (responses.get(open.get(i)).kind.chromePriority <= kind.chromePriority) {
                        parent = open.get(i);
                        break;
                    }
                }
                handler.encoder().writeHeaders(ctx, id, headers, parent, kind.chromeWeight(), true, 0, true,
                        ctx.newPromise());
            } else if (scenario == Scenario.FIREFOX) {
                int group = kind == Kind.IMAGE ? FIREFOX_FOLLOWERS : FIREFOX_LEADERS;
                handler.encoder().writeHeaders(ctx, id, headers, group, (short) 32, false, 0, true,
                        ctx.newPromise());
            } else {
                handler.encoder().writeHeaders(ctx, id, headers, 0, true, ctx.newPromise());
            }
            open.add(id);
        }

        @Override
        public int onDataRead(ChannelHandlerContext ctx, int streamId, ByteBuf data, int padding,
                              boolean endOfStream) {
            if (endOfStream) {
                Response response = responses.get(streamId);
                response.done = System.nanoTime();
                open.remove(Integer.valueOf(streamId));
                if (response.kind == Kind.CSS && !fontsRequested) {
                    fontsRequested = true;
                    for (int i = 0; i < FONTS; i++) {
                        request(Kind.FONT, FONT_SIZE);
                    }
                    // Flushed when the read completes.
                } else if (response.kind == Kind.BULK) {
                    bulkLeft--;
                }
                if (allDone()) {
                    done.trySuccess(null);
                }
            }
            return data.readableBytes() + padding;
        }

        private boolean allDone() {
            if (scenario == Scenario.CHURN) {
                return bulkLeft == 0;
            }
            if (!fontsRequested) {
                return false;
            }
            for (Response response : responses.values()) {
                if (response.done == 0) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public void onRstStreamRead(ChannelHandlerContext ctx, int streamId, long errorCode) {
            done.tryFailure(new IllegalStateException("stream " + streamId + " reset: " + errorCode));
        }

        /** Milliseconds from the start to the end of the last response of {@code kinds}. */
        double lastDone(Kind... kinds) {
            long last = 0;
            for (Response response : responses.values()) {
                if (Arrays.asList(kinds).contains(response.kind)) {
                    last = Math.max(last, response.done - start);
                }
            }
            return last / 1e6;
        }

        /** The {@code p} quantile of the latencies (request to end) of {@code kind}'s complete responses, in ms. */
        double latency(Kind kind, double p) {
            List<Long> latencies = new ArrayList<Long>();
            for (Response response : responses.values()) {
                if (response.kind == kind && response.done != 0) {
                    latencies.add(response.done - response.requested);
                }
            }
            return quantile(latencies, p) / 1e6;
        }
    }

    private static double quantile(List<Long> values, double p) {
        if (values.isEmpty()) {
            return Double.NaN;
        }
        Long[] sorted = values.toArray(new Long[0]);
        Arrays.sort(sorted);
        return sorted[Math.min(sorted.length - 1, (int) (sorted.length * p))];
    }

    private static double median(List<Double> values) {
        double[] sorted = new double[values.size()];
        for (int i = 0; i < sorted.length; i++) {
            sorted[i] = values.get(i);
        }
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    /** The figures of a scenario, in the order of the table's columns. */
    private static String[] figureNames(Scenario scenario) {
        return scenario == Scenario.CHURN ?
                new String[] { "downloads p50", "downloads last", "32 KiB p50", "32 KiB p99" } :
                new String[] { "render-blocking", "fonts", "page" };
    }

    private static double[] figures(Run run) {
        if (run.scenario == Scenario.CHURN) {
            return new double[] { run.latency(Kind.BULK, 0.5), run.lastDone(Kind.BULK),
                    run.latency(Kind.SMALL, 0.5), run.latency(Kind.SMALL, 0.99) };
        }
        return new double[] { run.lastDone(Kind.CSS, Kind.SCRIPT), run.lastDone(Kind.FONT),
                run.lastDone(Kind.values()) };
    }

    private static Run run(Scenario scenario, EventLoopGroup clientGroup, InetSocketAddress server)
            throws Exception {
        final Run run = new Run(scenario);
        Channel ch = new Bootstrap().group(clientGroup).channel(EpollSocketChannel.class)
                .option(ChannelOption.AUTO_READ, false)
                .option(ChannelOption.SO_RCVBUF, SOCKET_BUFFER)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast(new ReadPacer(READ_MIBPS, SOCKET_BUFFER), run.handler);
                    }
                }).connect(server).sync().channel();
        try {
            ch.eventLoop().submit(() -> {
                run.start(ch);
                return null;
            }).sync();
            if (!run.done.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                throw new IllegalStateException(scenario + ": not complete after " + TIMEOUT_SECONDS + " s");
            }
            run.done.sync();
        } finally {
            ch.close().sync();
        }
        return run;
    }

    private static String read(String file) {
        try {
            return new String(Files.readAllBytes(Paths.get(file)), StandardCharsets.US_ASCII).trim();
        } catch (IOException e) {
            return "unknown (" + e.getMessage() + ')';
        }
    }

    public static void main(String[] args) throws Exception {
        EventLoopGroup serverGroup = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        EventLoopGroup clientGroup = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        Map<Distributor, Channel> servers = new EnumMap<Distributor, Channel>(Distributor.class);
        try {
            for (final Distributor distributor : new Distributor[] { BASELINE, Distributor.WHOLE_CHUNK }) {
                servers.put(distributor, new ServerBootstrap().group(serverGroup)
                        .channel(EpollServerSocketChannel.class)
                        .childOption(ChannelOption.SO_SNDBUF, SOCKET_BUFFER)
                        .childHandler(new ChannelInitializer<Channel>() {
                            @Override
                            protected void initChannel(Channel ch) {
                                Responder responder = new Responder();
                                responder.handler = new Http2ConnectionHandlerBuilder().server(true)
                                        .frameListener(responder).streamByteDistributor(distributor::newDistributor)
                                        .build();
                                ch.pipeline().addLast(responder.handler);
                            }
                        }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel());
            }
            System.out.printf(Locale.ROOT, "# Http2PriorityHarness: loopback (127.0.0.1), epoll," +
                            " congestion control %s, kernel %s, %d CPUs, Java %s; client reads at %d MiB/s," +
                            " SO_SNDBUF/SO_RCVBUF %d KiB; %d warm-ups, %d rounds, churn interval %d ms%n",
                    read("/proc/sys/net/ipv4/tcp_congestion_control"), read("/proc/sys/kernel/osrelease"),
                    Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"), READ_MIBPS,
                    SOCKET_BUFFER / KIB, WARMUPS, ROUNDS, CHURN_INTERVAL_MILLIS);
            for (int i = 0; i < WARMUPS; i++) {
                for (Scenario scenario : Scenario.values()) {
                    for (Distributor distributor : new Distributor[] { BASELINE, Distributor.WHOLE_CHUNK }) {
                        run(scenario, clientGroup, (InetSocketAddress) servers.get(distributor).localAddress());
                    }
                }
            }
            Map<Scenario, Map<Distributor, List<double[]>>> results =
                    new EnumMap<Scenario, Map<Distributor, List<double[]>>>(Scenario.class);
            for (Scenario scenario : Scenario.values()) {
                Map<Distributor, List<double[]>> byDistributor =
                        new EnumMap<Distributor, List<double[]>>(Distributor.class);
                for (Distributor distributor : new Distributor[] { BASELINE, Distributor.WHOLE_CHUNK }) {
                    byDistributor.put(distributor, new ArrayList<double[]>());
                }
                results.put(scenario, byDistributor);
            }
            for (int round = 0; round < ROUNDS; round++) {
                Distributor[] order = round % 2 == 0 ? new Distributor[] { BASELINE, Distributor.WHOLE_CHUNK } :
                        new Distributor[] { Distributor.WHOLE_CHUNK, BASELINE };
                for (Scenario scenario : Scenario.values()) {
                    for (Distributor distributor : order) {
                        Run run = run(scenario, clientGroup,
                                (InetSocketAddress) servers.get(distributor).localAddress());
                        results.get(scenario).get(distributor).add(figures(run));
                    }
                }
            }
            for (Scenario scenario : Scenario.values()) {
                print(scenario, results.get(scenario));
            }
        } finally {
            for (Channel server : servers.values()) {
                server.close().sync();
            }
            clientGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
            serverGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }

    private static void print(Scenario scenario, Map<Distributor, List<double[]>> results) {
        String[] names = figureNames(scenario);
        System.out.printf(Locale.ROOT, "%n## %s, ms (WC: WholeChunkStreamByteDistributor; ratio WC / %s)%n%n",
                scenario.name().toLowerCase(Locale.ROOT), BASELINE);
        StringBuilder header = new StringBuilder("| round | first |");
        StringBuilder rule = new StringBuilder("|---|---|");
        for (String name : names) {
            header.append(' ').append(name).append(' ').append(BASELINE).append(" | WC | ratio |");
            rule.append("---|---|---|");
        }
        System.out.println(header);
        System.out.println(rule);
        List<double[]> wfq = results.get(BASELINE);
        List<double[]> wc = results.get(Distributor.WHOLE_CHUNK);
        for (int round = 0; round < wfq.size(); round++) {
            StringBuilder row = new StringBuilder();
            row.append("| ").append(round + 1).append(" | ").append(round % 2 == 0 ? BASELINE.name() : "WC")
                    .append(" |");
            for (int f = 0; f < names.length; f++) {
                row.append(String.format(Locale.ROOT, " %.1f | %.1f | %.2f |", wfq.get(round)[f], wc.get(round)[f],
                        wc.get(round)[f] / wfq.get(round)[f]));
            }
            System.out.println(row);
        }
        StringBuilder row = new StringBuilder("| median | |");
        for (int f = 0; f < names.length; f++) {
            List<Double> a = new ArrayList<Double>();
            List<Double> b = new ArrayList<Double>();
            List<Double> ratios = new ArrayList<Double>();
            for (int round = 0; round < wfq.size(); round++) {
                a.add(wfq.get(round)[f]);
                b.add(wc.get(round)[f]);
                ratios.add(wc.get(round)[f] / wfq.get(round)[f]);
            }
            row.append(String.format(Locale.ROOT, " %.1f | %.1f | %.2f |", median(a), median(b), median(ratios)));
        }
        System.out.println(row);
    }
}
