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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.SocketAddress;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NotYetConnectedException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static io.netty.channel.ChannelOutboundBuffer.CHANNEL_OUTBOUND_BUFFER_ENTRY_OVERHEAD;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link AbstractChannel.AbstractUnsafe#setUncountedFlushedLimit(long)}: while the limit is not 0, up to that much of
 * the pending size of the flushed, not yet removed messages stops counting against the write buffer water marks, so
 * the counted size is {@code totalPendingWriteBytes() - min(flushed pending size, limit)}; writability, its events and
 * {@code bytesBeforeUnwritable()}/{@code bytesBeforeWritable()} follow it. Without the hook the accounting is
 * unchanged. A flush only adds to the flushed pending size; writability is evaluated for it by
 * {@code AbstractUnsafe.flush0()}, with its reentrance guard set and right before {@code doWrite}, and by every call of
 * the hook, so a writability event can come from within {@code Channel#flush()} or from the hook.
 * <p>
 * The test channel behaves like io_uring: {@code doWrite} never drains the buffer; when no write is outstanding it
 * submits one ({@link TestChannel#submit()}), which calls the hook with the test's limit, as io_uring does when it
 * submits a write. A test completes writes with {@link TestChannel#complete()} and the other {@code complete...()}
 * helpers, which remove messages and then call the hook again: with the limit if flushed messages are left (io_uring
 * submits the next write), with {@code 0} if not (no write is outstanding). Everything runs on a
 * {@link DefaultEventLoop}, so an event that is not fired synchronously is not seen by the assertions that follow the
 * call; a test that needs such events drains the loop's tasks first. Expected values are worked out from the water
 * marks, the message sizes and the per-entry overhead.
 */
public class ChannelOutboundBufferUncountedFlushedTest {
    private static final int LOW = 32 * 1024;
    private static final int HIGH = 64 * 1024;
    private static final int MSG = 16 * 1024;
    /** The pending size of one {@link #MSG}-byte buffer under the default size estimator. */
    private static final long MP = MSG + CHANNEL_OUTBOUND_BUFFER_ENTRY_OVERHEAD;

    private static final DefaultEventLoop LOOP = new DefaultEventLoop();

    @AfterAll
    public static void stopLoop() {
        LOOP.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
    }

    @Test
    public void withoutLimitAccountingIsUpstreams() {
        onLoop(ch -> {
            write(ch, 3);
            ch.flush();
            assertState(ch, true, 3 * MP, 3 * MP, 0);
            ch.writeAndFlush(msg(MSG));
            // Flushed and above the high water mark: it all counts, as upstream.
            assertState(ch, false, 4 * MP, 4 * MP, 0);
            assertEquals(0, ch.bytesBeforeUnwritable());
            assertEquals(Collections.singletonList("false"), ch.events);
            assertTrue(ch.complete());
            assertTrue(ch.complete());
            // 2 x MP is still above the low water mark.
            assertState(ch, false, 2 * MP, 2 * MP, 0);
            assertTrue(ch.complete());
            assertState(ch, true, MP, MP, 0);
            assertTrue(ch.complete());
            assertFalse(ch.writing);
            assertEquals(Arrays.asList("false", "true"), ch.events);
        });
    }

    @Test
    public void writingWhileWritableHoldsAtMostTwoHighWaterMarksWithLimitHigh() {
        long max = fillAndComplete(HIGH, 2L * HIGH + MP);
        // More than one high water mark pending (in fact more than two): the uncounted part was used.
        assertTrue(max > 2L * HIGH, "pending " + max);
    }

    @Test
    public void writingWhileWritableBoundScalesWithTheLimit() {
        long max = fillAndComplete(16L * HIGH, 17L * HIGH + MP);
        // Above what a limit of one high water mark allows: the bound is the limit's, not a fixed one.
        assertTrue(max > 2L * HIGH + MP, "pending " + max);
    }

    /**
     * A handler writes and flushes {@link #MSG}-byte buffers while the channel is writable (again on each writable
     * event); the transport completes one message at a time, 200 times. The pending size never exceeds
     * {@code bound}. Returns the most pending size seen.
     */
    private static long fillAndComplete(long limit, long bound) {
        Writer writer = new Writer(bound);
        onLoop(ch -> {
            ch.pipeline().addLast(writer);
            ch.limit(limit);
            writer.fill(ch);
            int initialWrites = writer.writes;
            assertFalse(ch.isWritable());
            for (int i = 0; i < 200; i++) {
                assertTrue(ch.complete());
                assertTrue(ch.unsafe().outboundBuffer().totalPendingWriteBytes() <= bound);
            }
            assertTrue(writer.writes > initialWrites + 100, "the writer resumed on writable events");
        });
        return writer.max;
    }

    @Test
    public void bytesBeforeFollowTheCountedPendingSize() {
        onLoop(ch -> {
            // The estimator's size, not the readable bytes, is what counts, flushed or not.
            long p = 20_000 + CHANNEL_OUTBOUND_BUFFER_ENTRY_OVERHEAD;
            ch.config().setMessageSizeEstimator(() -> msg -> 20_000);
            ch.limit(HIGH);
            ch.writeAndFlush(msg(MSG));
            ch.writeAndFlush(msg(MSG));
            // Flushed below the limit: all of it is uncounted.
            assertState(ch, true, 2 * p, 2 * p, HIGH);
            write(ch, 3);
            assertState(ch, true, 5 * p, 2 * p, HIGH);
            ch.write(msg(MSG));
            assertState(ch, false, 6 * p, 2 * p, HIGH);
            ch.flush();
            // Flushed above the limit: the limit is uncounted, the rest counts (55040 > LOW: still unwritable).
            assertState(ch, false, 6 * p, 6 * p, HIGH);
            assertTrue(ch.complete());
            assertState(ch, false, 5 * p, 5 * p, HIGH);
            assertTrue(ch.complete());
            assertState(ch, true, 4 * p, 4 * p, HIGH);
            assertEquals(Arrays.asList("false", "true"), ch.events);
        });
    }

    @Test
    public void flushThatSubmitsAWriteMakesWritableFromTheFlush() {
        onLoop(ch -> {
            ch.limit(HIGH);
            write(ch, 4);
            // 4 x MP > HIGH, nothing flushed: unwritable, from the write.
            assertState(ch, false, 4 * MP, 0, HIGH);
            assertEquals(Collections.singletonList("false"), ch.events);
            assertEquals(0, ch.hooks);
            ch.flush();
            // doWrite submitted a write, whose hook call left all but 384 bytes uncounted: writable, fired
            // synchronously from inside the flush.
            assertEquals(1, ch.hooks);
            assertState(ch, true, 4 * MP, 4 * MP, HIGH);
            assertEquals(Arrays.asList("false", "true@flush"), ch.events);
            write(ch, 4);
            assertState(ch, false, 8 * MP, 4 * MP, HIGH);
            ch.flush();
            // The limit is used up: this flush leaves the channel unwritable and fires nothing.
            assertState(ch, false, 8 * MP, 8 * MP, HIGH);
            assertEquals(Arrays.asList("false", "true@flush", "false"), ch.events);
            assertLastEventIsWritability(ch);
        });
    }

    @Test
    public void flushBehindAnOutstandingWriteMakesWritableFromFlush0() {
        onLoop(ch -> {
            ch.limit(16L * HIGH);
            ch.writeAndFlush(msg(MSG));
            assertTrue(ch.writing);
            assertEquals(1, ch.hooks);
            write(ch, 4);
            assertState(ch, false, 5 * MP, MP, 16L * HIGH);
            ch.flush();
            // No write submitted and no hook call: flush0() evaluated the flush and fired the event from inside it.
            assertEquals(1, ch.hooks);
            assertState(ch, true, 5 * MP, 5 * MP, 16L * HIGH);
            assertEquals(Arrays.asList("false", "true@flush"), ch.events);
            for (int i = 0; i < 5; i++) {
                assertTrue(ch.complete());
            }
            // Nothing left: the transport called the hook with 0 and has no write outstanding.
            assertFalse(ch.writing);
            assertState(ch, true, 0, 0, 0);
            write(ch, 4);
            ch.flush();
            assertTrue(ch.writing);
            assertState(ch, true, 4 * MP, 4 * MP, 16L * HIGH);
            assertEquals(Arrays.asList("false", "true@flush", "false", "true@flush"), ch.events);
        });
    }

    @Test
    public void flushFromTheEventOfFlush0DoesNotReenterAndTheHookReevaluates() {
        onLoop(ch -> {
            List<Integer> writes = new ArrayList<>();
            ch.pipeline().addLast(writeFiveAndFlushOnceWritable(writes));
            ch.limit(16L * HIGH);
            ch.writeAndFlush(msg(MSG));
            write(ch, 4);
            ch.flush();
            // The handler ran once: its flush fired no event that could reenter it.
            assertEquals(Collections.singletonList(5), writes);
            // The handler's flush, from the event that flush0() fired, returned at once: its messages are flushed but
            // were not evaluated, so all five count (5 x MP > HIGH) and the channel is unwritable.
            assertEquals(Arrays.asList("false", "true@flush", "false@flush"), ch.events);
            assertEquals(10 * MP, ch.unsafe().outboundBuffer().totalPendingWriteBytes());
            assertFalse(ch.isWritable());
            assertEquals(5 * MP - LOW + 1, ch.bytesBeforeWritable());
            // The hook with an unchanged limit evaluates them, as io_uring's call after a write completes or after a
            // change of the water marks that leaves its limit as it is.
            ch.hook(16L * HIGH);
            assertState(ch, true, 10 * MP, 10 * MP, 16L * HIGH);
            assertEquals(Arrays.asList("false", "true@flush", "false@flush", "true"), ch.events);
        });
    }

    @Test
    public void changingTheLimitReevaluatesWritabilityAtOnce() {
        onLoop(ch -> {
            write(ch, 5);
            ch.flush();
            // The write was submitted with a limit of 0.
            assertTrue(ch.writing);
            assertState(ch, false, 5 * MP, 5 * MP, 0);
            assertEquals(Collections.singletonList("false"), ch.events);
            ch.limit(HIGH);
            assertState(ch, true, 5 * MP, 5 * MP, HIGH);
            assertEquals(Arrays.asList("false", "true"), ch.events);
            // Counted 42400: between the water marks, so no change and no event.
            ch.limit(40_000);
            assertState(ch, true, 5 * MP, 5 * MP, 40_000);
            assertEquals(2, ch.events.size());
            ch.limit(0);
            assertState(ch, false, 5 * MP, 5 * MP, 0);
            assertEquals(Arrays.asList("false", "true", "false"), ch.events);
            ch.limit(16L * HIGH);
            assertState(ch, true, 5 * MP, 5 * MP, 16L * HIGH);
            assertEquals(Arrays.asList("false", "true", "false", "true"), ch.events);
            assertThrows(IllegalArgumentException.class, () -> ch.hook(-1));
        });
    }

    @Test
    public void removedMessageStaysUncountedWhileItsPromiseIsNotified() {
        onLoop(ch -> {
            ch.limit(HIGH);
            ChannelFuture first = ch.writeAndFlush(msg(MSG));
            ChannelFuture second = ch.writeAndFlush(msg(MSG));
            write(ch, 2);
            ch.flush();
            write(ch, 1);
            assertState(ch, true, 5 * MP, 4 * MP, HIGH);
            List<Long> seen = new ArrayList<>();
            ChannelFutureListener listener = f -> {
                seen.add(ch.unsafe().outboundBuffer().totalPendingWriteBytes());
                seen.add(ch.bytesBeforeUnwritable());
            };
            first.addListener(listener);
            second.addListener(listener);
            assertTrue(ch.complete());
            // The listener saw the written message still pending (as on NIO) and still uncounted (on NIO it counts
            // until its listeners ran): 4 MP flushed, of which the limit (HIGH) stops counting.
            assertEquals(Arrays.asList(5 * MP, 2L * HIGH - 5 * MP + 1), seen);
            assertState(ch, true, 4 * MP, 3 * MP, HIGH);
            seen.clear();
            assertTrue(ch.completeWithFailure(new IOException("write failed")));
            assertInstanceOf(IOException.class, second.cause());
            assertEquals(Arrays.asList(4 * MP, HIGH - MP + 1), seen);
            assertState(ch, true, 3 * MP, 2 * MP, HIGH);
            // One whole message and part of the next: only the whole one leaves the flushed pending size.
            ch.completeBytes(MSG + 100);
            assertState(ch, true, 2 * MP, MP, HIGH);
        });
    }

    /**
     * A listener of a written message that writes, as ChunkedWriteHandler does: 64 KiB written (unwritable), flushed
     * (the limit makes it writable), 40 KiB written behind it without a flush; when the 64 KiB complete, their
     * listener writes a byte. The channel ends writable with the 40 KiB and the byte pending, after one unwritable and
     * one writable event, as on NIO, where the flush writes the 64 KiB and runs the listener before the 40 KiB.
     */
    @Test
    public void listenerThatWritesDuringACompletionEndsWritableAsOnNio() {
        onLoop(ch -> {
            ch.limit(HIGH);
            ChannelFuture big = ch.write(msg(HIGH));
            big.addListener(f -> ch.write(msg(1)));
            ch.flush();
            ch.write(msg(40 * 1024));
            assertTrue(ch.isWritable());
            assertTrue(ch.complete());
            assertEquals(40 * 1024 + 1 + 2 * CHANNEL_OUTBOUND_BUFFER_ENTRY_OVERHEAD,
                    ch.unsafe().outboundBuffer().totalPendingWriteBytes());
            assertTrue(ch.isWritable());
            assertEquals(Arrays.asList("false", "true@flush"), ch.events);
        });
    }

    @Test
    public void closeFailsEverythingWithoutWritabilityEvents() {
        onLoop(ch -> {
            ch.limit(HIGH);
            List<ChannelFuture> writes = write(ch, 4);
            ch.flush();
            writes.addAll(write(ch, 3));
            // Writable only because of the uncounted part; without the first flushed message (as while failing the
            // flushed ones) the counted size would exceed the high water mark.
            assertState(ch, true, 7 * MP, 4 * MP, HIGH);
            assertEquals(Arrays.asList("false", "true@flush"), ch.events);
            ChannelOutboundBuffer buffer = ch.unsafe().outboundBuffer();
            assertTrue(ch.close().isSuccess());
            for (ChannelFuture f : writes) {
                assertInstanceOf(ClosedChannelException.class, f.cause());
            }
            // Failing the flushed messages and dropping the unflushed ones fire no writability event.
            assertEquals(Arrays.asList("false", "true@flush"), ch.events);
            // A closed channel has no buffer: not writable, as upstream; the hook is a no-op.
            assertFalse(ch.isWritable());
            assertEquals(0, ch.bytesBeforeUnwritable());
            assertEquals(Long.MAX_VALUE, ch.bytesBeforeWritable());
            ch.hook(HIGH);
            // The dropped buffer is empty and nothing of it is left uncounted.
            assertEquals(0, buffer.totalPendingWriteBytes());
            assertTrue(buffer.isWritable());
            assertEquals(HIGH + 1, buffer.bytesBeforeUnwritable());
            assertEquals(0, buffer.bytesBeforeWritable());
        });
    }

    /**
     * A removal that takes nothing from the pending size (a cancelled message) still leaves the flushed messages
     * behind it uncounted, including those a handler flushed from a writability event, which flush0() did not
     * evaluate: the transport's next hook call evaluates them, though the uncounted part did not change since the
     * removal.
     */
    @Test
    public void hookAfterRemovingACancelledMessageEvaluatesWhatTheRemovalLeftUncounted() {
        onLoop(ch -> {
            List<Integer> writes = new ArrayList<>();
            ch.pipeline().addLast(writeFiveAndFlushOnceWritable(writes));
            ch.limit(16L * HIGH);
            ch.writeAndFlush(msg(MSG));
            ChannelPromise cancelled = ch.newPromise();
            ch.write(msg(MSG), cancelled);
            assertTrue(cancelled.cancel(false));
            ch.flush();
            assertTrue(ch.complete());
            // The cancelled message is the oldest flushed one now.
            write(ch, 4);
            ch.flush();
            // flush0() made the four uncounted; the handler's five, flushed from that event, count.
            assertEquals(Collections.singletonList(5), writes);
            assertEquals(Arrays.asList("false", "true@flush", "false@flush"), ch.events);
            assertFalse(ch.isWritable());
            assertTrue(ch.complete()); // the cancelled message: nothing leaves the pending size
            assertState(ch, true, 9 * MP, 9 * MP, 16L * HIGH);
            assertEquals(Arrays.asList("false", "true@flush", "false@flush", "true"), ch.events);
        });
    }

    /**
     * A handler that closes the channel from the event flush0() fires for a flush: flush0() stops there, without
     * handing the closed channel's buffer to doWrite, and the close fails every message.
     */
    @Test
    public void closeFromTheEventOfFlush0StopsTheFlush() {
        onLoop(ch -> {
            ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                @Override
                public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                    if (ctx.channel().isWritable()) {
                        ctx.channel().close();
                    }
                    ctx.fireChannelWritabilityChanged();
                }
            });
            ch.limit(HIGH);
            List<ChannelFuture> writes = new ArrayList<>();
            writes.add(ch.writeAndFlush(msg(MSG)));
            writes.addAll(write(ch, 4));
            assertFalse(ch.isWritable());
            int doWrites = ch.doWrites;
            ch.flush();
            assertFalse(ch.isOpen());
            assertEquals(doWrites, ch.doWrites, "doWrite after the close");
            for (ChannelFuture f : writes) {
                assertInstanceOf(ClosedChannelException.class, f.cause());
            }
            assertEquals(Arrays.asList("false", "true@flush"), ch.events);
        });
    }

    /**
     * The first limit set from a writability event that addFlush() fires (a cancelled message's size leaving the
     * pending size) counts each flushed message once: once all are written, a new flush leaves only its own message
     * uncounted.
     */
    @Test
    public void firstLimitSetFromAnEventOfAddFlushCountsEachMessageOnce() {
        onLoop(ch -> {
            ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                @Override
                public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                    if (ctx.channel().isWritable() && ch.hooks == 0) {
                        ch.limit(HIGH);
                        ch.hook(HIGH);
                    }
                    ctx.fireChannelWritabilityChanged();
                }
            });
            ch.write(msg(1024));
            ChannelPromise cancelled = ch.newPromise();
            ch.write(msg(4 * MSG), cancelled);
            ch.write(msg(1024));
            assertFalse(ch.isWritable());
            assertTrue(cancelled.cancel(false));
            ch.flush();
            // Fired by the cancelled message's decrement inside addFlush(), which set the first limit.
            assertEquals(Arrays.asList("false", "true@flush"), ch.events);
            assertEquals(2, ch.hooks);
            while (ch.complete()) {
                // Until nothing is left; the last completion calls the hook with 0.
            }
            assertState(ch, true, 0, 0, 0);
            ch.writeAndFlush(msg(MSG));
            assertState(ch, true, MP, MP, HIGH);
        });
    }

    @Test
    public void cancelledMessageDoesNotAddToTheFlushedPendingSize() {
        onLoop(ch -> {
            ch.limit(HIGH);
            ChannelPromise cancelled = ch.newPromise();
            ch.write(msg(MSG), cancelled);
            write(ch, 2);
            assertTrue(cancelled.cancel(false));
            assertState(ch, true, 3 * MP, 0, HIGH);
            ch.flush();
            // Two flushed messages pending, both uncounted; the cancelled one is neither pending nor flushed.
            assertState(ch, true, 2 * MP, 2 * MP, HIGH);
            ch.writeAndFlush(msg(MSG));
            assertState(ch, true, 3 * MP, 3 * MP, HIGH);
            write(ch, 3);
            assertState(ch, true, 6 * MP, 3 * MP, HIGH);
            write(ch, 1);
            assertState(ch, false, 7 * MP, 3 * MP, HIGH);
            assertTrue(ch.complete()); // the cancelled entry
            assertState(ch, false, 7 * MP, 3 * MP, HIGH);
            assertTrue(ch.complete());
            assertState(ch, false, 6 * MP, 2 * MP, HIGH);
            assertEquals(Collections.singletonList("false"), ch.events);
        });
    }

    @Test
    public void unguardedWriterStartedByRaisingTheLimitDoesNotReenter() {
        unguardedWriter(false, 1, 2);
    }

    @Test
    public void unguardedWriterStartedByAFlushDoesNotReenter() {
        unguardedWriter(true, 1, 2);
    }

    /**
     * Each message is above the high water mark, so its write makes the channel unwritable and, while the limit has
     * room, its flush makes it writable again. The flush of a handler that runs from the hook or from a completion
     * fires that event from flush0(), one level more; the handler's flushes there return at once. Were the flush
     * evaluated outside flush0's guard, every message would nest one level deeper until the limit is used up.
     */
    @Test
    public void unguardedWriterOfMessagesAboveTheHighWaterMarkNestsAtMostOnceMore() {
        unguardedWriter(false, 1024, 3);
    }

    /**
     * A handler with no reentrance guard writes and flushes {@code size}-byte buffers while the channel is writable,
     * on each writability event, with equal water marks of 1024 (a single message flips writability both ways) and a
     * limit of 16 high water marks. A write and flush makes the channel unwritable; then either the limit is raised
     * (the event comes from the hook) or a flush behind the outstanding write makes it writable (the event comes from
     * flush0()). The transport then completes writes one message or 50 bytes at a time, 500 times. The handler's
     * event handling nests at most {@code maxDepth} levels (for 1-byte buffers 2: its write's unwritable event inside
     * its writable event) and the pending size never exceeds the high water mark plus the limit plus one message.
     */
    private static void unguardedWriter(boolean startByFlush, int size, int maxDepth) {
        int mark = 1024;
        long limit = 16L * mark;
        long bound = mark + limit + size + CHANNEL_OUTBOUND_BUFFER_ENTRY_OVERHEAD;
        UnguardedWriter writer = new UnguardedWriter(size, bound);
        onLoop(ch -> {
            ch.config().setWriteBufferWaterMark(new WriteBufferWaterMark(mark, mark));
            ch.pipeline().addLast(writer);
            if (startByFlush) {
                ch.limit(limit);
                ch.writeAndFlush(msg(1));
                ch.write(msg(2 * mark));
                assertFalse(ch.isWritable());
                ch.flush();
            } else {
                ch.writeAndFlush(msg(2 * mark));
                assertFalse(ch.isWritable());
                ch.limit(limit);
            }
            int started = writer.writes;
            assertTrue(started > 0, "the writer started");
            for (int i = 0; i < 500; i++) {
                if (i % 10 == 0) {
                    ch.completeBytes(50);
                } else {
                    assertTrue(ch.complete());
                }
                long pending = ch.unsafe().outboundBuffer().totalPendingWriteBytes();
                assertTrue(pending <= bound, "pending " + pending + " > " + bound);
            }
            assertTrue(writer.writes - started >= 400, "writes after the start " + (writer.writes - started));
        });
        assertTrue(writer.maxDepth <= maxDepth, "reentrance depth " + writer.maxDepth);
    }

    @Test
    public void userDefinedUnwritabilityHoldsWhateverTheUncountedPart() {
        TestChannel ch = newChannel();
        try {
            step(() -> {
                ChannelOutboundBuffer buffer = ch.unsafe().outboundBuffer();
                ch.limit(HIGH);
                write(ch, 4);
                ch.flush();
                assertState(ch, true, 4 * MP, 4 * MP, HIGH);
                buffer.setUserDefinedWritability(1, false);
                assertFalse(ch.isWritable());
                // The water mark state changes both ways, as the counted size does; the channel stays unwritable.
                ch.limit(0);
                assertFalse(ch.isWritable());
                ch.limit(16L * HIGH);
                assertFalse(ch.isWritable());
                write(ch, 4);
                assertFalse(ch.isWritable());
                ch.flush();
                assertFalse(ch.isWritable());
                assertFalse(buffer.getUserDefinedWritability(1));
                // The user-defined change fires later; the water mark changes fire nothing while it holds.
                assertEquals(Arrays.asList("false", "true@flush"), ch.events);
            });
            drain();
            step(() -> {
                assertEquals(Arrays.asList("false", "true@flush", "false"), ch.events);
                ch.unsafe().outboundBuffer().setUserDefinedWritability(1, true);
                // Counted 0: writable.
                assertState(ch, true, 8 * MP, 8 * MP, 16L * HIGH);
            });
            drain();
            step(() -> {
                assertEquals(Arrays.asList("false", "true@flush", "false", "true"), ch.events);
                ChannelOutboundBuffer buffer = ch.unsafe().outboundBuffer();
                buffer.setUserDefinedWritability(1, false);
                ch.limit(0);
                buffer.setUserDefinedWritability(1, true);
                // Counted 8 x MP > HIGH: the water mark keeps the channel unwritable.
                assertState(ch, false, 8 * MP, 8 * MP, 0);
                ch.limit(8 * MP - 40_000);
                // Counted 40000, between the water marks: still unwritable.
                assertState(ch, false, 8 * MP, 8 * MP, 8 * MP - 40_000);
            });
            drain();
            step(() -> {
                assertEquals(Arrays.asList("false", "true@flush", "false", "true", "false"), ch.events);
                assertState(ch, false, 8 * MP, 8 * MP, 8 * MP - 40_000);
                assertLastEventIsWritability(ch);
            });
        } finally {
            step(ch::close);
        }
        ch.checkUnhandled();
    }

    @Test
    public void failFlushedOfAnInactiveChannelForgetsTheFlushedPendingSize() {
        onLoop(ch -> {
            ch.limit(HIGH);
            List<ChannelFuture> writes = write(ch, 8);
            ch.flush();
            writes.addAll(write(ch, 2));
            // Counted 10 x MP - HIGH.
            assertState(ch, false, 10 * MP, 8 * MP, HIGH);
            assertEquals(Collections.singletonList("false"), ch.events);
            ch.active = false;
            ch.flush();
            // AbstractUnsafe failed every flushed message, with writability notifications.
            for (ChannelFuture f : writes) {
                assertInstanceOf(NotYetConnectedException.class, f.cause());
            }
            assertState(ch, true, 0, 0, HIGH);
            assertEquals(Arrays.asList("false", "true@flush"), ch.events);
            assertLastEventIsWritability(ch);
            // The limit is still set, but nothing is left uncounted: it all counts.
            write(ch, 3);
            assertEquals(HIGH - 3 * MP + 1, ch.bytesBeforeUnwritable());
            assertState(ch, true, 3 * MP, 0, HIGH);
            // Flushed once active: only the new messages are flushed, and all of them are uncounted.
            ch.active = true;
            ch.flush();
            assertState(ch, true, 3 * MP, 3 * MP, HIGH);
            assertEquals(HIGH + 1, ch.bytesBeforeUnwritable());
            assertEquals(Arrays.asList("false", "true@flush"), ch.events);
        });
    }

    /**
     * On the first writable event, writes five messages and flushes them (a flush that, from within flush0()'s event,
     * returns at once), recording 5 in {@code writes}.
     */
    private static ChannelHandler writeFiveAndFlushOnceWritable(List<Integer> writes) {
        return new ChannelInboundHandlerAdapter() {
            @Override
            public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                if (ctx.channel().isWritable() && writes.isEmpty()) {
                    write((TestChannel) ctx.channel(), 5);
                    ctx.channel().flush();
                    writes.add(5);
                }
                ctx.fireChannelWritabilityChanged();
            }
        };
    }

    /** Writable or not, and the byte counts for counted = total - min(flushed, limit). */
    private static void assertState(TestChannel ch, boolean writable, long total, long flushed, long limit) {
        long counted = total - Math.min(flushed, limit);
        assertEquals(total, ch.unsafe().outboundBuffer().totalPendingWriteBytes(), "total pending");
        assertEquals(writable, ch.isWritable(), "writable");
        assertEquals(writable, ch.unsafe().outboundBuffer().isWritable(), "buffer writable");
        assertEquals(writable ? HIGH - counted + 1 : 0, ch.bytesBeforeUnwritable(), "bytesBeforeUnwritable");
        assertEquals(writable ? 0 : counted - LOW + 1, ch.bytesBeforeWritable(), "bytesBeforeWritable");
    }

    /** The last writability event reported the channel's writability as it is now. */
    private static void assertLastEventIsWritability(TestChannel ch) {
        String last = ch.events.get(ch.events.size() - 1);
        assertEquals(ch.isWritable(), Boolean.parseBoolean(last.replace("@flush", "")), "last event " + last);
    }

    private static ByteBuf msg(int size) {
        return Unpooled.buffer(size).writeZero(size);
    }

    /** Writes {@code count} {@link #MSG}-byte buffers, without flushing them; returns their futures. */
    private static List<ChannelFuture> write(TestChannel ch, int count) {
        List<ChannelFuture> writes = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            writes.add(ch.write(msg(MSG)));
        }
        return writes;
    }

    /** Runs {@code body} on the event loop with a new registered channel, closed afterwards. */
    private static void onLoop(Consumer<TestChannel> body) {
        TestChannel ch = newChannel();
        step(() -> {
            try {
                body.accept(ch);
            } finally {
                ch.close();
            }
        });
        ch.checkUnhandled();
    }

    /** A new channel, registered with {@link #LOOP}. */
    private static TestChannel newChannel() {
        TestChannel ch = new TestChannel();
        LOOP.register(ch).syncUninterruptibly();
        return ch;
    }

    /** Runs {@code body} on the event loop and waits for it; its failure fails the test. */
    private static void step(Runnable body) {
        LOOP.submit(body).syncUninterruptibly();
    }

    /**
     * Waits until the event loop ran the tasks queued so far (such as writability events fired later): its queue is
     * first in, first out.
     */
    private static void drain() {
        step(() -> {
            // Nothing: queued behind the tasks to wait for.
        });
    }

    /** Writes and flushes while the channel is writable; resumes on a writable event. */
    private static final class Writer extends ChannelInboundHandlerAdapter {
        private final long bound;
        long max;
        int writes;
        private boolean filling;

        Writer(long bound) {
            this.bound = bound;
        }

        void fill(Channel ch) {
            if (filling) {
                return;
            }
            filling = true;
            try {
                while (ch.isWritable()) {
                    ch.write(msg(MSG));
                    long pending = ch.unsafe().outboundBuffer().totalPendingWriteBytes();
                    assertTrue(pending <= bound, "pending " + pending + " > " + bound);
                    max = Math.max(max, pending);
                    ch.flush();
                    writes++;
                }
            } finally {
                filling = false;
            }
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable()) {
                fill(ctx.channel());
            }
            ctx.fireChannelWritabilityChanged();
        }
    }

    /**
     * On each writability event, writes a buffer and flushes it while the channel is writable, with no guard against
     * reentrance; records how deep its event handling nests (incremented on entry, decremented on exit).
     */
    private static final class UnguardedWriter extends ChannelInboundHandlerAdapter {
        private final int size;
        private final long bound;
        int depth;
        int maxDepth;
        int writes;

        UnguardedWriter(int size, long bound) {
            this.size = size;
            this.bound = bound;
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            depth++;
            maxDepth = Math.max(maxDepth, depth);
            try {
                Channel ch = ctx.channel();
                while (ch.isWritable()) {
                    ch.write(msg(size));
                    long pending = ch.unsafe().outboundBuffer().totalPendingWriteBytes();
                    assertTrue(pending <= bound, "pending " + pending + " > " + bound);
                    ch.flush();
                    writes++;
                }
            } finally {
                depth--;
            }
            ctx.fireChannelWritabilityChanged();
        }
    }

    /**
     * An active channel that writes like io_uring: {@code doWrite} leaves everything in the buffer and, when no write
     * is outstanding, submits one; the test completes writes with {@link #complete()} and the other
     * {@code complete...()} helpers. An exception that reaches the end of the pipeline (such as a failed assertion in
     * a handler's event) fails the test.
     */
    private static final class TestChannel extends AbstractChannel {
        private static final ChannelMetadata METADATA = new ChannelMetadata(false);
        private final ChannelConfig config = new DefaultChannelConfig(this);
        /** {@code isWritable()} at each {@code channelWritabilityChanged}, {@code "@flush"} if fired inside a flush. */
        final List<String> events = new ArrayList<>();
        private final List<Throwable> unhandled = new ArrayList<>();
        /** The limit a submitted write applies, as io_uring's {@code IO_URING_UNCOUNTED_FLUSHED_LIMIT}. */
        private long limit;
        /** A write is outstanding: from {@link #submit()} until a completion leaves no flushed message. */
        boolean writing;
        /** How many times the hook was called. */
        int hooks;
        /** How many times doWrite was called. */
        int doWrites;
        boolean active = true;
        private boolean inFlush;
        private boolean open = true;

        TestChannel() {
            super(null);
            config.setWriteBufferWaterMark(new WriteBufferWaterMark(LOW, HIGH));
            pipeline().addLast(new ChannelDuplexHandler() {
                @Override
                public void flush(ChannelHandlerContext ctx) {
                    boolean nested = inFlush;
                    inFlush = true;
                    try {
                        ctx.flush();
                    } finally {
                        inFlush = nested;
                    }
                }

                @Override
                public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                    events.add(ctx.channel().isWritable() + (inFlush ? "@flush" : ""));
                    ctx.fireChannelWritabilityChanged();
                }
            });
        }

        @Override
        protected DefaultChannelPipeline newChannelPipeline() {
            return new DefaultChannelPipeline(this) {
                @Override
                protected void onUnhandledInboundException(Throwable cause) {
                    unhandled.add(cause);
                }
            };
        }

        /**
         * Sets the limit that a write applies when it is submitted; like a change of io_uring's option, it applies to
         * an outstanding write at once.
         */
        void limit(long limit) {
            this.limit = limit;
            if (writing) {
                hook(limit);
            }
        }

        /** Calls {@link AbstractChannel.AbstractUnsafe#setUncountedFlushedLimit(long)}. */
        void hook(long limit) {
            hooks++;
            ((TestUnsafe) unsafe()).setLimit(limit);
        }

        /** Submits a write of the flushed messages: the hook is called with the limit. */
        void submit() {
            assertTrue(eventLoop().inEventLoop());
            writing = true;
            hook(limit);
        }

        /** Completes the oldest flushed write. */
        boolean complete() {
            boolean removed = unsafe().outboundBuffer().remove();
            completed();
            return removed;
        }

        /** Completes a write of {@code bytes} bytes. */
        void completeBytes(long bytes) {
            unsafe().outboundBuffer().removeBytes(bytes);
            completed();
        }

        /** Fails the oldest flushed write. */
        boolean completeWithFailure(Throwable cause) {
            boolean removed = unsafe().outboundBuffer().remove(cause);
            completed();
            return removed;
        }

        // As io_uring after a completion: the next write is submitted, or none is outstanding and all counts again.
        private void completed() {
            if (unsafe().outboundBuffer().isEmpty()) {
                writing = false;
                hook(0);
            } else {
                submit();
            }
        }

        /** Fails the test with the exceptions that reached the end of the pipeline. */
        void checkUnhandled() {
            if (!unhandled.isEmpty()) {
                AssertionError error = new AssertionError("unhandled in the pipeline: " + unhandled.get(0),
                        unhandled.get(0));
                for (int i = 1; i < unhandled.size(); i++) {
                    error.addSuppressed(unhandled.get(i));
                }
                throw error;
            }
        }

        @Override
        protected AbstractUnsafe newUnsafe() {
            return new TestUnsafe();
        }

        @Override
        protected boolean isCompatible(EventLoop loop) {
            return loop instanceof DefaultEventLoop;
        }

        @Override
        protected SocketAddress localAddress0() {
            return null;
        }

        @Override
        protected SocketAddress remoteAddress0() {
            return null;
        }

        @Override
        protected void doBind(SocketAddress localAddress) {
            throw new UnsupportedOperationException();
        }

        @Override
        protected void doDisconnect() {
            throw new UnsupportedOperationException();
        }

        @Override
        protected void doClose() {
            open = false;
        }

        @Override
        protected void doBeginRead() {
            // Nothing to read.
        }

        @Override
        protected void doWrite(ChannelOutboundBuffer in) {
            // Asynchronous: called from flush0() with its reentrance guard set; a write that was submitted completes
            // only when the test says so.
            doWrites++;
            if (!writing) {
                submit();
            }
        }

        @Override
        public ChannelConfig config() {
            return config;
        }

        @Override
        public boolean isOpen() {
            return open;
        }

        @Override
        public boolean isActive() {
            return open && active;
        }

        @Override
        public ChannelMetadata metadata() {
            return METADATA;
        }

        private final class TestUnsafe extends AbstractUnsafe {
            void setLimit(long limit) {
                setUncountedFlushedLimit(limit);
            }

            @Override
            public void connect(SocketAddress remoteAddress, SocketAddress localAddress, ChannelPromise promise) {
                throw new UnsupportedOperationException();
            }
        }
    }
}
