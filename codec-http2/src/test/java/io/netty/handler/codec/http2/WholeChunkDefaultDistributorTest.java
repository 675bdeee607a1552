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

import io.netty.handler.codec.http2.DefaultStreamByteDistributorTest.RecordingLogger;
import io.netty.handler.codec.http2.DefaultStreamByteDistributorTest.ServerFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.logging.Level;

import static io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController.DEFAULT_DISTRIBUTOR_PROPERTY;
import static io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController.defaultDistributor;
import static io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController.newDefaultStreamByteDistributor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Without {@code -Dio.netty.http2.defaultStreamByteDistributor} the default {@link StreamByteDistributor} is a
 * {@link WholeChunkStreamByteDistributor}. (The property's other values and the builders' own distributors:
 * {@link DefaultStreamByteDistributorTest}.)
 */
public class WholeChunkDefaultDistributorTest {

    /**
     * In a JVM started without the property, each builder given no distributor sends 4 concurrent 64 KiB responses
     * in 16 whole frames.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("io.netty.handler.codec.http2.DefaultStreamByteDistributorTest#builders")
    public void buildersSendWholeFramesWithoutTheProperty(String name, ServerFactory factory) throws Exception {
        assertNull(System.getProperty(DEFAULT_DISTRIBUTOR_PROPERTY), "this test needs a JVM without the property");
        DefaultStreamByteDistributorTest.assertFraming(factory, "wholeChunk");
    }

    @Test
    public void absentValueMeansWholeChunk() {
        RecordingLogger log = new RecordingLogger();
        String distributor = defaultDistributor(null, log.logger);
        assertEquals("wholeChunk", distributor);
        assertInstanceOf(WholeChunkStreamByteDistributor.class,
                newDefaultStreamByteDistributor(new DefaultHttp2Connection(true), distributor));
        assertEquals(0, log.count(Level.WARNING));
    }
}
