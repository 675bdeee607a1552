package com.example.reactornetty;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http2.DefaultHttp2WindowUpdateFrame;
import io.netty.handler.codec.http2.Http2CodecUtil;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.HttpProtocol;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;
import reactor.netty.resources.LoopResources;

import java.util.function.LongConsumer;

/** One h2c connection (prior knowledge) of Reactor Netty's client to a {@link BytesServer}. */
public final class BytesClient implements AutoCloseable {
    private final ConnectionProvider provider;
    private final HttpClient client;

    /** With {@code counts}, every frame the server sends on the connection is counted. */
    public BytesClient(String name, LoopResources loops, DisposableServer server, FrameCounter.Counts counts) {
        this(name, loops, server, counts, 0);
    }

    /**
     * With {@code window} > 0, the client's HTTP/2 flow-control windows, of each stream and of the connection, are
     * {@code window} bytes instead of HTTP/2's initial 64 KiB (a browser's are several MiB): the server may then have
     * more bytes in flight than its water marks, so its own flow controller decides who sends.
     */
    public BytesClient(String name, LoopResources loops, DisposableServer server, FrameCounter.Counts counts,
                       int window) {
        provider = ConnectionProvider.create(name, 1);
        HttpClient c = HttpClient.create(provider)
                .protocol(HttpProtocol.H2C)
                .runOn(loops)
                .remoteAddress(server::address);
        if (counts != null) {
            c = c.doOnChannelInit((observer, channel, address) ->
                    channel.pipeline().addFirst(new FrameCounter(counts)));
        }
        if (window > 0) {
            // Reactor Netty sets the streams' window (SETTINGS); the connection's is raised by a WINDOW_UPDATE, which
            // Netty's Http2FrameCodec sends when a window update frame without a stream is written to the connection.
            c = c.http2Settings(settings -> settings.initialWindowSize(window))
                    .doOnChannelInit((observer, channel, address) ->
                            channel.pipeline().addFirst(new ChannelInboundHandlerAdapter() {
                                @Override
                                public void channelActive(ChannelHandlerContext ctx) {
                                    ctx.fireChannelActive();
                                    ctx.channel().writeAndFlush(new DefaultHttp2WindowUpdateFrame(
                                            window - Http2CodecUtil.DEFAULT_WINDOW_SIZE));
                                    ctx.pipeline().remove(this);
                                }
                            }));
        }
        client = c;
    }

    /** The body of {@code GET /bytes/seed}; an error unless the status is 200. */
    public Mono<byte[]> get(int seed) {
        return client.get().uri("/bytes/" + seed).responseSingle((response, body) -> {
            if (!HttpResponseStatus.OK.equals(response.status())) {
                return Mono.error(new IllegalStateException("/bytes/" + seed + ": " + response.status()));
            }
            return body.asByteArray();
        });
    }

    /**
     * Reads the body of {@code GET path} as it arrives, checks each part against {@link BytesServer#pattern(int, int)
     * pattern(seed % 64, i)} without keeping it, and gives its length; an error unless the status is 200 or at the
     * first wrong byte. {@code progress} gets the size of each part as it is read.
     */
    public Mono<Long> check(String path, int seed, LongConsumer progress) {
        return client.get().uri(path).response((response, body) -> {
            if (!HttpResponseStatus.OK.equals(response.status())) {
                return Mono.error(new IllegalStateException(path + ": " + response.status()));
            }
            byte[] part = new byte[BytesServer.CHUNK];
            // Reactor Netty releases each buffer once handled: read it here, in one copy (every access to a buffer
            // is recorded under paranoid leak detection).
            return body.reduce(0L, (offset, buf) -> {
                int n = buf.readableBytes();
                byte[] bytes = n <= part.length ? part : new byte[n];
                buf.getBytes(buf.readerIndex(), bytes, 0, n);
                long wrong = BytesServer.firstMismatch(bytes, n, seed, offset);
                if (wrong >= 0) {
                    throw new IllegalStateException(path + ": wrong byte at " + wrong);
                }
                progress.accept(n);
                return offset + n;
            });
        }).single();
    }

    @Override
    public void close() {
        provider.disposeLater().block();
    }
}
