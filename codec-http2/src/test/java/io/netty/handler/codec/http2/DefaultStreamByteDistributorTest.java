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

import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.JdkLoggerFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Stream;

import static io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController.DEFAULT_DISTRIBUTOR_PROPERTY;
import static io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController.isWeightedFairQueue;
import static io.netty.handler.codec.http2.Http2CodecUtil.DEFAULT_MAX_FRAME_SIZE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The default {@link StreamByteDistributor} of {@link DefaultHttp2RemoteFlowController}, as every builder gets it:
 * {@link WholeChunkStreamByteDistributor} with a one-frame chunk, unless
 * {@code -Dio.netty.http2.defaultStreamByteDistributor=weightedFairQueue} restores
 * {@link WeightedFairQueueByteDistributor}. {@link #defaultDistributorOfEachValue()} checks both defaults in one JVM;
 * the other tests check the default the JVM was started with (the property's value), and the parsing of its values.
 */
public class DefaultStreamByteDistributorTest {

    private interface ServerFactory {
        Http2ConnectionHandler newServer();
    }

    static Stream<Arguments> builders() {
        return Stream.of(
                Arguments.of("Http2ConnectionHandlerBuilder", new ServerFactory() {
                    @Override
                    public Http2ConnectionHandler newServer() {
                        return new Http2ConnectionHandlerBuilder().server(true).frameListener(new Http2FrameAdapter())
                                .build();
                    }
                }),
                Arguments.of("HttpToHttp2ConnectionHandlerBuilder", new ServerFactory() {
                    @Override
                    public Http2ConnectionHandler newServer() {
                        return new HttpToHttp2ConnectionHandlerBuilder().server(true)
                                .frameListener(new Http2FrameAdapter()).build();
                    }
                }),
                Arguments.of("Http2FrameCodecBuilder", new ServerFactory() {
                    @Override
                    public Http2ConnectionHandler newServer() {
                        return Http2FrameCodecBuilder.forServer().build();
                    }
                }),
                Arguments.of("Http2MultiplexCodecBuilder", new ServerFactory() {
                    @SuppressWarnings("deprecation")
                    @Override
                    public Http2ConnectionHandler newServer() {
                        return Http2MultiplexCodecBuilder.forServer(new ChannelInitializer<Channel>() {
                            @Override
                            protected void initChannel(Channel ch) {
                                // Streams of this test need no handler.
                            }
                        }).build();
                    }
                }));
    }

    /** What this JVM's default is, from the system property the class reads once. */
    private static boolean weightedFairQueueExpected() {
        String value = System.getProperty(DEFAULT_DISTRIBUTOR_PROPERTY);
        return value != null && "weightedFairQueue".equalsIgnoreCase(value.trim());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builders")
    public void builderUsesDefaultDistributor(String name, ServerFactory factory) throws Exception {
        int streams = 4;
        Http2WirePeer peer = Http2DataFramingTest.respondAll(factory.newServer(), streams,
                Http2DataFramingTest.BODY_SIZE, DEFAULT_MAX_FRAME_SIZE);
        try {
            List<Http2WirePeer.Frame> data = peer.dataFrames(0);
            int wholeFrames = streams * Http2DataFramingTest.BODY_SIZE / DEFAULT_MAX_FRAME_SIZE;
            if (weightedFairQueueExpected()) {
                assertTrue(data.size() >= 8 * wholeFrames, "DATA frames " + Http2DataFramingTest.sizes(data));
            } else {
                assertEquals(wholeFrames, data.size(), "DATA frames " + Http2DataFramingTest.sizes(data));
                for (Http2WirePeer.Frame frame : data) {
                    assertEquals(DEFAULT_MAX_FRAME_SIZE, frame.length, frame.toString());
                }
            }
        } finally {
            peer.close();
        }
    }

    @Test
    public void absentValueMeansWholeChunk() {
        RecordingLogger log = new RecordingLogger();
        assertFalse(isWeightedFairQueue(null, log.logger));
        assertEquals(0, log.count(Level.WARNING));
        assertTrue(log.contains(Level.FINE, "wholeChunk"), log.records.toString());
    }

    @Test
    public void acceptedValues() {
        RecordingLogger log = new RecordingLogger();
        assertFalse(isWeightedFairQueue("wholeChunk", log.logger));
        assertFalse(isWeightedFairQueue(" WholeChunk ", log.logger));
        assertTrue(isWeightedFairQueue("weightedFairQueue", log.logger));
        assertTrue(isWeightedFairQueue("WEIGHTEDFAIRQUEUE ", log.logger));
        assertEquals(0, log.count(Level.WARNING));
        assertTrue(log.contains(Level.FINE, "weightedFairQueue"), log.records.toString());
    }

    @Test
    public void unknownValueIsReportedAndWholeChunkKept() {
        RecordingLogger log = new RecordingLogger();
        assertFalse(isWeightedFairQueue("wfq", log.logger));
        assertEquals(1, log.count(Level.WARNING));
        assertTrue(log.contains(Level.WARNING, DEFAULT_DISTRIBUTOR_PROPERTY), log.records.toString());
        assertTrue(log.contains(Level.WARNING, "'wfq'"), log.records.toString());
        assertTrue(log.contains(Level.WARNING, "wholeChunk, weightedFairQueue"), log.records.toString());
    }

    /** Both defaults the property selects, in one JVM. */
    @Test
    public void defaultDistributorOfEachValue() {
        Http2Connection connection = new DefaultHttp2Connection(true);
        assertInstanceOf(WholeChunkStreamByteDistributor.class,
                DefaultHttp2RemoteFlowController.newDefaultStreamByteDistributor(connection, false));
        assertInstanceOf(WeightedFairQueueByteDistributor.class,
                DefaultHttp2RemoteFlowController.newDefaultStreamByteDistributor(connection, true));
    }

    private static final class JdkLoggers extends JdkLoggerFactory {
        @SuppressWarnings("deprecation")
        JdkLoggers() {
        }

        InternalLogger create(String name) {
            return newInstance(name);
        }
    }

    /** An {@link InternalLogger} backed by java.util.logging, whose records are kept. */
    private static final class RecordingLogger extends Handler {
        private static int instances;
        final List<LogRecord> records = new ArrayList<LogRecord>();
        final InternalLogger logger;
        // java.util.logging keeps loggers weakly: hold on to it while recording.
        private final Logger julLogger;

        RecordingLogger() {
            String name = DefaultStreamByteDistributorTest.class.getName() + '.' + instances++;
            julLogger = Logger.getLogger(name);
            julLogger.setUseParentHandlers(false);
            julLogger.setLevel(Level.ALL);
            julLogger.addHandler(this);
            logger = new JdkLoggers().create(name);
        }

        @Override
        public void publish(LogRecord record) {
            records.add(record);
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }

        int count(Level level) {
            int n = 0;
            for (LogRecord r : records) {
                if (r.getLevel().equals(level)) {
                    n++;
                }
            }
            return n;
        }

        boolean contains(Level level, String text) {
            for (LogRecord r : records) {
                if (r.getLevel().equals(level) && r.getMessage().contains(text)) {
                    return true;
                }
            }
            return false;
        }
    }
}
