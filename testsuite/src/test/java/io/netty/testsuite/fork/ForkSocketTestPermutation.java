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
package io.netty.testsuite.fork;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapFactory;
import io.netty.testsuite.transport.socket.SocketTestPermutation;

import java.util.ArrayList;
import java.util.List;

/**
 * The fork's stand-in for upstream's unpublished transport test permutations: a transport's servers and clients,
 * each against the other and against NIO (NIO against NIO left out: nothing of the transport in it).
 */
public abstract class ForkSocketTestPermutation extends SocketTestPermutation {

    /** A server bootstrap of the transport under test. */
    protected abstract ServerBootstrap newServerBootstrap();

    /** A client bootstrap of the transport under test. */
    protected abstract Bootstrap newClientBootstrap();

    @Override
    public List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> socket() {
        List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> combos = combo(serverSocket(), clientSocket());
        // The last combination is NIO against NIO.
        combos.remove(combos.size() - 1);
        return combos;
    }

    @Override
    public List<BootstrapFactory<ServerBootstrap>> serverSocket() {
        List<BootstrapFactory<ServerBootstrap>> servers = new ArrayList<>();
        servers.add(this::newServerBootstrap);
        servers.add(() -> new ServerBootstrap().group(NIO_GROUP).channel(NioServerSocketChannel.class));
        return servers;
    }

    @Override
    public List<BootstrapFactory<Bootstrap>> clientSocket() {
        List<BootstrapFactory<Bootstrap>> clients = new ArrayList<>();
        clients.add(this::newClientBootstrap);
        clients.add(() -> new Bootstrap().group(NIO_GROUP).channel(NioSocketChannel.class));
        return clients;
    }
}
