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
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringBufferRingConfig;
import io.netty.channel.uring.IoUringChannelOption;
import io.netty.channel.uring.IoUringFixedBufferRingAllocator;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringIoHandlerConfig;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import io.netty.testsuite.fork.ForkSocketTestPermutation;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapFactory;
import io.netty.util.concurrent.DefaultThreadFactory;

import java.util.ArrayList;
import java.util.List;

/**
 * io_uring servers and clients, with or without a provided-buffer ring, each against the other and against NIO.
 */
public final class IoUringSocketTestPermutation extends ForkSocketTestPermutation {
    /** The buffer group of {@link #handlerConfig(boolean)}'s ring, for {@code IO_URING_BUFFER_GROUP_ID}. */
    public static final short BUFFER_GROUP_ID = 7;

    public static final IoUringSocketTestPermutation PLAIN = new IoUringSocketTestPermutation(false);
    public static final IoUringSocketTestPermutation BUFFER_RING = new IoUringSocketTestPermutation(true);

    private final boolean bufferRing;
    private final EventLoopGroup bossGroup;
    private final EventLoopGroup workerGroup;

    private IoUringSocketTestPermutation(boolean bufferRing) {
        IoUring.ensureAvailability();
        this.bufferRing = bufferRing;
        String name = bufferRing ? "fork-io_uring-ring" : "fork-io_uring";
        IoUringIoHandlerConfig config = handlerConfig(bufferRing);
        bossGroup = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory(name + "-boss", true),
                IoUringIoHandler.newFactory(config));
        workerGroup = new MultiThreadIoEventLoopGroup(2, new DefaultThreadFactory(name + "-worker", true),
                IoUringIoHandler.newFactory(config));
    }

    /**
     * The handler configuration of these tests' event loops: with {@code bufferRing}, a small ring of small buffers
     * ({@link #BUFFER_GROUP_ID}) that runs dry under load, so that recv also takes its fallback path.
     */
    public static IoUringIoHandlerConfig handlerConfig(boolean bufferRing) {
        IoUringIoHandlerConfig config = new IoUringIoHandlerConfig();
        if (bufferRing) {
            config.setBufferRingConfig(IoUringBufferRingConfig.builder()
                    .bufferGroupId(BUFFER_GROUP_ID)
                    .bufferRingSize((short) 16)
                    .batchSize(8)
                    .allocator(new IoUringFixedBufferRingAllocator(1024))
                    .build());
        }
        return config;
    }

    @Override
    protected ServerBootstrap newServerBootstrap() {
        ServerBootstrap sb = new ServerBootstrap().group(bossGroup, workerGroup)
                .channel(IoUringServerSocketChannel.class);
        if (bufferRing) {
            sb.childOption(IoUringChannelOption.IO_URING_BUFFER_GROUP_ID, BUFFER_GROUP_ID);
        }
        return sb;
    }

    @Override
    protected Bootstrap newClientBootstrap() {
        Bootstrap b = new Bootstrap().group(workerGroup).channel(IoUringSocketChannel.class);
        if (bufferRing) {
            b.option(IoUringChannelOption.IO_URING_BUFFER_GROUP_ID, BUFFER_GROUP_ID);
        }
        return b;
    }

    /** Only io_uring, for the tests that take one kind of bootstrap. */
    public List<BootstrapFactory<Bootstrap>> ioUringClientSocket() {
        List<BootstrapFactory<Bootstrap>> clients = new ArrayList<>();
        clients.add(this::newClientBootstrap);
        return clients;
    }

    /** io_uring servers with io_uring clients only, without the combinations with NIO of {@link #socket()}. */
    public List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> ioUringSocket() {
        return combo(ioUringServerSocket(), ioUringClientSocket());
    }

    /** Only io_uring, for the tests that take one kind of bootstrap. */
    public List<BootstrapFactory<ServerBootstrap>> ioUringServerSocket() {
        List<BootstrapFactory<ServerBootstrap>> servers = new ArrayList<>();
        servers.add(this::newServerBootstrap);
        return servers;
    }
}
