package com.example.reactornetty;

import io.netty.handler.codec.http.HttpResponseStatus;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.HttpProtocol;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;
import reactor.netty.resources.LoopResources;

/** One h2c connection (prior knowledge) of Reactor Netty's client to a {@link BytesServer}. */
public final class BytesClient implements AutoCloseable {
    private final ConnectionProvider provider;
    private final HttpClient client;

    /** With {@code counts}, every frame the server sends on the connection is counted. */
    public BytesClient(String name, LoopResources loops, DisposableServer server, FrameCounter.Counts counts) {
        provider = ConnectionProvider.create(name, 1);
        HttpClient c = HttpClient.create(provider)
                .protocol(HttpProtocol.H2C)
                .runOn(loops)
                .remoteAddress(server::address);
        if (counts != null) {
            c = c.doOnChannelInit((observer, channel, address) ->
                    channel.pipeline().addFirst(new FrameCounter(counts)));
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

    @Override
    public void close() {
        provider.disposeLater().block();
    }
}
