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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import static io.netty.channel.ChannelOutboundBuffer.CHANNEL_OUTBOUND_BUFFER_ENTRY_OVERHEAD;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link ChannelOutboundBuffer#setBytesInFlight(long, long)}: while the transport's write is outstanding, the flushed
 * messages queued behind it (which the transport writes at its completion) stop counting against the write buffer
 * water marks too, up to the larger of the limit and the high water mark of pending size. Expected values are worked
 * out by hand from the water marks, the message sizes and the per-entry overhead.
 */
public class ChannelOutboundBufferQueuedInFlightTest {
    private static final int LOW = 4096;
    private static final int HIGH = 8192;
    private static final int LIMIT = 32768;
    private static final int OVERHEAD = CHANNEL_OUTBOUND_BUFFER_ENTRY_OVERHEAD;

    /** What {@code channelWritabilityChanged} saw: {@code isWritable()} at each event. */
    private final List<Boolean> events = new ArrayList<Boolean>();
    private EmbeddedChannel channel;
    private ChannelOutboundBuffer buffer;

    private void setUp() {
        channel = new EmbeddedChannel();
        channel.config().setWriteBufferWaterMark(new WriteBufferWaterMark(LOW, HIGH));
        channel.pipeline().addLast(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                events.add(ctx.channel().isWritable());
            }
        });
        buffer = channel.unsafe().outboundBuffer();
    }

    @AfterEach
    public void tearDown() {
        if (channel != null) {
            channel.finishAndReleaseAll();
        }
    }

    /** Flushes a message of {@code size} readable bytes and reports it as the transport's outstanding write. */
    private void outstandingWrite(int size, long limit) {
        addFlushed(size);
        buffer.setBytesInFlight(size, limit);
    }

    /** Adds a message of {@code size} readable bytes without flushing it (as a handler's write does). */
    private ByteBuf add(int size, ChannelPromise promise) {
        ByteBuf buf = Unpooled.buffer(size).writeZero(size);
        buffer.addMessage(buf, size, promise);
        return buf;
    }

    private ByteBuf add(int size) {
        return add(size, channel.newPromise());
    }

    /** Adds a flushed message, without letting the channel write it (its write is the transport's business here). */
    private ByteBuf addFlushed(int size) {
        return addFlushed(size, channel.newPromise());
    }

    private ByteBuf addFlushed(int size, ChannelPromise promise) {
        ByteBuf buf = add(size, promise);
        buffer.addFlush();
        return buf;
    }

    private void assertWritable(long expectedBeforeUnwritable) {
        assertTrue(buffer.isWritable(), "writable");
        assertTrue(channel.isWritable(), "channel writable");
        assertEquals(expectedBeforeUnwritable, buffer.bytesBeforeUnwritable());
        assertEquals(0, buffer.bytesBeforeWritable());
    }

    private void assertUnwritable(long expectedBeforeWritable) {
        assertFalse(buffer.isWritable(), "writable");
        assertFalse(channel.isWritable(), "channel writable");
        assertEquals(0, buffer.bytesBeforeUnwritable());
        assertEquals(expectedBeforeWritable, buffer.bytesBeforeWritable());
    }

    /**
     * The sequence of a transport with one write outstanding: what is flushed behind it becomes writable again at the
     * flush; the completion and the next submission change nothing; the last completion leaves nothing in flight.
     */
    @Test
    public void flushBehindOutstandingWriteMakesWritableAgain() {
        setUp();
        addFlushed(6000);
        assertWritable(HIGH - (6000 + OVERHEAD) + 1);
        buffer.setBytesInFlight(6000, LIMIT);
        assertWritable(HIGH + 1);
        assertEquals(6000 + OVERHEAD, buffer.inFlightSize());

        add(6000);
        // Not flushed yet: counts.
        assertWritable(HIGH - (6000 + OVERHEAD) + 1);
        add(3000);
        assertUnwritable(6000 + 3000 + 2 * OVERHEAD - LOW + 1);
        assertEquals(Collections.singletonList(false), events);

        buffer.addFlush();
        // Queued behind the outstanding write: in flight, the channel is writable again at once; the event follows
        // from a task.
        assertEquals(15000 + 3 * OVERHEAD, buffer.inFlightSize());
        assertEquals(15000 + 3 * OVERHEAD, buffer.totalPendingWriteBytes());
        assertWritable(HIGH + 1);
        assertEquals(Collections.singletonList(false), events);
        channel.runPendingTasks();
        assertEquals(Arrays.asList(false, true), events);

        // The completion of the first write, then the submission of what was queued: nothing changes.
        buffer.removeBytes(6000);
        assertEquals(9000 + 2 * OVERHEAD, buffer.inFlightSize());
        assertWritable(HIGH + 1);
        buffer.setBytesInFlight(9000, LIMIT);
        assertEquals(9000 + 2 * OVERHEAD, buffer.inFlightSize());
        assertWritable(HIGH + 1);

        buffer.removeBytes(9000);
        buffer.setBytesInFlight(0, LIMIT);
        assertEquals(0, buffer.inFlightSize());
        assertEquals(0, buffer.totalPendingWriteBytes());
        assertWritable(HIGH + 1);
        assertEquals(Arrays.asList(false, true), events);
    }

    /**
     * A flush makes the channel writable again, and a write makes it unwritable again before the flush's event was
     * fired: the handlers see neither change (they saw the channel unwritable last, and it is); a later flush that
     * makes it writable is reported once, when the channel is writable.
     */
    @Test
    public void writableStateUndoneBeforeItsEventIsNotReported() {
        setUp();
        outstandingWrite(6000, LIMIT);
        add(HIGH);
        assertFalse(buffer.isWritable());
        assertEquals(Collections.singletonList(false), events);

        buffer.addFlush();
        assertTrue(buffer.isWritable());
        add(HIGH);
        assertFalse(buffer.isWritable());
        channel.runPendingTasks();
        assertEquals(Collections.singletonList(false), events);

        buffer.addFlush();
        buffer.addFlush();
        assertTrue(buffer.isWritable());
        channel.runPendingTasks();
        assertEquals(Arrays.asList(false, true), events);
    }

    /**
     * A writability event fired from a task (a write of another thread, here its pending bytes counted with
     * {@code incrementPendingOutboundBytes}) runs after a flush made the channel writable: the handlers see that
     * writable state, so a write that makes the channel unwritable again before the flush's own event must be
     * reported: the last event the handlers see is the channel's state.
     */
    @Test
    public void eventFiredBetweenFlushAndItsTaskKeepsLaterEvents() {
        setUp();
        outstandingWrite(6000, LIMIT);
        // Another thread's write reaches the buffer: unwritable, its event fired from a task.
        buffer.incrementPendingOutboundBytes(HIGH + 1);
        add(HIGH);
        buffer.decrementPendingOutboundBytes(HIGH + 1);
        assertFalse(buffer.isWritable());
        // A write that reaches the loop as a task, behind that event.
        channel.eventLoop().execute(new Runnable() {
            @Override
            public void run() {
                add(LIMIT + HIGH);
            }
        });
        // In flight: writable again, the flush's event queued behind the write.
        buffer.addFlush();
        assertTrue(buffer.isWritable());
        channel.runPendingTasks();
        assertFalse(buffer.isWritable());
        assertEquals(Arrays.asList(true, false), events);
    }

    /** The same with a user-defined writability flag whose change is fired from a task. */
    @Test
    public void userDefinedWritabilityEventBetweenFlushAndItsTaskKeepsLaterEvents() {
        setUp();
        channel.pipeline().addFirst(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                ctx.fireChannelWritabilityChanged();
                // A handler that resumes writing once the channel was reported writable.
                if (events.equals(Collections.singletonList(true))) {
                    add(LIMIT + HIGH);
                }
            }
        });
        outstandingWrite(6000, LIMIT);
        buffer.setUserDefinedWritability(1, false);
        add(HIGH + 1);
        buffer.setUserDefinedWritability(1, true);
        // In flight: writable again; the user-defined flag's event and then the flush's are queued.
        buffer.addFlush();
        assertTrue(buffer.isWritable());
        channel.runPendingTasks();
        assertFalse(buffer.isWritable());
        assertEquals(Arrays.asList(true, false), events);
    }

    /** With a limit of 0 (and with setBytesInFlight(long)) the messages queued behind the write count, as before. */
    @Test
    public void limitZeroKeepsQueuedMessagesCounted() {
        setUp();
        outstandingWrite(6000, 0);
        add(6000);
        add(3000);
        buffer.addFlush();
        assertEquals(6000 + OVERHEAD, buffer.inFlightSize());
        assertUnwritable(9000 + 2 * OVERHEAD - LOW + 1);

        // Said again with a limit: the queued messages stop counting.
        buffer.setBytesInFlight(6000, LIMIT);
        assertWritable(HIGH + 1);
        // And without: they count again.
        buffer.setBytesInFlight(6000);
        assertUnwritable(9000 + 2 * OVERHEAD - LOW + 1);
        assertEquals(Arrays.asList(false, true, false), events);
    }

    /** At most the limit of pending size stops counting; what is flushed beyond it counts. */
    @Test
    public void atMostTheLimitStopsCounting() {
        setUp();
        outstandingWrite(6000, LIMIT);
        // Five messages of 6096 pending bytes: 30480 in flight, under the limit.
        for (int i = 0; i < 4; i++) {
            addFlushed(6000);
        }
        assertEquals(5 * (6000 + OVERHEAD), buffer.inFlightSize());
        assertWritable(HIGH + 1);
        // Six: 36576, of which 32768 stop counting and 3808 count.
        addFlushed(6000);
        assertWritable(HIGH - (6 * (6000 + OVERHEAD) - LIMIT) + 1);
        // Seven: 42672 - 32768 = 9904 count, more than the high water mark.
        addFlushed(6000);
        assertEquals(7 * (6000 + OVERHEAD), buffer.inFlightSize());
        assertUnwritable(7 * (6000 + OVERHEAD) - LIMIT - LOW + 1);
        assertEquals(Collections.singletonList(false), events);

        // The first write completes: 36576 - 32768 = 3808 count, below the low water mark.
        buffer.removeBytes(6000);
        assertWritable(HIGH - (6 * (6000 + OVERHEAD) - LIMIT) + 1);
        assertEquals(Arrays.asList(false, true), events);
    }

    /** A limit below the high water mark acts as the high water mark. */
    @Test
    public void limitBelowHighWaterMarkActsAsHighWaterMark() {
        setUp();
        outstandingWrite(6000, 100);
        addFlushed(6000);
        // 12192 in flight, 8192 of it stop counting.
        assertEquals(12000 + 2 * OVERHEAD, buffer.inFlightSize());
        assertWritable(HIGH - (12000 + 2 * OVERHEAD - HIGH) + 1);
    }

    /** When no write follows the completion, the queued messages count again. */
    @Test
    public void noWriteOutstandingCountsQueuedMessagesAgain() {
        setUp();
        outstandingWrite(6000, LIMIT);
        addFlushed(5000);
        addFlushed(5000);
        assertWritable(HIGH + 1);
        buffer.removeBytes(6000);
        assertWritable(HIGH + 1);
        // For example the socket's buffer is full and the transport waits for POLLOUT.
        buffer.setBytesInFlight(0, LIMIT);
        assertEquals(0, buffer.inFlightSize());
        assertUnwritable(10000 + 2 * OVERHEAD - LOW + 1);
        // What is flushed now counts too.
        addFlushed(100);
        assertEquals(0, buffer.inFlightSize());
        assertUnwritable(10100 + 3 * OVERHEAD - LOW + 1);
        assertEquals(Collections.singletonList(false), events);
    }

    /**
     * A listener of the completed write writes and flushes while the completion is processed: it sees the messages
     * queued behind the write in flight, what it writes counting until it flushes, and what it flushes in flight.
     */
    @Test
    public void listenerThatWritesAndFlushesDuringCompletion() {
        setUp();
        final List<Object> seen = new ArrayList<Object>();
        ChannelPromise promise = channel.newPromise();
        promise.addListener(new ChannelFutureListener() {
            @Override
            public void operationComplete(ChannelFuture future) {
                seen.add(buffer.isWritable());
                seen.add(buffer.bytesBeforeUnwritable());
                add(9000);
                seen.add(buffer.isWritable());
                seen.add(buffer.bytesBeforeWritable());
                // As the channel's flush() does; the transport's write is still outstanding.
                buffer.addFlush();
                seen.add(buffer.isWritable());
                seen.add(buffer.bytesBeforeUnwritable());
                seen.add(buffer.inFlightSize());
            }
        });
        addFlushed(6000, promise);
        buffer.setBytesInFlight(6000, LIMIT);
        addFlushed(2000);
        assertWritable(HIGH + 1);

        buffer.removeBytes(6000);
        assertEquals(Arrays.<Object>asList(
                // The completed message (still pending) and the queued one are in flight.
                true, (long) HIGH + 1,
                // 9000 unflushed bytes count: unwritable.
                false, (long) 9000 + OVERHEAD - LOW + 1,
                // Flushed behind the outstanding write: in flight, writable again.
                true, (long) HIGH + 1, (long) 6000 + 2000 + 9000 + 3 * OVERHEAD), seen);
        // The completed message left: the queued ones stay in flight until the transport says otherwise.
        assertEquals(11000 + 2 * OVERHEAD, buffer.inFlightSize());
        assertEquals(11000 + 2 * OVERHEAD, buffer.totalPendingWriteBytes());
        assertWritable(HIGH + 1);
        channel.runPendingTasks();
        assertEquals(Arrays.asList(false, true), events);

        buffer.setBytesInFlight(11000, LIMIT);
        buffer.removeBytes(11000);
        buffer.setBytesInFlight(0, LIMIT);
        assertEquals(0, buffer.inFlightSize());
        assertEquals(0, buffer.totalPendingWriteBytes());
        assertEquals(Arrays.asList(false, true), events);
    }

    /**
     * A handler that writes more than the high water mark and flushes from each writability event: the event that its
     * flush causes is fired later, from a task, so the handler is never reentered (with the event fired from the flush,
     * each level would flush again, once per high water mark up to the limit).
     */
    @Test
    public void writabilityEventOfAFlushDoesNotReenterTheFlush() {
        setUp();
        final int[] depth = new int[2];
        final int[] writes = new int[1];
        channel.pipeline().addFirst(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                depth[0]++;
                depth[1] = Math.max(depth[1], depth[0]);
                if (ctx.channel().isWritable() && writes[0] < 100) {
                    writes[0]++;
                    add(HIGH);
                    buffer.addFlush();
                }
                depth[0]--;
                ctx.fireChannelWritabilityChanged();
            }
        });
        addFlushed(1);
        buffer.setBytesInFlight(1, 1024 * 1024);
        add(HIGH);
        buffer.addFlush();
        for (int i = 0; i < 200 && writes[0] < 100; i++) {
            channel.runPendingTasks();
        }
        assertEquals(100, writes[0]);
        // Each of the handler's writes is unwritable until flushed: that event is fired from the write, one level in.
        assertEquals(2, depth[1]);
        assertEquals(1 + 101 * (HIGH + OVERHEAD) + OVERHEAD, buffer.totalPendingWriteBytes());
        assertWritable(HIGH + 1);
    }

    /** A listener that closes the channel fails the queued messages: nothing stays in flight or pending. */
    @Test
    public void listenerThatClosesDuringCompletion() {
        setUp();
        ChannelPromise promise = channel.newPromise();
        promise.addListener(ChannelFutureListener.CLOSE);
        addFlushed(1000, promise);
        buffer.setBytesInFlight(1000, LIMIT);
        ByteBuf queued = addFlushed(HIGH);
        buffer.removeBytes(1000);
        assertFalse(channel.isOpen());
        assertEquals(0, queued.refCnt());
        assertEquals(0, buffer.totalPendingWriteBytes());
        assertEquals(0, buffer.inFlightSize());
    }

    /** A message cancelled before its flush weighs nothing in flight. */
    @Test
    public void cancelledMessageWeighsNothing() {
        setUp();
        outstandingWrite(1000, LIMIT);
        ChannelPromise cancelled = channel.newPromise();
        add(2000, cancelled);
        assertTrue(cancelled.cancel(false));
        buffer.addFlush();
        assertEquals(1000 + OVERHEAD, buffer.inFlightSize());
        assertEquals(1000 + OVERHEAD, buffer.totalPendingWriteBytes());
        buffer.removeBytes(1000);
        assertEquals(0, buffer.inFlightSize());
    }

    @Test
    public void negativeLimitIsRejected() {
        setUp();
        addFlushed(1000);
        assertThrows(IllegalArgumentException.class, new org.junit.jupiter.api.function.Executable() {
            @Override
            public void execute() {
                buffer.setBytesInFlight(1000, -1);
            }
        });
        assertEquals(0, buffer.inFlightSize());
    }

    /**
     * The memory bound: a handler that writes 1000-byte messages while the channel is writable, and a transport that
     * keeps one write outstanding which takes 10 bytes each time (a slow peer): the buffer never holds more than the
     * high water mark plus the limit plus one message of pending size.
     */
    @Test
    public void memoryStaysBoundedWithSlowCompletions() {
        setUp();
        long readable = 0;
        long maxPending = 0;
        addFlushed(1000);
        readable += 1000;
        buffer.setBytesInFlight(readable, LIMIT);
        for (int cycle = 0; cycle < 1000; cycle++) {
            while (buffer.isWritable()) {
                addFlushed(1000);
                readable += 1000;
                maxPending = Math.max(maxPending, buffer.totalPendingWriteBytes());
            }
            buffer.removeBytes(10);
            readable -= 10;
            buffer.setBytesInFlight(readable, LIMIT);
        }
        assertTrue(maxPending <= HIGH + LIMIT + 1000 + OVERHEAD, "max pending " + maxPending);
        assertTrue(maxPending > LIMIT + LOW, "max pending " + maxPending);
    }

    /**
     * Random writes, flushes, completions and submissions of a transport that keeps one write outstanding, against a
     * model kept by this test: per flushed message its pending size, whether a write is outstanding, and the
     * hysteresis of the water marks.
     */
    @Test
    public void randomOperationsMatchModel() {
        setUp();
        Random random = new Random(15);
        List<Integer> flushedSizes = new ArrayList<Integer>();
        List<Integer> unflushedSizes = new ArrayList<Integer>();
        boolean outstanding = false;
        boolean writable = true;
        for (int step = 0; step < 20000; step++) {
            int op = random.nextInt(10);
            if (op < 4) {
                int size = 1 + random.nextInt(4000);
                add(size);
                unflushedSizes.add(size);
            } else if (op < 6) {
                buffer.addFlush();
                flushedSizes.addAll(unflushedSizes);
                unflushedSizes.clear();
            } else if (op < 8 && outstanding) {
                // The completion: the first messages were written; then the next write, or none.
                int messages = random.nextInt(flushedSizes.size() + 1);
                long bytes = 0;
                for (int i = 0; i < messages; i++) {
                    bytes += flushedSizes.remove(0);
                }
                buffer.removeBytes(bytes);
                outstanding = !flushedSizes.isEmpty() && random.nextInt(4) != 0;
                buffer.setBytesInFlight(outstanding ? sum(flushedSizes, 0) : 0, LIMIT);
            } else if (!outstanding && !flushedSizes.isEmpty()) {
                outstanding = true;
                buffer.setBytesInFlight(sum(flushedSizes, 0), LIMIT);
            }
            long pending = sum(flushedSizes, OVERHEAD) + sum(unflushedSizes, OVERHEAD);
            long inFlight = outstanding ? sum(flushedSizes, OVERHEAD) : 0;
            long counted = pending - Math.min(inFlight, LIMIT);
            if (counted > HIGH) {
                writable = false;
            } else if (counted < LOW) {
                writable = true;
            }
            assertEquals(pending, buffer.totalPendingWriteBytes(), "step " + step);
            assertEquals(inFlight, buffer.inFlightSize(), "step " + step);
            assertEquals(writable, buffer.isWritable(), "step " + step);
            assertEquals(writable ? HIGH - counted + 1 : 0, buffer.bytesBeforeUnwritable(), "step " + step);
        }
        buffer.addFlush();
        buffer.removeBytes(sum(flushedSizes, 0) + sum(unflushedSizes, 0));
        buffer.setBytesInFlight(0, LIMIT);
        assertEquals(0, buffer.totalPendingWriteBytes());
    }

    private static long sum(List<Integer> sizes, int overheadEach) {
        long sum = 0;
        for (int size : sizes) {
            sum += size + overheadEach;
        }
        return sum;
    }
}
