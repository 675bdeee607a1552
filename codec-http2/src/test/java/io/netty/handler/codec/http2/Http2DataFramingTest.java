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
import io.netty.channel.WriteBufferWaterMark;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static io.netty.handler.codec.http2.Http2CodecUtil.DEFAULT_MAX_FRAME_SIZE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How {@link DefaultHttp2RemoteFlowController} cuts concurrent response bodies into {@code DATA} frames,
 * decoded from the wire of an {@link io.netty.channel.embedded.EmbeddedChannel} whose write budget is exactly
 * 64 KiB per round: whole 16 KiB frames with a {@link WholeChunkStreamByteDistributor} (16 KiB chunks), ~1 KiB slices
 * with
 * {@link WeightedFairQueueByteDistributor}.
 */
public class Http2DataFramingTest {
    static final int BODY_SIZE = 64 * 1024;
    /**
     * {@code bytesBeforeUnwritable()} is the high water mark minus the pending bytes plus one, and a low water mark
     * of 1 makes the channel writable again only once it drained: every round's budget is exactly 64 KiB.
     */
    static final WriteBufferWaterMark BUDGET_64_KIB = new WriteBufferWaterMark(1, 64 * 1024 - 1);
    /** A channel that never limits the flow controller in these tests. */
    static final WriteBufferWaterMark UNLIMITED = new WriteBufferWaterMark(1, 64 * 1024 * 1024);
    static final int LARGE_WINDOW = 1 << 24;

    /** A server whose distributor allocates whole chunks of one 16 KiB frame, new streams first. */
    static Http2ConnectionHandler wholeFrameServer() {
        Http2Connection connection = new DefaultHttp2Connection(true);
        return server(connection, new WholeChunkStreamByteDistributor(connection, DEFAULT_MAX_FRAME_SIZE));
    }

    static Http2ConnectionHandler weightedFairQueueServer() {
        Http2Connection connection = new DefaultHttp2Connection(true);
        return server(connection, new WeightedFairQueueByteDistributor(connection));
    }

    /** A server whose remote flow controller uses {@code distributor}, made for {@code connection}. */
    static Http2ConnectionHandler server(Http2Connection connection, StreamByteDistributor distributor) {
        connection.remote().flowController(new DefaultHttp2RemoteFlowController(connection, distributor));
        return new Http2ConnectionHandlerBuilder().connection(connection).frameListener(new Http2FrameAdapter())
                .build();
    }

    static int[] streamIds(int streams) {
        int[] ids = new int[streams];
        for (int i = 0; i < streams; i++) {
            ids[i] = 2 * i + 1;
        }
        return ids;
    }

    /**
     * The client opens {@code streams} streams with windows large enough for the whole bodies; the server sends
     * every response's HEADERS, then queues every body and flushes once; the channel drains after every round.
     */
    static Http2WirePeer respondAll(Http2ConnectionHandler server, int streams, int bodySize, int maxFrameSize)
            throws Exception {
        Http2WirePeer peer = new Http2WirePeer(server, BUDGET_64_KIB,
                Http2WirePeer.settings(LARGE_WINDOW, maxFrameSize));
        peer.windowUpdate(0, LARGE_WINDOW);
        int[] ids = streamIds(streams);
        peer.openStreams(ids);
        for (int id : ids) {
            peer.respondHeaders(id);
        }
        peer.flush();
        List<ChannelFuture> futures = new ArrayList<ChannelFuture>();
        for (int id : ids) {
            futures.add(peer.respondData(id, Http2WirePeer.body(bodySize), true));
        }
        peer.flush();
        for (int i = 0; i < ids.length; i++) {
            assertEquals(bodySize, peer.dataBytes(ids[i]), "body bytes of stream " + ids[i]);
            assertTrue(futures.get(i).isSuccess(), "write of stream " + ids[i]);
            List<Http2WirePeer.Frame> data = peer.dataFrames(ids[i]);
            assertTrue(data.get(data.size() - 1).endOfStream(), "END_STREAM on the last DATA frame");
        }
        return peer;
    }

    static Map<Integer, Integer> sizes(List<Http2WirePeer.Frame> frames) {
        Map<Integer, Integer> sizes = new TreeMap<Integer, Integer>();
        for (Http2WirePeer.Frame frame : frames) {
            Integer n = sizes.get(frame.length);
            sizes.put(frame.length, n == null ? 1 : n + 1);
        }
        return sizes;
    }

    /** 3 streams share 64 KiB as 21845 bytes each: the shares are rounded to whole frames, no partial frame. */
    @ParameterizedTest(name = "{0} streams")
    @ValueSource(ints = {2, 3, 4, 16, 100})
    public void wholeChunksWriteWholeFrames(int streams) throws Exception {
        Http2WirePeer peer = respondAll(wholeFrameServer(), streams, BODY_SIZE, DEFAULT_MAX_FRAME_SIZE);
        try {
            List<Http2WirePeer.Frame> data = peer.dataFrames(0);
            assertEquals(streams * (BODY_SIZE / DEFAULT_MAX_FRAME_SIZE), data.size(), "DATA frames " + sizes(data));
            for (Http2WirePeer.Frame frame : data) {
                assertEquals(DEFAULT_MAX_FRAME_SIZE, frame.length, frame.toString());
            }
        } finally {
            peer.close();
        }
    }

    /**
     * The channel's default water marks (32 KiB, 64 KiB) and responses written as {@code HttpToHttp2ConnectionHandler}
     * writes them: HEADERS and the whole body, then one flush. The HEADERS frames are still in the outbound buffer
     * when the flow controller takes its first budget, so that budget is not a multiple of 16 KiB; each 64 KiB
     * body still leaves in exactly four 16 KiB DATA frames.
     */
    @ParameterizedTest(name = "{0} streams")
    @ValueSource(ints = {1, 2, 3})
    public void wholeFramesAtDefaultWaterMark(int streams) throws Exception {
        Http2WirePeer peer = new Http2WirePeer(wholeFrameServer(), WriteBufferWaterMark.DEFAULT,
                Http2WirePeer.settings(LARGE_WINDOW, DEFAULT_MAX_FRAME_SIZE));
        try {
            peer.windowUpdate(0, LARGE_WINDOW);
            int[] ids = streamIds(streams);
            peer.openStreams(ids);
            for (int id : ids) {
                peer.respondHeaders(id);
                peer.respondData(id, Http2WirePeer.body(BODY_SIZE), true);
            }
            peer.flush();
            for (int id : ids) {
                List<Http2WirePeer.Frame> data = peer.dataFrames(id);
                assertEquals(BODY_SIZE, peer.dataBytes(id), "body bytes of stream " + id);
                assertEquals(BODY_SIZE / DEFAULT_MAX_FRAME_SIZE, data.size(), "DATA frames of stream " + id + ' ' +
                        sizes(data));
                assertTrue(data.get(data.size() - 1).endOfStream(), "END_STREAM on the last DATA frame");
            }
        } finally {
            peer.close();
        }
    }

    /** By contrast, WeightedFairQueueByteDistributor's 1 KiB quantum slices concurrent bodies. */
    @ParameterizedTest(name = "{0} streams")
    @ValueSource(ints = {2, 3, 4, 16, 100})
    public void weightedFairQueueSlicesBodies(int streams) throws Exception {
        Http2WirePeer peer = respondAll(weightedFairQueueServer(), streams, BODY_SIZE, DEFAULT_MAX_FRAME_SIZE);
        try {
            List<Http2WirePeer.Frame> data = peer.dataFrames(0);
            int wholeFrames = streams * (BODY_SIZE / DEFAULT_MAX_FRAME_SIZE);
            assertTrue(data.size() >= 8 * wholeFrames, "DATA frames " + sizes(data));
            for (Http2WirePeer.Frame frame : data) {
                assertTrue(frame.length <= 2048, frame.toString());
            }
        } finally {
            peer.close();
        }
    }

    /**
     * 100 streams, a budget of 8 KiB per round (the connection window, opened by 8 KiB at a time after the initial
     * 65535 bytes): every stream completes, and no stream waits long. Every round is one DATA frame of 8 KiB (a
     * budget smaller than a chunk goes to one stream whole), and a stream's turn is two of them (its turn goes on
     * until it has been given a chunk). The distributor's bound: a stream waits for at most {@code 2 * k + 1} turns of
     * other streams, {@code k} being the streams queued before it (new streams before it for a new stream), so fewer
     * than {@code 2 * streams} chunks of other streams' DATA come between two DATA frames of a stream, or before its
     * first.
     */
    @Test
    public void noStreamStarves() throws Exception {
        int streams = 100;
        int budget = 8 * 1024;
        Http2WirePeer peer = new Http2WirePeer(wholeFrameServer(), UNLIMITED,
                Http2WirePeer.settings(LARGE_WINDOW, DEFAULT_MAX_FRAME_SIZE));
        try {
            int[] ids = streamIds(streams);
            peer.openStreams(ids);
            for (int id : ids) {
                peer.respondHeaders(id);
            }
            peer.flush();
            for (int id : ids) {
                peer.respondData(id, Http2WirePeer.body(BODY_SIZE), true);
            }
            peer.flush();
            long total = (long) streams * BODY_SIZE;
            int rounds = 0;
            while (peer.dataBytes(0) < total) {
                long before = peer.dataBytes(0);
                peer.windowUpdate(0, budget);
                peer.flush();
                assertEquals(Math.min(budget, total - before), peer.dataBytes(0) - before,
                        "bytes sent in round " + rounds);
                rounds++;
            }
            List<Http2WirePeer.Frame> data = peer.dataFrames(0);
            for (int id : ids) {
                assertEquals(BODY_SIZE, peer.dataBytes(id), "body bytes of stream " + id);
                List<Http2WirePeer.Frame> own = peer.dataFrames(id);
                assertTrue(own.get(own.size() - 1).endOfStream(), "END_STREAM on the last DATA frame of stream " + id);
                long waited = 0;
                for (Http2WirePeer.Frame frame : data) {
                    if (frame.streamId == id) {
                        assertTrue(waited < 2L * streams * DEFAULT_MAX_FRAME_SIZE, "stream " + id + " waited for " +
                                waited + " bytes of other streams' DATA");
                        waited = 0;
                    } else {
                        waited += frame.length;
                    }
                }
            }
        } finally {
            peer.close();
        }
    }
}
