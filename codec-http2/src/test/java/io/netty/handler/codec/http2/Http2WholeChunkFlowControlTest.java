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

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.List;

import static io.netty.handler.codec.http2.Http2CodecUtil.DEFAULT_MAX_FRAME_SIZE;
import static io.netty.handler.codec.http2.Http2DataFramingTest.BODY_SIZE;
import static io.netty.handler.codec.http2.Http2DataFramingTest.BUDGET_64_KIB;
import static io.netty.handler.codec.http2.Http2DataFramingTest.LARGE_WINDOW;
import static io.netty.handler.codec.http2.Http2DataFramingTest.wholeFrameServer;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link WholeChunkStreamByteDistributor} (16 KiB chunks) behind {@link DefaultHttp2RemoteFlowController}, on the
 * wire: flow-control edge cases: tiny windows, empty frames, window updates mid-stream, resets, larger frames.
 */
public class Http2WholeChunkFlowControlTest {
    private static int[] lengths(List<Http2WirePeer.Frame> frames) {
        int[] lengths = new int[frames.size()];
        for (int i = 0; i < lengths.length; i++) {
            lengths[i] = frames.get(i).length;
        }
        return lengths;
    }

    private static Http2WirePeer peer(int initialWindowSize, int maxFrameSize, int... streams) throws Exception {
        Http2WirePeer peer = new Http2WirePeer(wholeFrameServer(), BUDGET_64_KIB,
                Http2WirePeer.settings(initialWindowSize, maxFrameSize));
        peer.openStreams(streams);
        for (int id : streams) {
            peer.respondHeaders(id);
        }
        peer.flush();
        return peer;
    }

    @Test
    public void windowOfOneByte() throws Exception {
        Http2WirePeer peer = peer(1, DEFAULT_MAX_FRAME_SIZE, 1, 3);
        try {
            peer.respondData(1, Http2WirePeer.body(10), true);
            peer.respondData(3, Http2WirePeer.body(10), true);
            peer.flush();
            for (int i = 1; i < 10; i++) {
                assertEquals(i, peer.dataBytes(1));
                assertEquals(i, peer.dataBytes(3));
                peer.windowUpdate(1, 1);
                peer.windowUpdate(3, 1);
            }
            for (int id : new int[] {1, 3}) {
                List<Http2WirePeer.Frame> data = peer.dataFrames(id);
                assertArrayEquals(new int[] {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, lengths(data));
                for (int i = 0; i < data.size(); i++) {
                    assertEquals(i == data.size() - 1, data.get(i).endOfStream(), data.get(i).toString());
                }
            }
        } finally {
            peer.close();
        }
    }

    @Test
    public void zeroLengthDataWithEndStream() throws Exception {
        Http2WirePeer peer = peer(LARGE_WINDOW, DEFAULT_MAX_FRAME_SIZE, 1, 3, 5);
        try {
            // Alone.
            ChannelFuture empty = peer.respondData(1, Unpooled.EMPTY_BUFFER, true);
            peer.flush();
            assertTrue(empty.isSuccess());
            List<Http2WirePeer.Frame> data = peer.dataFrames(1);
            assertEquals(1, data.size());
            assertEquals(0, data.get(0).length);
            assertTrue(data.get(0).endOfStream());

            // Behind a stream that used up the connection window (65535 bytes) and still has bytes queued.
            peer.respondData(3, Http2WirePeer.body(2 * BODY_SIZE), true);
            peer.flush();
            assertEquals(Http2CodecUtil.DEFAULT_WINDOW_SIZE, peer.dataBytes(3));
            empty = peer.respondData(5, Unpooled.EMPTY_BUFFER, true);
            peer.flush();
            peer.windowUpdate(0, 1024);
            assertTrue(empty.isSuccess());
            data = peer.dataFrames(5);
            assertEquals(1, data.size());
            assertEquals(0, data.get(0).length);
            assertTrue(data.get(0).endOfStream());
            assertEquals(Http2CodecUtil.DEFAULT_WINDOW_SIZE + 1024, peer.dataBytes(3));
        } finally {
            peer.close();
        }
    }

    /**
     * Stream windows of 20000 bytes: each stream first sends a whole frame and the 3616 bytes its window leaves,
     * then, once its window is opened, whole frames and the 12768 bytes its body leaves.
     */
    @Test
    public void windowUpdatesMidStream() throws Exception {
        Http2WirePeer peer = peer(20000, DEFAULT_MAX_FRAME_SIZE, 1, 3);
        try {
            peer.windowUpdate(0, LARGE_WINDOW);
            peer.respondData(1, Http2WirePeer.body(BODY_SIZE), true);
            peer.respondData(3, Http2WirePeer.body(BODY_SIZE), true);
            peer.flush();
            assertArrayEquals(new int[] {16384, 3616}, lengths(peer.dataFrames(1)));
            assertArrayEquals(new int[] {16384, 3616}, lengths(peer.dataFrames(3)));
            peer.windowUpdate(1, BODY_SIZE - 20000);
            peer.windowUpdate(3, BODY_SIZE - 20000);
            int[] expected = {16384, 3616, 16384, 16384, 12768};
            assertArrayEquals(expected, lengths(peer.dataFrames(1)));
            assertArrayEquals(expected, lengths(peer.dataFrames(3)));
            assertTrue(peer.dataFrames(1).get(4).endOfStream());
            assertTrue(peer.dataFrames(3).get(4).endOfStream());
        } finally {
            peer.close();
        }
    }

    @Test
    public void streamResetWhileQueued() throws Exception {
        int[] ids = {1, 3, 5, 7};
        Http2WirePeer peer = peer(LARGE_WINDOW, DEFAULT_MAX_FRAME_SIZE, ids);
        ByteBuf body = Http2WirePeer.body(BODY_SIZE);
        try {
            List<ChannelFuture> writes = new ArrayList<ChannelFuture>();
            for (int id : ids) {
                writes.add(peer.respondData(id, body.retainedDuplicate(), true));
            }
            peer.flush();
            // The initial connection window (65535 bytes) went out, the rest is queued.
            assertEquals(Http2CodecUtil.DEFAULT_WINDOW_SIZE, peer.dataBytes(0));
            long sentOnReset = peer.dataBytes(3);
            peer.reset(3);
            peer.windowUpdate(0, LARGE_WINDOW);

            assertEquals(sentOnReset, peer.dataBytes(3));
            for (Http2WirePeer.Frame frame : peer.dataFrames(3)) {
                assertFalse(frame.endOfStream());
            }
            assertTrue(writes.get(1).isDone());
            assertFalse(writes.get(1).isSuccess());
            for (int i : new int[] {0, 2, 3}) {
                assertEquals(BODY_SIZE, peer.dataBytes(ids[i]), "stream " + ids[i]);
                assertTrue(writes.get(i).isSuccess(), "stream " + ids[i]);
                for (Http2WirePeer.Frame frame : peer.dataFrames(ids[i])) {
                    // Whole frames, but the one that used the end of the initial connection window (the budget) and
                    // the one that carries what that left of the body (the stream's remaining bytes).
                    boolean endOfInitialWindow = frame.sentBefore + frame.length == Http2CodecUtil.DEFAULT_WINDOW_SIZE;
                    assertTrue(frame.length == DEFAULT_MAX_FRAME_SIZE || endOfInitialWindow || frame.endOfStream(),
                            frame.toString());
                }
            }
            // Every slice of the body, sent or dropped with the reset stream, was released.
            assertEquals(1, body.refCnt());
        } finally {
            body.release();
            peer.close();
        }
    }

    /** The chunk is a minimum: a peer that accepts larger frames gets them when the budget allows. */
    @ParameterizedTest(name = "{0} streams, frames of {1}")
    @CsvSource({"1, 65536", "2, 32768", "4, 16384"})
    public void maxFrameSizeLargerThanDefault(int streams, int expectedFrameSize) throws Exception {
        Http2WirePeer peer = Http2DataFramingTest.respondAll(wholeFrameServer(), streams, BODY_SIZE, 4 * 16384);
        try {
            List<Http2WirePeer.Frame> data = peer.dataFrames(0);
            assertEquals(streams * BODY_SIZE / expectedFrameSize, data.size(), Http2DataFramingTest.sizes(data)
                    .toString());
            for (Http2WirePeer.Frame frame : data) {
                assertEquals(expectedFrameSize, frame.length, frame.toString());
            }
        } finally {
            peer.close();
        }
    }
}
