package com.example.consumer;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.uring.IoUringChannelOption;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2Connection;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamChannelBootstrap;
import io.netty.handler.codec.http2.WholeChunkStreamByteDistributor;
import io.netty.util.Version;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a user of the fork gets from the BOM: the fork's behaviour, on io_uring, with the rest of Netty unchanged. */
class ForkConsumerTest {
    /** The artifacts of the patched modules (-Dfork.patchedModules, from the build: tools/series.sh build-props). */
    private static final Set<String> PATCHED = Arrays.stream(System.getProperty("fork.patchedModules").split(","))
            .map(m -> "netty-" + m).collect(Collectors.toSet());
    /** The series' identity in each patched module's jar. */
    private static final String SERIES = "META-INF/io.netty.h2uring-series.properties";

    @Test
    void patchedModulesAtForkVersionOthersAtBase() {
        Map<String, Version> versions = Version.identify();
        assertTrue(versions.keySet().containsAll(PATCHED), versions.keySet().toString());
        assertTrue(versions.containsKey("netty-handler"));
        for (Map.Entry<String, Version> e : versions.entrySet()) {
            String expected = PATCHED.contains(e.getKey()) ? System.getProperty("fork.version")
                    : System.getProperty("netty.base.version");
            assertEquals(expected, e.getValue().artifactVersion(), e.getKey());
        }
    }

    /**
     * Which series this process runs (README, "Using the fork"): the jar of each patched module names it in
     * META-INF/io.netty.h2uring-series.properties, here the series of this checkout (-Dfork.seriesSha256).
     */
    @Test
    void patchedJarsNameTheSeriesOfTheBuild() throws Exception {
        for (Class<?> c : Arrays.asList(Channel.class, Http2FrameCodecBuilder.class, IoUringIoHandler.class)) {
            URL jar = c.getProtectionDomain().getCodeSource().getLocation();
            Properties series = new Properties();
            try (InputStream in = URI.create("jar:" + jar + "!/" + SERIES).toURL().openStream()) {
                series.load(in);
            }
            assertEquals(System.getProperty("fork.version"), series.getProperty("version"), jar.toString());
            assertEquals(System.getProperty("fork.seriesSha256"), series.getProperty("series.sha256"), jar.toString());
            assertTrue(series.getProperty("patch.0001", "").contains(": "), jar + ": " + series);
        }
        // All of them, as a process lists them.
        List<URL> all = Collections.list(ForkConsumerTest.class.getClassLoader().getResources(SERIES));
        assertTrue(all.size() >= 3, all.toString());
    }

    @Test
    void defaultDistributorIsWholeChunk() throws Exception {
        DefaultHttp2RemoteFlowController controller =
                new DefaultHttp2RemoteFlowController(new DefaultHttp2Connection(true));
        Field field = DefaultHttp2RemoteFlowController.class.getDeclaredField("streamByteDistributor");
        field.setAccessible(true);
        assertEquals(WholeChunkStreamByteDistributor.class, field.get(controller).getClass());
    }

    @Test
    void h2cExchangeOverIoUring() throws Exception {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, IoUringIoHandler.newFactory());
        try {
            Channel server = new ServerBootstrap().group(group).channel(IoUringServerSocketChannel.class)
                    .childHandler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            ch.pipeline().addLast(Http2FrameCodecBuilder.forServer().build(),
                                    new Http2MultiplexHandler(new ChannelInitializer<Channel>() {
                                        @Override
                                        protected void initChannel(Channel stream) {
                                            stream.pipeline().addLast(new Responder());
                                        }
                                    }));
                        }
                    }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
            Channel client = new Bootstrap().group(group).channel(IoUringSocketChannel.class)
                    .handler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            ch.pipeline().addLast(Http2FrameCodecBuilder.forClient().build(),
                                    new Http2MultiplexHandler(new ChannelInboundHandlerAdapter()));
                        }
                    }).connect(server.localAddress()).sync().channel();

            CompletableFuture<String> body = new CompletableFuture<>();
            Http2StreamChannel stream = new Http2StreamChannelBootstrap(client)
                    .handler(new SimpleChannelInboundHandler<Http2DataFrame>() {
                        private final StringBuilder text = new StringBuilder();

                        @Override
                        protected void channelRead0(ChannelHandlerContext ctx, Http2DataFrame frame) {
                            text.append(frame.content().toString(StandardCharsets.UTF_8));
                            if (frame.isEndStream()) {
                                body.complete(text.toString());
                            }
                        }
                    }).open().sync().getNow();
            stream.writeAndFlush(new DefaultHttp2HeadersFrame(new DefaultHttp2Headers().method("GET").path("/")
                    .scheme("http").authority("localhost"), true));
            assertEquals("hello from the fork", body.get(30, TimeUnit.SECONDS));
            client.close().sync();
            server.close().sync();
        } finally {
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }

    /**
     * The fork's io_uring defaults: water marks of 64/128 KiB (0007), so 100 KiB pending leave a connection
     * writable; the uncounted flushed limit (0002) is opt-in, 0 by default.
     */
    @Test
    void ioUringDefaultWaterMarksAndLimit() throws Exception {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, IoUringIoHandler.newFactory());
        try {
            Channel server = new ServerBootstrap().group(group).channel(IoUringServerSocketChannel.class)
                    .childHandler(new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                            io.netty.util.ReferenceCountUtil.release(msg);
                        }
                    }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
            Channel client = new Bootstrap().group(group).channel(IoUringSocketChannel.class)
                    .handler(new ChannelInboundHandlerAdapter())
                    .connect(server.localAddress()).sync().channel();
            boolean writable = client.eventLoop().submit(() -> {
                int size = 100 * 1024;
                client.write(Unpooled.directBuffer(size).writeZero(size));
                boolean at100k = client.isWritable();
                client.write(Unpooled.directBuffer(size).writeZero(size));
                return at100k && !client.isWritable()
                        && client.config().getWriteBufferHighWaterMark() == 128 * 1024
                        && client.config().getWriteBufferLowWaterMark() == 64 * 1024
                        && client.config().getOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT) == 0;
            }).get(30, TimeUnit.SECONDS);
            assertTrue(writable, "writable with 100 KiB pending, unwritable with 200 KiB; marks 64/128 KiB, limit 0");
            client.close().sync();
            server.close().sync();
        } finally {
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }

    private static final class Responder extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof Http2HeadersFrame && ((Http2HeadersFrame) msg).isEndStream()) {
                ctx.write(new DefaultHttp2HeadersFrame(new DefaultHttp2Headers().status("200")));
                ByteBuf content = Unpooled.copiedBuffer("hello from the fork", StandardCharsets.UTF_8);
                ctx.writeAndFlush(new DefaultHttp2DataFrame(content, true));
            }
            io.netty.util.ReferenceCountUtil.release(msg);
        }
    }
}
