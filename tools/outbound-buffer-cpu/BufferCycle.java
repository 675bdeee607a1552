/*
 * Fork tooling (not part of any upstream PR): the cycle of microbench's ChannelOutboundBufferBenchmark as a
 * LongUnaryOperator, so that tools/outbound-buffer-cpu.sh can load it twice in one JVM, once with upstream's
 * netty-transport and once with the fork's (each in its own class loader). One operation adds MESSAGES messages of
 * 128 bytes to the outbound buffer of a handler-less EmbeddedChannel (default water marks), flushes them, asks
 * bytesBeforeUnwritable() and removes their bytes with removeBytes(long), as NIO and epoll do; PENDING is the
 * flushed backlog held ahead of each cycle (BELOW_LOW, BETWEEN_MARKS or ABOVE_HIGH), as in the benchmark.
 */
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;

import java.util.function.LongUnaryOperator;

public final class BufferCycle implements LongUnaryOperator {
    private static final int MESSAGE_SIZE = 128;

    private final ChannelOutboundBuffer buffer;
    private final ChannelPromise promise;
    private final ByteBuf[] buffers;
    private final long cycleBytes;

    public BufferCycle(int messages, String pending) {
        EmbeddedChannel channel = new EmbeddedChannel();
        buffer = channel.unsafe().outboundBuffer();
        promise = channel.voidPromise();
        buffers = new ByteBuf[messages];
        for (int i = 0; i < messages; i++) {
            buffers[i] = Unpooled.buffer(MESSAGE_SIZE, MESSAGE_SIZE).writeZero(MESSAGE_SIZE);
        }
        cycleBytes = (long) messages * MESSAGE_SIZE;
        int low = channel.config().getWriteBufferLowWaterMark();
        int high = channel.config().getWriteBufferHighWaterMark();
        long backlog;
        switch (pending) {
            case "BELOW_LOW":
                backlog = 0;
                break;
            case "BETWEEN_MARKS":
                backlog = low + (high - low) / 4;
                break;
            case "ABOVE_HIGH":
                backlog = high + (high - low) / 2;
                break;
            default:
                throw new IllegalArgumentException("PENDING is BELOW_LOW, BETWEEN_MARKS or ABOVE_HIGH, not " + pending);
        }
        for (int i = 0; buffer.totalPendingWriteBytes() < backlog; i++) {
            buffer.addMessage(buffers[i % messages].retain(), MESSAGE_SIZE, promise);
        }
        buffer.addFlush();
        long min = buffer.totalPendingWriteBytes();
        applyAsLong(1);
        long max = min + cycleBytes + 96L * messages; // an upper bound of the entries' overhead
        boolean valid = "BELOW_LOW".equals(pending) ? max < low && channel.isWritable()
                : "BETWEEN_MARKS".equals(pending) ? min >= low && max <= high && channel.isWritable()
                : min > high && !channel.isWritable();
        if (!valid || buffer.totalPendingWriteBytes() != min) {
            throw new IllegalStateException(pending + ": " + min + ".." + max + " bytes, writable " +
                    channel.isWritable() + ", water marks " + low + '/' + high);
        }
    }

    @Override
    public long applyAsLong(long ops) {
        ChannelOutboundBuffer buffer = this.buffer;
        ByteBuf[] buffers = this.buffers;
        long sum = 0;
        for (long k = 0; k < ops; k++) {
            for (ByteBuf buf : buffers) {
                buffer.addMessage(buf.retain(), MESSAGE_SIZE, promise);
            }
            buffer.addFlush();
            sum += buffer.bytesBeforeUnwritable();
            buffer.removeBytes(cycleBytes);
        }
        return sum;
    }
}
