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

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringChannelOption;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.testsuite.fork.soak.AbandonedZeroCopyWrites;
import io.netty.util.concurrent.DefaultThreadFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.Collections;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What becomes of a buffer that an io_uring channel sent with zero copy ({@code IORING_OP_SEND_ZC}) when the channel
 * closes before the kernel's notification ({@code IORING_CQE_F_NOTIF}) came (docs/soak.md, Findings, 11).
 * <p>
 * The server writes one {@value #SIZE}-byte buffer, above {@code IO_URING_WRITE_ZERO_COPY_THRESHOLD}, to a peer (a
 * plain socket with a small receive buffer) that does not read yet. The send completes at once (the server's socket
 * buffer takes all of it) and the channel's write succeeds; but the kernel keeps using the buffer's memory until the
 * peer has acknowledged every byte, and only then posts the notification. Until it does, the channel keeps the buffer
 * retained ({@code WriteOperation.retainReferences} from {@code handleWriteCompleteZeroCopy}): the write succeeded and
 * the buffer's reference count is still 1, which only the zero-copy path does. So the notification is outstanding for
 * as long as the test wants, without any timing.
 * <p>
 * A closed channel still gets its notification, and releases the buffer, as long as its event loop runs: the
 * registration stays until its last completion. A loop that shuts down in that state (4.2.18.Final, fork or not)
 * tears its ring down with the notification outstanding and never releases the buffer:
 * {@link #upstreamLoopShutdownLeavesTheZeroCopyBufferRetained()} pins that with Netty's classes only (it fails once
 * upstream releases it); {@link #soakReleasesWhatATerminatedLoopAbandoned()} checks the soak's release of such
 * references ({@link AbandonedZeroCopyWrites}).
 * Every test here passes on upstream's 4.2.18.Final jars too ({@code -Pupstream}, testsuite/pom.xml).
 */
public class IoUringZeroCopyNotificationTest {
    private static final long TIMEOUT_SECONDS = 10;
    private static final int SIZE = 1024 * 1024;
    private static final int ZERO_COPY_THRESHOLD = 16 * 1024;
    /**
     * The server's socket takes the whole buffer in one send (the kernel does not charge zero-copy pages against
     * it): the write completes while the peer reads nothing.
     */
    private static final int SERVER_SEND_BUFFER = 1024 * 1024;
    /**
     * The peer's window stays well below {@link #SIZE} while it does not read, and its buffer holds whole loopback
     * segments (64 KiB): a smaller one drops them, and the transfer then waits for retransmission timeouts.
     */
    private static final int PEER_RECEIVE_BUFFER = 128 * 1024;

    private EventLoopGroup group;
    private Channel child;
    private Socket peer;
    private TrackedBuffer buffer;

    @BeforeEach
    public void setUp() throws Exception {
        IoUring.ensureAvailability();
        // Netty's own group: an idle loop's shutdown closes its channels (prepareToDestroy()) as upstream's does.
        group = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("zero-copy-server", true),
                IoUringIoHandler.newFactory());
        CompletableFuture<Channel> accepted = new CompletableFuture<>();
        Channel server = new ServerBootstrap().group(group).channel(IoUringServerSocketChannel.class)
                .childOption(IoUringChannelOption.IO_URING_WRITE_ZERO_COPY_THRESHOLD, ZERO_COPY_THRESHOLD)
                .childOption(ChannelOption.SO_SNDBUF, SERVER_SEND_BUFFER)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelActive(ChannelHandlerContext ctx) {
                        accepted.complete(ctx.channel());
                        ctx.fireChannelActive();
                    }
                })
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        peer = new Socket();
        peer.setReceiveBufferSize(PEER_RECEIVE_BUFFER);
        peer.setSoTimeout((int) TimeUnit.SECONDS.toMillis(TIMEOUT_SECONDS));
        peer.connect(server.localAddress(), (int) TimeUnit.SECONDS.toMillis(TIMEOUT_SECONDS));
        child = accepted.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        buffer = new TrackedBuffer(SIZE);
    }

    @AfterEach
    public void tearDown() throws Exception {
        if (peer != null) {
            peer.close();
        }
        if (group != null) {
            group.shutdownGracefully(0, TIMEOUT_SECONDS, TimeUnit.SECONDS).await(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
    }

    /** The control: the notification comes once the peer has read (and acknowledged) everything. */
    @Test
    public void notificationReleasesTheBufferOnceThePeerReads() throws Exception {
        writeWithNotificationOutstanding(false);

        assertEquals(1, buffer.refCnt(), "held for the kernel while the peer reads nothing");
        readAll();
        assertReleased("after the peer read everything");
        assertTrue(child.isOpen());
    }

    @Test
    public void peerResetReleasesTheBuffer() throws Exception {
        writeWithNotificationOutstanding(false);

        // RST: the server's socket drops what it had not sent, and with it the kernel's hold on the buffer.
        peer.setSoLinger(true, 0);
        peer.close();
        assertTrue(child.closeFuture().await(TIMEOUT_SECONDS, TimeUnit.SECONDS), "server channel closed by the reset");
        assertReleased("after the peer's reset");
    }

    @Test
    public void closeFromTheWriteListenerReleasesTheBufferOnceThePeerReads() throws Exception {
        writeWithNotificationOutstanding(true);

        assertTrue(child.closeFuture().await(TIMEOUT_SECONDS, TimeUnit.SECONDS), "closed from the write's listener");
        assertFalse(child.isOpen());
        // Closed, but the kernel still sends what the socket took: the buffer waits for the notification.
        assertEquals(1, buffer.refCnt(), "held for the kernel after the close, while the peer reads nothing");
        readAll();
        assertEquals(-1, peer.getInputStream().read(), "the server's FIN after the data");
        assertReleased("after the peer read everything from the closed channel");
    }

    /**
     * Upstream's behaviour (4.2.18.Final), pinned: a loop that shuts down while a zero-copy notification is
     * outstanding closes the channel, drains its ring without waiting for notifications and closes the ring, so the
     * notification is never handled and the buffer stays retained for ever (a leak, reported once the channel is
     * collected). If upstream changes this, this test fails: then the soak's release of such buffers can go.
     */
    @Test
    public void upstreamLoopShutdownLeavesTheZeroCopyBufferRetained() throws Exception {
        shutDownWithNotificationOutstanding();

        assertEquals(1, buffer.refCnt(), "the zero-copy reference of a loop that terminated is never released");
        assertEquals(1, buffer.deallocated.getCount());
    }

    /**
     * The soak's handling of the references above ({@link AbandonedZeroCopyWrites}): counted and released as
     * {@code unregistered()} would have, once the loop has terminated.
     */
    @Test
    public void soakReleasesWhatATerminatedLoopAbandoned() throws Exception {
        assertEquals(-1, AbandonedZeroCopyWrites.release(Collections.singletonList(child)), "not while its loop runs");
        shutDownWithNotificationOutstanding();

        assertEquals(1, AbandonedZeroCopyWrites.release(Collections.singletonList(child)));
        assertReleased("by the soak's release of what the terminated loop abandoned");
        assertEquals(0, AbandonedZeroCopyWrites.release(Collections.singletonList(child)), "released once");
    }

    /**
     * A zero-copy send whose notification is outstanding, then the loop's shutdown (it closes the channel), then a
     * peer that reads every byte: the kernel no longer needs the buffer, but the notification has no ring to go to.
     */
    private void shutDownWithNotificationOutstanding() throws Exception {
        writeWithNotificationOutstanding(false);
        assertTrue(group.shutdownGracefully(0, TIMEOUT_SECONDS, TimeUnit.SECONDS)
                .await(TIMEOUT_SECONDS, TimeUnit.SECONDS), "server loop terminated");
        assertFalse(child.isOpen(), "the loop closed its channel");
        readAll();
    }

    /**
     * Writes the buffer, optionally closing the channel from the write's listener, and checks that the write
     * succeeded with the buffer still retained: the send is complete, its notification is not.
     */
    private void writeWithNotificationOutstanding(boolean closeFromListener) throws InterruptedException {
        ChannelFuture written = child.writeAndFlush(buffer);
        if (closeFromListener) {
            written.addListener(ChannelFutureListener.CLOSE);
        }
        assertTrue(written.await(TIMEOUT_SECONDS, TimeUnit.SECONDS), "write done although the peer reads nothing");
        assertTrue(written.isSuccess(), () -> "write failed: " + written.cause());
        assertEquals(1, buffer.refCnt(),
                "written, and still retained: only a zero-copy send keeps it until the kernel's notification");
    }

    private void readAll() throws IOException {
        byte[] received = new byte[SIZE];
        new DataInputStream(peer.getInputStream()).readFully(received);
        assertArrayEquals(TrackedBuffer.content(), received);
    }

    private void assertReleased(String when) throws InterruptedException {
        assertTrue(buffer.deallocated.await(TIMEOUT_SECONDS, TimeUnit.SECONDS), "buffer released " + when);
        assertEquals(0, buffer.refCnt());
    }

    /** A direct buffer that says when it is deallocated (an unpooled one, never reused under the test's eyes). */
    private static final class TrackedBuffer extends UnpooledDirectByteBuf {
        final CountDownLatch deallocated = new CountDownLatch(1);

        TrackedBuffer(int size) {
            super(UnpooledByteBufAllocator.DEFAULT, size, size);
            writeBytes(content());
        }

        static byte[] content() {
            byte[] bytes = new byte[SIZE];
            for (int i = 0; i < bytes.length; i++) {
                bytes[i] = (byte) (i * 31 + (i >>> 8));
            }
            return bytes;
        }

        @Override
        protected void deallocate() {
            super.deallocate();
            deallocated.countDown();
        }
    }
}
