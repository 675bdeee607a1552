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

import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.JdkLoggerFactory;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static io.netty.channel.uring.IoUringStreamChannelConfig.IN_FLIGHT_LIMIT_PROPERTY;
import static io.netty.channel.uring.IoUringStreamChannelConfig.inFlightLimit;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The system property {@code io.netty.iouring.inFlightWritabilityLimit}, the default of
 * {@link IoUringChannelOption#IO_URING_IN_FLIGHT_WRITABILITY_LIMIT}: unset, it means 16 times the high water mark;
 * accepted values; invalid values reported (and the default used).
 */
public class IoUringInFlightLimitPropertyTest {
    @Test
    public void limitPropertyDefault() {
        RecordingLogger log = new RecordingLogger();
        assertEquals(-1, inFlightLimit(null, log.logger));
        assertEquals(0, log.count(Level.WARNING));
        assertTrue(log.contains(Level.FINE, IN_FLIGHT_LIMIT_PROPERTY), log.records.toString());
    }

    @Test
    public void limitPropertyAcceptedValues() {
        RecordingLogger log = new RecordingLogger();
        assertEquals(0, inFlightLimit("0", log.logger));
        assertEquals(2097152, inFlightLimit(" 2097152 ", log.logger));
        assertEquals(Integer.MAX_VALUE, inFlightLimit("2147483647", log.logger));
        assertEquals(0, log.count(Level.WARNING));
    }

    @Test
    public void limitPropertyInvalidValuesAreReported() {
        for (String value : new String[] {"1m", "-1", "", "2147483648"}) {
            RecordingLogger log = new RecordingLogger();
            assertEquals(-1, inFlightLimit(value, log.logger), value);
            assertEquals(1, log.count(Level.WARNING), value);
            assertTrue(log.contains(Level.WARNING, IN_FLIGHT_LIMIT_PROPERTY), log.records.toString());
            assertTrue(log.contains(Level.WARNING, "'" + value + "'"), log.records.toString());
        }
    }

    private static final class JdkLoggers extends JdkLoggerFactory {
        @SuppressWarnings("deprecation")
        JdkLoggers() {
        }

        InternalLogger create(String name) {
            return newInstance(name);
        }
    }

    /** An {@link InternalLogger} backed by java.util.logging, whose records are kept. */
    private static final class RecordingLogger extends Handler {
        private static int instances;
        final List<LogRecord> records = new ArrayList<LogRecord>();
        final InternalLogger logger;
        // java.util.logging keeps loggers weakly: hold on to it while recording.
        private final Logger julLogger;

        RecordingLogger() {
            String name = IoUringInFlightLimitPropertyTest.class.getName() + '.' + instances++;
            julLogger = Logger.getLogger(name);
            julLogger.setUseParentHandlers(false);
            julLogger.setLevel(Level.ALL);
            julLogger.addHandler(this);
            logger = new JdkLoggers().create(name);
        }

        @Override
        public void publish(LogRecord record) {
            records.add(record);
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }

        int count(Level level) {
            int n = 0;
            for (LogRecord r : records) {
                if (r.getLevel().equals(level)) {
                    n++;
                }
            }
            return n;
        }

        boolean contains(Level level, String text) {
            for (LogRecord r : records) {
                if (r.getLevel().equals(level) && r.getMessage().contains(text)) {
                    return true;
                }
            }
            return false;
        }
    }
}
