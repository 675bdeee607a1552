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
package io.netty.testsuite.fork.soak;

import io.netty.util.ResourceLeakDetector;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The soak charges a leak to the configuration that made it, not to the one during which the collector happened to
 * find it. Two short configurations run as the soak runs them ({@link Http2SoakRun#runAndCheck}): the first with a
 * test-only fault, every server connection holding a buffer it never releases, reachable from the connection (and so
 * from the run's maps of its connections) until the configuration ends; the second without. The leaks must be the
 * first's, none the second's. Before each configuration had a leak check of its own, the run's maps kept the first
 * configuration's connections until the second began, and its leaks were charged to the second.
 */
public class Http2SoakLeakAttributionTest {
    private static final long PHASE_MILLIS = 1000;
    private static final SoakClient.Kind[] NORMAL = {SoakClient.Kind.NORMAL};

    @Test
    public void aLeakIsChargedToTheConfigurationThatMadeIt() throws Exception {
        assertThat(ResourceLeakDetector.getLevel()).isEqualTo(ResourceLeakDetector.Level.PARANOID);

        SoakStats leaky = Http2SoakRun.runAndCheck(SoakServer.Transport.NIO, SoakServer.Pipeline.CODEC,
                SoakTls.Mode.NONE, PHASE_MILLIS, 1, NORMAL, true);
        SoakStats next = Http2SoakRun.runAndCheck(SoakServer.Transport.NIO, SoakServer.Pipeline.CODEC,
                SoakTls.Mode.NONE, PHASE_MILLIS, 2, NORMAL, false);

        assertThat(leaky.serverConnections.sum()).as("connections of the leaking configuration").isPositive();
        // Each probe has a trace of its own (the detector reports a trace once): every one must be found at its check.
        assertThat(leaky.leaks).as("leaks charged to the configuration that made them, one per connection")
                .isEqualTo(leaky.serverConnections.sum());
        assertThat(leaky.lateLeaks).as("found at its own check, not before the next one's load").isZero();
        assertThat(next.leaks).as("leaks charged to the next configuration").isZero();
        assertThat(next.intact.sum()).as("the next configuration ran").isPositive();
    }
}
