/*
 * Copyright 2026 The Netty Project
 *
 * The Netty Project licenses this file to you under the Apache License,
 * version 2.0 (the "License"); you may not use this file except in compliance
 * with the License. You may obtain a copy of the License at:
 *
 *   https://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
 * WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
 * License for the specific language governing permissions and limitations
 * under the License.
 */
package io.netty.testsuite.fork.uring;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.testsuite.transport.TestsuitePermutation;
import io.netty.testsuite.transport.socket.SocketHttp2ResponseFramingTest;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The companion of {@link IoUringSocketHttp2ResponseFramingTest}: the same servers and clients on io_uring, in a JVM
 * that restores upstream's defaults ({@code -Dio.netty.http2.defaultStreamByteDistributor=weightedFairQueue
 * -Dio.netty.iouring.defaultWriteBufferHighWaterMark=65536}; surefire execution {@code upstream-defaults}). Responses
 * must still arrive complete and intact; their framing is only logged (it depends on when write completions are
 * processed), so the build output shows the fragmentation the fork removes. Tagged {@value #TAG}: only that execution
 * runs it.
 */
@Tag(IoUringSocketHttp2ResponseFramingUpstreamDefaultsTest.TAG)
public class IoUringSocketHttp2ResponseFramingUpstreamDefaultsTest extends SocketHttp2ResponseFramingTest {
    static final String TAG = "upstream-defaults";

    @BeforeAll
    static void upstreamDefaults() {
        String where = "runs in surefire execution upstream-defaults only (./mvnw verify -pl testsuite)";
        assertEquals("weightedFairQueue", System.getProperty("io.netty.http2.defaultStreamByteDistributor"), where);
        assertEquals("65536", System.getProperty("io.netty.iouring.defaultWriteBufferHighWaterMark"), where);
    }

    @Override
    protected boolean expectWholeFrames() {
        return false;
    }

    @Override
    protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return IoUringSocketTestPermutation.PLAIN.socket();
    }
}
