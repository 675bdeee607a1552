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
package io.netty.microbench.channel;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.microbench.util.AbstractMicrobenchmark;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * The {@link ChannelOutboundBuffer} cycle of a transport that writes synchronously (NIO, epoll), with nothing in
 * flight: one operation adds {@code messages} messages of {@value #MESSAGE_SIZE} bytes, flushes them, asks
 * {@link ChannelOutboundBuffer#bytesBeforeUnwritable()} and removes their bytes with
 * {@link ChannelOutboundBuffer#removeBytes(long)}, as a transport does once the operating system took them.
 * The buffer is the one of a handler-less {@link io.netty.channel.embedded.EmbeddedChannel} (default water marks,
 * 32 KiB / 64 KiB), which never writes by itself. {@code pending} is the flushed backlog the buffer holds ahead of
 * each cycle, so that every increment and decrement of the pending bytes runs below the low water mark
 * ({@link Pending#BELOW_LOW}, the channel stays writable), between the marks ({@link Pending#BETWEEN_MARKS}) or
 * above the high water mark ({@link Pending#ABOVE_HIGH}, the channel stays unwritable). The backlog is a queue of the
 * same messages, so each cycle removes as many messages as it adds and the backlog keeps its size.
 * The counter {@code cpuNanos} is the CPU time of the benchmark thread (a rate; divide by the score for the CPU time
 * per operation), which a busy machine disturbs less than the score.
 */
@State(Scope.Benchmark)
public class ChannelOutboundBufferBenchmark extends AbstractMicrobenchmark {
    private static final int MESSAGE_SIZE = 128;

    /** Where the buffer's pending bytes stay, relative to the write buffer water marks, during a cycle. */
    public enum Pending {
        BELOW_LOW,
        BETWEEN_MARKS,
        ABOVE_HIGH
    }

    @Param({ "1", "16" })
    public int messages;

    @Param
    public Pending pending;

    private EmbeddedChannel channel;
    private ChannelOutboundBuffer buffer;
    private ChannelPromise promise;
    private ByteBuf[] buffers;
    private long cycleBytes;

    /** The CPU time of the benchmark thread, reported as a rate. */
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class CpuTime {
        private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

        public long cpuNanos;
        private long start;

        @Setup(Level.Iteration)
        public void start() {
            cpuNanos = 0;
            start = THREADS.getCurrentThreadCpuTime();
        }

        @TearDown(Level.Iteration)
        public void stop() {
            cpuNanos = THREADS.getCurrentThreadCpuTime() - start;
        }
    }

    @Setup(Level.Trial)
    public void setup() {
        channel = new EmbeddedChannel();
        buffer = channel.unsafe().outboundBuffer();
        promise = channel.voidPromise();
        buffers = new ByteBuf[messages];
        for (int i = 0; i < messages; i++) {
            buffers[i] = Unpooled.buffer(MESSAGE_SIZE, MESSAGE_SIZE).writeZero(MESSAGE_SIZE);
        }
        cycleBytes = (long) messages * MESSAGE_SIZE;

        int low = channel.config().getWriteBufferLowWaterMark();
        int high = channel.config().getWriteBufferHighWaterMark();
        long backlog;
        switch (pending) {
            case BELOW_LOW:
                backlog = 0;
                break;
            case BETWEEN_MARKS:
                backlog = low + (high - low) / 4;
                break;
            case ABOVE_HIGH:
                backlog = high + (high - low) / 2;
                break;
            default:
                throw new AssertionError(pending);
        }
        for (int i = 0; buffer.totalPendingWriteBytes() < backlog; i++) {
            buffer.addMessage(buffers[i % messages].retain(), MESSAGE_SIZE, promise);
        }
        buffer.addFlush();

        // Check the cycle's pending bytes, from the backlog to the backlog and a whole cycle, stay where they should.
        long min = buffer.totalPendingWriteBytes();
        long max = min + cycleEntriesSize();
        boolean valid;
        switch (pending) {
            case BELOW_LOW:
                valid = max < low && channel.isWritable();
                break;
            case BETWEEN_MARKS:
                valid = min >= low && max <= high && channel.isWritable();
                break;
            case ABOVE_HIGH:
                valid = min > high && !channel.isWritable();
                break;
            default:
                throw new AssertionError(pending);
        }
        if (!valid) {
            throw new IllegalStateException("pending=" + pending + ": " + min + ".." + max + " bytes, writable=" +
                    channel.isWritable() + ", water marks " + low + '/' + high);
        }
    }

    /** The pending size that {@link #cycle(CpuTime)} adds before it removes it again. */
    private long cycleEntriesSize() {
        long before = buffer.totalPendingWriteBytes();
        for (int i = 0; i < messages; i++) {
            buffer.addMessage(buffers[i].retain(), MESSAGE_SIZE, promise);
        }
        long size = buffer.totalPendingWriteBytes() - before;
        buffer.addFlush();
        buffer.removeBytes(cycleBytes);
        return size;
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        buffer.addFlush();
        while (buffer.remove()) {
            // Releases each message.
        }
        channel.finishAndReleaseAll();
        for (ByteBuf buf : buffers) {
            if (buf.refCnt() != 1 || !buf.release()) {
                throw new IllegalStateException("leaked or over-released message: refCnt " + buf.refCnt());
            }
        }
    }

    @Benchmark
    public long cycle(CpuTime cpuTime) {
        ChannelOutboundBuffer buffer = this.buffer;
        ByteBuf[] buffers = this.buffers;
        for (ByteBuf buf : buffers) {
            buffer.addMessage(buf.retain(), MESSAGE_SIZE, promise);
        }
        buffer.addFlush();
        long bytesBeforeUnwritable = buffer.bytesBeforeUnwritable();
        buffer.removeBytes(cycleBytes);
        return bytesBeforeUnwritable;
    }
}
