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

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http2.DefaultHttp2Connection;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2LocalFlowController;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2ConnectionAdapter;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2LocalFlowController;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2Stream;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.ScheduledFuture;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.ClosedChannelException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

/**
 * One client connection of the soak, raw Netty HTTP/2 ({@link Http2ConnectionHandler} with a frame listener) so it
 * can misbehave the way its {@link Kind} says. Every stream it opens ends in exactly one outcome of
 * {@link SoakStats}. All state is confined to the connection's event loop.
 */
final class SoakClient extends Http2FrameAdapter {
    static final long STALL_NANOS = TimeUnit.SECONDS.toNanos(5);
    private static final int[] SIZES = {
        0, 1, 100, 1000, 16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, 65535, 65536, 100_000, 256 * 1024,
        SoakBodies.MAX_BODY
    };
    private static final int MIB = 1024 * 1024;

    /** How a connection misbehaves. */
    enum Kind {
        /** Requests of 0 B to 1 MiB, large windows, a graceful GOAWAY at the end. */
        NORMAL(40, 8, MIB, MIB, 4 * MIB),
        /** Tiny windows given back late, reading paused for seconds. */
        SLOW(12, 4, 256 * 1024, 1024, 65535),
        /** Every byte given back in its own WINDOW_UPDATE, stream and connection. */
        STORM(6, 3, 8 * 1024, 64, 65535),
        /** SETTINGS_INITIAL_WINDOW_SIZE to 0 mid-stream and back up. */
        FLIP(16, 8, MIB, 128 * 1024, MIB),
        /** RST_STREAM(CANCEL) before and in the middle of bodies. */
        RESET(40, 10, MIB, 256 * 1024, MIB),
        /** Closed with SO_LINGER 0 (RST) while the server writes. */
        ABORT_RST(20, 10, MIB, MIB, 4 * MIB),
        /** Output shut down (FIN) while the server writes; the server closes. */
        ABORT_HALF(20, 10, MIB, MIB, 4 * MIB),
        /** More streams at once than the server's SETTINGS_MAX_CONCURRENT_STREAMS. */
        GREEDY(SoakServer.MAX_CONCURRENT_STREAMS + 30, SoakServer.MAX_CONCURRENT_STREAMS + 30, 65536, 65536, 4 * MIB),
        /** Asks for a server-side fault: close or shutdownOutput under in-flight writes, or a server GOAWAY. */
        FAULT(12, 6, MIB, MIB, 4 * MIB),
        /** Never gives window back: the server keeps responses pending until its event loops are shut down. */
        PENDING(8, 8, MIB, 16 * 1024, 65535),
        /**
         * TLS only: closes its connection in the middle of the handshake, with RST (SO_LINGER 0) or FIN, right after
         * its ClientHello was written or when the server's first handshake bytes arrive (unread).
         */
        HANDSHAKE_ABORT(0, 1, MIB, MIB, 4 * MIB),
        /**
         * TLS only: writes part of a TLS record, then closes (FIN): of its ClientHello, of its last handshake flight,
         * or of a record in the middle of its streams (a PING's, while the server writes).
         */
        TRUNCATED_RECORD(20, 10, MIB, MIB, 4 * MIB),
        /** TLS only: sends close_notify and closes (FIN) while the server writes. */
        CLOSE_NOTIFY(20, 10, MIB, MIB, 4 * MIB);

        final int streams;
        final int concurrency;
        final int maxSize;
        final int streamWindow;
        final int connectionWindow;

        Kind(int streams, int concurrency, int maxSize, int streamWindow, int connectionWindow) {
            this.streams = streams;
            this.concurrency = concurrency;
            this.maxSize = maxSize;
            this.streamWindow = streamWindow;
            this.connectionWindow = connectionWindow;
        }
    }

    private enum Outcome { INTACT, CORRUPT, RESET_BY_CLIENT, REFUSED, RESET_BY_SERVER, GOAWAY, ABORTED, LOST }

    /** Where a {@link Kind#HANDSHAKE_ABORT} or {@link Kind#TRUNCATED_RECORD} client breaks its TLS. */
    private enum Break {
        /** Nothing: the other kinds. */
        NONE,
        /** {@link Kind#HANDSHAKE_ABORT}: once its ClientHello was written. */
        AFTER_CLIENT_HELLO,
        /** {@link Kind#HANDSHAKE_ABORT}: on the server's first bytes, which it does not read. */
        ON_SERVER_FLIGHT,
        /** {@link Kind#TRUNCATED_RECORD}: its first write, the ClientHello, cut short. */
        TRUNCATED_CLIENT_HELLO,
        /** {@link Kind#TRUNCATED_RECORD}: its second write (its last handshake flight) cut short. */
        TRUNCATED_HANDSHAKE,
        /** {@link Kind#TRUNCATED_RECORD}: a record written in the middle of its streams cut short. */
        TRUNCATED_MID_STREAM
    }

    /** A stream the client opened. */
    private static final class StreamRecord {
        final int id;
        final char route;
        final int size;
        final long expectedCrc;
        final CRC32 crc = new CRC32();
        final int resetAt;
        int received;
        boolean headers;
        long lastProgress;
        boolean stalled;
        boolean resetByClient;
        Outcome outcome;

        StreamRecord(int id, char route, int seed, int size, int resetAt) {
            this.id = id;
            this.route = route;
            this.size = size;
            this.resetAt = resetAt;
            expectedCrc = SoakBodies.crc(seed, size);
            lastProgress = System.nanoTime();
        }
    }

    private final Kind kind;
    /** {@code null} for h2c. */
    private final SoakTls tls;
    private final Break tlsBreak;
    /** {@link Kind#HANDSHAKE_ABORT}: RST (SO_LINGER 0) rather than FIN. */
    private final boolean breakWithRst;
    private final SoakStats stats;
    private final Random random;
    private final int sessionNumber;
    private final Http2Connection connection;
    private final Http2ConnectionHandler handler;
    private final Map<Integer, StreamRecord> records = new HashMap<>();
    private Promise<Void> done;
    private ChannelHandlerContext ctx;
    private Channel channel;
    private SslHandler sslHandler;
    /** The client's raw writes (TLS records) so far, counted by {@link Wire}. */
    private int wireWrites;
    /** {@link Break#TRUNCATED_MID_STREAM}: the next raw write is cut short. */
    private boolean truncateNextWrite;
    /** Once the client broke its TLS: raw writes after it are dropped, the connection is closing. */
    private boolean wireBroken;
    private int started;
    private int active;
    private boolean faulted;
    private boolean closing;
    private boolean channelClosed;
    private boolean settingsSeen;
    private int settingsAcked;
    private long bytesRead;
    private long receivedTotal;
    private long nextFlipAt = 32 * 1024;
    private int flips;
    private long pausedUntil;
    private long abortAt;
    private int faultStream = -1;
    private ScheduledFuture<?> stallChecker;
    private Runnable firstData;

    SoakClient(Kind kind, SoakTls tls, SoakStats stats, long seed, int sessionNumber) {
        if (tls == null && (kind == Kind.HANDSHAKE_ABORT || kind == Kind.TRUNCATED_RECORD
                || kind == Kind.CLOSE_NOTIFY)) {
            throw new IllegalArgumentException(kind + " needs TLS");
        }
        this.kind = kind;
        this.tls = tls;
        this.stats = stats;
        this.sessionNumber = sessionNumber;
        random = new Random(seed);
        // Random choices of the TLS kinds only, so that a seed repeats the other kinds' sessions as before them.
        if (kind == Kind.HANDSHAKE_ABORT) {
            tlsBreak = random.nextBoolean() ? Break.AFTER_CLIENT_HELLO : Break.ON_SERVER_FLIGHT;
            breakWithRst = random.nextBoolean();
        } else if (kind == Kind.TRUNCATED_RECORD) {
            Break[] breaks = {Break.TRUNCATED_CLIENT_HELLO, Break.TRUNCATED_HANDSHAKE, Break.TRUNCATED_MID_STREAM};
            tlsBreak = breaks[random.nextInt(breaks.length)];
            breakWithRst = false;
        } else {
            tlsBreak = Break.NONE;
            breakWithRst = false;
        }
        connection = new DefaultHttp2Connection(false);
        if (kind == Kind.STORM) {
            // Each consumed byte below the ratio's threshold sends its own WINDOW_UPDATE.
            connection.local().flowController(new DefaultHttp2LocalFlowController(connection, 0.999f, false));
        }
        connection.addListener(new Http2ConnectionAdapter() {
            @Override
            public void onStreamClosed(Http2Stream stream) {
                streamClosed(stream.id());
            }
        });
        handler = new Http2ConnectionHandlerBuilder().connection(connection).frameListener(this)
                .initialSettings(new Http2Settings().initialWindowSize(kind.streamWindow))
                .gracefulShutdownTimeoutMillis(5000)
                // The client answers every frame of a stream it reset with RST_STREAM; with small DATA frames that
                // passes the encoder's default limit (200 in 30 s) and the client would close its own connection.
                .encoderEnforceMaxRstFramesPerWindow(0, 0)
                .build();
        if (kind == Kind.ABORT_RST || kind == Kind.ABORT_HALF || kind == Kind.CLOSE_NOTIFY
                || tlsBreak == Break.TRUNCATED_MID_STREAM) {
            abortAt = 64 * 1024 + random.nextInt(2 * MIB);
        }
        if (kind == Kind.FAULT) {
            faultStream = kind.streams / 2;
        }
    }

    /** Connects and runs the session; the future completes when the connection is closed and every stream ended. */
    Promise<Void> start(EventLoopGroup group, InetSocketAddress server) {
        done = group.next().newPromise();
        Bootstrap b = new Bootstrap().group(group).channel(NioSocketChannel.class)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        channel = ch;
                        ch.pipeline().addLast(new Wire());
                        if (tls != null) {
                            // The HTTP/2 handler's preface waits in the SslHandler until the handshake is done.
                            sslHandler = tls.newClientHandler(ch.alloc(), server.getPort());
                            ch.pipeline().addLast(sslHandler);
                        }
                        ch.pipeline().addLast(handler);
                        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelActive(ChannelHandlerContext c) throws Exception {
                                super.channelActive(c);
                                if (sslHandler == null) {
                                    begin(ch);
                                } else {
                                    sslHandler.handshakeFuture().addListener(f -> handshakeDone(ch, f.cause()));
                                    ch.eventLoop().schedule(() -> checkHandshakeStall(ch), STALL_NANOS,
                                            TimeUnit.NANOSECONDS);
                                }
                            }

                            @Override
                            public void exceptionCaught(ChannelHandlerContext c, Throwable cause) {
                                if (!(faulted && cause instanceof IOException)) {
                                    clientError("exceptionCaught", cause);
                                }
                                c.close();
                            }
                        });
                    }
                });
        ChannelFuture connect = b.connect(server);
        connect.addListener(f -> {
            if (!f.isSuccess()) {
                clientError("connect", f.cause());
                done.trySuccess(null);
                return;
            }
            stats.clientConnections.increment();
            SoakStats.addAndTrackPeak(stats.openClientConnections, stats.peakClientConnections, 1);
            connect.channel().closeFuture().addListener(c -> connect.channel().eventLoop().execute(this::ended));
        });
        return done;
    }

    /** Ends the session at once: a drain that timed out, the streams still open are unfinished. */
    /** The client's connection, {@code null} before it was created. */
    Channel channel() {
        return channel;
    }

    void forceClose() {
        Channel ch = channel;
        if (ch != null) {
            ch.eventLoop().execute(() -> {
                for (StreamRecord r : records.values()) {
                    if (r.outcome == null) {
                        finish(r, null);
                        stats.unfinished.increment();
                        stats.sample("unfinished at the end: " + describe(r), null);
                    }
                }
                faulted = true;
                ch.pipeline().firstContext().close();
            });
        }
    }

    Kind kind() {
        return kind;
    }

    /** Runs {@code task} once, on the event loop, when the first DATA of the session arrives; set before start. */
    void onFirstData(Runnable task) {
        firstData = task;
    }

    /** TLS: the streams begin once the handshake agreed on h2; a well-behaved client's failed handshake is an error. */
    private void handshakeDone(Channel ch, Throwable cause) throws Http2Exception {
        if (faulted) {
            // The client broke its handshake (its engine may count it complete once its last flight was wrapped, cut
            // short below it): the connection is closing.
            return;
        }
        if (cause != null) {
            // SslHandler closes the connection.
            clientError("TLS handshake", cause);
            return;
        }
        String problem = tls.problem(sslHandler);
        if (problem == null && tlsBreak != Break.NONE && tlsBreak != Break.TRUNCATED_MID_STREAM) {
            problem = "completed before the client broke it (" + tlsBreak + ")";
        }
        if (problem != null) {
            clientError("TLS handshake: " + problem, null);
            ch.close();
            return;
        }
        stats.tlsSession(SoakTls.describe(sslHandler));
        begin(ch);
    }

    /** TLS: a handshake that a well-behaved client did not complete within the stall time is a stall. */
    private void checkHandshakeStall(Channel ch) {
        if (faulted || channelClosed || sslHandler.handshakeFuture().isDone()) {
            return;
        }
        stats.stalled.increment();
        SoakServer.describeStall("client: " + stats.config + " " + kind + " session " + sessionNumber
                + ": TLS handshake not done after " + TimeUnit.NANOSECONDS.toSeconds(STALL_NANOS) + " s, bytes read "
                + bytesRead + ", raw writes " + wireWrites, ((InetSocketAddress) ch.localAddress()).getPort(), 0,
                stats);
    }

    private void begin(Channel ch) throws Http2Exception {
        channel = ch;
        ctx = ch.pipeline().context(handler);
        if (kind == Kind.PENDING) {
            faulted = true;
        }
        Http2LocalFlowController flow = connection.local().flowController();
        flow.incrementWindowSize(connection.connectionStream(),
                kind.connectionWindow - Http2CodecUtil.DEFAULT_WINDOW_SIZE);
        ctx.flush();
        stallChecker = ch.eventLoop().scheduleAtFixedRate(this::checkStalls, 1, 1, TimeUnit.SECONDS);
        if (kind == Kind.SLOW) {
            schedulePause();
        }
        if (kind != Kind.GREEDY) {
            fill();
        }
    }

    private void fill() {
        if (closing || channelClosed) {
            return;
        }
        while (started < kind.streams && active < kind.concurrency && !connection.goAwayReceived()) {
            openStream();
            if (closing || channelClosed) {
                return;
            }
        }
        if (active == 0 && (started == kind.streams || connection.goAwayReceived())) {
            // Graceful: the HTTP/2 handler sends GOAWAY and closes.
            closing = true;
            channel.close();
        }
    }

    private void openStream() {
        int index = started++;
        char route = random.nextInt(4) == 0 ? SoakBodies.CHUNKED : SoakBodies.DIRECT;
        if (index == faultStream) {
            char[] faults = {SoakBodies.CLOSE, SoakBodies.SHUTDOWN_OUTPUT, SoakBodies.GOAWAY};
            route = faults[sessionNumber % faults.length];
            if (route != SoakBodies.GOAWAY) {
                faulted = true;
            }
        }
        int size = pickSize();
        if (kind == Kind.PENDING || kind == Kind.ABORT_RST || kind == Kind.ABORT_HALF) {
            size = Math.max(size, 256 * 1024);
        }
        int seed = random.nextInt(Integer.MAX_VALUE);
        int resetAt = -1;
        if (kind == Kind.RESET && random.nextInt(5) < 2) {
            resetAt = random.nextInt(size + 1);
        }
        int id = connection.local().incrementAndGetNextStreamId();
        StreamRecord r = new StreamRecord(id, route, seed, size, resetAt);
        records.put(id, r);
        stats.requests.increment();
        active++;
        Http2Headers headers = new DefaultHttp2Headers().method("GET").scheme(tls == null ? "http" : "https")
                .authority(tls == null ? "soak" : SoakTls.HOST).path(SoakBodies.path(route, seed, size));
        handler.encoder().writeHeaders(ctx, id, headers, 0, true, ctx.newPromise()).addListener(f -> {
            if (!f.isSuccess() && r.outcome == null) {
                if (connection.goAwayReceived()) {
                    finish(r, Outcome.GOAWAY);
                } else if (channelClosed || faulted) {
                    finish(r, channelClosed && !faulted ? Outcome.LOST : Outcome.ABORTED);
                } else {
                    clientError("stream " + id + " HEADERS not written", f.cause());
                    finish(r, Outcome.LOST);
                }
            }
        });
        ctx.flush();
        if (resetAt == 0 && r.outcome == null) {
            resetByClient(r);
        }
    }

    private int pickSize() {
        int size;
        do {
            size = SIZES[random.nextInt(SIZES.length)];
        } while (size > kind.maxSize);
        return size;
    }

    @Override
    public void onSettingsRead(ChannelHandlerContext c, Http2Settings settings) {
        if (!settingsSeen) {
            settingsSeen = true;
            if (kind == Kind.GREEDY) {
                // Ignore the server's SETTINGS_MAX_CONCURRENT_STREAMS: the server must refuse the excess streams.
                connection.local().maxActiveStreams(Integer.MAX_VALUE);
                fill();
            }
        }
    }

    @Override
    public void onSettingsAckRead(ChannelHandlerContext c) throws Http2Exception {
        settingsAcked++;
        Http2LocalFlowController flow = connection.local().flowController();
        if (kind == Kind.FLIP && flow.initialWindowSize() > 0) {
            // The local flow controller does not announce bytes consumed while SETTINGS_INITIAL_WINDOW_SIZE was 0
            // when the window size is raised again (upstream's behaviour, the client's side): give them back now,
            // or stream and server would wait for each other.
            connection.forEachActiveStream(stream -> {
                flow.incrementWindowSize(stream, 0);
                return true;
            });
            c.flush();
        }
    }

    @Override
    public void onHeadersRead(ChannelHandlerContext c, int streamId, Http2Headers headers, int streamDependency,
                              short weight, boolean exclusive, int padding, boolean endOfStream) {
        // The decoder calls this one for every HEADERS frame.
        onHeadersRead(c, streamId, headers, padding, endOfStream);
    }

    @Override
    public void onHeadersRead(ChannelHandlerContext c, int streamId, Http2Headers headers, int padding,
                              boolean endOfStream) {
        StreamRecord r = records.get(streamId);
        if (r == null || r.outcome != null) {
            afterEnd(r, streamId, "HEADERS");
            return;
        }
        r.lastProgress = System.nanoTime();
        if (r.headers || !HttpResponseStatus.OK.codeAsText().contentEquals(headers.status())
                || headers.getInt("content-length", -1) != r.size) {
            stats.sample("stream " + streamId + ": unexpected response headers " + headers, null);
            finish(r, Outcome.CORRUPT);
            return;
        }
        r.headers = true;
        if (endOfStream) {
            complete(r);
        }
    }

    @Override
    public int onDataRead(ChannelHandlerContext c, int streamId, ByteBuf data, int padding, boolean endOfStream) {
        int length = data.readableBytes();
        if (receivedTotal == 0 && length > 0 && firstData != null) {
            firstData.run();
        }
        receivedTotal += length;
        StreamRecord r = records.get(streamId);
        if (r == null || r.outcome != null) {
            afterEnd(r, streamId, "DATA");
            return length + padding;
        }
        r.lastProgress = System.nanoTime();
        if (!r.headers || r.received + length > r.size) {
            stats.sample("stream " + streamId + ": DATA beyond the body, " + describe(r), null);
            finish(r, Outcome.CORRUPT);
            return length + padding;
        }
        r.crc.update(data.nioBuffer());
        r.received += length;
        stats.bodyBytesReceived.add(length);
        if (endOfStream) {
            complete(r);
        } else if (r.resetAt >= 0 && r.received >= r.resetAt) {
            resetByClient(r);
        }
        afterData();
        if (endOfStream || r.outcome != null) {
            return length + padding;
        }
        switch (kind) {
            case SLOW:
                consumeLater(streamId, length + padding, random.nextInt(20));
                return 0;
            case STORM:
                consumeLater(streamId, length + padding, -1);
                return 0;
            case PENDING:
                return 0;
            default:
                return length + padding;
        }
    }

    /** A frame for a stream that ended: fine after the client reset it, a corrupt connection otherwise. */
    private void afterEnd(StreamRecord r, int streamId, String frame) {
        if (r == null || r.outcome == Outcome.INTACT || r.outcome == Outcome.CORRUPT) {
            stats.framesAfterEnd.increment();
            stats.sample(frame + " for stream " + streamId + " after its end"
                    + (r == null ? " (never opened)" : ": " + describe(r) + ", outcome " + r.outcome), null);
        }
    }

    private void afterData() {
        if (kind == Kind.FLIP && flips < 4 && receivedTotal >= nextFlipAt) {
            flips++;
            nextFlipAt = receivedTotal + 256 * 1024;
            writeSettings(0);
            int restore = random.nextBoolean() ? kind.streamWindow : MIB;
            channel.eventLoop().schedule(() -> writeSettings(restore), 200 + random.nextInt(500),
                    TimeUnit.MILLISECONDS);
        }
        if (abortAt > 0 && receivedTotal >= abortAt && !faulted) {
            faulted = true;
            switch (kind) {
                case ABORT_RST:
                    channel.config().setOption(ChannelOption.SO_LINGER, 0);
                    channel.pipeline().firstContext().close();
                    break;
                case ABORT_HALF:
                    ((SocketChannel) channel).shutdownOutput();
                    break;
                case CLOSE_NOTIFY:
                    // TLS's own close while the server writes, then FIN under whatever the server still sends (in a
                    // task: not from the write's completion).
                    sslHandler.closeOutbound().addListener(f -> channel.eventLoop().execute(
                            () -> channel.pipeline().firstContext().close()));
                    break;
                default:
                    // TRUNCATED_RECORD: the PING's record leaves cut short (Wire), then the connection closes.
                    brokeTls(channel);
                    truncateNextWrite = true;
                    handler.encoder().writePing(ctx, false, random.nextLong(), ctx.newPromise());
                    ctx.flush();
                    break;
            }
        }
    }

    private void writeSettings(int initialWindowSize) {
        if (!channelClosed && !closing) {
            handler.encoder().writeSettings(ctx, new Http2Settings().initialWindowSize(initialWindowSize),
                    ctx.newPromise());
            ctx.flush();
        }
    }

    /** Gives {@code bytes} back after {@code delayMillis}, or byte by byte right away if negative. */
    private void consumeLater(int streamId, int bytes, int delayMillis) {
        Runnable task = () -> {
            Http2Stream stream = connection.stream(streamId);
            if (stream == null || channelClosed) {
                // Closed: the flow controller gave the stream's unconsumed bytes back to the connection.
                return;
            }
            Http2LocalFlowController flow = connection.local().flowController();
            try {
                int left = Math.min(bytes, flow.unconsumedBytes(stream));
                if (delayMillis < 0) {
                    for (int i = 0; i < left; i++) {
                        flow.consumeBytes(stream, 1);
                    }
                } else if (left > 0) {
                    flow.consumeBytes(stream, left);
                }
                ctx.flush();
            } catch (Http2Exception e) {
                clientError("consumeBytes on stream " + streamId, e);
            }
        };
        if (delayMillis <= 0) {
            channel.eventLoop().execute(task);
        } else {
            channel.eventLoop().schedule(task, delayMillis, TimeUnit.MILLISECONDS);
        }
    }

    private void schedulePause() {
        channel.eventLoop().schedule(() -> {
            if (channelClosed) {
                return;
            }
            long pauseMillis = 1000 + random.nextInt(2000);
            pausedUntil = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(pauseMillis);
            channel.config().setAutoRead(false);
            channel.eventLoop().schedule(() -> {
                channel.config().setAutoRead(true);
                schedulePause();
            }, pauseMillis, TimeUnit.MILLISECONDS);
        }, 500 + random.nextInt(1500), TimeUnit.MILLISECONDS);
    }

    @Override
    public void onRstStreamRead(ChannelHandlerContext c, int streamId, long errorCode) {
        StreamRecord r = records.get(streamId);
        if (r == null || r.outcome != null) {
            return;
        }
        if (errorCode == Http2Error.REFUSED_STREAM.code()) {
            finish(r, Outcome.REFUSED);
        } else {
            if (!faulted) {
                stats.sample("stream " + streamId + " reset by the server, error " + errorCode + ", "
                        + describe(r), null);
            }
            finish(r, faulted ? Outcome.ABORTED : Outcome.RESET_BY_SERVER);
        }
    }

    @Override
    public void onGoAwayRead(ChannelHandlerContext c, int lastStreamId, long errorCode, ByteBuf debugData) {
        if (errorCode != Http2Error.NO_ERROR.code() && !faulted) {
            stats.serverGoAwaysWithError.increment();
            stats.sample("GOAWAY from the server: error " + errorCode + ", "
                    + debugData.toString(StandardCharsets.UTF_8), null);
        }
    }

    private void resetByClient(StreamRecord r) {
        r.resetByClient = true;
        finish(r, Outcome.RESET_BY_CLIENT);
        handler.resetStream(ctx, r.id, Http2Error.CANCEL.code(), ctx.newPromise());
        ctx.flush();
    }

    private void complete(StreamRecord r) {
        if (r.received == r.size && r.crc.getValue() == r.expectedCrc) {
            finish(r, Outcome.INTACT);
        } else {
            stats.sample("stream " + r.id + " corrupt: " + describe(r) + ", crc " + r.crc.getValue() + " expected "
                    + r.expectedCrc, null);
            finish(r, Outcome.CORRUPT);
        }
    }

    private void streamClosed(int streamId) {
        StreamRecord r = records.get(streamId);
        if (r == null || r.outcome != null) {
            return;
        }
        if (connection.goAwayReceived() && streamId > connection.local().lastStreamKnownByPeer()) {
            finish(r, Outcome.GOAWAY);
        } else if (faulted) {
            finish(r, Outcome.ABORTED);
        } else {
            stats.sample("stream lost" + (channelClosed ? " with its connection" : "") + ": " + describe(r)
                    + (connection.goAwayReceived() ? ", GOAWAY received, last stream "
                    + connection.local().lastStreamKnownByPeer() : ", no GOAWAY received"), null);
            finish(r, Outcome.LOST);
        }
    }

    private void finish(StreamRecord r, Outcome outcome) {
        if (r.outcome != null) {
            return;
        }
        r.outcome = outcome == null ? Outcome.LOST : outcome;
        active--;
        if (outcome != null) {
            count(outcome);
        }
        if (!channelClosed && channel != null) {
            channel.eventLoop().execute(this::fill);
        }
    }

    private void count(Outcome outcome) {
        switch (outcome) {
            case INTACT: stats.intact.increment(); break;
            case CORRUPT: stats.corrupt.increment(); break;
            case RESET_BY_CLIENT: stats.resetByClient.increment(); break;
            case REFUSED: stats.refusedByServer.increment(); break;
            case RESET_BY_SERVER: stats.resetByServerOther.increment(); break;
            case GOAWAY: stats.refusedByGoAway.increment(); break;
            case ABORTED: stats.abortedByFault.increment(); break;
            default: stats.lost.increment(); break;
        }
    }

    private void checkStalls() {
        if (channelClosed || faulted && kind != Kind.FAULT) {
            // After the client broke its connection on purpose (RST, half-close, PENDING's closed windows) the
            // server owes it nothing but the close.
            return;
        }
        long now = System.nanoTime();
        Http2LocalFlowController flow = connection.local().flowController();
        boolean connectionOpen = channel.config().isAutoRead() && now >= pausedUntil
                && flow.windowSize(connection.connectionStream()) > 0;
        for (StreamRecord r : records.values()) {
            if (r.outcome != null) {
                continue;
            }
            Http2Stream stream = connection.stream(r.id);
            if (stream == null || !connectionOpen || flow.windowSize(stream) <= 0) {
                // The server may not send: no progress expected.
                r.lastProgress = now;
            } else if (now - r.lastProgress > STALL_NANOS && !r.stalled) {
                r.stalled = true;
                stats.stalled.increment();
                SoakServer.describeStall("client: " + describe(r) + ", stream window " + flow.windowSize(stream)
                        + ", connection window " + flow.windowSize(connection.connectionStream())
                        + ", SETTINGS acked " + settingsAcked + ", bytes read " + bytesRead + ", autoRead "
                        + channel.config().isAutoRead() + ", " + selectionKeyState(),
                        ((InetSocketAddress) channel.localAddress()).getPort(), r.id, stats);
            }
        }
    }

    private void ended() {
        stats.openClientConnections.decrementAndGet();
        channelClosed = true;
        if (stallChecker != null) {
            stallChecker.cancel(false);
        }
        for (StreamRecord r : records.values()) {
            if (r.outcome == null) {
                streamClosed(r.id);
            }
        }
        done.trySuccess(null);
    }

    /** The NIO selection key's interest and ready sets of the client channel, to tell a client that does not read. */
    private String selectionKeyState() {
        try {
            java.lang.reflect.Method m = io.netty.channel.nio.AbstractNioChannel.class
                    .getDeclaredMethod("selectionKey");
            m.setAccessible(true);
            java.nio.channels.SelectionKey key = (java.nio.channels.SelectionKey) m.invoke(channel);
            return "key valid " + key.isValid() + " interestOps " + key.interestOps() + " readyOps "
                    + key.readyOps();
        } catch (ReflectiveOperationException | RuntimeException e) {
            return "key: " + e;
        }
    }

    /** Tells the server, before the client breaks its TLS, that its connection's TLS failures are the client's. */
    private void brokeTls(Channel ch) {
        faulted = true;
        SoakServer.TLS_BROKEN_BY_PEER_PORT.add(((InetSocketAddress) ch.localAddress()).getPort());
    }

    /**
     * The client's end of the wire, first in its pipeline: counts the bytes read, marks the connection closed before
     * the HTTP/2 handler closes its streams, and breaks the TLS under the client's {@link SslHandler} where its
     * {@link Break} says.
     */
    private final class Wire extends ChannelDuplexHandler {
        @Override
        public void channelRead(ChannelHandlerContext c, Object msg) {
            if (msg instanceof ByteBuf) {
                bytesRead += ((ByteBuf) msg).readableBytes();
            }
            if (wireBroken) {
                ReferenceCountUtil.release(msg);
            } else if (tlsBreak == Break.ON_SERVER_FLIGHT) {
                // The server's first handshake bytes: never read, the connection ends here.
                ReferenceCountUtil.release(msg);
                abortHandshake(c);
            } else {
                c.fireChannelRead(msg);
            }
        }

        @Override
        public void write(ChannelHandlerContext c, Object msg, ChannelPromise promise) {
            if (tls == null) {
                c.write(msg, promise);
                return;
            }
            if (wireBroken || !(msg instanceof ByteBuf)) {
                ReferenceCountUtil.release(msg);
                promise.setFailure(new ClosedChannelException());
                return;
            }
            ByteBuf record = (ByteBuf) msg;
            wireWrites++;
            // The connection ends in a task of its own once the write completed: not from the write's completion,
            // whose outbound buffer is still being worked through (the close fails what is left in it).
            if (tlsBreak == Break.AFTER_CLIENT_HELLO && wireWrites == 1) {
                wireBroken = true;
                c.write(record, promise).addListener(f -> c.executor().execute(() -> abortHandshake(c)));
            } else if (tlsBreak == Break.TRUNCATED_CLIENT_HELLO && wireWrites == 1
                    || tlsBreak == Break.TRUNCATED_HANDSHAKE && wireWrites == 2 || truncateNextWrite) {
                // At least its last byte missing: the server holds an incomplete record when the connection ends.
                int keep = 1 + random.nextInt(record.readableBytes() - 1);
                ByteBuf part = record.retainedSlice(record.readerIndex(), keep);
                record.release();
                if (!faulted) {
                    brokeTls(c.channel());
                }
                wireBroken = true;
                c.write(part, promise).addListener(f -> c.executor().execute(c::close));
            } else {
                c.write(record, promise);
            }
        }

        /** {@link Kind#HANDSHAKE_ABORT}: ends the connection with RST or FIN. */
        private void abortHandshake(ChannelHandlerContext c) {
            if (faulted) {
                return;
            }
            brokeTls(c.channel());
            wireBroken = true;
            if (breakWithRst) {
                c.channel().config().setOption(ChannelOption.SO_LINGER, 0);
            }
            c.close();
        }

        @Override
        public void channelInactive(ChannelHandlerContext c) throws Exception {
            // Before the HTTP/2 handler closes the streams: they are lost with the connection.
            channelClosed = true;
            super.channelInactive(c);
        }
    }

    private String describe(StreamRecord r) {
        return stats.config + " " + kind + " session " + sessionNumber + " stream " + r.id + " route " + r.route
                + " size " + r.size + " received " + r.received + (r.headers ? "" : " (no headers)");
    }

    private void clientError(String what, Throwable cause) {
        stats.clientErrors.increment();
        stats.sample("client " + kind + " session " + sessionNumber + ": " + what, cause);
    }
}
