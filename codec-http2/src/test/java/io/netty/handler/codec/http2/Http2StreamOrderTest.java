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

import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static io.netty.handler.codec.http2.Http2CodecUtil.DEFAULT_MAX_FRAME_SIZE;
import static io.netty.handler.codec.http2.Http2DataFramingTest.LARGE_WINDOW;
import static io.netty.handler.codec.http2.Http2DataFramingTest.UNLIMITED;
import static io.netty.handler.codec.http2.Http2DataFramingTest.wholeFrameServer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The order in which a distributor with whole 16 KiB chunks serves streams, on the wire: a stream that becomes active
 * while bulk streams have data pending is not queued behind a turn of every bulk stream, and neither new nor bulk
 * streams starve. The budget of each round is the connection window, opened by 64 KiB (four 16 KiB DATA frames) at a
 * time, so that every round is a {@code distribute} call of its own and every allocation is one whole DATA frame.
 */
public class Http2StreamOrderTest {
    private static final int ROUND = 4 * DEFAULT_MAX_FRAME_SIZE;
    /** Large enough for the bulk streams to have data pending throughout every test. */
    private static final int BULK_BODY = 4 * 1024 * 1024;

    /**
     * Opens {@code streams} bulk streams (ids 1, 3, 5, ...) with {@link #BULK_BODY} queued each and runs rounds until
     * each of them was sent at least one DATA frame, so that none of them is new any more.
     */
    private static Http2WirePeer bulkStreams(int streams) throws Exception {
        Http2WirePeer peer = new Http2WirePeer(wholeFrameServer(), UNLIMITED,
                Http2WirePeer.settings(LARGE_WINDOW, DEFAULT_MAX_FRAME_SIZE));
        int[] ids = Http2DataFramingTest.streamIds(streams);
        peer.openStreams(ids);
        for (int id : ids) {
            peer.respondHeaders(id);
            peer.respondData(id, Http2WirePeer.body(BULK_BODY), true);
        }
        // The initial connection window (65535 bytes) is used up at once.
        peer.flush();
        for (int rounds = 0;; rounds++) {
            boolean allStarted = true;
            for (int id : ids) {
                allStarted &= !peer.dataFrames(id).isEmpty();
            }
            if (allStarted) {
                break;
            }
            assertTrue(rounds <= streams, "bulk streams still not started after " + rounds + " rounds");
            round(peer);
        }
        return peer;
    }

    /** Opens the connection window by one round's budget; the server sends what it allows. */
    private static void round(Http2WirePeer peer) throws Exception {
        round(peer, ROUND);
    }

    /** Opens the connection window by {@code bytes}; the server, with data pending, sends all of them. */
    static void round(Http2WirePeer peer, int bytes) throws Exception {
        long before = peer.dataBytes(0);
        peer.windowUpdate(0, bytes);
        peer.flush();
        assertEquals(bytes, peer.dataBytes(0) - before, "bytes sent in a round");
    }

    /** The client opens a stream; the server answers with {@code bodySize} bytes and ends the stream. */
    private static void respond(Http2WirePeer peer, int id, int bodySize) throws Exception {
        peer.openStreams(id);
        peer.respondHeaders(id);
        peer.respondData(id, Http2WirePeer.body(bodySize), true);
        peer.flush();
    }

    /**
     * Runs rounds until stream {@code id} has {@code frames} DATA frames (at most {@code maxRounds}); its last one must
     * be a whole 1 KiB message that ends the stream, written after at most one chunk (16 KiB) of other streams' DATA
     * counted from {@code before} (the connection's DATA bytes when the message was queued).
     */
    private static void assertLastMessageWithinOneChunk(Http2WirePeer peer, int id, int frames, long before,
                                                       int maxRounds) throws Exception {
        List<Http2WirePeer.Frame> data = peer.dataFrames(id);
        for (int rounds = 0; data.size() < frames; rounds++) {
            assertTrue(rounds <= maxRounds, "DATA frame " + frames + " of stream " + id + " not sent after " +
                    rounds + " rounds");
            round(peer);
            data = peer.dataFrames(id);
        }
        assertEquals(frames, data.size(), "DATA frames of stream " + id);
        Http2WirePeer.Frame frame = data.get(frames - 1);
        assertEquals(1024, frame.length);
        assertTrue(frame.endOfStream());
        assertTrue(frame.sentBefore - before <= DEFAULT_MAX_FRAME_SIZE,
                "bytes of other streams sent before DATA frame " + frames + " of stream " + id + ": " +
                (frame.sentBefore - before));
    }

    /** The index of a stream's first DATA frame among all DATA frames, or -1. */
    private static int firstFrame(List<Http2WirePeer.Frame> data, int streamId) {
        for (int i = 0; i < data.size(); i++) {
            if (data.get(i).streamId == streamId) {
                return i;
            }
        }
        return -1;
    }

    /**
     * {@code bulkStreams} streams each have megabytes pending and the connection window is used up; then a new
     * stream queues a 1 KiB response. The next budget sends it first or after at most one chunk (16 KiB) of another
     * stream: not behind one chunk of every bulk stream ({@code (bulkStreams - 1) x 16 KiB} in a plain
     * round-robin).
     */
    @ParameterizedTest(name = "{0} bulk streams")
    @ValueSource(ints = {8, 64})
    public void newStreamIsServedWithinOneChunk(int bulkStreams) throws Exception {
        Http2WirePeer peer = bulkStreams(bulkStreams);
        try {
            int id = 2 * bulkStreams + 1;
            long before = peer.dataBytes(0);
            respond(peer, id, 1024);
            assertEquals(before, peer.dataBytes(0), "the connection window is used up");
            assertLastMessageWithinOneChunk(peer, id, 1, before, bulkStreams);
        } finally {
            peer.close();
        }
    }

    /**
     * A long-lived stream (a server stream, server-sent events) sends a message, has nothing left to send for a whole
     * turn of the round-robin (every bulk stream is sent a DATA frame), and later queues another 1 KiB while
     * {@code bulkStreams} bulk streams have megabytes pending and the connection window is used up: the next budget
     * sends the message after at most one chunk (16 KiB) of other streams, as for a new stream; not behind one chunk
     * of every bulk stream.
     */
    @ParameterizedTest(name = "{0} bulk streams")
    @ValueSource(ints = {8, 64})
    public void streamWithDataAgainIsServedWithinOneChunk(int bulkStreams) throws Exception {
        Http2WirePeer peer = bulkStreams(bulkStreams);
        try {
            int id = 2 * bulkStreams + 1;
            peer.openStreams(id);
            peer.respondHeaders(id);
            peer.respondData(id, Http2WirePeer.body(1024), false);
            peer.flush();
            for (int rounds = 0; peer.dataFrames(id).isEmpty(); rounds++) {
                assertTrue(rounds <= bulkStreams, "first message not sent after " + rounds + " rounds");
                round(peer);
            }
            // Bulk streams only, until each of them was sent a DATA frame after the message: a whole turn.
            long sent = peer.dataFrames(id).get(0).sentBefore;
            for (int rounds = 0; !eachSentAfter(peer, bulkStreams, sent); rounds++) {
                assertTrue(rounds <= bulkStreams, "bulk streams not all served after " + rounds + " rounds");
                round(peer);
            }
            assertEquals(1, peer.dataFrames(id).size(), "DATA frames of the long-lived stream");

            long before = peer.dataBytes(0);
            peer.respondData(id, Http2WirePeer.body(1024), true);
            peer.flush();
            assertEquals(before, peer.dataBytes(0), "the connection window is used up");
            assertLastMessageWithinOneChunk(peer, id, 2, before, bulkStreams);
        } finally {
            peer.close();
        }
    }

    /** Whether every bulk stream was sent a DATA frame after {@code sentBefore} bytes of DATA. */
    private static boolean eachSentAfter(Http2WirePeer peer, int bulkStreams, long sentBefore) {
        for (int bulk : Http2DataFramingTest.streamIds(bulkStreams)) {
            List<Http2WirePeer.Frame> data = peer.dataFrames(bulk);
            if (data.get(data.size() - 1).sentBefore <= sentBefore) {
                return false;
            }
        }
        return true;
    }

    /**
     * A stream that writes its next 16 KiB message when the previous one is written (as a gRPC server stream driven
     * by its write futures, or a {@code ChunkedWriteHandler}) next to {@code bulkStreams} bulk streams: each message
     * is queued at the end of the round that sent the previous one, before a turn of the round-robin is over, so the
     * stream rejoins the round-robin at its tail: between two of its messages go one DATA frame of each bulk stream,
     * plus those sent after its message in the same round (at most 3 more). It is not served as a new stream after
     * each message (every round, ahead of the bulk streams).
     */
    @ParameterizedTest(name = "{0} bulk streams")
    @ValueSource(ints = {8, 64})
    public void streamThatSendsAllItHasKeepsItsTurn(int bulkStreams) throws Exception {
        final Http2WirePeer peer = bulkStreams(bulkStreams);
        try {
            final int id = 2 * bulkStreams + 1;
            final int messages = 6;
            peer.openStreams(id);
            peer.respondHeaders(id);
            final int[] queued = {1};
            peer.respondData(id, Http2WirePeer.body(DEFAULT_MAX_FRAME_SIZE), false)
                    .addListener(new ChannelFutureListener() {
                        @Override
                        public void operationComplete(ChannelFuture future) {
                            assertTrue(future.isSuccess());
                            if (queued[0] < messages) {
                                queued[0]++;
                                peer.respondData(id, Http2WirePeer.body(DEFAULT_MAX_FRAME_SIZE),
                                        queued[0] == messages).addListener(this);
                            }
                        }
                    });
            peer.flush();
            for (int rounds = 0; peer.dataFrames(id).size() < messages; rounds++) {
                assertTrue(rounds <= (messages + 1) * (bulkStreams + 4) / 4, messages + " messages not sent after " +
                        rounds + " rounds");
                round(peer);
            }
            List<Http2WirePeer.Frame> data = peer.dataFrames(0);
            int most = bulkStreams + ROUND / DEFAULT_MAX_FRAME_SIZE - 1;
            int last = -1;
            for (int i = 0; i < data.size(); i++) {
                if (data.get(i).streamId == id) {
                    int others = i - last - 1;
                    if (last >= 0 && (others < bulkStreams || others > most)) {
                        fail(others + " DATA frames of other streams between two messages of stream " + id +
                                ", expected " + bulkStreams + " to " + most);
                    }
                    last = i;
                }
            }
            assertTrue(peer.dataFrames(id).get(messages - 1).endOfStream());
        } finally {
            peer.close();
        }
    }

    /**
     * 8 bulk streams and a steady arrival of new streams, {@code arrivals} per round, each answered with one whole
     * frame (16 KiB); 4 per round would fill every budget on their own. Checked from the wire for every stream:
     * <ul>
     * <li>a new stream's first DATA frame comes after at most {@code 2 * j + 1} DATA frames of other streams sent
     * since it was queued, {@code j} being the new streams queued before it that had no DATA frame yet;</li>
     * <li>between two DATA frames of a bulk stream (and from the first round on) there are at most
     * {@code 2 * (8 - 1) + 1} DATA frames of other streams: the new streams take at most every other frame.</li>
     * </ul>
     */
    @ParameterizedTest(name = "{0} new streams per round")
    @ValueSource(ints = {1, 2, 4})
    public void noStarvationUnderSteadyArrivals(int arrivals) throws Exception {
        int bulkStreams = 8;
        int rounds = 40;
        Http2WirePeer peer = bulkStreams(bulkStreams);
        try {
            int start = peer.dataFrames(0).size();
            // Per new stream: the DATA frames sent when it was queued, and the new streams queued before it that had
            // no DATA frame yet.
            Map<Integer, Integer> queuedAt = new HashMap<Integer, Integer>();
            Map<Integer, Integer> newAhead = new HashMap<Integer, Integer>();
            List<Integer> newIds = new ArrayList<Integer>();
            int nextId = 2 * bulkStreams + 1;
            for (int r = 0; r < rounds; r++) {
                for (int i = 0; i < arrivals; i++) {
                    int waiting = 0;
                    for (int earlier : newIds) {
                        if (peer.dataFrames(earlier).isEmpty()) {
                            waiting++;
                        }
                    }
                    queuedAt.put(nextId, peer.dataFrames(0).size());
                    newAhead.put(nextId, waiting);
                    newIds.add(nextId);
                    respond(peer, nextId, DEFAULT_MAX_FRAME_SIZE);
                    nextId += 2;
                }
                round(peer);
            }
            List<Http2WirePeer.Frame> data = peer.dataFrames(0);
            for (Http2WirePeer.Frame frame : data.subList(start, data.size())) {
                assertEquals(DEFAULT_MAX_FRAME_SIZE, frame.length, frame.toString());
            }
            for (int id : newIds) {
                int first = firstFrame(data, id);
                // A stream still queued must not have waited longer than its bound either.
                int others = (first < 0 ? data.size() : first) - queuedAt.get(id);
                int bound = 2 * newAhead.get(id) + 1;
                assertTrue(others <= bound, "new stream " + id + ": " + others + " DATA frames of other streams " +
                        "before its first, bound " + bound + " (" + newAhead.get(id) + " new streams ahead)");
            }
            int bulkBound = 2 * (bulkStreams - 1) + 1;
            for (int id : Http2DataFramingTest.streamIds(bulkStreams)) {
                int last = start - 1;
                for (int i = start; i < data.size(); i++) {
                    if (data.get(i).streamId == id) {
                        assertTrue(i - last - 1 <= bulkBound, "bulk stream " + id + ": " + (i - last - 1) +
                                " DATA frames of other streams in a row, bound " + bulkBound);
                        last = i;
                    }
                }
                assertTrue(data.size() - last - 1 <= bulkBound, "bulk stream " + id + " starves: no DATA frame " +
                        "in the last " + (data.size() - last - 1));
                assertFalse(peer.dataFrames(id).get(peer.dataFrames(id).size() - 1).endOfStream(),
                        "bulk stream " + id + " still has data pending");
            }
        } finally {
            peer.close();
        }
    }
}
