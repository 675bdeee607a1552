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
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import io.netty.microbench.util.AbstractMicrobenchmark;
import io.netty.util.ReferenceCountUtil;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A writer that paces on writability (writes while the channel is writable, resumes on
 * {@code channelWritabilityChanged}) streams {@code totalBytes} in {@code messageSize} messages over an io_uring
 * socket on 127.0.0.1 with water marks of 32/64 KiB; one operation is the whole transfer, acknowledged by the peer.
 * {@link #limitAtTheHighWaterMark} runs in a JVM started with {@code -Dio.netty.iouring.uncountedFlushedLimit=65536}
 * (the flushed messages taken for writing stop counting against the water marks, up to the high water mark),
 * {@link #upstreamAccounting} with the default limit, 0 (every pending message counts until its write completes),
 * side by side in one run. Counters (rates; divide by the score): {@code writerCpuNanos}, the CPU time of the writer's
 * event-loop thread; {@code stalls}, the times the writer found the channel unwritable.
 */
@State(Scope.Benchmark)
public class IoUringStreamWriteBenchmark extends AbstractMicrobenchmark {
    @Param({ "16384", "65536" })
    public int messageSize;

    @Param({ "4194304" })
    public int totalBytes;

    private EventLoopGroup clientGroup;
    private EventLoopGroup serverGroup;
    private Channel server;
    private Channel client;
    private Writer writer;
    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private long writerThreadId;

    /** Per-operation costs, reported as rates. */
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class Costs {
        public long writerCpuNanos;
        public long stalls;

        @Setup(Level.Iteration)
        public void reset() {
            writerCpuNanos = 0;
            stalls = 0;
        }
    }

    private static final class Sink extends ChannelInboundHandlerAdapter {
        private long received;
        private volatile long expected;
        private volatile CountDownLatch done;

        /** Called between transfers, when the peer received everything of the previous one. */
        void expect(long bytes, CountDownLatch latch) {
            done = latch;
            expected += bytes;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            received += ((ByteBuf) msg).readableBytes();
            ReferenceCountUtil.release(msg);
            if (received >= expected) {
                done.countDown();
            }
        }
    }

    private final class Writer extends ChannelInboundHandlerAdapter {
        private final ByteBuf message;
        private long remaining;
        long stalls;

        Writer(int size) {
            message = Unpooled.unreleasableBuffer(Unpooled.directBuffer(size).writeZero(size));
        }

        void start(ChannelHandlerContext ctx, long bytes) {
            remaining = bytes;
            write(ctx);
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            write(ctx);
            ctx.fireChannelWritabilityChanged();
        }

        private void write(ChannelHandlerContext ctx) {
            while (remaining > 0) {
                if (!ctx.channel().isWritable()) {
                    stalls++;
                    return;
                }
                ctx.write(message.retainedDuplicate());
                remaining -= message.readableBytes();
                ctx.flush();
            }
        }
    }

    private final Sink sink = new Sink();

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        clientGroup = new MultiThreadIoEventLoopGroup(1, IoUringIoHandler.newFactory());
        serverGroup = new MultiThreadIoEventLoopGroup(1, IoUringIoHandler.newFactory());
        server = new ServerBootstrap().group(serverGroup).channel(IoUringServerSocketChannel.class)
                .childHandler(sink).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        writer = new Writer(messageSize);
        client = new Bootstrap().group(clientGroup).channel(IoUringSocketChannel.class)
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(32 * 1024, 64 * 1024))
                .handler(writer).connect(server.localAddress()).sync().channel();
        writerThreadId = clientGroup.submit(() -> Thread.currentThread().getId()).get();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        client.close().sync();
        server.close().sync();
        clientGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        serverGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
    }

    private void transfer(Costs costs) throws Exception {
        final CountDownLatch done = new CountDownLatch(1);
        final ChannelHandlerContext ctx = client.pipeline().context(writer);
        long cpuBefore = threads.getThreadCpuTime(writerThreadId);
        sink.expect(totalBytes, done);
        client.eventLoop().execute(() -> {
            writer.stalls = 0;
            writer.start(ctx, totalBytes);
        });
        if (!done.await(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("transfer did not complete");
        }
        costs.writerCpuNanos += threads.getThreadCpuTime(writerThreadId) - cpuBefore;
        costs.stalls += clientGroup.submit(() -> writer.stalls).get();
    }

    @Benchmark
    @Fork(jvmArgsAppend = "-Dio.netty.iouring.uncountedFlushedLimit=65536")
    public void limitAtTheHighWaterMark(Costs costs) throws Exception {
        transfer(costs);
    }

    @Benchmark
    public void upstreamAccounting(Costs costs) throws Exception {
        transfer(costs);
    }
}
