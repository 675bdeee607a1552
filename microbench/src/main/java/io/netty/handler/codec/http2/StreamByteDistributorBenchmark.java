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

import io.netty.microbench.util.AbstractMicrobenchmark;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

import static io.netty.handler.codec.http2.Http2CodecUtil.DEFAULT_MAX_FRAME_SIZE;

/**
 * Distributes a 64 KiB body on each of {@code streams} streams, {@code budget} bytes per call to
 * {@link StreamByteDistributor#distribute(int, StreamByteDistributor.Writer)} (the flow controller's budget: channel
 * writability or connection window), with {@link WeightedFairQueueByteDistributor},
 * {@link UniformStreamByteDistributor} with its 1 KiB chunk and with a 16 KiB one, and
 * {@link WholeChunkStreamByteDistributor} (16 KiB chunks).
 * One operation delivers every body. The auxiliary counters are rates: divide by the score for values per operation:
 * {@code writes} allocations handed to streams, {@code dataFrames} DATA frames they become with a 16 KiB max frame
 * size, {@code partialFrames} those frames shorter than 16 KiB.
 */
@State(Scope.Benchmark)
public class StreamByteDistributorBenchmark extends AbstractMicrobenchmark {
    private static final int BODY_SIZE = 64 * 1024;

    public enum Algorithm {
        WFQ {
            @Override
            StreamByteDistributor newDistributor(Http2Connection connection) {
                return new WeightedFairQueueByteDistributor(connection);
            }
        },
        UNIFORM_1K {
            @Override
            StreamByteDistributor newDistributor(Http2Connection connection) {
                return new UniformStreamByteDistributor(connection);
            }
        },
        UNIFORM_16K {
            @Override
            StreamByteDistributor newDistributor(Http2Connection connection) {
                UniformStreamByteDistributor distributor = new UniformStreamByteDistributor(connection);
                distributor.minAllocationChunk(DEFAULT_MAX_FRAME_SIZE);
                return distributor;
            }
        },
        WHOLE_CHUNK {
            @Override
            StreamByteDistributor newDistributor(Http2Connection connection) {
                return new WholeChunkStreamByteDistributor(connection);
            }
        };

        abstract StreamByteDistributor newDistributor(Http2Connection connection);
    }

    @Param
    public Algorithm algorithm;

    @Param({ "2", "16", "100" })
    public int streams;

    @Param({ "16384", "65536", "1048576" })
    public int budget;

    private StreamByteDistributor distributor;
    private PendingStream[] states;

    /** Per-operation write statistics, reported as rates. */
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class WriteCounters {
        public long writes;
        public long dataFrames;
        public long partialFrames;

        @Setup(Level.Iteration)
        public void reset() {
            writes = 0;
            dataFrames = 0;
            partialFrames = 0;
        }
    }

    private final class CountingWriter implements StreamByteDistributor.Writer {
        WriteCounters counters;
        long written;

        @Override
        public void write(Http2Stream stream, int numBytes) {
            PendingStream state = states[stream.id() >>> 1];
            counters.writes++;
            int frames = Math.max(1, (numBytes + DEFAULT_MAX_FRAME_SIZE - 1) / DEFAULT_MAX_FRAME_SIZE);
            counters.dataFrames += frames;
            if (numBytes % DEFAULT_MAX_FRAME_SIZE != 0) {
                counters.partialFrames++;
            }
            state.pending -= numBytes;
            written += numBytes;
            distributor.updateStreamableBytes(state);
        }
    }

    private final CountingWriter writer = new CountingWriter();

    @Setup(Level.Trial)
    public void setupTrial() throws Http2Exception {
        Http2Connection connection = new DefaultHttp2Connection(false);
        distributor = algorithm.newDistributor(connection);
        states = new PendingStream[streams];
        for (int i = 0; i < streams; i++) {
            states[i] = new PendingStream(connection.local().createStream(2 * i + 1, false));
        }
    }

    @Benchmark
    public long distribute(WriteCounters counters) throws Http2Exception {
        writer.counters = counters;
        writer.written = 0;
        for (PendingStream state : states) {
            state.pending = BODY_SIZE;
            distributor.updateStreamableBytes(state);
        }
        long total = (long) streams * BODY_SIZE;
        long calls = 0;
        while (writer.written < total) {
            distributor.distribute(budget, writer);
            calls++;
        }
        return calls;
    }

    private static final class PendingStream implements StreamByteDistributor.StreamState {
        private final Http2Stream stream;
        int pending;

        PendingStream(Http2Stream stream) {
            this.stream = stream;
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
            return pending > 0;
        }

        @Override
        public int windowSize() {
            return Integer.MAX_VALUE;
        }
    }
}
