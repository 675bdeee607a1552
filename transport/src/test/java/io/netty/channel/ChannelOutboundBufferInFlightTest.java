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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.netty.channel.ChannelOutboundBuffer.CHANNEL_OUTBOUND_BUFFER_ENTRY_OVERHEAD;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link ChannelOutboundBuffer#incrementInFlightBytes(long)} and friends: bytes handed to the operating system by a
 * write that has not completed stay pending but do not count against the write buffer water marks.
 */
public class ChannelOutboundBufferInFlightTest {
    private static final int LOW = 4096;
    private static final int HIGH = 8192;
    private static final int OVERHEAD = CHANNEL_OUTBOUND_BUFFER_ENTRY_OVERHEAD;

    /** What {@code channelWritabilityChanged} saw: {@code isWritable()} at each event. */
    private final List<Boolean> events = new ArrayList<Boolean>();
    private EmbeddedChannel channel;
    private ChannelOutboundBuffer buffer;

    @BeforeEach
    public void setUp() {
        channel = new EmbeddedChannel(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                events.add(ctx.channel().isWritable());
            }
        });
        channel.config().setWriteBufferWaterMark(new WriteBufferWaterMark(LOW, HIGH));
        buffer = channel.unsafe().outboundBuffer();
    }

    @AfterEach
    public void tearDown() {
        channel.finishAndReleaseAll();
    }

    /** Adds a flushed message of {@code size} bytes, without letting the channel write it. */
    private ByteBuf addFlushed(int size) {
        ByteBuf buf = Unpooled.buffer(size).writeZero(size);
        buffer.addMessage(buf, size, channel.newPromise());
        buffer.addFlush();
        return buf;
    }

    private long counted() {
        return buffer.totalPendingWriteBytes() - Math.min(buffer.inFlightBytes(), HIGH);
    }

    private void assertConsistent() {
        long counted = counted();
        if (buffer.isWritable()) {
            assertTrue(counted <= HIGH, "writable with " + counted + " counted bytes");
            assertEquals(HIGH - counted + 1, buffer.bytesBeforeUnwritable());
            assertEquals(0, buffer.bytesBeforeWritable());
        } else {
            assertTrue(counted >= LOW, "unwritable with " + counted + " counted bytes");
            assertEquals(0, buffer.bytesBeforeUnwritable());
            assertEquals(counted - LOW + 1, buffer.bytesBeforeWritable());
        }
        assertEquals(buffer.isWritable(), channel.isWritable());
        assertEquals(buffer.bytesBeforeUnwritable(), channel.bytesBeforeUnwritable());
        assertEquals(buffer.bytesBeforeWritable(), channel.bytesBeforeWritable());
        assertTrue(buffer.inFlightBytes() >= 0);
        assertTrue(buffer.inFlightBytes() <= buffer.totalPendingWriteBytes());
        if (!events.isEmpty()) {
            assertEquals(buffer.isWritable(), events.get(events.size() - 1), "last event " + events);
        }
        for (int i = 1; i < events.size(); i++) {
            assertTrue(events.get(i) != events.get(i - 1), "events alternate: " + events);
        }
    }

    @Test
    public void inFlightBytesDoNotCountAgainstWaterMarks() {
        addFlushed(HIGH + 1000);
        assertFalse(buffer.isWritable());
        assertConsistent();

        buffer.incrementInFlightBytes(HIGH + 1000);
        assertTrue(buffer.isWritable());
        assertEquals(HIGH + 1000, buffer.inFlightBytes());
        assertEquals(HIGH + 1000 + OVERHEAD, buffer.totalPendingWriteBytes());
        // The high water mark of in-flight bytes stops counting: 1000 bytes and the entry's overhead still count.
        assertEquals(HIGH - (1000 + OVERHEAD) + 1, buffer.bytesBeforeUnwritable());
        assertConsistent();

        buffer.completeInFlightBytes(HIGH + 1000, HIGH + 1000);
        assertEquals(0, buffer.inFlightBytes());
        assertEquals(0, buffer.totalPendingWriteBytes());
        assertEquals(HIGH + 1, buffer.bytesBeforeUnwritable());
        assertConsistent();
        // One event per flip: unwritable when added, writable when put in flight, none on completion.
        assertEquals(listOf(false, true), events);
    }

    @Test
    public void hysteresisAppliesToCountedBytes() {
        addFlushed(HIGH + 2000);
        assertFalse(buffer.isWritable());
        // Counted bytes between the marks: stays unwritable.
        buffer.incrementInFlightBytes(5000);
        assertFalse(buffer.isWritable());
        assertConsistent();
        // Below the low mark: writable.
        buffer.incrementInFlightBytes(HIGH - 5000);
        assertTrue(buffer.isWritable());
        assertConsistent();
        // Back between the marks: stays writable.
        buffer.decrementInFlightBytes(2500);
        assertTrue(counted() > LOW && counted() < HIGH);
        assertTrue(buffer.isWritable());
        assertConsistent();
        // Above the high mark: unwritable.
        buffer.decrementInFlightBytes(buffer.inFlightBytes());
        assertFalse(buffer.isWritable());
        assertConsistent();
        assertEquals(listOf(false, true, false), events);
    }

    @Test
    public void partialCompletionCountsTheRestAgain() {
        ByteBuf first = addFlushed(3000);
        ByteBuf second = addFlushed(3000);
        buffer.incrementInFlightBytes(6000);
        assertTrue(buffer.isWritable());
        // 4000 bytes written: the first message is gone, the second is 1000 bytes in and counts again.
        buffer.completeInFlightBytes(6000, 4000);
        assertEquals(0, first.refCnt());
        assertEquals(1000, second.readerIndex());
        assertEquals(0, buffer.inFlightBytes());
        assertEquals(3000 + OVERHEAD, buffer.totalPendingWriteBytes());
        assertTrue(buffer.isWritable());
        assertConsistent();
        assertEquals(listOf(), events);
    }

    @Test
    public void partialCompletionAboveHighMarkMakesUnwritable() {
        addFlushed(HIGH + 1000);
        buffer.incrementInFlightBytes(HIGH + 1000);
        assertTrue(buffer.isWritable());
        buffer.completeInFlightBytes(HIGH + 1000, 500);
        assertFalse(buffer.isWritable());
        assertConsistent();
        assertEquals(listOf(false, true, false), events);
    }

    /**
     * Unwritable, with a message in flight and more behind it: a completion that writes everything in flight leaves
     * the channel unwritable without an event, where removing the written bytes before the in-flight ones count
     * again would make it writable and then unwritable.
     */
    @Test
    public void completionUpdatesWritabilityOnce() {
        addFlushed(HIGH);
        addFlushed(2 * HIGH);
        assertFalse(buffer.isWritable());
        buffer.incrementInFlightBytes(HIGH);
        assertFalse(buffer.isWritable());
        buffer.completeInFlightBytes(HIGH, HIGH);
        assertFalse(buffer.isWritable());
        assertConsistent();
        assertEquals(listOf(false), events);
    }

    /**
     * Writable between the marks with a message in flight: a completion that writes it all stays writable, where
     * counting the in-flight bytes again before removing the written ones would flip it to unwritable, for good.
     */
    @Test
    public void fullCompletionBetweenMarksStaysWritable() {
        addFlushed(HIGH + 1000);
        buffer.incrementInFlightBytes(HIGH + 1000);
        addFlushed(LOW + 100);
        assertTrue(buffer.isWritable());
        buffer.completeInFlightBytes(HIGH + 1000, HIGH + 1000);
        assertTrue(buffer.isWritable());
        assertEquals(LOW + 100 + OVERHEAD, buffer.totalPendingWriteBytes());
        assertConsistent();
        assertEquals(listOf(false, true), events);
    }

    @Test
    public void failedWriteCountsItsBytesAgain() {
        addFlushed(HIGH + 1000);
        buffer.incrementInFlightBytes(HIGH + 1000);
        assertTrue(buffer.isWritable());
        buffer.decrementInFlightBytes(HIGH + 1000);
        assertFalse(buffer.isWritable());
        assertEquals(HIGH + 1000 + OVERHEAD, buffer.totalPendingWriteBytes());
        assertConsistent();
        assertEquals(listOf(false, true, false), events);
    }

    /** In-flight bytes beyond the high water mark still count. */
    @Test
    public void atMostTheHighWaterMarkOfInFlightBytesStopsCounting() {
        addFlushed(4 * HIGH);
        buffer.incrementInFlightBytes(4 * HIGH);
        assertFalse(buffer.isWritable());
        assertEquals(3 * HIGH + OVERHEAD - LOW + 1, buffer.bytesBeforeWritable());
        assertConsistent();
    }

    /**
     * The memory bound: a handler that writes 1000-byte messages while the channel is writable, and a transport
     * that puts everything flushed in flight in one write that completes after 10 bytes each time (a slow peer):
     * the buffer never holds more than twice the high water mark plus one message.
     */
    @Test
    public void memoryStaysBoundedWithSlowCompletions() {
        long readable = 0;
        long maxPending = 0;
        for (int cycle = 0; cycle < 1000; cycle++) {
            while (buffer.isWritable()) {
                addFlushed(1000);
                readable += 1000;
                maxPending = Math.max(maxPending, buffer.totalPendingWriteBytes());
            }
            if (buffer.inFlightBytes() > 0) {
                buffer.completeInFlightBytes(buffer.inFlightBytes(), 10);
                readable -= 10;
            }
            buffer.incrementInFlightBytes(readable);
            assertConsistent();
        }
        assertTrue(maxPending <= 2 * HIGH + 1000 + OVERHEAD, "max pending " + maxPending);
        assertTrue(maxPending > HIGH, "max pending " + maxPending);
    }

    @Test
    public void inFlightBytesNeverNegative() {
        addFlushed(100);
        buffer.incrementInFlightBytes(100);
        assertThrows(IllegalArgumentException.class, () -> buffer.decrementInFlightBytes(101));
        assertThrows(IllegalArgumentException.class, () -> buffer.completeInFlightBytes(101, 0));
        assertThrows(IllegalArgumentException.class, () -> buffer.incrementInFlightBytes(-1));
        assertThrows(IllegalArgumentException.class, () -> buffer.decrementInFlightBytes(-1));
        assertEquals(100, buffer.inFlightBytes());
        buffer.incrementInFlightBytes(0);
        buffer.decrementInFlightBytes(0);
        assertEquals(100, buffer.inFlightBytes());
        buffer.completeInFlightBytes(100, 100);
        assertEquals(0, buffer.inFlightBytes());
        assertConsistent();
    }

    @Test
    public void closeForgetsInFlightBytes() throws Exception {
        ByteBuf buf = addFlushed(2 * HIGH);
        buffer.incrementInFlightBytes(2 * HIGH);
        channel.close().sync();
        assertEquals(0, buffer.inFlightBytes());
        assertEquals(0, buffer.totalPendingWriteBytes());
        assertEquals(0, buf.refCnt());
    }

    /**
     * Bytes added and removed by other threads (as writes from outside the event loop do) while the event loop puts
     * bytes in and out of flight, on a channel registered to a real event loop.
     */
    @Test
    public void concurrentIncrementsFromOtherThreads() throws Exception {
        final int threads = 4;
        final int rounds = 20000;
        EventLoopGroup group = new DefaultEventLoopGroup(1);
        try {
            final List<Boolean> loopEvents = new ArrayList<Boolean>();
            final Channel local = new LocalChannel();
            local.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                @Override
                public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                    loopEvents.add(ctx.channel().isWritable());
                }
            });
            local.config().setWriteBufferWaterMark(new WriteBufferWaterMark(LOW, HIGH));
            group.register(local).sync();
            final ChannelOutboundBuffer localBuffer = local.unsafe().outboundBuffer();
            local.eventLoop().submit(new Runnable() {
                @Override
                public void run() {
                    ByteBuf buf = Unpooled.buffer(HIGH).writeZero(HIGH);
                    localBuffer.addMessage(buf, HIGH, local.newPromise());
                    localBuffer.addFlush();
                }
            }).sync();

            final CountDownLatch done = new CountDownLatch(threads);
            for (int t = 0; t < threads; t++) {
                new Thread(new Runnable() {
                    @Override
                    public void run() {
                        try {
                            for (int i = 0; i < rounds; i++) {
                                localBuffer.incrementPendingOutboundBytes(1000);
                                localBuffer.decrementPendingOutboundBytes(1000);
                            }
                        } finally {
                            done.countDown();
                        }
                    }
                }).start();
            }
            final List<String> violations = new ArrayList<String>();
            while (done.getCount() > 0) {
                local.eventLoop().submit(new Runnable() {
                    @Override
                    public void run() {
                        for (int i = 0; i < 100; i++) {
                            localBuffer.incrementInFlightBytes(HIGH);
                            if (localBuffer.inFlightBytes() > localBuffer.totalPendingWriteBytes()) {
                                violations.add("in flight " + localBuffer.inFlightBytes() + " > pending "
                                        + localBuffer.totalPendingWriteBytes());
                            }
                            localBuffer.decrementInFlightBytes(HIGH);
                        }
                    }
                }).sync();
            }
            assertTrue(done.await(30, TimeUnit.SECONDS));
            // Settle: let queued writability events run, then compare the final state.
            local.eventLoop().submit(new Runnable() {
                @Override
                public void run() {
                }
            }).sync();
            local.eventLoop().submit(new Runnable() {
                @Override
                public void run() {
                    assertEquals(HIGH + OVERHEAD, localBuffer.totalPendingWriteBytes());
                    assertEquals(0, localBuffer.inFlightBytes());
                    // Counted bytes are at HIGH + OVERHEAD: a final in-flight increment must make it writable.
                    localBuffer.incrementInFlightBytes(HIGH);
                    assertTrue(localBuffer.isWritable());
                    assertEquals(HIGH - OVERHEAD + 1, localBuffer.bytesBeforeUnwritable());
                    localBuffer.completeInFlightBytes(HIGH, HIGH);
                    assertEquals(0, localBuffer.totalPendingWriteBytes());
                }
            }).sync();
            assertEquals(listOf(), violations);
            assertTrue(loopEvents.size() > 0);
            local.close().sync();
        } finally {
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }

    private static List<Object> listOf(Object... values) {
        List<Object> list = new ArrayList<Object>();
        for (Object v : values) {
            list.add(v);
        }
        return list;
    }
}
