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
package io.netty.fork.checks;

import org.apache.maven.artifact.versioning.ComparableVersion;
import org.junit.jupiter.api.Test;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The fork's version sorts after the upstream base and before the next Netty release, in Maven's own order, so a
 * range such as {@code [4.2.18.Final,4.2.19.Final)} picks the fork and any newer Netty release wins over it.
 */
class VersionOrderTest {
    private static final Pattern NETTY_VERSION = Pattern.compile("(\\d+)\\.(\\d+)\\.(\\d+)\\.Final");

    @Test
    void forkVersionNamesItsBase() {
        assertThat(Fork.VERSION).startsWith(Fork.BASE_VERSION + '-').isNotEqualTo(Fork.BASE_VERSION);
    }

    @Test
    void forkSortsBetweenBaseAndNextRelease() {
        Matcher m = NETTY_VERSION.matcher(Fork.BASE_VERSION);
        assertThat(m.matches()).as("base %s is a Netty release", Fork.BASE_VERSION).isTrue();
        String nextMicro = m.group(1) + '.' + m.group(2) + '.' + (Integer.parseInt(m.group(3)) + 1) + ".Final";
        String nextMinor = m.group(1) + '.' + (Integer.parseInt(m.group(2)) + 1) + ".0.Final";

        ComparableVersion fork = new ComparableVersion(Fork.VERSION);
        assertThat(fork).isGreaterThan(new ComparableVersion(Fork.BASE_VERSION));
        assertThat(fork).isLessThan(new ComparableVersion(nextMicro));
        assertThat(fork).isLessThan(new ComparableVersion(nextMinor));
        // And after upstream's pre-releases of the base.
        assertThat(fork).isGreaterThan(new ComparableVersion(Fork.BASE_VERSION.replace(".Final", ".CR1")));
    }
}
