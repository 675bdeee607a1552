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
package io.netty.microbench.http2;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;

import java.util.concurrent.TimeUnit;

/**
 * Reads a connection at most at a given rate, as behind a slower link: the channel (with {@code AUTO_READ} off) does
 * not read on its own; this handler, first in the pipeline, asks for every read once the bytes read so far are due,
 * and ignores the handlers behind it asking for more (a decoder does whenever a read gave it no message). Up to
 * {@code burst} bytes of unused rate are kept.
 */
final class ReadPacer extends ChannelDuplexHandler {
    private final double bytesPerNano;
    private final int burst;
    private final Runnable read = this::read;
    private ChannelHandlerContext ctx;
    private double credit;
    private long last;

    ReadPacer(int mibPerSecond, int burst) {
        bytesPerNano = mibPerSecond * 1024.0 * 1024.0 / TimeUnit.SECONDS.toNanos(1);
        this.burst = burst;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        last = System.nanoTime();
        ctx.read();
        ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ByteBuf) {
            credit -= ((ByteBuf) msg).readableBytes();
        }
        ctx.fireChannelRead(msg);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        ctx.fireChannelReadComplete();
        long now = System.nanoTime();
        credit = Math.min(burst, credit + (now - last) * bytesPerNano);
        last = now;
        if (credit >= 0) {
            ctx.read();
        } else {
            ctx.executor().schedule(read, (long) (-credit / bytesPerNano), TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void read(ChannelHandlerContext ctx) {
        // The next read is this handler's to ask for.
    }

    private void read() {
        if (ctx.channel().isActive()) {
            ctx.read();
        }
    }
}
