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

import io.netty.channel.Channel;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * The references that io_uring channels of terminated event loops still hold for zero-copy sends (upstream,
 * docs/soak.md, Findings, 11; {@code IoUringZeroCopyNotificationTest} reproduces it).
 * <p>
 * A zero-copy send keeps its buffers retained from its completion until the kernel's notification. Netty 4.2.18's
 * {@code IoUringIoHandler} drains its ring at shutdown without waiting for notifications and then closes it; a
 * notification still outstanding is never handled, and the channel's registration, which waits for it, is never
 * removed, so {@code unregistered()} never releases what the channel's {@code WriteOperationTracker} holds. Those
 * buffers would be reported as leaks once the channel is collected. {@link #release(Iterable)} counts them and
 * releases them as {@code unregistered()} would have ({@code WriteOperationTracker.releaseAll()}), on channels whose
 * event loop has terminated only: no code of the transport can touch them any more. It counts every reference the
 * tracker still holds, so a write other than a zero-copy send that a terminated loop left retained (none is known)
 * is counted here too: the soak reports the count, it does not judge it. It reads private state of
 * {@code AbstractIoUringChannel} by reflection, for the soak only; if that state is not as expected, it releases
 * nothing and says so (-1), and the buffers count as leaks. {@code IoUringZeroCopyNotificationTest} checks it.
 */
public final class AbandonedZeroCopyWrites {
    private static final String CHANNEL = "io.netty.channel.uring.AbstractIoUringChannel";

    private AbandonedZeroCopyWrites() {
    }

    /**
     * Counts and releases the references that zero-copy sends of these channels retained and that their terminated
     * event loops never released.
     *
     * @return the number of references released, or -1 if an io_uring channel could not be inspected (then nothing
     *         of it was released).
     */
    public static long release(Iterable<? extends Channel> channels) {
        // Every channel is inspected before anything is released: a -1 leaves every reference to the leak check.
        Map<Object, Long> trackers = new IdentityHashMap<>();
        for (Channel ch : channels) {
            Class<?> type = ioUringChannelClass(ch);
            if (type == null) {
                continue;
            }
            if (!ch.eventLoop().isTerminated()) {
                return -1;
            }
            try {
                Object tracker = field(ch, type, "writeTracker");
                long retained = trackerRetained(tracker);
                if (retained > 0) {
                    trackers.put(tracker, retained);
                }
            } catch (ReflectiveOperationException | RuntimeException e) {
                return -1;
            }
        }
        long released = 0;
        for (Map.Entry<Object, Long> e : trackers.entrySet()) {
            try {
                Method releaseAll = e.getKey().getClass().getDeclaredMethod("releaseAll");
                releaseAll.setAccessible(true);
                releaseAll.invoke(e.getKey());
            } catch (ReflectiveOperationException | RuntimeException ex) {
                throw new IllegalStateException("releaseAll() of an inspected tracker failed", ex);
            }
            released += e.getValue();
        }
        return released;
    }

    private static Class<?> ioUringChannelClass(Channel ch) {
        for (Class<?> c = ch.getClass(); c != null; c = c.getSuperclass()) {
            if (CHANNEL.equals(c.getName())) {
                return c;
            }
        }
        return null;
    }

    /** The references retained by the tracker's active write operations, in all its namespaces. */
    private static long trackerRetained(Object tracker) throws ReflectiveOperationException {
        long retained = 0;
        for (String name : new String[] {"pooled", "foreign"}) {
            Object[] operations = (Object[]) field(tracker, name);
            if (operations != null) {
                for (Object operation : operations) {
                    retained += retained(operation);
                }
            }
        }
        Map<?, ?> overflow = (Map<?, ?>) field(tracker, "overflow");
        if (overflow != null) {
            for (Object operation : overflow.values()) {
                retained += retained(operation);
            }
        }
        return retained + retained(field(tracker, "single"));
    }

    private static long retained(Object operation) throws ReflectiveOperationException {
        if (operation == null || !(Boolean) field(operation, "active")) {
            return 0;
        }
        return (Integer) field(operation, "retainedCount");
    }

    private static Object field(Object target, String name) throws ReflectiveOperationException {
        return field(target, target.getClass(), name);
    }

    private static Object field(Object target, Class<?> type, String name) throws ReflectiveOperationException {
        Field f = type.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(target);
    }
}
