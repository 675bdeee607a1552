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
package io.netty.testsuite.fork.epoll;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.testsuite.fork.ForkSocketTestPermutation;
import io.netty.util.concurrent.DefaultThreadFactory;

/**
 * epoll servers and clients, each against the other and against NIO.
 */
public final class EpollSocketTestPermutation extends ForkSocketTestPermutation {
    public static final EpollSocketTestPermutation INSTANCE = new EpollSocketTestPermutation();

    private final EventLoopGroup bossGroup;
    private final EventLoopGroup workerGroup;

    private EpollSocketTestPermutation() {
        Epoll.ensureAvailability();
        bossGroup = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("fork-epoll-boss", true),
                EpollIoHandler.newFactory());
        workerGroup = new MultiThreadIoEventLoopGroup(2, new DefaultThreadFactory("fork-epoll-worker", true),
                EpollIoHandler.newFactory());
    }

    @Override
    protected ServerBootstrap newServerBootstrap() {
        return new ServerBootstrap().group(bossGroup, workerGroup).channel(EpollServerSocketChannel.class);
    }

    @Override
    protected Bootstrap newClientBootstrap() {
        return new Bootstrap().group(workerGroup).channel(EpollSocketChannel.class);
    }
}
