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
package io.netty.microbench.channel.uring;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringChannelOption;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.util.internal.PlatformDependent;
import io.netty.util.internal.SystemPropertyUtil;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * How much an io_uring server holds for peers that stop reading: with {@link WriteBufferWaterMark#DEFAULT} and
 * {@link IoUringChannelOption#IO_URING_UNCOUNTED_FLUSHED_LIMIT} {@code 0} (every pending message counts against the
 * water marks until its write completes), with neither option set (io_uring's default water marks and limit, or
 * those {@code -Dio.netty.iouring.defaultWriteBufferHighWaterMark} and {@code -Dio.netty.iouring.uncountedFlushedLimit}
 * give), and with {@link WriteBufferWaterMark#DEFAULT} and each limit of {@code --limits} (comma separated byte
 * counts, for example {@code 65536,131072,1048576}). Opens {@code --connections} connections on
 * 127.0.0.1 whose NIO clients never read ({@code AUTO_READ=false}, {@code SO_RCVBUF} {@code --rcvbuf}); each server
 * child (io_uring, one event loop, {@code SO_SNDBUF} {@code --sndbuf}) writes and flushes
 * {@code --message}-byte direct buffers while it is writable, in {@code channelActive} and
 * {@code channelWritabilityChanged}. Once every child is unwritable and nothing was written for a second, it reads
 * each child's {@link ChannelOutboundBuffer#totalPendingWriteBytes()} and limit on its event loop and the direct
 * memory in use, compares them with the bound high water mark + limit + message + the entry overhead
 * ({@code -Dio.netty.transport.outboundBufferEntrySizeOverhead}, 96 by default) per channel, and prints a Markdown
 * table with one row per configuration, all measured in this JVM. Exits with status 1 if a configuration does not
 * settle within {@code --timeout} seconds, or a channel exceeds the bound, or memory is not released at the end. Both
 * ends of every connection are in this JVM: {@code ulimit -n} must allow about 2 x {@code --connections} + 100 open
 * files.
 */
public final class IoUringWriteMemoryBound {
    // As ChannelOutboundBuffer reads it.
    private static final int ENTRY_OVERHEAD =
            SystemPropertyUtil.getInt("io.netty.transport.outboundBufferEntrySizeOverhead", 96);
    private static final long UNKNOWN = Long.MIN_VALUE;
    private static final UnpooledByteBufAllocator MESSAGES = UnpooledByteBufAllocator.DEFAULT;

    private int connections = 500;
    private int message = 16 * 1024;
    private int sndbuf = 16 * 1024;
    private int rcvbuf = 4 * 1024;
    private int timeoutSeconds = 60;
    private final List<Integer> limits = new ArrayList<Integer>();

    private IoUringWriteMemoryBound() {
    }

    public static void main(String[] args) throws Exception {
        IoUringWriteMemoryBound bound = new IoUringWriteMemoryBound();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (i + 1 == args.length) {
                usage("missing value of " + arg);
            }
            String text = args[++i];
            if ("--limits".equals(arg)) {
                for (String limit : text.split(",")) {
                    int value = Integer.parseInt(limit.trim());
                    if (value < 0) {
                        usage("negative limit " + value);
                    }
                    bound.limits.add(value);
                }
                continue;
            }
            int value = Integer.parseInt(text);
            if ("--connections".equals(arg)) {
                bound.connections = value;
            } else if ("--message".equals(arg)) {
                bound.message = value;
            } else if ("--sndbuf".equals(arg)) {
                bound.sndbuf = value;
            } else if ("--rcvbuf".equals(arg)) {
                bound.rcvbuf = value;
            } else if ("--timeout".equals(arg)) {
                bound.timeoutSeconds = value;
            } else {
                usage("unknown argument " + arg);
            }
        }
        IoUring.ensureAvailability();
        System.exit(bound.run() ? 0 : 1);
    }

    private static void usage(String problem) {
        System.err.println(problem);
        System.err.println("usage: IoUringWriteMemoryBound [--connections 500] [--message 16384] [--sndbuf 16384] " +
                "[--rcvbuf 4096] [--timeout 60] [--limits 131072,262144,1048576]");
        System.exit(2);
    }

    /** One configuration of the server's children: the option's value ({@code null}: not set, its default). */
    private static final class Config {
        final String label;
        final Integer limit;
        final WriteBufferWaterMark waterMark;

        Config(String label, Integer limit, WriteBufferWaterMark waterMark) {
            this.label = label;
            this.limit = limit;
            this.waterMark = waterMark;
        }
    }

    private boolean run() throws Exception {
        List<Config> configs = new ArrayList<Config>();
        configs.add(new Config("32/64 KiB, limit 0 (4.2.18's)", 0, WriteBufferWaterMark.DEFAULT));
        configs.add(new Config("not set (io_uring's defaults)", null, null));
        for (Integer limit : limits) {
            configs.add(new Config("32/64 KiB, limit " + limit, limit, WriteBufferWaterMark.DEFAULT));
        }
        List<Result> results = new ArrayList<Result>();
        long messagesBefore = messagesMemory();
        for (Config config : configs) {
            results.add(measure(config));
        }
        boolean ok = true;
        System.out.println();
        System.out.printf(Locale.ROOT, "io_uring server, %d connections on 127.0.0.1 whose clients do not read " +
                "(NIO, SO_RCVBUF %d), %d-byte messages, server SO_SNDBUF %d; bound per channel " +
                "high + limit + %d + %d%n%n", connections, rcvbuf, message, sndbuf, message, ENTRY_OVERHEAD);
        System.out.println("| water marks, limit | marks, limit in effect | connections | " +
                "max pending/channel | " +
                "mean pending/channel | bound/channel | total pending | bound x N | " +
                "messages' direct memory | Netty direct memory (PlatformDependent.usedDirectMemory()) | " +
                ByteBufAllocator.DEFAULT.getClass().getSimpleName() + " direct memory | channels within bound |");
        System.out.println("|---|---|---|---|---|---|---|---|---|---|---|---|");
        for (Result r : results) {
            long totalBound = r.perChannelBound * r.channels;
            boolean within = r.max <= r.perChannelBound && r.total <= totalBound;
            ok &= within && r.channels == connections;
            System.out.printf(Locale.ROOT,
                    "| %s | %d/%d, %d | %d | %d | %.0f | %d | %d (%s) | %d (%s) | %s | %s | %s | %s |%n",
                    r.config.label, r.waterMark.low(), r.waterMark.high(), r.limit, r.channels, r.max,
                    (double) r.total / r.channels, r.perChannelBound,
                    r.total, mib(r.total), totalBound, mib(totalBound), delta(r.messagesMemory),
                    delta(r.nettyDirectMemory), delta(r.allocatorMemory),
                    (r.channels - r.overBound) + "/" + r.channels + (within ? " yes" : " NO"));
        }
        System.out.println();
        long leaked = messagesMemory() - messagesBefore;
        if (leaked != 0) {
            System.out.println("FAILED: " + leaked + " bytes of messages still allocated after closing");
            ok = false;
        } else {
            System.out.println("All channels closed; every message released.");
        }
        return ok;
    }

    private Result measure(Config config) throws Exception {
        EventLoopGroup serverGroup = new MultiThreadIoEventLoopGroup(1, IoUringIoHandler.newFactory());
        EventLoopGroup clientGroup = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        Writer writer = new Writer(message);
        List<Channel> clients = new ArrayList<Channel>();
        Channel server = null;
        try {
            long messagesBefore = messagesMemory();
            long nettyBefore = PlatformDependent.usedDirectMemory();
            long allocatorBefore = allocatorMemory();
            ServerBootstrap serverBootstrap = new ServerBootstrap().group(serverGroup)
                    .channel(IoUringServerSocketChannel.class)
                    .childOption(ChannelOption.SO_SNDBUF, sndbuf)
                    .childOption(ChannelOption.AUTO_READ, false)
                    .childHandler(writer);
            if (config.limit != null) {
                serverBootstrap.childOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT, config.limit);
            }
            if (config.waterMark != null) {
                serverBootstrap.childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, config.waterMark);
            }
            server = serverBootstrap.bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
            Bootstrap bootstrap = new Bootstrap().group(clientGroup).channel(NioSocketChannel.class)
                    .option(ChannelOption.AUTO_READ, false)
                    .option(ChannelOption.SO_RCVBUF, rcvbuf)
                    .handler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            // Never reads.
                        }
                    });
            List<ChannelFuture> connects = new ArrayList<ChannelFuture>();
            for (int i = 0; i < connections; i++) {
                connects.add(bootstrap.connect(server.localAddress()));
            }
            for (ChannelFuture connect : connects) {
                clients.add(connect.sync().channel());
            }

            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
            long lastWritten = -1;
            long quietSince = System.nanoTime();
            for (;;) {
                Thread.sleep(100);
                long written = writer.written.get();
                boolean allUnwritable = writer.children.size() == connections;
                for (Channel child : writer.children) {
                    allUnwritable &= !child.isWritable();
                }
                long now = System.nanoTime();
                if (written != lastWritten || !allUnwritable) {
                    lastWritten = written;
                    quietSince = now;
                } else if (now - quietSince >= TimeUnit.SECONDS.toNanos(1)) {
                    break;
                }
                if (now - deadline > 0) {
                    int writable = 0;
                    for (Channel child : writer.children) {
                        writable += child.isWritable() ? 1 : 0;
                    }
                    throw new IllegalStateException(config.label +
                            ": did not settle in " + timeoutSeconds + " s: " + writer.children.size() + '/' +
                            connections + " children, " + writable + " writable, " + written + " bytes written");
                }
            }

            // The water marks and limit in effect (defaults: io_uring's, or the system properties').
            Channel first = writer.children.peek();
            int limit = first.config().getOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT);
            WriteBufferWaterMark waterMark = first.config().getWriteBufferWaterMark();
            if (config.limit != null && limit != config.limit) {
                throw new IllegalStateException(config.label + ": the children's limit is " + limit);
            }
            Result result = new Result(config, limit, waterMark, message);
            for (final Channel child : writer.children) {
                long pending = child.eventLoop().submit(() -> {
                    ChannelOutboundBuffer buffer = child.unsafe().outboundBuffer();
                    return buffer == null ? -1L : buffer.totalPendingWriteBytes();
                }).get();
                if (pending < 0) {
                    throw new IllegalStateException("child closed while measuring: " + child);
                }
                if (child.config().getOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT) != limit
                        || child.config().getWriteBufferHighWaterMark() != waterMark.high()) {
                    throw new IllegalStateException(config.label + ": children with different limits or marks");
                }
                result.channels++;
                result.total += pending;
                result.max = Math.max(result.max, pending);
                if (pending > result.perChannelBound) {
                    result.overBound++;
                }
            }
            result.messagesMemory = messagesMemory() - messagesBefore;
            result.nettyDirectMemory = nettyBefore < 0 ? UNKNOWN : PlatformDependent.usedDirectMemory() - nettyBefore;
            result.allocatorMemory = allocatorBefore < 0 ? UNKNOWN : allocatorMemory() - allocatorBefore;
            System.err.printf(Locale.ROOT, "%s: settled, %d bytes written%n", config.label,
                    writer.written.get());
            return result;
        } finally {
            for (Channel client : clients) {
                client.close();
            }
            for (Channel child : writer.children) {
                child.close().awaitUninterruptibly();
            }
            if (server != null) {
                server.close().awaitUninterruptibly();
            }
            clientGroup.shutdownGracefully(0, 5, TimeUnit.SECONDS).awaitUninterruptibly();
            serverGroup.shutdownGracefully(0, 5, TimeUnit.SECONDS).awaitUninterruptibly();
        }
    }

    private static long messagesMemory() {
        return MESSAGES.metric().usedDirectMemory();
    }

    private static long allocatorMemory() {
        ByteBufAllocator allocator = ByteBufAllocator.DEFAULT;
        if (allocator instanceof ByteBufAllocatorMetricProvider) {
            return ((ByteBufAllocatorMetricProvider) allocator).metric().usedDirectMemory();
        }
        return -1;
    }

    private static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.1f MiB", bytes / (1024.0 * 1024));
    }

    private static String delta(long bytes) {
        return bytes == UNKNOWN ? "n/a" : bytes + " (" + mib(bytes) + ")";
    }

    private static final class Result {
        final Config config;
        final int limit;
        final WriteBufferWaterMark waterMark;
        final long perChannelBound;
        int channels;
        int overBound;
        long total;
        long max;
        long messagesMemory;
        long nettyDirectMemory;
        long allocatorMemory;

        Result(Config config, int limit, WriteBufferWaterMark waterMark, int message) {
            this.config = config;
            this.limit = limit;
            this.waterMark = waterMark;
            perChannelBound = (long) waterMark.high() + limit + message + ENTRY_OVERHEAD;
        }
    }

    /** Each server child writes while it is writable; the messages come from {@link #MESSAGES}. */
    @ChannelHandler.Sharable
    private static final class Writer extends ChannelInboundHandlerAdapter {
        final Queue<Channel> children = new ConcurrentLinkedQueue<Channel>();
        final AtomicLong written = new AtomicLong();
        private final int message;

        Writer(int message) {
            this.message = message;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            children.add(ctx.channel());
            write(ctx);
            ctx.fireChannelActive();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            write(ctx);
            ctx.fireChannelWritabilityChanged();
        }

        private void write(ChannelHandlerContext ctx) {
            Channel channel = ctx.channel();
            while (channel.isActive() && channel.isWritable()) {
                ctx.writeAndFlush(MESSAGES.directBuffer(message, message).writeZero(message));
                written.addAndGet(message);
            }
        }
    }
}
