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

import java.util.Random;
import java.util.zip.CRC32;

/**
 * The response bodies of the soak: the server derives a body from the request path {@code /<route>/<seed>/<size>}
 * (a window of {@code size} bytes at offset {@code seed} of a fixed random array), the client derives the CRC32 it
 * must receive from the same path.
 */
final class SoakBodies {
    /** The largest body a request may ask for. */
    static final int MAX_BODY = 1024 * 1024;
    private static final byte[] MASTER = new byte[2 * MAX_BODY];

    static {
        new Random(0x5eedL).nextBytes(MASTER);
    }

    /** Direct response, the body in one buffer. */
    static final char DIRECT = 'd';
    /** Response written by a {@code ChunkedWriteHandler} from a {@code ChunkedInput}: writes from promise listeners. */
    static final char CHUNKED = 'c';
    /** Fault: the response is written, then the connection is closed under it (writes in flight). */
    static final char CLOSE = 'x';
    /** Fault: the response is written, then the connection's output is shut down under it (writes in flight). */
    static final char SHUTDOWN_OUTPUT = 'h';
    /** The response is written, then the server closes the connection gracefully (GOAWAY, open streams finish). */
    static final char GOAWAY = 'g';

    private SoakBodies() {
    }

    static String path(char route, int seed, int size) {
        return "/" + route + '/' + seed + '/' + size;
    }

    /** The parsed request path; throws {@link IllegalArgumentException} on anything else. */
    static final class Request {
        final char route;
        final int offset;
        final int size;

        Request(CharSequence path) {
            String[] parts = path.toString().split("/");
            if (parts.length != 4 || !parts[0].isEmpty() || parts[1].length() != 1) {
                throw new IllegalArgumentException("bad soak path: " + path);
            }
            route = parts[1].charAt(0);
            offset = Math.floorMod(Integer.parseInt(parts[2]), MAX_BODY);
            size = Integer.parseInt(parts[3]);
            if (size < 0 || size > MAX_BODY) {
                throw new IllegalArgumentException("bad soak body size: " + path);
            }
        }
    }

    static byte[] master() {
        return MASTER;
    }

    static long crc(int seed, int size) {
        CRC32 crc = new CRC32();
        crc.update(MASTER, Math.floorMod(seed, MAX_BODY), size);
        return crc.getValue();
    }
}
