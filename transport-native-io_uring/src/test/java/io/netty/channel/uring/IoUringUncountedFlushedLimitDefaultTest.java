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
package io.netty.channel.uring;

import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannelConfig;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The default of {@link IoUringChannelOption#IO_URING_UNCOUNTED_FLUSHED_LIMIT}: the channel's write buffer high water
 * mark, which it follows until the option is set. Run without {@code -Dio.netty.iouring.uncountedFlushedLimit}.
 */
public class IoUringUncountedFlushedLimitDefaultTest {

    @Test
    public void unsetLimitFollowsTheHighWaterMark() {
        assertEquals(-1, IoUringStreamChannelConfig.UNSET_UNCOUNTED_FLUSHED_LIMIT);
        IoUring.ensureAvailability();
        IoUringSocketChannel ch = new IoUringSocketChannel();
        try {
            SocketChannelConfig config = ch.config();
            assertEquals(config.getWriteBufferHighWaterMark(),
                    config.getOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT));
            config.setWriteBufferWaterMark(new WriteBufferWaterMark(64 * 1024, 256 * 1024));
            assertEquals(256 * 1024, config.getOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT));
            config.setOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT, 0);
            config.setWriteBufferWaterMark(new WriteBufferWaterMark(32 * 1024, 64 * 1024));
            assertEquals(0, config.getOption(IoUringChannelOption.IO_URING_UNCOUNTED_FLUSHED_LIMIT));
        } finally {
            ch.unsafe().closeForcibly();
        }
    }
}
