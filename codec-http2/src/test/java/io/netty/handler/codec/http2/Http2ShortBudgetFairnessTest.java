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

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static io.netty.handler.codec.http2.Http2CodecUtil.DEFAULT_MAX_FRAME_SIZE;
import static io.netty.handler.codec.http2.Http2DataFramingTest.LARGE_WINDOW;
import static io.netty.handler.codec.http2.Http2DataFramingTest.UNLIMITED;
import static io.netty.handler.codec.http2.Http2DataFramingTest.defaultServer;
import static io.netty.handler.codec.http2.Http2DataFramingTest.weightedFairQueueServer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Bulk streams behind a connection window that the client opens by two DATA frames and a few bytes at a time, as a
 * client with HTTP/2's 65,535-byte windows does (it sends a {@code WINDOW_UPDATE} once half its window is consumed,
 * for the bytes consumed so far, which need not be whole frames): each round's budget serves two streams a whole
 * 16 KiB chunk and a third the few bytes left. Before (issue 29), with three, six or nine streams the rounds ended on
 * the same streams turn after turn and held them to the few bytes (a streamed response next to 8 bulk responses, and
 * the 4th and 6th of them, ended at 87.5% of the bulk bytes instead of about 50%); with other counts, once a turn cut
 * short went on, the same streams got the few bytes on top of every chunk (8 streams and 16383 bytes: half of them
 * twice as many bytes as the others). The streams' bytes must stay within a few chunks of each other however many
 * turns pass (a stream is less than two chunks ahead of its turns, and the round-robin gives every stream one turn
 * in each), so every stream gets its even share; {@link WeightedFairQueueByteDistributor} does too.
 */
public class Http2ShortBudgetFairnessTest {
    private static final int BULK_BODY = 4 * 1024 * 1024;
    private static final int TURNS = 48;

    @ParameterizedTest(name = "{0} streams, window updates of 2 x 16 KiB + {1} bytes, weighted fair queue: {2}")
    @CsvSource({
            "3, 4096, false",
            "6, 4096, false",
            "9, 4096, false",
            "9, 1, false",
            "9, 6108, false",
            "9, 16383, false",
            "8, 4096, false",
            "4, 12000, false",
            "8, 16383, false",
            "8, 8192, false",
            "2, 16383, false",
            "5, 10000, false",
            "8, 16383, true",
            "9, 4096, true",
            "9, 1, true"
    })
    public void everyStreamGetsItsShareWhateverTheBudgets(int streams, int extra, boolean weightedFairQueue)
            throws Exception {
        Http2WirePeer peer = new Http2WirePeer(weightedFairQueue ? weightedFairQueueServer() : defaultServer(),
                UNLIMITED, Http2WirePeer.settings(LARGE_WINDOW, DEFAULT_MAX_FRAME_SIZE));
        try {
            int[] ids = Http2DataFramingTest.streamIds(streams);
            peer.openStreams(ids);
            for (int id : ids) {
                peer.respondHeaders(id);
                peer.respondData(id, Http2WirePeer.body(BULK_BODY), true);
            }
            // The initial connection window (65535 bytes) is used up at once.
            peer.flush();
            int update = 2 * DEFAULT_MAX_FRAME_SIZE + extra;
            // About TURNS turns of the round-robin, each stream one chunk per turn.
            int rounds = TURNS * streams * DEFAULT_MAX_FRAME_SIZE / update;
            for (int i = 0; i < rounds; i++) {
                long before = peer.dataBytes(0);
                peer.windowUpdate(0, update);
                peer.flush();
                assertEquals(update, peer.dataBytes(0) - before, "bytes sent in round " + i);
            }
            StringBuilder sent = new StringBuilder();
            long min = Long.MAX_VALUE;
            long max = 0;
            for (int id : ids) {
                long bytes = peer.dataBytes(id);
                sent.append(id).append('=').append(bytes).append(' ');
                min = Math.min(min, bytes);
                max = Math.max(max, bytes);
            }
            assertTrue(max - min <= 5 * DEFAULT_MAX_FRAME_SIZE, "bytes sent per stream after " + rounds +
                    " rounds: " + sent + "(at most 5 chunks apart)");
        } finally {
            peer.close();
        }
    }
}
