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
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
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
import io.netty.microbench.http2.Http2ResponseServer.Distributor;
import io.netty.microbench.http2.Http2ResponseServer.Pipeline;
import io.netty.microbench.http2.Http2ResponseServer.Transport;
import io.netty.microbench.http2.Http2ResponseBenchmark.Delta;
import io.netty.microbench.util.AbstractMicrobenchmark;
import io.netty.util.collection.IntObjectHashMap;
import io.netty.util.collection.IntObjectMap;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;

import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Small responses on connections that also stream large bodies to a slower client, as a browser page or a gRPC
 * channel with a download and unary calls: a server on one event-loop thread of {@code transport} (see
 * {@link Http2ResponseServer}); an h2c client (epoll, for its precise timers) holds {@code connections}
 * connections, keeps {@code bulkStreams} bulk requests of {@value #BULK_SIZE} bytes open on each (a new one when
 * one ends; the server allows twice as many concurrent streams when Netty's default, 100, is too few) and sends one
 * request for {@code smallSize} bytes (1 KiB by default) on each every {@code smallIntervalMillis} ms (10 by
 * default, a multiple of 10), open loop, while it has fewer than 100 streams open (so none with 99 bulk streams or
 * more). The client reads each connection at
 * {@code readMiBps} MiB/s (it turns reads on and off itself: traffic shaping pauses in steps of at least 10 ms, too
 * coarse for the latencies measured), so the server really has data pending, as with a slower link; with
 * {@code readMiBps} 0 it reads as fast as it can (the channels read on their own). {@code socketBuffers}:
 * {@code BOUNDED} sets the server's {@code SO_SNDBUF} and the client's {@code SO_RCVBUF} to 64 KiB so that the
 * kernel's queue does not hide the order in which the server sends; {@code AUTOTUNED} leaves both to the kernel.
 * {@code smallResponse} and {@code bulkResponse}: {@code WRITTEN_AT_ONCE} (the default) writes each response as its
 * headers and one {@code DATA} frame; {@code PACED} (with the {@code MULTIPLEX} pipeline only) writes it as a handler
 * paced by its stream channel's writability does: a {@code ChunkedWriteHandler} writes
 * {@value Http2ResponseServer#PACED_CHUNK}-byte {@code DATA} frames while the stream channel is writable and resumes
 * on its {@code channelWritabilityChanged} (see {@link Http2ResponseServer}'s {@code /paced/N}).
 * <p>
 * One operation is one tick of 10 ms; iterations of 3 s (about 600 small requests with 2 connections and the default
 * interval). Counters (rates): {@code mebibytes} the DATA payload the client received in MiB (so its rate is the
 * goodput in MiB/s; divide the others by it for values per MiB: {@code dataFrames} DATA frames received,
 * {@code serverCpuNanos} CPU time of the server's event-loop thread); {@code smallResponses} small responses
 * completed ({@code smallSkipped} requests not sent because the connection was at the server's limit of concurrent
 * streams: while the JIT warms up, or when small responses do not complete); {@code smallIncomplete} small requests
 * whose response had not completed {@value #SMALL_DEADLINE_MILLIS} ms after they were sent, each counted once, in
 * the iteration in which that time ran out (if its response completes later, its latency counts then);
 * {@code smallLatencyP50Us} and {@code smallLatencyP99Us} are, per operation, the median and the 99th percentile of
 * the small requests' latencies (send to end of stream) in the iteration, in microseconds (0 when none completed).
 * {@code connectionUnwritableEvents}: how often a connection became unwritable. With the {@code MULTIPLEX} pipeline
 * (0 otherwise): {@code streamWritabilityEvents} the writability events of the server's stream channels (both ways),
 * {@code connectionWritableEvents} the connections' writability events that reached {@code Http2MultiplexHandler}
 * with the connection writable, {@code writableEventStreamVisits} the active streams at each of those, added up
 * (what {@code Http2MultiplexHandler} visits on them), and {@code writableEventNanos} the time
 * {@code Http2MultiplexHandler} took on those events (its visits and the writes of the stream channels it woke; a
 * share of {@code serverCpuNanos}).
 * The benchmark compiles and runs against upstream's artifacts too, and ends after its iterations whether or not
 * the small responses complete.
 */
@State(Scope.Benchmark)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 3, time = 3)
public class Http2MixedWorkloadBenchmark extends AbstractMicrobenchmark {
    private static final int TICK_MILLIS = 10;
    private static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(TICK_MILLIS);
    private static final int BULK_SIZE = 4 * 1024 * 1024;
    private static final long SMALL_DEADLINE_MILLIS = 1000;
    private static final long SMALL_DEADLINE_NANOS = TimeUnit.MILLISECONDS.toNanos(SMALL_DEADLINE_MILLIS);
    private static final int CLIENT_WINDOW = 1 << 24;
    // What Netty's servers allow as concurrent streams by default.
    private static final int MAX_CONCURRENT_STREAMS = 100;
    private static final int BOUNDED_SOCKET_BUFFER = 64 * 1024;
    /** The most bytes the client reads ahead of its rate. */
    private static final int READ_BURST = 64 * 1024;

    /** The sockets' buffers. */
    public enum SocketBuffers {
        BOUNDED,
        AUTOTUNED
    }

    /** How the server writes a response. */
    public enum ResponseWrites {
        /** Headers and one {@code DATA} frame of the whole body. */
        WRITTEN_AT_ONCE,
        /** A {@code ChunkedWriteHandler} on the stream channel, writing while the stream channel is writable. */
        PACED
    }

    @Param({ "IO_URING", "NIO" })
    public Transport transport;

    @Param({ "DEFAULT", "WFQ", "UNIFORM_1K", "UNIFORM_16K" })
    public Distributor distributor;

    @Param({ "8", "64" })
    public int bulkStreams;

    @Param({ "BOUNDED", "AUTOTUNED" })
    public SocketBuffers socketBuffers;

    @Param("HTTP_TO_HTTP2")
    public Pipeline pipeline;

    @Param("100")
    public int readMiBps;

    @Param("2")
    public int connections;

    @Param("1024")
    public int smallSize;

    @Param("10")
    public int smallIntervalMillis;

    @Param("WRITTEN_AT_ONCE")
    public ResponseWrites smallResponse;

    @Param("WRITTEN_AT_ONCE")
    public ResponseWrites bulkResponse;

    /** The server connections' write buffer high water mark (0: Netty's default, 64 KiB; the low one is half). */
    @Param("0")
    public int writeBufferHighWaterMark;

    private Http2ResponseServer server;
    private EventLoopGroup clientGroup;
    private final List<Client> clients = new ArrayList<Client>();
    private long nextTick;
    private long tickCount;
    private int ticksPerSmall;
    private String smallPath;
    private String bulkPath;
    // What each cumulative count was at the previous tick (the CPU time's from setup on).
    private final Delta cpuNanosDelta = new Delta();
    private final Delta bytesDelta = new Delta();
    private final Delta dataFramesDelta = new Delta();
    private final Delta smallResponsesDelta = new Delta();
    private final Delta smallSkippedDelta = new Delta();
    private final Delta smallIncompleteDelta = new Delta();
    private final Delta streamWritabilityEventsDelta = new Delta();
    private final Delta connectionUnwritableEventsDelta = new Delta();
    private final Delta connectionWritableEventsDelta = new Delta();
    private final Delta writableEventStreamVisitsDelta = new Delta();
    private final Delta writableEventNanosDelta = new Delta();
    // Latencies of the small requests, from the clients' event loop to the benchmark thread.
    private final Queue<Long> smallLatencies = new ConcurrentLinkedQueue<Long>();
    // The current iteration's latencies (benchmark thread only).
    private long[] iterationLatencies = new long[1024];
    private int iterationLatencyCount;

    // Written by the clients' event loop, read by the benchmark thread.
    private volatile long bytes;
    private volatile long dataFrames;
    private volatile long smallResponses;
    private volatile long smallSkipped;
    private volatile long smallIncomplete;
    private volatile boolean running;

    /** Per-operation costs, reported as rates. */
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class Costs {
        public double mebibytes;
        public long dataFrames;
        public long serverCpuNanos;
        public long smallResponses;
        public long smallSkipped;
        public long smallIncomplete;
        public double smallLatencyP50Us;
        public double smallLatencyP99Us;
        public long streamWritabilityEvents;
        public long connectionUnwritableEvents;
        public long connectionWritableEvents;
        public long writableEventStreamVisits;
        public long writableEventNanos;
        long ticks;

        @Setup(Level.Iteration)
        public void reset() {
            mebibytes = 0;
            dataFrames = 0;
            serverCpuNanos = 0;
            smallResponses = 0;
            smallSkipped = 0;
            smallIncomplete = 0;
            smallLatencyP50Us = 0;
            smallLatencyP99Us = 0;
            streamWritabilityEvents = 0;
            connectionUnwritableEvents = 0;
            connectionWritableEvents = 0;
            writableEventStreamVisits = 0;
            writableEventNanos = 0;
            ticks = 0;
        }
    }

    /** One h2c connection: keeps its bulk requests open and records the latency of its small requests. */
    private final class Client extends Http2FrameAdapter {
        final Http2ConnectionHandler handler = new Http2ConnectionHandlerBuilder().server(false)
                .frameListener(this)
                .initialSettings(new Http2Settings().initialWindowSize(CLIENT_WINDOW).maxConcurrentStreams(1000))
                .build();
        // Send times of the small requests not answered yet, by stream id.
        final IntObjectMap<Long> small = new IntObjectHashMap<Long>();
        // The stream ids of the small requests not answered yet and not past their deadline, in the order sent.
        final ArrayDeque<Integer> smallOrder = new ArrayDeque<Integer>();
        ChannelHandlerContext ctx;
        volatile Throwable failure;

        void start(Channel ch) throws Exception {
            ctx = ch.pipeline().context(handler);
            Http2Connection connection = handler.connection();
            connection.local().flowController().incrementWindowSize(connection.connectionStream(),
                    CLIENT_WINDOW - Http2CodecUtil.DEFAULT_WINDOW_SIZE);
            for (int i = 0; i < bulkStreams; i++) {
                request(bulkPath);
            }
            ctx.flush();
        }

        int request(String path) {
            int id = handler.connection().local().incrementAndGetNextStreamId();
            Http2Headers headers = new DefaultHttp2Headers().method("GET").path(path)
                    .scheme("http").authority("localhost");
            handler.encoder().writeHeaders(ctx, id, headers, 0, true, ctx.newPromise()).addListener(f -> {
                if (!f.isSuccess()) {
                    failure = f.cause();
                }
            });
            return id;
        }

        void sendSmall() {
            // A bulk stream that ends opens the next one before it is closed: one more stream at times.
            if (bulkStreams + 1 + small.size() >= MAX_CONCURRENT_STREAMS) {
                // While the JIT warms up, when the server is far behind, and always with 99 bulk streams or more:
                // stay within Netty's default stream limit.
                smallSkipped++;
                return;
            }
            long now = System.nanoTime();
            int id = request(smallPath);
            small.put(id, Long.valueOf(now));
            smallOrder.add(id);
            ctx.flush();
        }

        /** Counts the small requests that reached their deadline unanswered. */
        void checkDeadlines() {
            long now = System.nanoTime();
            Integer id;
            while ((id = smallOrder.peek()) != null) {
                Long sent = small.get(id);
                if (sent != null) {
                    if (now - sent < SMALL_DEADLINE_NANOS) {
                        break;
                    }
                    smallIncomplete++;
                }
                smallOrder.remove();
            }
        }

        @Override
        public int onDataRead(ChannelHandlerContext ctx, int streamId, ByteBuf data, int padding,
                              boolean endOfStream) {
            dataFrames++;
            bytes += data.readableBytes();
            if (endOfStream) {
                Long sent = small.remove(streamId);
                if (sent != null) {
                    smallLatencies.add(System.nanoTime() - sent);
                    smallResponses++;
                } else if (running) {
                    request(bulkPath);
                    // The flush happens when the read completes.
                }
            }
            return data.readableBytes() + padding;
        }

        @Override
        public void onRstStreamRead(ChannelHandlerContext ctx, int streamId, long errorCode) {
            failure = new IllegalStateException("stream " + streamId + " reset by the server: " + errorCode);
        }

        @Override
        public void onGoAwayRead(ChannelHandlerContext ctx, int lastStreamId, long errorCode, ByteBuf debugData)
                throws Http2Exception {
            if (running) {
                failure = new IllegalStateException("GOAWAY from the server: " + errorCode);
            }
        }
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        if (smallIntervalMillis <= 0 || smallIntervalMillis % TICK_MILLIS != 0) {
            throw new IllegalArgumentException("smallIntervalMillis: " + smallIntervalMillis
                    + " (expected: a positive multiple of " + TICK_MILLIS + ')');
        }
        if ((smallResponse == ResponseWrites.PACED || bulkResponse == ResponseWrites.PACED)
                && pipeline != Pipeline.MULTIPLEX) {
            throw new IllegalArgumentException("smallResponse " + smallResponse + ", bulkResponse " + bulkResponse
                    + ": " + ResponseWrites.PACED + " needs pipeline " + Pipeline.MULTIPLEX
                    + " (stream channels), not " + pipeline);
        }
        if (readMiBps < 0) {
            throw new IllegalArgumentException("readMiBps: " + readMiBps + " (expected: >= 0)");
        }
        ticksPerSmall = smallIntervalMillis / TICK_MILLIS;
        smallPath = path(smallResponse, smallSize);
        bulkPath = path(bulkResponse, BULK_SIZE);
        boolean bounded = socketBuffers == SocketBuffers.BOUNDED;
        if (writeBufferHighWaterMark < 0) {
            throw new IllegalArgumentException("writeBufferHighWaterMark: " + writeBufferHighWaterMark
                    + " (expected: >= 0)");
        }
        // A bulk stream that ends opens the next one before it is closed: room for twice as many.
        server = Http2ResponseServer.start(transport, distributor, pipeline, smallSize,
                new InetSocketAddress("127.0.0.1", 0), bounded ? BOUNDED_SOCKET_BUFFER : 0,
                writeBufferHighWaterMark,
                Http2ResponseServer.Tls.NONE, Math.max(MAX_CONCURRENT_STREAMS, 2 * bulkStreams));
        clientGroup = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        running = true;
        final boolean paceReads = readMiBps > 0;
        for (int i = 0; i < connections; i++) {
            final Client client = new Client();
            Bootstrap bootstrap = new Bootstrap().group(clientGroup).channel(EpollSocketChannel.class)
                    .option(ChannelOption.AUTO_READ, !paceReads);
            if (bounded) {
                bootstrap.option(ChannelOption.SO_RCVBUF, BOUNDED_SOCKET_BUFFER);
            }
            final Channel ch = bootstrap.handler(new ChannelInitializer<Channel>() {
                @Override
                protected void initChannel(Channel ch) {
                    if (paceReads) {
                        ch.pipeline().addLast(new ReadPacer(readMiBps, READ_BURST));
                    }
                    ch.pipeline().addLast(client.handler);
                }
            }).connect(server.localAddress()).sync().channel();
            clientGroup.submit(() -> {
                client.start(ch);
                return null;
            }).get();
            clients.add(client);
        }
        cpuNanosDelta.next(server.cpuNanos());
        nextTick = System.nanoTime();
    }

    private static String path(ResponseWrites writes, int size) {
        return (writes == ResponseWrites.PACED ? Http2ResponseServer.PACED_PATH : Http2ResponseServer.BYTES_PATH)
                + size;
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        running = false;
        clientGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        server.close();
    }

    private void tick(Costs costs) throws Exception {
        long now = System.nanoTime();
        while (nextTick - now > 0) {
            LockSupport.parkNanos(nextTick - now);
            now = System.nanoTime();
        }
        // Open loop: the next request is due one tick later, whatever happened to this one.
        nextTick = Math.max(nextTick + TICK_NANOS, now);
        for (Client client : clients) {
            if (client.failure != null) {
                throw new IllegalStateException("request failed", client.failure);
            }
        }
        final boolean sendSmall = tickCount++ % ticksPerSmall == 0;
        clientGroup.execute(() -> {
            for (Client client : clients) {
                client.checkDeadlines();
                if (sendSmall) {
                    client.sendSmall();
                }
            }
        });

        if (costs.ticks++ == 0) {
            iterationLatencyCount = 0;
        }
        costs.mebibytes += bytesDelta.next(bytes) / (1024.0 * 1024.0);
        costs.dataFrames += dataFramesDelta.next(dataFrames);
        costs.serverCpuNanos += cpuNanosDelta.next(server.cpuNanos());
        costs.smallResponses += smallResponsesDelta.next(smallResponses);
        costs.smallSkipped += smallSkippedDelta.next(smallSkipped);
        costs.smallIncomplete += smallIncompleteDelta.next(smallIncomplete);
        costs.streamWritabilityEvents += streamWritabilityEventsDelta.next(server.streamWritabilityEvents());
        costs.connectionUnwritableEvents += connectionUnwritableEventsDelta.next(server.unwritableEvents());
        costs.connectionWritableEvents += connectionWritableEventsDelta.next(server.connectionWritableEvents());
        costs.writableEventStreamVisits +=
                writableEventStreamVisitsDelta.next(server.activeStreamsAtWritableEvents());
        costs.writableEventNanos += writableEventNanosDelta.next(server.writableEventNanos());
        Long latency;
        while ((latency = smallLatencies.poll()) != null) {
            if (iterationLatencyCount == iterationLatencies.length) {
                iterationLatencies = Arrays.copyOf(iterationLatencies, iterationLatencyCount * 2);
            }
            iterationLatencies[iterationLatencyCount++] = latency;
        }
        if (iterationLatencyCount > 0) {
            // Counters are rates: the percentile times the operations so far reads as the percentile per operation.
            long[] sorted = Arrays.copyOf(iterationLatencies, iterationLatencyCount);
            Arrays.sort(sorted);
            costs.smallLatencyP50Us = sorted[(int) (sorted.length * 0.50)] / 1000.0 * costs.ticks;
            costs.smallLatencyP99Us = sorted[Math.min(sorted.length - 1, (int) (sorted.length * 0.99))] / 1000.0
                    * costs.ticks;
        }
    }

    /**
     * {@code -Dh2bench.<param>=v1,v2} narrows a parameter (transport, distributor, bulkStreams, socketBuffers,
     * pipeline, readMiBps, connections, smallSize, smallIntervalMillis, smallResponse, bulkResponse) when the
     * benchmark runs through {@link #run()}.
     */
    @Override
    protected ChainedOptionsBuilder newOptionsBuilder() throws Exception {
        ChainedOptionsBuilder builder = super.newOptionsBuilder();
        for (String param : new String[] { "transport", "distributor", "bulkStreams", "socketBuffers", "pipeline",
                "readMiBps", "connections", "smallSize", "smallIntervalMillis", "smallResponse", "bulkResponse",
                "writeBufferHighWaterMark" }) {
            String values = System.getProperty("h2bench." + param);
            if (values != null) {
                builder.param(param, values.split(","));
            }
        }
        return builder;
    }

    /**
     * The harness's JVM arguments and those of {@code -Dh2bench.jvmArgs} (separated by white space), for example a
     * transport's system property.
     */
    @Override
    protected String[] jvmArgs() {
        List<String> args = new ArrayList<String>(Arrays.asList(super.jvmArgs()));
        for (String arg : System.getProperty("h2bench.jvmArgs", "").trim().split("\\s+")) {
            if (!arg.isEmpty()) {
                args.add(arg);
            }
        }
        return args.toArray(new String[0]);
    }

    @Benchmark
    public void mixed(Costs costs) throws Exception {
        tick(costs);
    }
}
