/*
 * Copyright 2026 The Netty Project
 *
 * The Netty Project licenses this file to you under the Apache License, version 2.0 (the
 * "License"); you may not use this file except in compliance with the License. You may obtain a
 * copy of the License at:
 *
 * https://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software distributed under the License
 * is distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express
 * or implied. See the License for the specific language governing permissions and limitations under
 * the License.
 */
package io.netty.handler.codec.http2;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;

import static io.netty.handler.codec.http2.Http2CodecUtil.DEFAULT_MAX_FRAME_SIZE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@link WholeChunkStreamByteDistributor} with chunks of one frame: an allocation that is not a
 * whole number of chunks only comes from the stream's own remaining bytes or from a budget smaller than one chunk
 * (the first allocation of a call), never from splitting the budget between streams or from the end of a budget,
 * also when one stream has the whole budget.
 */
public class WholeChunkStreamByteDistributorTest {

    @ParameterizedTest(name = "{0} streams of {1} bytes, budget {2}")
    @CsvSource({
            "2, 65536, 65536",
            "3, 65536, 65536",
            "3, 65536, 100000",
            "4, 65536, 65535",
            "5, 40000, 65536",
            "7, 65536, 200000",
            "16, 65536, 65536",
            "100, 65536, 65536",
            "100, 65536, 8192",
            "1, 65536, 65520",
            "1, 200000, 65535",
            "2, 65536, 49151"
    })
    public void partialChunksOnlyFromBudgetOrStream(int streams, int bodySize, int budget) throws Http2Exception {
        Http2Connection connection = new DefaultHttp2Connection(false);
        WholeChunkStreamByteDistributor distributor = new WholeChunkStreamByteDistributor(connection,
                DEFAULT_MAX_FRAME_SIZE);
        Map<Integer, Http2TestStreamState> states = addStreams(connection, distributor, streams, bodySize);

        CheckingWriter writer = new CheckingWriter(distributor, states);
        long total = (long) streams * bodySize;
        int rounds = 0;
        while (writer.written < total) {
            writer.budgetLeft = budget;
            writer.firstInCall = true;
            boolean more = distributor.distribute(budget, writer);
            assertEquals(writer.written < total, more);
            assertTrue(++rounds <= total / Math.min(budget, DEFAULT_MAX_FRAME_SIZE) + streams,
                    "distribution does not progress");
        }
    }

    @Test
    public void restOfBudgetWaitsForTheNextCall() throws Http2Exception {
        Recorder r = new Recorder(2, 4 * DEFAULT_MAX_FRAME_SIZE);

        // Two whole chunks fit, 7232 bytes are left: no stream gets a partial frame from them.
        assertTrue(r.distribute(2 * DEFAULT_MAX_FRAME_SIZE + 7232));
        assertEquals(Arrays.asList("1:16384", "3:16384"), r.writes);

        // Stream 1 was next in line and is served first; a budget smaller than a chunk still makes progress.
        r.writes.clear();
        assertTrue(r.distribute(7232));
        assertEquals(Arrays.asList("1:7232"), r.writes);
    }

    /**
     * Against {@link UniformStreamByteDistributor} with the same 16 KiB chunk: it gives shares of the budget that are
     * not whole chunks, and queues a new stream at the tail; this distributor gives whole chunks and serves the new
     * stream ahead of stream 3 (not ahead of stream 1: new streams take at most every other turn, and stream 3 was new
     * in the turn before).
     */
    @ParameterizedTest(name = "whole chunks: {0}")
    @ValueSource(booleans = {false, true})
    public void newStreamAheadOfTheRoundRobinUnlikeUniform(boolean wholeChunks) throws Http2Exception {
        Recorder r = new Recorder(2, 4 * DEFAULT_MAX_FRAME_SIZE, wholeChunks);
        assertTrue(r.distribute(2 * DEFAULT_MAX_FRAME_SIZE + 7232));
        r.add(5, DEFAULT_MAX_FRAME_SIZE);
        for (int i = 0; i < 3; i++) {
            assertTrue(r.distribute(DEFAULT_MAX_FRAME_SIZE));
        }
        assertEquals(wholeChunks
                ? Arrays.asList("1:16384", "3:16384", "1:16384", "5:16384", "3:16384")
                : Arrays.asList("1:20000", "3:20000", "1:16384", "3:16384", "5:16384"), r.writes);
    }

    /**
     * Turns cut short by budgets smaller than one chunk (two chunks and 4096 bytes, then the 4096 left): stream 3's
     * first turn is cut at 4096 bytes with less than a chunk of credit left, so it ends there and the 12288 bytes carry
     * over; its next turn starts with 28672 bytes of credit, is cut short twice and goes on (a chunk of credit left) to
     * a whole chunk, 4096 bytes left. Without the credit, the stream given the few bytes left over would lose the rest
     * of its turn, and with three streams the same stream would get 4096 bytes at every turn.
     */
    @Test
    public void turnCutShortGoesOnWithItsCredit() throws Http2Exception {
        Recorder r = new Recorder(3, 16 * DEFAULT_MAX_FRAME_SIZE);
        // New streams first, at most every other turn: 1, 3 (new), 1, 5 (new), 3; the round-robin is 1, 5, 3.
        for (int i = 0; i < 5; i++) {
            assertTrue(r.distribute(DEFAULT_MAX_FRAME_SIZE));
        }
        assertEquals(Arrays.asList("1:16384", "3:16384", "1:16384", "5:16384", "3:16384"), r.writes);

        r.writes.clear();
        assertTrue(r.distribute(2 * DEFAULT_MAX_FRAME_SIZE + 4096));
        assertTrue(r.distribute(4096));
        assertTrue(r.distribute(2 * DEFAULT_MAX_FRAME_SIZE + 4096));
        assertTrue(r.distribute(4096));
        assertTrue(r.distribute(4096));
        assertTrue(r.distribute(2 * DEFAULT_MAX_FRAME_SIZE));
        assertEquals(Arrays.asList("1:16384", "5:16384", "3:4096", "1:16384", "5:16384", "3:4096", "3:4096",
                "3:16384", "1:16384"), r.writes);
    }

    /**
     * A new stream cut short by a budget smaller than one chunk goes on with its turn in the next call when its credit
     * covers the rest of it (a response smaller than a chunk), and joins the round-robin with its credit otherwise.
     */
    @Test
    public void newStreamCutShortGoesOnToItsEnd() throws Http2Exception {
        Recorder r = new Recorder(2, 16 * DEFAULT_MAX_FRAME_SIZE);
        for (int i = 0; i < 3; i++) {
            assertTrue(r.distribute(DEFAULT_MAX_FRAME_SIZE));
        }
        r.add(5, 10000);
        r.add(7, 16 * DEFAULT_MAX_FRAME_SIZE);

        // Stream 5 (10000 bytes): 4096, then the rest; stream 7: 4096, its turn ends with 12288 bytes of credit.
        assertTrue(r.distribute(4096));
        assertTrue(r.distribute(2 * DEFAULT_MAX_FRAME_SIZE));
        assertTrue(r.distribute(4096));
        assertTrue(r.distribute(3 * DEFAULT_MAX_FRAME_SIZE));
        assertEquals(Arrays.asList("1:16384", "3:16384", "1:16384", "5:4096", "5:5904", "3:16384", "7:4096",
                "1:16384", "3:16384", "7:16384"), r.writes);
    }

    /**
     * Budgets smaller than one chunk and a new stream before every call: no new stream goes ahead of a turn cut short,
     * so turns do not pile up (each new stream's turn on top of the last) and the streams of the round-robin still get
     * every other turn.
     */
    @Test
    public void newStreamsDoNotGoAheadOfATurnCutShort() throws Http2Exception {
        Recorder r = new Recorder(2, 16 * DEFAULT_MAX_FRAME_SIZE);
        // Streams 1 and 3, new, one chunk each; the second went ahead of stream 1, so stream 1 is next.
        assertTrue(r.distribute(2 * DEFAULT_MAX_FRAME_SIZE));
        r.writes.clear();

        for (int i = 0; i < 24; i++) {
            r.add(5 + 2 * i, DEFAULT_MAX_FRAME_SIZE);
            assertTrue(r.distribute(4096));
        }
        // Stream 1's first turn ends at 4096 bytes (less than a chunk of credit left), the new streams' turns go on to
        // their end (16 KiB), stream 1's next turn to a whole chunk, stream 3 the same.
        List<String> expected = new ArrayList<String>();
        int[][] turns = {{1, 1}, {5, 4}, {3, 1}, {7, 4}, {1, 4}, {9, 4}, {3, 4}, {11, 2}};
        for (int[] turn : turns) {
            expected.addAll(Collections.nCopies(turn[1], turn[0] + ":4096"));
        }
        assertEquals(expected, r.writes);
    }

    /**
     * A turn is the share of the budget, in whole chunks: with the flow controller's budget at Netty's default high
     * water mark (64 KiB), 32 KiB with 2 streams and one chunk with 3; with a 1 MiB high water mark (and connection
     * window), 512 KiB with 2 streams and 256 KiB with 4. Between two turns of a stream, the others are given theirs.
     */
    @ParameterizedTest(name = "{0} streams, budget {1}")
    @CsvSource({
            "2, 65536, 32768",
            "3, 65536, 16384",
            "2, 1048576, 524288",
            "4, 1048576, 262144"
    })
    public void turnIsTheShareOfTheBudgetInWholeChunks(int streams, int budget, int turn) throws Http2Exception {
        Recorder r = new Recorder(streams, 64 * 1024 * 1024);
        for (int i = 0; i < 2 * streams; i++) {
            assertTrue(r.distribute(budget));
        }
        assertEquals(2 * streams * budget / turn, r.writes.size(), r.writes.toString());
        for (int i = 0; i < r.writes.size(); i++) {
            String write = r.writes.get(i);
            assertEquals(turn, Integer.parseInt(write.substring(write.indexOf(':') + 1)), r.writes.toString());
            // Once every stream is in the round-robin: each of the others between two turns of a stream.
            if (i >= r.writes.size() / 2) {
                assertEquals(streams, new HashSet<String>(r.writes.subList(i - streams + 1, i + 1)).size(),
                        r.writes.toString());
            }
        }
    }

    /**
     * The turns of a round of the round-robin all add the same credit, the share of the budget that started the round
     * (two chunks of 5 chunks for 2 streams), also when later budgets of the round are smaller: otherwise the streams
     * whose turns start with small budgets (a budget's few bytes left over) would get less, turn after turn.
     */
    @Test
    public void turnsOfARoundAddTheSameCredit() throws Http2Exception {
        Recorder r = new Recorder(2, 64 * DEFAULT_MAX_FRAME_SIZE);
        assertTrue(r.distribute(2 * DEFAULT_MAX_FRAME_SIZE));
        r.writes.clear();

        // A round of two chunks a turn; stream 1's turn of the next round is cut short at one chunk and goes on.
        assertTrue(r.distribute(5 * DEFAULT_MAX_FRAME_SIZE));
        for (int i = 0; i < 3; i++) {
            assertTrue(r.distribute(DEFAULT_MAX_FRAME_SIZE));
        }
        assertEquals(Arrays.asList("1:32768", "3:32768", "1:16384", "1:16384", "3:16384", "3:16384"), r.writes);
    }

    /**
     * A new stream with only an empty frame to write (a response's empty last DATA frame with END_STREAM) takes no
     * budget: it goes also when a turn cut short waits for the next budget at the head of the round-robin.
     */
    @Test
    public void emptyFrameOfANewStreamGoesAheadOfATurnCutShort() throws Http2Exception {
        Recorder r = new Recorder(2, 64 * DEFAULT_MAX_FRAME_SIZE);
        assertTrue(r.distribute(2 * DEFAULT_MAX_FRAME_SIZE));
        assertTrue(r.distribute(5 * DEFAULT_MAX_FRAME_SIZE));
        r.writes.clear();

        // Also behind a new stream with data (which waits for the turn cut short).
        r.add(5, 10 * DEFAULT_MAX_FRAME_SIZE);
        Http2TestStreamState empty = r.add(7, 0);
        assertTrue(r.distribute(0));
        assertTrue(r.distribute(2 * DEFAULT_MAX_FRAME_SIZE));
        assertEquals(Arrays.asList("7:0", "1:16384", "5:16384"), r.writes);
        assertFalse(empty.emptyFrame);
    }

    /**
     * A new stream queued with only an empty frame and given bytes to send before the next call (its window opened, or
     * its body followed its first empty frame) counts as queued from then: it does not go ahead of the new streams
     * queued before it. (Queued first for its empty frame and kept there, such streams arriving one after another
     * starved an earlier new stream.)
     */
    @Test
    public void newStreamGivenBytesAfterAnEmptyFrameCountsFromThen() throws Http2Exception {
        Recorder r = new Recorder(1, 64 * DEFAULT_MAX_FRAME_SIZE);
        assertTrue(r.distribute(DEFAULT_MAX_FRAME_SIZE));
        r.add(3, 10 * DEFAULT_MAX_FRAME_SIZE);
        r.writes.clear();

        for (int i = 0; i < 3; i++) {
            Http2TestStreamState later = r.add(5 + 2 * i, 0);
            later.pending = DEFAULT_MAX_FRAME_SIZE;
            later.emptyFrame = false;
            r.distributor.updateStreamableBytes(later);
            assertTrue(r.distribute(DEFAULT_MAX_FRAME_SIZE));
            assertTrue(r.distribute(DEFAULT_MAX_FRAME_SIZE));
        }
        assertEquals(Arrays.asList("3:16384", "1:16384", "5:16384", "3:16384", "7:16384", "1:16384"), r.writes);
    }

    /**
     * Empty frames queued and streams closed by the writes of a call: an empty frame that a write queues goes out in
     * the same call (as {@link UniformStreamByteDistributor} writes it), and a stream closed by another's write while
     * its empty frame waits is simply not written.
     */
    @Test
    public void emptyFramesQueuedOrClosedByWritesOfTheCall() throws Http2Exception {
        Recorder r = new Recorder(0, 0) {
            @Override
            void written(Http2Stream stream) throws Http2Exception {
                if (stream.id() == 5) {
                    // Stream 5's write closes stream 7, whose empty frame waits behind it.
                    connection.stream(7).close();
                } else if (stream.id() == 1) {
                    // Stream 1's write queues an empty frame on a new stream 9.
                    add(9, 0);
                }
            }
        };
        r.add(1, 100);
        r.add(5, 0);
        r.add(7, 0);
        assertFalse(r.distribute(DEFAULT_MAX_FRAME_SIZE));
        assertEquals(Arrays.asList("5:0", "1:100", "9:0"), r.writes);
    }

    /**
     * Only empty frames, each write queuing the next stream's (a chain): all of them go out in the one call, as with
     * {@link UniformStreamByteDistributor}, also when no stream has bytes to send.
     */
    @Test
    public void chainOfEmptyFramesGoesOutInOneCall() throws Http2Exception {
        Recorder r = new Recorder(0, 0) {
            @Override
            void written(Http2Stream stream) throws Http2Exception {
                if (stream.id() < 5) {
                    add(stream.id() + 2, 0);
                }
            }
        };
        r.add(1, 0);
        assertFalse(r.distribute(0));
        assertEquals(Arrays.asList("1:0", "3:0", "5:0"), r.writes);
    }

    /**
     * A share of several chunks, and a budget that runs short when the round-robin comes back to a stream within the
     * same call: the rest of the budget is handed out in whole chunks too (16384 of the 24464 bytes left), not whole.
     */
    @Test
    public void budgetCutShortInTheRoundRobinGivesWholeChunks() throws Http2Exception {
        Recorder r = new Recorder(0, 0);
        r.add(1, 10000);
        r.add(3, 65536);
        r.add(5, 65536);

        // Share: 100000 / 3 = 33333 bytes, 32768 in whole chunks; stream 1 fits its share and gets all of it.
        assertTrue(r.distribute(100000));
        assertEquals(Arrays.asList("1:10000", "3:32768", "5:32768", "3:16384"), r.writes);
    }

    @ParameterizedTest(name = "{0} streams of {1} bytes, budget {2}")
    @CsvSource({
            "1, 90000, 90000",
            "3, 30000, 90000",
            "1, 2147483647, 2147483647"
    })
    public void streamWhoseRestFitsItsShareGetsItAtOnce(int streams, int bodySize, int budget)
            throws Http2Exception {
        Http2Connection connection = new DefaultHttp2Connection(false);
        WholeChunkStreamByteDistributor distributor = new WholeChunkStreamByteDistributor(connection,
                DEFAULT_MAX_FRAME_SIZE);
        final Map<Integer, Http2TestStreamState> states = addStreams(connection, distributor, streams, bodySize);
        final List<Integer> allocations = new ArrayList<Integer>();
        StreamByteDistributor.Writer writer = new StreamByteDistributor.Writer() {
            @Override
            public void write(Http2Stream stream, int numBytes) {
                allocations.add(numBytes);
                Http2TestStreamState state = states.get(stream.id());
                state.pending -= numBytes;
                distributor.updateStreamableBytes(state);
            }
        };

        // Every stream's rest is at most its share of the budget (budget / streams): one allocation each, not its
        // share rounded down to whole chunks and the rest of the stream in a second allocation.
        long share = budget / streams;
        distributor.distribute(budget, writer);
        List<Integer> expected = new ArrayList<Integer>();
        for (int i = 0; i < streams; i++) {
            expected.add((int) Math.min(bodySize, share));
        }
        assertEquals(expected, allocations);
    }

    /**
     * A stream that sends all it has at each allocation and is given its next message from the write itself (as a
     * writer that writes the next message when the previous one is written) is not new again: next to
     * {@code bulkStreams} streams that always have data, it gets one allocation per turn of the round-robin, not
     * every other allocation.
     */
    @ParameterizedTest(name = "{0} bulk streams")
    @ValueSource(ints = {1, 8, 64})
    public void streamRefilledWhileWrittenGetsOneAllocationPerTurn(int bulkStreams) throws Http2Exception {
        Http2Connection connection = new DefaultHttp2Connection(false);
        final WholeChunkStreamByteDistributor distributor = new WholeChunkStreamByteDistributor(connection,
                DEFAULT_MAX_FRAME_SIZE);
        final Map<Integer, Http2TestStreamState> states = addStreams(connection, distributor, bulkStreams,
                Integer.MAX_VALUE);
        final int refilled = 2 * bulkStreams + 1;
        final List<Integer> order = new ArrayList<Integer>();
        StreamByteDistributor.Writer writer = new StreamByteDistributor.Writer() {
            @Override
            public void write(Http2Stream stream, int numBytes) {
                order.add(stream.id());
                Http2TestStreamState state = states.get(stream.id());
                state.pending -= numBytes;
                distributor.updateStreamableBytes(state);
                if (stream.id() == refilled) {
                    // Sent all it had; its next message is queued from the write.
                    assertEquals(0, state.pending);
                    state.pending = DEFAULT_MAX_FRAME_SIZE;
                    distributor.updateStreamableBytes(state);
                }
            }
        };
        // Until every bulk stream was served once: none of them is new any more.
        while (new HashSet<Integer>(order).size() < bulkStreams) {
            assertTrue(distributor.distribute(DEFAULT_MAX_FRAME_SIZE, writer));
        }
        Http2Stream stream = connection.local().createStream(refilled, false);
        Http2TestStreamState state = new Http2TestStreamState(stream, DEFAULT_MAX_FRAME_SIZE);
        states.put(refilled, state);
        distributor.updateStreamableBytes(state);
        order.clear();

        int turns = 10;
        int allocations = turns * (bulkStreams + 1);
        for (int i = 0; i < allocations; i++) {
            assertTrue(distributor.distribute(DEFAULT_MAX_FRAME_SIZE, writer));
        }
        assertEquals(allocations, order.size());
        assertTrue(order.indexOf(refilled) <= 1, "the new stream waited for " + order.indexOf(refilled) +
                " allocations: " + order);
        int last = -1;
        int served = 0;
        for (int i = 0; i < order.size(); i++) {
            if (order.get(i) == refilled) {
                if (last >= 0) {
                    assertEquals(bulkStreams, i - last - 1, "allocations to other streams between two of stream " +
                            refilled + ", the first ones: " + order.subList(0, Math.min(i + 1, 40)));
                }
                last = i;
                served++;
            }
        }
        assertEquals(turns, served, "allocations to stream " + refilled);
    }

    /**
     * A distributor with a one-frame minimum chunk and its streams, written to by a writer that writes every allocation
     * in full and records it as {@code "streamId:bytes"} in {@link #writes}.
     */
    private static class Recorder implements StreamByteDistributor.Writer {
        final Http2Connection connection = new DefaultHttp2Connection(false);
        final StreamByteDistributor distributor;
        final Map<Integer, Http2TestStreamState> states = new HashMap<Integer, Http2TestStreamState>();
        final List<String> writes = new ArrayList<String>();

        /** With {@code streams} streams (ids 1, 3, 5, ...) of {@code bodySize} bytes each, whole 16 KiB chunks. */
        Recorder(int streams, int bodySize) throws Http2Exception {
            this(streams, bodySize, true);
        }

        /**
         * {@code wholeChunks}: a {@link WholeChunkStreamByteDistributor}, else a {@link UniformStreamByteDistributor}
         * with a 16 KiB minimum chunk (grpc-java's).
         */
        Recorder(int streams, int bodySize, boolean wholeChunks) throws Http2Exception {
            if (wholeChunks) {
                distributor = new WholeChunkStreamByteDistributor(connection, DEFAULT_MAX_FRAME_SIZE);
            } else {
                UniformStreamByteDistributor uniform = new UniformStreamByteDistributor(connection);
                uniform.minAllocationChunk(DEFAULT_MAX_FRAME_SIZE);
                distributor = uniform;
            }
            states.putAll(addStreams(connection, distributor, streams, bodySize));
        }

        /** Creates stream {@code id} with {@code bodySize} bytes pending ({@code 0}: an empty frame). */
        Http2TestStreamState add(int id, int bodySize) throws Http2Exception {
            return addStream(connection, distributor, states, id, bodySize);
        }

        boolean distribute(int budget) throws Http2Exception {
            return distributor.distribute(budget, this);
        }

        @Override
        public void write(Http2Stream stream, int numBytes) {
            writes.add(stream.id() + ":" + numBytes);
            Http2TestStreamState state = states.get(stream.id());
            state.pending -= numBytes;
            state.emptyFrame = false;
            distributor.updateStreamableBytes(state);
            try {
                written(stream);
            } catch (Http2Exception e) {
                throw new AssertionError(e);
            }
        }

        /** What a write does besides writing (a test's own reaction); nothing by default. */
        void written(Http2Stream stream) throws Http2Exception {
        }
    }

    /**
     * Creates stream {@code id} with {@code bodySize} bytes pending ({@code 0}: an empty frame with END_STREAM).
     */
    private static Http2TestStreamState addStream(Http2Connection connection, StreamByteDistributor distributor,
                                                  Map<Integer, Http2TestStreamState> states, int id, int bodySize)
            throws Http2Exception {
        Http2Stream stream = connection.local().createStream(id, false);
        Http2TestStreamState state = new Http2TestStreamState(stream, bodySize);
        state.emptyFrame = bodySize == 0;
        states.put(id, state);
        distributor.updateStreamableBytes(state);
        return state;
    }

    /** Creates {@code streams} streams (ids 1, 3, 5, ...) with {@code bodySize} bytes pending each. */
    private static Map<Integer, Http2TestStreamState> addStreams(Http2Connection connection,
                                                                 StreamByteDistributor distributor,
                                                                 int streams, int bodySize) throws Http2Exception {
        Map<Integer, Http2TestStreamState> states = new HashMap<Integer, Http2TestStreamState>();
        for (int i = 0; i < streams; i++) {
            addStream(connection, distributor, states, 2 * i + 1, bodySize);
        }
        return states;
    }

    /** Checks each allocation as the flow controller would see it, then writes it all. */
    private static final class CheckingWriter implements StreamByteDistributor.Writer {
        private final WholeChunkStreamByteDistributor distributor;
        private final Map<Integer, Http2TestStreamState> states;
        int budgetLeft;
        boolean firstInCall;
        long written;

        CheckingWriter(WholeChunkStreamByteDistributor distributor, Map<Integer, Http2TestStreamState> states) {
            this.distributor = distributor;
            this.states = states;
        }

        @Override
        public void write(Http2Stream stream, int numBytes) {
            Http2TestStreamState state = states.get(stream.id());
            assertTrue(numBytes <= budgetLeft, "stream " + stream.id() + " was given " + numBytes + " bytes with " +
                    budgetLeft + " left in the budget");
            assertTrue(numBytes <= state.pending, "stream " + stream.id() + " was given " + numBytes + " bytes with " +
                    state.pending + " left in the stream");
            boolean wholeChunks = numBytes > 0 && numBytes % DEFAULT_MAX_FRAME_SIZE == 0;
            boolean restOfSmallBudget = firstInCall && numBytes == budgetLeft && budgetLeft < DEFAULT_MAX_FRAME_SIZE;
            boolean restOfStream = numBytes == state.pending;
            if (!wholeChunks && !restOfSmallBudget && !restOfStream) {
                fail("stream " + stream.id() + " was given " + numBytes + " bytes with " + budgetLeft +
                        " left in the budget and " + state.pending + " left in the stream");
            }
            budgetLeft -= numBytes;
            firstInCall &= numBytes == 0;
            written += numBytes;
            state.pending -= numBytes;
            distributor.updateStreamableBytes(state);
        }
    }

    private static final class Http2TestStreamState implements StreamByteDistributor.StreamState {
        private final Http2Stream stream;
        int pending;
        /** Whether an empty frame is pending (with no bytes). */
        boolean emptyFrame;

        Http2TestStreamState(Http2Stream stream, int pending) {
            this.stream = stream;
            this.pending = pending;
        }

        @Override
        public Http2Stream stream() {
            return stream;
        }

        @Override
        public long pendingBytes() {
            return pending;
        }

        @Override
        public boolean hasFrame() {
            return pending > 0 || emptyFrame;
        }

        @Override
        public int windowSize() {
            return Integer.MAX_VALUE;
        }
    }
}
