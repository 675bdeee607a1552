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
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link WholeChunkStreamByteDistributor}'s turn rule at its boundaries: a stream that sent all it had counts as new
 * again only once every stream that was in the round-robin then has left it (served, closed, or dropped for a
 * negative window); and closed streams are never written. One chunk per call, so each call is one allocation.
 */
public class WholeChunkStreamByteDistributorTurnTest {
    private static final int CHUNK = 16384;
    private static final int BULK = Integer.MAX_VALUE;

    private final Http2Connection connection = new DefaultHttp2Connection(false);
    private final WholeChunkStreamByteDistributor distributor = new WholeChunkStreamByteDistributor(connection, CHUNK);
    private final Map<Integer, TestStreamState> states = new HashMap<Integer, TestStreamState>();
    private final List<Integer> order = new ArrayList<Integer>();
    private final StreamByteDistributor.Writer writer = new StreamByteDistributor.Writer() {
        @Override
        public void write(Http2Stream stream, int numBytes) {
            order.add(stream.id());
            TestStreamState state = states.get(stream.id());
            state.pending -= numBytes;
            distributor.updateStreamableBytes(state);
        }
    };

    private TestStreamState stream(int id, int pending) throws Http2Exception {
        TestStreamState state = new TestStreamState(connection.local().createStream(id, false), pending);
        states.put(id, state);
        distributor.updateStreamableBytes(state);
        return state;
    }

    private void allocations(int n) throws Http2Exception {
        for (int i = 0; i < n; i++) {
            distributor.distribute(CHUNK, writer);
        }
    }

    private void refill(TestStreamState state) {
        state.pending = CHUNK;
        distributor.updateStreamableBytes(state);
    }

    /**
     * Bulk streams 1, 3 and 5 are in the round-robin, each served before; then stream 7, new, sends the one chunk it
     * has (first) and has nothing left. Returns stream 7; {@link #order} is empty.
     */
    private TestStreamState drainedNextToThreeBulkStreams() throws Http2Exception {
        for (int id : new int[] {1, 3, 5}) {
            stream(id, BULK);
        }
        allocations(6);
        TestStreamState drained = stream(7, CHUNK);
        order.clear();
        allocations(1);
        assertEquals(Arrays.asList(7), order, "a new stream goes first");
        order.clear();
        return drained;
    }

    @ParameterizedTest(name = "data again after {0} allocations")
    @ValueSource(ints = {0, 1, 2, 3, 4})
    public void newAgainOnlyAfterAWholeTurn(int allocationsBefore) throws Http2Exception {
        TestStreamState drained = drainedNextToThreeBulkStreams();
        allocations(allocationsBefore);
        refill(drained);
        allocations(8);
        int others = order.indexOf(7) - allocationsBefore;
        // Within the turn (before the 3 bulk streams were served) it rejoins the round-robin at its tail, behind the
        // 3 bulk streams; after the turn it is new and served next.
        assertEquals(allocationsBefore < 3 ? 3 : 0, others, order.toString());
    }

    @Test
    public void streamClosedInTheRoundRobinLeavesTheTurn() throws Http2Exception {
        TestStreamState drained = drainedNextToThreeBulkStreams();
        states.get(3).stream.close();
        allocations(2);
        assertEquals(Arrays.asList(5, 1), order);
        refill(drained);
        allocations(1);
        assertEquals(Arrays.asList(5, 1, 7), order, "every stream of the turn left: new");
    }

    @Test
    public void streamDroppedForItsWindowLeavesTheTurn() throws Http2Exception {
        TestStreamState drained = drainedNextToThreeBulkStreams();
        TestStreamState three = states.get(3);
        three.window = -1;
        distributor.updateStreamableBytes(three);
        allocations(2);
        assertEquals(Arrays.asList(5, 1), order);
        refill(drained);
        allocations(1);
        assertEquals(Arrays.asList(5, 1, 7), order, "every stream of the turn left: new");
    }

    /**
     * A stream that joins the round-robin after stream 7 sent all it had, and closes, does not shorten stream 7's
     * turn: the bulk stream that was in the round-robin then and was not served since still goes before stream 7.
     */
    @Test
    public void streamThatJoinedLaterDoesNotShortenTheTurn() throws Http2Exception {
        TestStreamState drained = drainedNextToThreeBulkStreams();
        stream(9, 2 * CHUNK);
        allocations(2);
        // Stream 7 went ahead of the round-robin, so the round-robin's head goes next, then new stream 9, which then
        // joins the round-robin's tail (after stream 7 sent all it had) and closes there.
        assertEquals(Arrays.asList(5, 9), order);
        states.get(9).stream.close();
        allocations(1);
        refill(drained);
        allocations(4);
        assertEquals(Arrays.asList(5, 9, 3, 1, 5, 3, 7), order, "stream 1 was in the round-robin before stream 7");
    }

    @Test
    public void closedStreamsAreNotWritten() throws Http2Exception {
        stream(1, BULK);
        allocations(1);
        stream(3, CHUNK);
        TestStreamState five = stream(5, 2 * CHUNK);
        allocations(2);
        assertEquals(Arrays.asList(1, 3, 1), order);
        order.clear();
        // Stream 3 is done (not queued); 5 and 7 are closed while they wait as new streams.
        states.get(3).stream.close();
        TestStreamState seven = stream(7, CHUNK);
        seven.stream.close();
        five.stream.close();
        allocations(4);
        assertEquals(Arrays.asList(1, 1, 1, 1), order);
        assertTrue(distributor.distribute(CHUNK, writer), "stream 1 still has data");
    }

    private static final class TestStreamState implements StreamByteDistributor.StreamState {
        final Http2Stream stream;
        int pending;
        int window = Integer.MAX_VALUE;

        TestStreamState(Http2Stream stream, int pending) {
            this.stream = stream;
            this.pending = pending;
        }

        @Override
        public Http2Stream stream() {
            return stream;
        }

        @Override
        public long pendingBytes() {
            return stream.state() == Http2Stream.State.CLOSED ? 0 : pending;
        }

        @Override
        public boolean hasFrame() {
            return pendingBytes() > 0;
        }

        @Override
        public int windowSize() {
            return window;
        }
    }
}
