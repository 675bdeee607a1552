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

import io.netty.channel.IoEventLoop;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SingleThreadIoEventLoop;
import io.netty.util.concurrent.ThreadAwareExecutor;

import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An event loop group whose loops close their channels when they shut down, also when upstream's loop does not.
 * <p>
 * Netty 4.2's {@code SingleThreadIoEventLoop.run()} closes the channels of a loop that is shutting down
 * ({@link IoHandler#prepareToDestroy()}) only right after its I/O step, and then runs its tasks and asks
 * {@code confirmShutdown()} whether to stop. A shutdown that begins while the loop runs its tasks, with a quiet period
 * of 0, is confirmed at once: the loop ends without {@code prepareToDestroy()} and its channels stay open, sockets
 * and all (docs/soak.md, Findings, 4a; {@code EventLoopShutdownTest} reproduces it). The loops of
 * this group check in {@code confirmShutdown()}, on the loop's thread and while the loop still takes tasks, whether
 * they have closed their channels in this shutdown; if not, they do it there, and count it in
 * {@link #skippedCloses()}.
 */
public final class ClosingIoEventLoopGroup extends MultiThreadIoEventLoopGroup {
    private final AtomicInteger skippedCloses = new AtomicInteger();

    public ClosingIoEventLoopGroup(int nThreads, ThreadFactory threadFactory, IoHandlerFactory ioHandlerFactory) {
        super(nThreads, threadFactory, ioHandlerFactory);
    }

    /** How many loops of this group reached {@code confirmShutdown()} without having closed their channels. */
    public int skippedCloses() {
        return skippedCloses.get();
    }

    @Override
    protected IoEventLoop newChild(Executor executor, IoHandlerFactory ioHandlerFactory, Object... args) {
        return new ClosingLoop(this, executor, ioHandlerFactory);
    }

    private static final class ClosingLoop extends SingleThreadIoEventLoop {
        private final ClosingIoEventLoopGroup group;
        private final Class<? extends IoHandler> handlerType;

        ClosingLoop(ClosingIoEventLoopGroup group, Executor executor, IoHandlerFactory factory) {
            super(group, executor, new RecordingFactory(factory));
            this.group = group;
            handlerType = ((RecordingHandler) ioHandler()).delegate.getClass();
        }

        @Override
        protected boolean confirmShutdown() {
            // Called on the loop's thread, first while the loop still takes tasks: the close's own tasks
            // (channelInactive, deregistration) run in the confirmation below.
            RecordingHandler handler = (RecordingHandler) ioHandler();
            if (isShuttingDown() && !handler.prepared) {
                group.skippedCloses.incrementAndGet();
                handler.prepareToDestroy();
            }
            return super.confirmShutdown();
        }

        @Override
        public boolean isIoType(Class<? extends IoHandler> type) {
            return handlerType.equals(type);
        }
    }

    private static final class RecordingFactory implements IoHandlerFactory {
        private final IoHandlerFactory delegate;

        RecordingFactory(IoHandlerFactory delegate) {
            this.delegate = delegate;
        }

        @Override
        public IoHandler newHandler(ThreadAwareExecutor ioExecutor) {
            return new RecordingHandler(delegate.newHandler(ioExecutor));
        }

        @Override
        public boolean isChangingThreadSupported() {
            return delegate.isChangingThreadSupported();
        }
    }

    /** Delegates everything, and records whether the loop has closed its channels ({@link #prepareToDestroy()}). */
    private static final class RecordingHandler extends ForwardingIoHandler {
        boolean prepared;

        RecordingHandler(IoHandler delegate) {
            super(delegate);
        }

        @Override
        public void prepareToDestroy() {
            prepared = true;
            super.prepareToDestroy();
        }
    }
}
