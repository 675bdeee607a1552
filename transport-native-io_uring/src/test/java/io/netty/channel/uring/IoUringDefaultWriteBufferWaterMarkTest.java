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
package io.netty.channel.uring;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * io_uring stream channels default to twice {@link WriteBufferWaterMark#DEFAULT}'s water marks (64/128 KiB), or to
 * the high water mark {@code -Dio.netty.iouring.defaultWriteBufferHighWaterMark} gives (the low one half of it);
 * options set by the application win, and datagram and server channels keep {@link WriteBufferWaterMark#DEFAULT}.
 */
public class IoUringDefaultWriteBufferWaterMarkTest {
    /** ChannelOutboundBuffer's per-message overhead, as the JVM is configured. */
    private static final int OVERHEAD = Integer.getInteger("io.netty.transport.outboundBufferEntrySizeOverhead", 96);
    /** The default high water mark of this JVM: the property's, else 128 KiB. */
    private static final int HIGH = Integer.getInteger(IoUringSocketChannelConfig.DEFAULT_HIGH_WATER_MARK_PROPERTY,
            128 * 1024);

    private static EventLoopGroup group;

    @BeforeAll
    public static void setUp() {
        assumeTrue(IoUring.isAvailable(), "io_uring is not available");
        group = new MultiThreadIoEventLoopGroup(2, IoUringIoHandler.newFactory());
    }

    @AfterAll
    public static void tearDown() throws Exception {
        if (group != null) {
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }

    @Test
    public void streamChannelsDefaultToTwiceTheDefaultWaterMarks() {
        assertMarks(HIGH / 2, HIGH, new IoUringSocketChannel());
        assertMarks(HIGH / 2, HIGH, new IoUringDomainSocketChannel());
        assertMarks(32 * 1024, 64 * 1024, new IoUringDatagramChannel());
        assertMarks(32 * 1024, 64 * 1024, new IoUringServerSocketChannel());
    }

    @Test
    public void thePropertyValueGivesTheHighWaterMarkAndAnInvalidOneIsIgnored() {
        assertMarks(32 * 1024, 64 * 1024, IoUringSocketChannelConfig.defaultWriteBufferWaterMark("65536"));
        assertMarks(500, 1001, IoUringSocketChannelConfig.defaultWriteBufferWaterMark(" 1001 "));
        assertMarks(64 * 1024, 128 * 1024, IoUringSocketChannelConfig.defaultWriteBufferWaterMark(null));
        for (String invalid : new String[] { "", "0", "-1", "64k", "4294967296" }) {
            assertMarks(64 * 1024, 128 * 1024, IoUringSocketChannelConfig.defaultWriteBufferWaterMark(invalid));
        }
    }

    @Test
    public void anAcceptedChannelTakesTheDefaultUnlessAChildOptionSetsMarks() throws Exception {
        assertMarks(HIGH / 2, HIGH, acceptedChannelMarks(null));
        WriteBufferWaterMark set = new WriteBufferWaterMark(8 * 1024, 16 * 1024);
        assertMarks(set.low(), set.high(), acceptedChannelMarks(set));
        assertMarks(32 * 1024, 64 * 1024, acceptedChannelMarks(WriteBufferWaterMark.DEFAULT));
    }

    /**
     * What an application sees: pending writes up to the default high water mark leave a connection writable, one
     * byte more makes it unwritable (with {@link WriteBufferWaterMark#DEFAULT} the first write already would).
     */
    @Test
    public void aConnectionIsWritableUpToTheDefaultHighWaterMark() throws Exception {
        Channel server = new ServerBootstrap().group(group).channel(IoUringServerSocketChannel.class)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        ReferenceCountUtil.release(msg);
                    }
                }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        Channel client = new Bootstrap().group(group).channel(IoUringSocketChannel.class)
                .handler(new ChannelInboundHandlerAdapter())
                .connect(server.localAddress()).sync().channel();
        try {
            client.eventLoop().submit(() -> {
                // Not flushed: all of it counts, whatever the transport has written.
                // Half the default high water mark and one byte: over WriteBufferWaterMark.DEFAULT's 64 KiB.
                int first = HIGH / 2 + 1;
                client.write(Unpooled.buffer(first).writeZero(first));
                assertTrue(client.isWritable(), "writable with " + first + " bytes pending");
                assertEquals(HIGH - first - OVERHEAD + 1, client.bytesBeforeUnwritable());
                int second = (int) client.bytesBeforeUnwritable() - OVERHEAD - 1;
                client.write(Unpooled.buffer(second).writeZero(second));
                assertTrue(client.isWritable(), "writable at the high water mark");
                assertEquals(1, client.bytesBeforeUnwritable());
                client.write(Unpooled.buffer(1).writeZero(1));
                assertFalse(client.isWritable(), "unwritable above the high water mark");
                return null;
            }).get(30, TimeUnit.SECONDS);
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    private static WriteBufferWaterMark acceptedChannelMarks(WriteBufferWaterMark childMarks) throws Exception {
        CompletableFuture<WriteBufferWaterMark> marks = new CompletableFuture<>();
        ServerBootstrap sb = new ServerBootstrap().group(group).channel(IoUringServerSocketChannel.class)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelActive(ChannelHandlerContext ctx) {
                        marks.complete(ctx.channel().config().getWriteBufferWaterMark());
                        ctx.close();
                    }
                });
        if (childMarks != null) {
            sb.childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, childMarks);
        }
        Channel server = sb.bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        Channel client = new Bootstrap().group(group).channel(IoUringSocketChannel.class)
                .handler(new ChannelInboundHandlerAdapter())
                .connect(server.localAddress()).sync().channel();
        try {
            return marks.get(30, TimeUnit.SECONDS);
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /** Checks the marks of a new, unregistered channel, and closes it. */
    private static void assertMarks(int low, int high, Channel ch) {
        try {
            assertMarks(low, high, ch.config().getWriteBufferWaterMark());
        } finally {
            ch.unsafe().closeForcibly();
        }
    }

    private static void assertMarks(int low, int high, WriteBufferWaterMark marks) {
        assertEquals(low, marks.low(), "low water mark of " + marks);
        assertEquals(high, marks.high(), "high water mark of " + marks);
    }
}
