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
import java.util.Collections;
import java.util.List;
import java.util.function.Function;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Stream;

import static io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController.DEFAULT_DISTRIBUTOR;
import static io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController.DEFAULT_DISTRIBUTOR_PROPERTY;
import static io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController.DISTRIBUTOR_WEIGHTED_FAIR_QUEUE;
import static io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController.DISTRIBUTOR_WHOLE_CHUNK;
import static io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController.defaultDistributor;
import static io.netty.handler.codec.http2.Http2CodecUtil.DEFAULT_MAX_FRAME_SIZE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The default {@link StreamByteDistributor} of {@link DefaultHttp2RemoteFlowController}, as every builder gets it:
 * {@code -Dio.netty.http2.defaultStreamByteDistributor} selects {@link WeightedFairQueueByteDistributor}
 * ({@code weightedFairQueue}) or {@link WholeChunkStreamByteDistributor} with a one-frame chunk ({@code wholeChunk});
 * without it, or with an unknown value, {@link DefaultHttp2RemoteFlowController#DEFAULT_DISTRIBUTOR}. The builders'
 * {@code streamByteDistributor} chooses per connection. {@link #defaultDistributorOfEachValue()} checks both
 * distributors in one JVM; {@link #builderUsesDefaultDistributor} checks the default the JVM was started with.
 */
public class DefaultStreamByteDistributorTest {

    interface ServerFactory {
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

    /** The builders with {@code streamByteDistributor}, each given {@code distributor}. */
    static Stream<Arguments> buildersWithDistributor() {
        Stream.Builder<Arguments> arguments = Stream.builder();
        for (final String distributor : new String[] { DISTRIBUTOR_WEIGHTED_FAIR_QUEUE, DISTRIBUTOR_WHOLE_CHUNK }) {
            final Function<Http2Connection, StreamByteDistributor> factory =
                    DISTRIBUTOR_WHOLE_CHUNK.equals(distributor) ? WholeChunkStreamByteDistributor::new :
                            WeightedFairQueueByteDistributor::new;
            arguments.add(Arguments.of("Http2ConnectionHandlerBuilder", distributor, new ServerFactory() {
                @Override
                public Http2ConnectionHandler newServer() {
                    return new Http2ConnectionHandlerBuilder().server(true).frameListener(new Http2FrameAdapter())
                            .streamByteDistributor(factory).build();
                }
            }));
            arguments.add(Arguments.of("HttpToHttp2ConnectionHandlerBuilder", distributor, new ServerFactory() {
                @Override
                public Http2ConnectionHandler newServer() {
                    return new HttpToHttp2ConnectionHandlerBuilder().server(true)
                            .frameListener(new Http2FrameAdapter()).streamByteDistributor(factory).build();
                }
            }));
            arguments.add(Arguments.of("Http2FrameCodecBuilder", distributor, new ServerFactory() {
                @Override
                public Http2ConnectionHandler newServer() {
                    return Http2FrameCodecBuilder.forServer().streamByteDistributor(factory).build();
                }
            }));
        }
        return arguments.build();
    }

    /** The default of this JVM: the system property's value, read as the flow controller reads it. */
    private static String jvmDefault() {
        String value = System.getProperty(DEFAULT_DISTRIBUTOR_PROPERTY);
        if (value != null) {
            if (DISTRIBUTOR_WEIGHTED_FAIR_QUEUE.equalsIgnoreCase(value.trim())) {
                return DISTRIBUTOR_WEIGHTED_FAIR_QUEUE;
            }
            if (DISTRIBUTOR_WHOLE_CHUNK.equalsIgnoreCase(value.trim())) {
                return DISTRIBUTOR_WHOLE_CHUNK;
            }
        }
        return DEFAULT_DISTRIBUTOR;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("builders")
    public void builderUsesDefaultDistributor(String name, ServerFactory factory) throws Exception {
        assertFraming(factory, jvmDefault());
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("buildersWithDistributor")
    public void builderUsesItsOwnDistributor(String name, String distributor, ServerFactory factory)
            throws Exception {
        assertFraming(factory, distributor);
    }

    /**
     * 4 streams of 64 KiB: whole 16 KiB frames with {@code wholeChunk}, at least 8 times as many with
     * {@code weightedFairQueue}.
     */
    static void assertFraming(ServerFactory factory, String distributor) throws Exception {
        int streams = 4;
        Http2WirePeer peer = Http2DataFramingTest.respondAll(factory.newServer(), streams,
                Http2DataFramingTest.BODY_SIZE, DEFAULT_MAX_FRAME_SIZE);
        try {
            List<Http2WirePeer.Frame> data = peer.dataFrames(0);
            int wholeFrames = streams * Http2DataFramingTest.BODY_SIZE / DEFAULT_MAX_FRAME_SIZE;
            if (DISTRIBUTOR_WEIGHTED_FAIR_QUEUE.equals(distributor)) {
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

    /** With a connection given its own remote flow controller, or with a codec, the builder has none to set. */
    @Test
    public void streamByteDistributorConflictsWithAGivenFlowControllerOrCodec() {
        Function<Http2Connection, StreamByteDistributor> factory = WholeChunkStreamByteDistributor::new;
        Http2Connection connection = new DefaultHttp2Connection(true);
        connection.remote().flowController(new DefaultHttp2RemoteFlowController(connection));
        Http2ConnectionHandlerBuilder withConnection = new Http2ConnectionHandlerBuilder().connection(connection)
                .frameListener(new Http2FrameAdapter()).streamByteDistributor(factory);
        assertThrows(IllegalStateException.class, withConnection::build);

        Http2Connection other = new DefaultHttp2Connection(true);
        Http2ConnectionEncoder encoder = new DefaultHttp2ConnectionEncoder(other, new DefaultHttp2FrameWriter());
        Http2ConnectionDecoder decoder = new DefaultHttp2ConnectionDecoder(other, encoder,
                new DefaultHttp2FrameReader());
        Http2ConnectionHandlerBuilder withCodec = new Http2ConnectionHandlerBuilder().codec(decoder, encoder);
        assertThrows(IllegalStateException.class, () -> withCodec.streamByteDistributor(factory));
        Http2ConnectionHandlerBuilder withDistributor =
                new Http2ConnectionHandlerBuilder().streamByteDistributor(factory);
        assertThrows(IllegalStateException.class, () -> withDistributor.codec(decoder, encoder));
    }

    /** Http2FrameCodecBuilder builds its connection itself when given a frame writer: the distributor applies too. */
    @Test
    public void frameCodecBuilderWithAFrameWriterUsesItsDistributor() {
        List<Http2Connection> asked = new ArrayList<Http2Connection>();
        Http2FrameCodec codec = Http2FrameCodecBuilder.forServer().frameWriter(new DefaultHttp2FrameWriter())
                .streamByteDistributor(connection -> {
                    asked.add(connection);
                    return new WholeChunkStreamByteDistributor(connection);
                }).build();
        assertEquals(Collections.singletonList(codec.connection()), asked);
    }

    @Test
    public void absentValueMeansTheDefault() {
        RecordingLogger log = new RecordingLogger();
        assertEquals(DEFAULT_DISTRIBUTOR, defaultDistributor(null, log.logger));
        assertEquals(0, log.count(Level.WARNING));
        assertTrue(log.contains(Level.FINE, DEFAULT_DISTRIBUTOR), log.records.toString());
    }

    @Test
    public void acceptedValues() {
        RecordingLogger log = new RecordingLogger();
        assertEquals(DISTRIBUTOR_WHOLE_CHUNK, defaultDistributor("wholeChunk", log.logger));
        assertEquals(DISTRIBUTOR_WHOLE_CHUNK, defaultDistributor(" WholeChunk ", log.logger));
        assertEquals(DISTRIBUTOR_WEIGHTED_FAIR_QUEUE, defaultDistributor("weightedFairQueue", log.logger));
        assertEquals(DISTRIBUTOR_WEIGHTED_FAIR_QUEUE, defaultDistributor("WEIGHTEDFAIRQUEUE ", log.logger));
        assertEquals(0, log.count(Level.WARNING));
        assertTrue(log.contains(Level.FINE, "weightedFairQueue"), log.records.toString());
        assertTrue(log.contains(Level.FINE, "wholeChunk"), log.records.toString());
    }

    @Test
    public void unknownValueIsReportedAndTheDefaultKept() {
        RecordingLogger log = new RecordingLogger();
        assertEquals(DEFAULT_DISTRIBUTOR, defaultDistributor("wfq", log.logger));
        assertEquals(1, log.count(Level.WARNING));
        assertTrue(log.contains(Level.WARNING, DEFAULT_DISTRIBUTOR_PROPERTY), log.records.toString());
        assertTrue(log.contains(Level.WARNING, "'wfq'"), log.records.toString());
        assertTrue(log.contains(Level.WARNING, "weightedFairQueue, wholeChunk"), log.records.toString());
        assertTrue(log.contains(Level.WARNING, "using " + DEFAULT_DISTRIBUTOR), log.records.toString());
    }

    /** Both distributors the property selects, in one JVM. */
    @Test
    public void defaultDistributorOfEachValue() {
        Http2Connection connection = new DefaultHttp2Connection(true);
        assertInstanceOf(WholeChunkStreamByteDistributor.class,
                DefaultHttp2RemoteFlowController.newDefaultStreamByteDistributor(connection, DISTRIBUTOR_WHOLE_CHUNK));
        assertInstanceOf(WeightedFairQueueByteDistributor.class,
                DefaultHttp2RemoteFlowController.newDefaultStreamByteDistributor(connection,
                        DISTRIBUTOR_WEIGHTED_FAIR_QUEUE));
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
    static final class RecordingLogger extends Handler {
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
