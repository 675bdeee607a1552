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
package io.netty.fork.checks;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The fork's linux-x86_64 jar carries upstream's JNI library of the base release, byte for byte (no patch changes the C
 * sources), which loads with the fork's io_uring classes and moves bytes over a real io_uring socket on loopback.
 */
class NativeIoUringTest {
    private static final String LIBRARY = "META-INF/native/libnetty_transport_native_io_uring42_x86_64.so";

    @Test
    void libraryIsUpstreamsByteForByte() throws Exception {
        String module = "transport-native-io_uring";
        try (ZipFile fork = new ZipFile(Fork.forkJar(module, "linux-x86_64").toFile());
             ZipFile upstream = new ZipFile(Fork.upstreamJar(module, "linux-x86_64").toFile())) {
            ZipEntry forkLibrary = fork.getEntry(LIBRARY);
            ZipEntry upstreamLibrary = upstream.getEntry(LIBRARY);
            assertThat(forkLibrary).as("%s in the fork's jar", LIBRARY).isNotNull();
            assertThat(upstreamLibrary).as("%s in upstream's jar", LIBRARY).isNotNull();
            try (InputStream a = fork.getInputStream(forkLibrary);
                 InputStream b = upstream.getInputStream(upstreamLibrary)) {
                assertThat(a.readAllBytes()).isEqualTo(b.readAllBytes());
            }
        }
    }

    @Test
    void forkLibraryAndClassesAreTheOnesOnTheClassPath() throws Exception {
        List<URL> libraries = Collections.list(getClass().getClassLoader().getResources(LIBRARY));
        assertThat(libraries).hasSize(1);
        assertThat(libraries.get(0).toString())
                .contains("/netty-transport-native-io_uring-" + Fork.VERSION + "-linux-x86_64.jar!");
        assertThat(IoUring.class.getProtectionDomain().getCodeSource().getLocation().toString())
                .contains(Fork.VERSION);
    }

    /**
     * The io_uring tests of the series assume what they need, as upstream's do (io_uring, zero-copy sends); the fork's
     * build requires it instead, so that none of them is skipped.
     */
    @Test
    void kernelHasWhatTheSeriesIoUringTestsAssume() throws Exception {
        IoUring.ensureAvailability();
        for (String feature : new String[] {"isSendZcSupported", "isSendmsgZcSupported"}) {
            Method method = IoUring.class.getDeclaredMethod(feature);
            method.setAccessible(true);
            assertThat((Boolean) method.invoke(null)).as("IoUring." + feature + "()").isTrue();
        }
    }

    @Test
    void ioUringChannelEchoesOverLoopback() throws Exception {
        IoUring.ensureAvailability();
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, IoUringIoHandler.newFactory());
        try {
            Channel server = new ServerBootstrap().group(group).channel(IoUringServerSocketChannel.class)
                    .childHandler(new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                            ctx.writeAndFlush(msg);
                        }
                    }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
            CompletableFuture<String> echoed = new CompletableFuture<>();
            StringBuilder received = new StringBuilder();
            String message = "hello over io_uring";
            Channel client = new Bootstrap().group(group).channel(IoUringSocketChannel.class)
                    .handler(new SimpleChannelInboundHandler<ByteBuf>() {
                        @Override
                        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf msg) {
                            received.append(msg.toString(StandardCharsets.US_ASCII));
                            if (received.length() >= message.length()) {
                                echoed.complete(received.toString());
                            }
                        }

                        @Override
                        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                            echoed.completeExceptionally(cause);
                        }
                    }).connect(server.localAddress()).sync().channel();
            assertThat(client).isInstanceOf(IoUringSocketChannel.class);
            client.writeAndFlush(Unpooled.copiedBuffer(message, StandardCharsets.US_ASCII)).sync();
            assertThat(echoed.get(30, TimeUnit.SECONDS)).isEqualTo(message);
            client.close().sync();
            server.close().sync();
        } finally {
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }
}
