package com.example.reactornetty;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

import java.util.concurrent.atomic.LongAdder;

/**
 * Counts the HTTP/2 frames a server sends, from the raw bytes the client reads, before any decoding; placed first in
 * a client connection's pipeline it passes every byte on unchanged. The server's first bytes are a frame (its
 * SETTINGS), so there is no preface to skip.
 */
public final class FrameCounter extends ChannelInboundHandlerAdapter {
    private static final int DATA = 0;

    /** Totals over any number of connections. */
    public static final class Counts {
        final LongAdder dataFrames = new LongAdder();
        final LongAdder dataBytes = new LongAdder();
        final LongAdder frames = new LongAdder();

        public long dataFrames() {
            return dataFrames.sum();
        }

        public long dataBytes() {
            return dataBytes.sum();
        }

        public long frames() {
            return frames.sum();
        }

        public void reset() {
            dataFrames.reset();
            dataBytes.reset();
            frames.reset();
        }
    }

    private final Counts counts;
    private final byte[] header = new byte[9];
    private int headerFill;
    private long payloadLeft;

    public FrameCounter(Counts counts) {
        this.counts = counts;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ByteBuf) {
            ByteBuf buf = (ByteBuf) msg;
            int i = buf.readerIndex();
            int end = buf.writerIndex();
            while (i < end) {
                if (payloadLeft > 0) {
                    int n = (int) Math.min(payloadLeft, end - i);
                    i += n;
                    payloadLeft -= n;
                    continue;
                }
                header[headerFill++] = buf.getByte(i++);
                if (headerFill == header.length) {
                    int length = (header[0] & 0xff) << 16 | (header[1] & 0xff) << 8 | header[2] & 0xff;
                    counts.frames.increment();
                    if (header[3] == DATA) {
                        counts.dataFrames.increment();
                        counts.dataBytes.add(length);
                    }
                    payloadLeft = length;
                    headerFill = 0;
                }
            }
        }
        ctx.fireChannelRead(msg);
    }
}
