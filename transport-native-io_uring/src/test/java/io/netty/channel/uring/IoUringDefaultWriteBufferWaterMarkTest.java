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
import io.netty.channel.ChannelConfig;
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
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * io_uring stream channels default to twice {@link WriteBufferWaterMark#DEFAULT}'s water marks (64/128 KiB); the
 * high water mark {@code -Dio.netty.iouring.defaultWriteBufferHighWaterMark} gives replaces it (the low one half of
 * it, at least 2); marks set by the application win, a single mark applies to the current marks except a high one
 * that only {@link WriteBufferWaterMark#DEFAULT} accepts (it applies to that, as in 4.2.18), and datagram and server
 * channels keep {@link WriteBufferWaterMark#DEFAULT}. Run without the property.
 */
public class IoUringDefaultWriteBufferWaterMarkTest {
    /** ChannelOutboundBuffer's per-message overhead, as the JVM is configured. */
    private static final int OVERHEAD = Integer.getInteger("io.netty.transport.outboundBufferEntrySizeOverhead", 96);
    private static final int HIGH = 128 * 1024;

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
    public void aSingleMarkAppliesToTheCurrentMarksOrWhereOnlyNettysDefaultAcceptsItToThat() {
        assertSingleMarks(new IoUringSocketChannel());
        assertSingleMarks(new IoUringDomainSocketChannel());
    }

    @SuppressWarnings("deprecation")
    private static void assertSingleMarks(Channel ch) {
        try {
            ChannelConfig config = ch.config();
            WriteBufferWaterMark ioUringDefault = config.getWriteBufferWaterMark();
            // Setting the current values changes nothing (a copy of getOptions() is idempotent).
            assertTrue(config.setOption(ChannelOption.WRITE_BUFFER_HIGH_WATER_MARK, HIGH));
            assertTrue(config.setOption(ChannelOption.WRITE_BUFFER_LOW_WATER_MARK, HIGH / 2));
            assertMarks(HIGH / 2, HIGH, config.getWriteBufferWaterMark());
            // A low water mark alone applies to the current marks.
            assertTrue(config.setOption(ChannelOption.WRITE_BUFFER_LOW_WATER_MARK, 16 * 1024));
            assertMarks(16 * 1024, HIGH, config.getWriteBufferWaterMark());
            // A high water mark below the default's low one that WriteBufferWaterMark.DEFAULT accepts: 4.2.18's
            // 32/48 KiB (refused against 64/128 KiB).
            config.setWriteBufferWaterMark(ioUringDefault);
            assertTrue(config.setOption(ChannelOption.WRITE_BUFFER_HIGH_WATER_MARK, 48 * 1024));
            assertMarks(32 * 1024, 48 * 1024, config.getWriteBufferWaterMark());
            // Below WriteBufferWaterMark.DEFAULT's low one: refused, as by 4.2.18, and the marks stay.
            config.setWriteBufferWaterMark(ioUringDefault);
            assertThrows(IllegalArgumentException.class, () -> config.setWriteBufferHighWaterMark(16 * 1024));
            assertSame(ioUringDefault, config.getWriteBufferWaterMark());
            // Marks equal to the default but set by the application are the application's: refused as anywhere.
            config.setWriteBufferWaterMark(new WriteBufferWaterMark(HIGH / 2, HIGH));
            assertThrows(IllegalArgumentException.class, () -> config.setWriteBufferHighWaterMark(48 * 1024));
            assertMarks(HIGH / 2, HIGH, config.getWriteBufferWaterMark());
        } finally {
            ch.unsafe().closeForcibly();
        }
    }

    @Test
    public void thePropertyValueGivesTheHighWaterMarkAndAnInvalidOneIsIgnored() {
        assertMarks(32 * 1024, 64 * 1024, IoUringSocketChannelConfig.defaultWriteBufferWaterMark("65536"));
        assertMarks(500, 1001, IoUringSocketChannelConfig.defaultWriteBufferWaterMark(" 1001 "));
        assertMarks(1, 2, IoUringSocketChannelConfig.defaultWriteBufferWaterMark("2"));
        assertMarks(64 * 1024, 128 * 1024, IoUringSocketChannelConfig.defaultWriteBufferWaterMark(null));
        for (String invalid : new String[] { "", "0", "1", "-1", "64k", "4294967296" }) {
            assertMarks(64 * 1024, 128 * 1024, IoUringSocketChannelConfig.defaultWriteBufferWaterMark(invalid));
        }
    }

    @Test
    public void anAcceptedChannelTakesTheDefaultUnlessAChildOptionSetsMarks() throws Exception {
        assertMarks(HIGH / 2, HIGH, acceptedChannelMarks(null, null));
        WriteBufferWaterMark set = new WriteBufferWaterMark(8 * 1024, 16 * 1024);
        assertMarks(set.low(), set.high(), acceptedChannelMarks(ChannelOption.WRITE_BUFFER_WATER_MARK, set));
        assertMarks(32 * 1024, 64 * 1024,
                acceptedChannelMarks(ChannelOption.WRITE_BUFFER_WATER_MARK, WriteBufferWaterMark.DEFAULT));
    }

    /**
     * What an application sees: pending writes up to the default high water mark leave a connection writable, one
     * byte more makes it unwritable (with {@link WriteBufferWaterMark#DEFAULT} the first write already would).
     */
    @Test
    public void aConnectionIsWritableUpToTheDefaultHighWaterMark() throws Exception {
        ServerBootstrap sb = new ServerBootstrap().childHandler(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                ReferenceCountUtil.release(msg);
            }
        });
        connected(sb, client -> client.eventLoop().submit(() -> {
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
        }).get(30, TimeUnit.SECONDS));
    }

    /** The marks of an accepted channel, with {@code option} set to {@code value} as a child option unless null. */
    private static <T> WriteBufferWaterMark acceptedChannelMarks(ChannelOption<T> option, T value) throws Exception {
        CompletableFuture<WriteBufferWaterMark> marks = new CompletableFuture<>();
        ServerBootstrap sb = new ServerBootstrap().childHandler(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                marks.complete(ctx.channel().config().getWriteBufferWaterMark());
                ctx.close();
            }
        });
        if (option != null) {
            sb.childOption(option, value);
        }
        return connected(sb, client -> marks.get(30, TimeUnit.SECONDS));
    }

    /** What a test does with a connected client. */
    private interface ClientTest<T> {
        T run(Channel client) throws Exception;
    }

    /** Binds {@code sb} on io_uring, connects an io_uring client to it, runs {@code test}, then closes both. */
    private static <T> T connected(ServerBootstrap sb, ClientTest<T> test) throws Exception {
        Channel server = sb.group(group).channel(IoUringServerSocketChannel.class)
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        try {
            Channel client = new Bootstrap().group(group).channel(IoUringSocketChannel.class)
                    .handler(new ChannelInboundHandlerAdapter())
                    .connect(server.localAddress()).sync().channel();
            try {
                return test.run(client);
            } finally {
                client.close().sync();
            }
        } finally {
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
