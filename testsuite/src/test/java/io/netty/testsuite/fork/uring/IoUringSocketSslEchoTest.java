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
import io.netty.testsuite.transport.socket.SocketSslEchoTest;
import org.junit.jupiter.api.Nested;

import java.util.List;

/**
 * Netty's {@link SocketSslEchoTest} on the fork's io_uring transport, with the JDK's engine and (netty-tcnative-
 * boringssl-static being on this module's class path) OpenSSL's, io_uring at both ends. Not with NIO at one end
 * (NIO's side is upstream's; the two combinations took 60 s of CI's time) nor with a provided-buffer ring (it changes
 * how io_uring reads, which the series does not touch, and the other runners of this package cover it; 90 s).
 */
public class IoUringSocketSslEchoTest {
    @Nested
    public class Plain extends SocketSslEchoTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return IoUringSocketTestPermutation.PLAIN.ioUringSocket();
        }
    }
}
