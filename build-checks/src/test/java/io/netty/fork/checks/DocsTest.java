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

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * PATCHES.md stays an index, and every raw result under docs/benchmarks says which command and commit produced it.
 */
class DocsTest {
    private static final Path BENCHMARKS = Fork.ROOT.resolve("docs/benchmarks");
    private static final Pattern ROW = Pattern.compile("^\\| `([^`]+)` \\| ([0-9a-f]{7,40}) \\|", Pattern.MULTILINE);

    @Test
    void patchesMdIsAnIndex() throws IOException {
        assertThat(Files.size(Fork.ROOT.resolve("PATCHES.md"))).isLessThanOrEqualTo(30_000);
    }

    @Test
    void everyResultFileIsListedOnceWithTheCommitThatLastChangedIt() throws Exception {
        List<String> files;
        try (Stream<Path> list = Files.list(BENCHMARKS)) {
            files = list.map(p -> p.getFileName().toString()).filter(n -> !n.equals("README.md")).sorted()
                    .collect(Collectors.toList());
        }
        Matcher m = ROW.matcher(Fork.read(BENCHMARKS.resolve("README.md")));
        List<String> listed = new java.util.ArrayList<>();
        while (m.find()) {
            listed.add(m.group(1));
            String last = git("log", "-1", "--format=%H", "--", "docs/benchmarks/" + m.group(1));
            assertThat(last).as("last commit of docs/benchmarks/%s", m.group(1)).startsWith(m.group(2));
        }
        assertThat(listed.stream().sorted().collect(Collectors.toList())).isEqualTo(files);
    }

    private static String git(String... args) throws Exception {
        List<String> command = new java.util.ArrayList<>(List.of("git", "-C", Fork.ROOT.toString()));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertThat(p.waitFor(1, TimeUnit.MINUTES)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        return out;
    }
}
