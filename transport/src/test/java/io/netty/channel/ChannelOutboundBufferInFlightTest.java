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
package io.netty.channel;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.local.LocalChannel;
import io.netty.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;

import static io.netty.channel.ChannelOutboundBuffer.CHANNEL_OUTBOUND_BUFFER_ENTRY_OVERHEAD;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link ChannelOutboundBuffer#setBytesInFlight(long)}: the flushed messages that a transport's outstanding write
 * carries stay pending but stop counting against the write buffer water marks. Expected values are worked out by hand
 * from the water marks, the message sizes and the per-entry overhead.
 */
public class ChannelOutboundBufferInFlightTest {
    private static final int LOW = 4096;
    private static final int HIGH = 8192;
    private static final int OVERHEAD = CHANNEL_OUTBOUND_BUFFER_ENTRY_OVERHEAD;

    /** What {@code channelWritabilityChanged} saw: {@code isWritable()} at each event. */
    private final List<Boolean> events = new ArrayList<Boolean>();
    private EmbeddedChannel channel;
    private ChannelOutboundBuffer buffer;

    private void setUp(int low, int high, MessageSizeEstimator estimator, ChannelHandler... handlers) {
        channel = new EmbeddedChannel();
        if (estimator != null) {
            channel.config().setMessageSizeEstimator(estimator);
        }
        channel.config().setWriteBufferWaterMark(new WriteBufferWaterMark(low, high));
        channel.pipeline().addLast(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                events.add(ctx.channel().isWritable());
            }
        });
        channel.pipeline().addLast(handlers);
        buffer = channel.unsafe().outboundBuffer();
    }

    private void setUp() {
        setUp(LOW, HIGH, null);
    }

    @AfterEach
    public void tearDown() {
        if (channel != null) {
            channel.finishAndReleaseAll();
        }
    }

    /** Adds a flushed message of {@code size} readable bytes, without letting the channel write it. */
    private ByteBuf addFlushed(int size) {
        return addFlushed(size, channel.newPromise());
    }

    private ByteBuf addFlushed(int size, ChannelPromise promise) {
        ByteBuf buf = Unpooled.buffer(size).writeZero(size);
        buffer.addMessage(buf, channel.config().getMessageSizeEstimator().newHandle().size(buf), promise);
        buffer.addFlush();
        return buf;
    }

    /** Writable, and {@code bytesBeforeUnwritable()} is {@code expectedBeforeUnwritable}. */
    private void assertWritable(long expectedBeforeUnwritable) {
        assertTrue(buffer.isWritable(), "writable");
        assertTrue(channel.isWritable(), "channel writable");
        assertEquals(expectedBeforeUnwritable, buffer.bytesBeforeUnwritable());
        assertEquals(expectedBeforeUnwritable, channel.bytesBeforeUnwritable());
        assertEquals(0, buffer.bytesBeforeWritable());
    }

    /** Not writable, and {@code bytesBeforeWritable()} is {@code expectedBeforeWritable}. */
    private void assertUnwritable(long expectedBeforeWritable) {
        assertFalse(buffer.isWritable(), "writable");
        assertFalse(channel.isWritable(), "channel writable");
        assertEquals(0, buffer.bytesBeforeUnwritable());
        assertEquals(expectedBeforeWritable, buffer.bytesBeforeWritable());
        assertEquals(expectedBeforeWritable, channel.bytesBeforeWritable());
    }

    @Test
    public void inFlightBytesDoNotCountAgainstWaterMarks() {
        setUp();
        addFlushed(HIGH + 1000);
        // HIGH + 1000 + OVERHEAD pending.
        assertUnwritable(HIGH + 1000 + OVERHEAD - LOW + 1);

        buffer.setBytesInFlight(HIGH + 1000);
        // The high water mark of the entry's pending size stops counting: 1000 + OVERHEAD still count.
        assertWritable(HIGH - (1000 + OVERHEAD) + 1);
        assertEquals(HIGH + 1000 + OVERHEAD, buffer.totalPendingWriteBytes());

        buffer.removeBytes(HIGH + 1000);
        assertWritable(HIGH + 1);
        buffer.setBytesInFlight(0);
        assertWritable(HIGH + 1);
        assertEquals(0, buffer.totalPendingWriteBytes());
        assertEquals(Arrays.asList(false, true), events);
    }

    /** The in-flight amount is taken in the buffer's own units, whatever the estimator says a message weighs. */
    @Test
    public void inFlightAmountFollowsTheSizeEstimator() {
        // Every message weighs 0: only the entry overhead counts, and in flight it stops counting; the counted bytes
        // never go below 0, so bytesBeforeUnwritable() never exceeds HIGH + 1.
        setUp(LOW, HIGH, new FixedSizeEstimator(0));
        addFlushed(3000);
        addFlushed(3000);
        assertWritable(HIGH - 2 * OVERHEAD + 1);
        buffer.setBytesInFlight(6000);
        assertWritable(HIGH + 1);
        buffer.removeBytes(6000);
        buffer.setBytesInFlight(0);
        assertWritable(HIGH + 1);
        channel.finishAndReleaseAll();
        channel = null;

        // Every message weighs 3000 whatever its length: 3 messages of 10 bytes are 9000 + 3 x OVERHEAD pending.
        setUp(LOW, HIGH, new FixedSizeEstimator(3000));
        addFlushed(10);
        addFlushed(10);
        addFlushed(10);
        assertUnwritable(3 * (3000 + OVERHEAD) - LOW + 1);
        // Two messages (20 readable bytes) in flight: 2 x (3000 + OVERHEAD) stop counting.
        buffer.setBytesInFlight(20);
        assertWritable(HIGH - (3000 + OVERHEAD) + 1);
        // A count that ends inside the third message leaves it counted.
        buffer.setBytesInFlight(25);
        assertWritable(HIGH - (3000 + OVERHEAD) + 1);
        buffer.setBytesInFlight(0);
        assertUnwritable(3 * (3000 + OVERHEAD) - LOW + 1);
        assertEquals(Arrays.asList(false, true, false), events);
        channel.finishAndReleaseAll();
        events.clear();

        // A message of 10 bytes that weighs 20000: in flight, HIGH of its pending size stops counting, not 10 bytes.
        setUp(LOW, HIGH, new FixedSizeEstimator(20000));
        addFlushed(10);
        buffer.setBytesInFlight(10);
        assertUnwritable(20000 + OVERHEAD - HIGH - LOW + 1);
        assertEquals(Arrays.asList(false), events);
    }

    @Test
    public void partiallyCoveredMessageStillCounts() {
        setUp();
        ByteBuf first = addFlushed(3000);
        ByteBuf second = addFlushed(3000);
        buffer.setBytesInFlight(4000);
        // Only the first message is in flight.
        assertWritable(HIGH - (3000 + OVERHEAD) + 1);
        // The write took 4000 bytes: the first message is gone, the second is 1000 bytes in.
        buffer.removeBytes(4000);
        assertEquals(0, first.refCnt());
        assertEquals(1000, second.readerIndex());
        buffer.setBytesInFlight(0);
        assertEquals(3000 + OVERHEAD, buffer.totalPendingWriteBytes());
        assertWritable(HIGH - (3000 + OVERHEAD) + 1);
        // The remaining 2000 bytes go out in the next write: the second message is in flight now.
        buffer.setBytesInFlight(2000);
        assertWritable(HIGH + 1);
        assertEquals(Arrays.asList(), events);
    }

    @Test
    public void hysteresisAppliesToCountedBytes() {
        setUp();
        addFlushed(3000);
        addFlushed(3000);
        addFlushed(4000);
        // 10000 + 3 x OVERHEAD pending.
        assertUnwritable(10000 + 3 * OVERHEAD - LOW + 1);
        // First message in flight: 7000 + 2 x OVERHEAD count, between the marks: stays unwritable.
        buffer.setBytesInFlight(3000);
        assertUnwritable(7000 + 2 * OVERHEAD - LOW + 1);
        // Two in flight: 4000 + OVERHEAD count, not below the low mark.
        buffer.setBytesInFlight(6000);
        assertUnwritable(4000 + OVERHEAD - LOW + 1);
        // All in flight: the high mark of their pending size stops counting, 10000 + 3 x OVERHEAD - HIGH count.
        buffer.setBytesInFlight(10000);
        assertWritable(HIGH - (10000 + 3 * OVERHEAD - HIGH) + 1);
        // Back to the first one in flight, between the marks: stays writable.
        buffer.setBytesInFlight(3000);
        assertWritable(HIGH - (7000 + 2 * OVERHEAD) + 1);
        // None in flight: above the high mark.
        buffer.setBytesInFlight(0);
        assertUnwritable(10000 + 3 * OVERHEAD - LOW + 1);
        assertEquals(Arrays.asList(false, true, false), events);
    }

    /** The exact edge of the bound: a single flush of a pending size of HIGH + LOW or more stays unwritable. */
    @Test
    public void singleFlushBelowHighPlusLowBecomesWritable() {
        setUp();
        addFlushed(HIGH + LOW - 1 - OVERHEAD);
        assertFalse(buffer.isWritable());
        buffer.setBytesInFlight(HIGH + LOW - 1 - OVERHEAD);
        assertWritable(HIGH - (LOW - 1) + 1);
        assertEquals(Arrays.asList(false, true), events);
    }

    @Test
    public void singleFlushOfHighPlusLowStaysUnwritable() {
        setUp();
        addFlushed(HIGH + LOW - OVERHEAD);
        assertFalse(buffer.isWritable());
        buffer.setBytesInFlight(HIGH + LOW - OVERHEAD);
        assertUnwritable(1);
        buffer.removeBytes(HIGH + LOW - OVERHEAD);
        buffer.setBytesInFlight(0);
        assertWritable(HIGH + 1);
        assertEquals(Arrays.asList(false, true), events);
    }

    /**
     * Marks 32/64 KiB. A 64 KiB write is in flight, its promise's listener writes 1 byte, and 40 KiB are flushed
     * behind it. When the write completes, the listener must see the completed bytes still in flight, not counted
     * again: the channel stays writable, as on a transport that writes synchronously.
     */
    @Test
    public void listenerThatWritesDuringCompletionSeesTheWriteInFlight() {
        setUp(32 * 1024, 64 * 1024, null);
        final List<Boolean> seenByListener = new ArrayList<Boolean>();
        ChannelPromise promise = channel.newPromise();
        promise.addListener(new ChannelFutureListener() {
            @Override
            public void operationComplete(ChannelFuture future) {
                seenByListener.add(future.channel().isWritable());
                future.channel().write(Unpooled.buffer(1).writeZero(1));
                seenByListener.add(future.channel().isWritable());
            }
        });
        addFlushed(64 * 1024, promise);
        buffer.setBytesInFlight(64 * 1024);
        addFlushed(40 * 1024);
        // In flight: 64 KiB of the first entry's pending size stop counting, 40 KiB and two overheads count.
        assertWritable(64 * 1024 - (40 * 1024 + 2 * OVERHEAD) + 1);

        buffer.removeBytes(64 * 1024);
        buffer.setBytesInFlight(0);
        assertEquals(Arrays.asList(true, true), seenByListener);
        assertEquals(40 * 1024 + 1 + 2 * OVERHEAD, buffer.totalPendingWriteBytes());
        assertEquals(41153, buffer.totalPendingWriteBytes());
        assertWritable(64 * 1024 - 41153 + 1);
        // Unwritable when the 64 KiB were added, writable once they were in flight; nothing since.
        assertEquals(Arrays.asList(false, true), events);
    }

    /** A listener of an in-flight message that fails the rest (closes the channel) leaves nothing in flight. */
    @Test
    public void listenerThatClosesDuringCompletion() throws Exception {
        setUp();
        ChannelPromise promise = channel.newPromise();
        promise.addListener(ChannelFutureListener.CLOSE);
        addFlushed(1000, promise);
        ByteBuf second = addFlushed(HIGH);
        buffer.setBytesInFlight(1000 + HIGH);
        buffer.removeBytes(1000);
        assertFalse(channel.isOpen());
        assertEquals(0, second.refCnt());
        assertEquals(0, buffer.totalPendingWriteBytes());
        assertEquals(0, buffer.inFlightSize());
        buffer.setBytesInFlight(0);
        assertEquals(0, buffer.totalPendingWriteBytes());
        assertEquals(0, buffer.inFlightSize());
    }

    /**
     * A listener of an in-flight message that reports a new outstanding write while the completion is processed: the
     * message being completed stays in flight until its listener returned and then leaves exactly once.
     */
    @Test
    public void listenerThatSetsBytesInFlightDuringCompletion() {
        setUp();
        final long[] seen = new long[2];
        ChannelPromise promise = channel.newPromise();
        promise.addListener(new ChannelFutureListener() {
            @Override
            public void operationComplete(ChannelFuture future) {
                // The second message is submitted again, alone.
                buffer.setBytesInFlight(1000);
                seen[0] = buffer.inFlightSize();
                seen[1] = buffer.bytesBeforeUnwritable();
            }
        });
        addFlushed(1000, promise);
        addFlushed(1000);
        addFlushed(1000);
        buffer.setBytesInFlight(2000);
        assertEquals(2000 + 2 * OVERHEAD, buffer.inFlightSize());
        buffer.removeBytes(1000);
        // In the listener: the first message (still pending) and the second are in flight, the third counts.
        assertEquals(2000 + 2 * OVERHEAD, seen[0]);
        assertEquals(HIGH - (1000 + OVERHEAD) + 1, seen[1]);
        // After: the second is in flight, the third counts.
        assertEquals(1000 + OVERHEAD, buffer.inFlightSize());
        assertEquals(2000 + 2 * OVERHEAD, buffer.totalPendingWriteBytes());
        assertWritable(HIGH - (1000 + OVERHEAD) + 1);
        buffer.removeBytes(1000);
        buffer.setBytesInFlight(0);
        assertEquals(0, buffer.inFlightSize());
        assertWritable(HIGH - (1000 + OVERHEAD) + 1);
    }

    /** Empty messages at the start and right behind the last byte go with the write, as removeBytes removes them. */
    @Test
    public void emptyMessagesGoWithTheWrite() {
        setUp();
        addFlushed(0);
        addFlushed(1000);
        addFlushed(0);
        addFlushed(1000);
        addFlushed(0);
        buffer.setBytesInFlight(1000);
        // The first three entries: 1000 bytes and three overheads.
        assertEquals(1000 + 3 * OVERHEAD, buffer.inFlightSize());
        assertWritable(HIGH - (1000 + 2 * OVERHEAD) + 1);
        buffer.removeBytes(1000);
        assertEquals(0, buffer.inFlightSize());
        assertEquals(1000 + 2 * OVERHEAD, buffer.totalPendingWriteBytes());
        buffer.setBytesInFlight(1000);
        assertEquals(1000 + 2 * OVERHEAD, buffer.inFlightSize());
        assertWritable(HIGH + 1);
        buffer.removeBytes(1000);
        assertEquals(0, buffer.inFlightSize());
        assertEquals(0, buffer.totalPendingWriteBytes());
        buffer.setBytesInFlight(0);
        assertWritable(HIGH + 1);
    }

    /** A message that is not a ByteBuf ends what a write can carry; counting past it is a bug of the transport. */
    @Test
    public void nonByteBufMessageEndsTheWrite() {
        setUp();
        addFlushed(1000);
        buffer.addMessage("not a buffer", 0, channel.newPromise());
        buffer.addFlush();
        buffer.setBytesInFlight(1000);
        assertEquals(1000 + OVERHEAD, buffer.inFlightSize());
        assertThrows(AssertionError.class, () -> buffer.setBytesInFlight(1001));
        assertEquals(1000 + OVERHEAD, buffer.inFlightSize());
        buffer.removeBytes(1000);
        assertEquals(0, buffer.inFlightSize());
        buffer.setBytesInFlight(0);
        // The string is still flushed and pending: its overhead counts.
        assertWritable(HIGH - OVERHEAD + 1);
        assertTrue(buffer.remove());
    }

    /** A message cancelled before its flush weighs nothing and is an empty buffer: it goes with the write. */
    @Test
    public void cancelledMessageGoesWithTheWrite() {
        setUp();
        buffer.addMessage(Unpooled.buffer(1000).writeZero(1000), 1000, channel.newPromise());
        ChannelPromise cancelled = channel.newPromise();
        buffer.addMessage(Unpooled.buffer(500).writeZero(500), 500, cancelled);
        assertTrue(cancelled.cancel(false));
        buffer.addFlush();
        addFlushed(1000);
        assertEquals(2000 + 2 * OVERHEAD, buffer.totalPendingWriteBytes());
        buffer.setBytesInFlight(2000);
        assertEquals(2000 + 2 * OVERHEAD, buffer.inFlightSize());
        assertWritable(HIGH + 1);
        buffer.removeBytes(2000);
        assertEquals(0, buffer.inFlightSize());
        assertEquals(0, buffer.totalPendingWriteBytes());
        buffer.setBytesInFlight(0);
        assertWritable(HIGH + 1);
    }

    @Test
    public void failedWriteCountsItsBytesAgain() {
        setUp();
        addFlushed(HIGH + 1000);
        buffer.setBytesInFlight(HIGH + 1000);
        assertWritable(HIGH - (1000 + OVERHEAD) + 1);
        buffer.setBytesInFlight(0);
        assertUnwritable(HIGH + 1000 + OVERHEAD - LOW + 1);
        assertEquals(Arrays.asList(false, true, false), events);
    }

    /** In-flight bytes beyond the high water mark still count. */
    @Test
    public void atMostTheHighWaterMarkStopsCounting() {
        setUp();
        addFlushed(4 * HIGH);
        buffer.setBytesInFlight(4 * HIGH);
        assertUnwritable(3 * HIGH + OVERHEAD - LOW + 1);
        assertEquals(Arrays.asList(false), events);
    }

    /** More bytes than the flushed messages hold: assertion in tests; the buffer keeps what it can account for. */
    @Test
    public void moreBytesThanFlushedIsClampedAndAsserted() {
        setUp();
        addFlushed(HIGH);
        buffer.addMessage(Unpooled.buffer(100).writeZero(100), 100, channel.newPromise());
        // HIGH + 1 bytes but only HIGH are flushed: the flushed message is in flight, the unflushed one is not.
        assertThrows(AssertionError.class, () -> buffer.setBytesInFlight(HIGH + 1));
        // HIGH of the first entry's pending size stops counting: its overhead and the unflushed entry count.
        assertWritable(HIGH - (100 + 2 * OVERHEAD) + 1);
        assertThrows(AssertionError.class, () -> buffer.setBytesInFlight(-1));
        // Nothing in flight after a negative count.
        assertUnwritable(HIGH + 100 + 2 * OVERHEAD - LOW + 1);
    }

    /**
     * The memory bound: a handler that writes 1000-byte messages while the channel is writable, and a transport that
     * submits everything flushed in one write which takes 10 bytes each time (a slow peer): the buffer never holds
     * more than twice the high water mark plus one message.
     */
    @Test
    public void memoryStaysBoundedWithSlowCompletions() {
        setUp();
        long readable = 0;
        long maxPending = 0;
        for (int cycle = 0; cycle < 1000; cycle++) {
            while (buffer.isWritable()) {
                addFlushed(1000);
                readable += 1000;
                maxPending = Math.max(maxPending, buffer.totalPendingWriteBytes());
            }
            buffer.removeBytes(10);
            readable -= 10;
            buffer.setBytesInFlight(readable);
        }
        assertTrue(maxPending <= 2 * HIGH + 1000 + OVERHEAD, "max pending " + maxPending);
        assertTrue(maxPending > HIGH + LOW, "max pending " + maxPending);
    }

    @Test
    public void closeForgetsInFlightBytes() throws Exception {
        setUp();
        ByteBuf buf = addFlushed(2 * HIGH);
        buffer.setBytesInFlight(2 * HIGH);
        channel.close().sync();
        assertEquals(0, buffer.totalPendingWriteBytes());
        assertEquals(0, buffer.inFlightSize());
        assertEquals(0, buf.refCnt());
    }

    /**
     * Random writes, in-flight changes and completions against a model of the buffer kept by this test: per entry its
     * readable bytes and pending size, the in-flight prefix, and the hysteresis of the water marks.
     */
    @Test
    public void randomOperationsMatchModel() {
        setUp();
        Random random = new Random(42);
        Model model = new Model();
        for (int step = 0; step < 20000; step++) {
            int op = random.nextInt(3);
            if (op == 0) {
                int size = random.nextInt(3000);
                addFlushed(size);
                model.entries.add(new long[] {size, size + OVERHEAD});
                model.update(false, true);
            } else if (op == 1) {
                long bytes = (long) (random.nextDouble() * (model.readable(model.entries.size()) + 1));
                buffer.setBytesInFlight(bytes);
                model.setInFlight(bytes);
                model.update(true, true);
            } else {
                // A completion: writes some of what is in flight, then nothing is in flight.
                long written = (long) (random.nextDouble() * (model.readable(model.inFlight) + 1));
                buffer.removeBytes(written);
                model.remove(written);
                model.update(true, false);
                buffer.setBytesInFlight(0);
                model.inFlight = 0;
                model.update(true, true);
            }
            assertEquals(model.pending(), buffer.totalPendingWriteBytes(), "step " + step);
            long counted = model.counted();
            if (model.writable) {
                assertWritable(Math.max(0, HIGH - counted + 1));
            } else {
                assertUnwritable(Math.max(0, counted - LOW + 1));
            }
        }
        assertEquals(model.events, events);
        assertTrue(model.events.size() > 100, "events " + model.events.size());
    }

    /** What the test expects of the buffer. */
    private static final class Model {
        final List<long[]> entries = new ArrayList<long[]>(); // {readable bytes, pending size}
        final List<Boolean> events = new ArrayList<Boolean>();
        int inFlight;
        boolean writable = true;

        long readable(int count) {
            long sum = 0;
            for (int i = 0; i < count; i++) {
                sum += entries.get(i)[0];
            }
            return sum;
        }

        long pending() {
            long sum = 0;
            for (long[] e : entries) {
                sum += e[1];
            }
            return sum;
        }

        long counted() {
            long inFlightSize = 0;
            for (int i = 0; i < inFlight; i++) {
                inFlightSize += entries.get(i)[1];
            }
            return pending() - Math.min(inFlightSize, HIGH);
        }

        void setInFlight(long bytes) {
            inFlight = 0;
            if (bytes > 0) {
                long left = bytes;
                for (long[] e : entries) {
                    if (e[0] > left) {
                        break;
                    }
                    left -= e[0];
                    inFlight++;
                }
            }
        }

        void remove(long written) {
            long left = written;
            while (!entries.isEmpty() && entries.get(0)[0] <= left) {
                left -= entries.remove(0)[0];
                inFlight = Math.max(0, inFlight - 1);
            }
            if (left > 0) {
                entries.get(0)[0] -= left;
            }
        }

        void update(boolean mayBecomeWritable, boolean mayBecomeUnwritable) {
            long counted = counted();
            if (writable && mayBecomeUnwritable && counted > HIGH) {
                writable = false;
                events.add(false);
            } else if (!writable && mayBecomeWritable && counted < LOW) {
                writable = true;
                events.add(true);
            }
        }
    }

    /**
     * Other threads add and remove pending bytes (as writes from outside the event loop do) while the event loop puts
     * a message in and out of flight, on a channel registered to a real event loop. After each round, once the threads
     * are done and queued events ran, writability and the counts are exact, and the channel saw an odd number of
     * events if its writability changed in the round, else an even one, the last showing the current state. (One
     * event per change is not checked: upstream fires the events of other threads later, and the handler reads
     * {@code isWritable()} when it runs.)
     * <p>
     * Each thread ends its part of a round with an update in the direction the round moves the channel, so that a
     * stale decision of a thread is always followed by one of its own that sees the final state.
     */
    @Test
    public void inFlightChangesRaceWithOtherThreads() throws Exception {
        final int threads = 3;
        final int noise = 1000;
        final int rounds = 400;
        final int perRound = 200;
        EventLoopGroup group = new DefaultEventLoopGroup(1);
        final List<Boolean> loopEvents = new ArrayList<Boolean>();
        final Channel local = new LocalChannel();
        List<Thread> workers = new ArrayList<Thread>();
        try {
            local.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                @Override
                public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                    loopEvents.add(ctx.channel().isWritable());
                }
            });
            local.config().setWriteBufferWaterMark(new WriteBufferWaterMark(LOW, HIGH));
            group.register(local).sync();
            final ChannelOutboundBuffer localBuffer = local.unsafe().outboundBuffer();
            // One flushed message of HIGH bytes: HIGH + OVERHEAD pending, unwritable; in flight, OVERHEAD count.
            local.eventLoop().submit(new Runnable() {
                @Override
                public void run() {
                    localBuffer.addMessage(Unpooled.buffer(HIGH).writeZero(HIGH), HIGH, local.newPromise());
                    localBuffer.addFlush();
                }
            }).sync();
            assertFalse(local.isWritable());

            final CyclicBarrier start = new CyclicBarrier(threads + 1);
            final CyclicBarrier end = new CyclicBarrier(threads + 1);
            final boolean[] toWritable = new boolean[1];
            final List<Throwable> failures = new ArrayList<Throwable>();
            for (int t = 0; t < threads; t++) {
                Thread worker = new Thread(new Runnable() {
                    @Override
                    public void run() {
                        try {
                            for (int r = 0; r < rounds; r++) {
                                start.await(10, TimeUnit.SECONDS);
                                // Rounds that make the channel writable end each pair with a decrement (which may
                                // set it writable), the others with an increment (which may set it unwritable).
                                boolean up = toWritable[0];
                                for (int i = 0; i < perRound; i++) {
                                    if (up) {
                                        localBuffer.incrementPendingOutboundBytes(noise);
                                        localBuffer.decrementPendingOutboundBytes(noise);
                                    } else {
                                        localBuffer.decrementPendingOutboundBytes(noise);
                                        localBuffer.incrementPendingOutboundBytes(noise);
                                    }
                                }
                                end.await(10, TimeUnit.SECONDS);
                            }
                        } catch (Throwable cause) {
                            synchronized (failures) {
                                failures.add(cause);
                            }
                        }
                    }
                });
                worker.setDaemon(true);
                worker.start();
                workers.add(worker);
            }

            boolean writable = false;
            // The event of the setup (unwritable) is not part of any round.
            int checkedEvents = local.eventLoop().submit(() -> loopEvents.size()).get(10, TimeUnit.SECONDS);
            assertEquals(1, checkedEvents);
            for (int r = 0; r < rounds; r++) {
                final boolean up = !writable;
                toWritable[0] = up;
                if (!up) {
                    // The decrements of this round need bytes to take: add them first, while nothing races.
                    local.eventLoop().submit(new Runnable() {
                        @Override
                        public void run() {
                            localBuffer.incrementPendingOutboundBytes(threads * noise);
                        }
                    }).sync();
                }
                start.await(10, TimeUnit.SECONDS);
                Future<?> step = local.eventLoop().submit(new Runnable() {
                    @Override
                    public void run() {
                        localBuffer.setBytesInFlight(up ? HIGH : 0);
                    }
                });
                end.await(10, TimeUnit.SECONDS);
                step.sync();
                if (!up) {
                    local.eventLoop().submit(new Runnable() {
                        @Override
                        public void run() {
                            localBuffer.decrementPendingOutboundBytes(threads * noise);
                        }
                    }).sync();
                }
                writable = up;
                final boolean expected = writable;
                final int from = checkedEvents;
                // Queued events ran before this task: it was submitted after every change of the round.
                Integer seen = local.eventLoop().submit(() -> {
                    assertEquals(expected, localBuffer.isWritable());
                    assertEquals(HIGH + OVERHEAD, localBuffer.totalPendingWriteBytes());
                    assertEquals(expected ? HIGH - OVERHEAD + 1 : 0, localBuffer.bytesBeforeUnwritable());
                    assertEquals(expected ? 0 : HIGH + OVERHEAD - LOW + 1, localBuffer.bytesBeforeWritable());
                    int count = loopEvents.size() - from;
                    assertEquals(1, count % 2, "events of round: " + loopEvents.subList(from, loopEvents.size()));
                    // Only an update that read the in-flight size before the round's change and set the flag after
                    // it decides on stale numbers: at most one per thread, undone by that thread's next update.
                    assertTrue(count <= 1 + 2 * threads, "events of round: " + count);
                    assertEquals(expected, loopEvents.get(loopEvents.size() - 1));
                    return loopEvents.size();
                }).get(10, TimeUnit.SECONDS);
                checkedEvents = seen;
            }
            for (Thread worker : workers) {
                worker.join(10000);
            }
            assertEquals(Arrays.asList(), failures);
            local.eventLoop().submit(new Runnable() {
                @Override
                public void run() {
                    localBuffer.setBytesInFlight(HIGH);
                    localBuffer.removeBytes(HIGH);
                    localBuffer.setBytesInFlight(0);
                }
            }).sync();
            assertEquals(0, localBuffer.totalPendingWriteBytes());
        } finally {
            for (Thread worker : workers) {
                worker.interrupt();
            }
            // Fails and releases what is still pending.
            local.close().sync();
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }

    private static final class FixedSizeEstimator implements MessageSizeEstimator {
        private final int size;

        FixedSizeEstimator(int size) {
            this.size = size;
        }

        @Override
        public Handle newHandle() {
            return new Handle() {
                @Override
                public int size(Object msg) {
                    return size;
                }
            };
        }
    }
}
