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
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The documentation stays short, current and connected: each file within its size budget, the prose within 100 KB
 * in all, README's version the pom's, every relative link and anchor resolving, and every raw result under
 * docs/benchmarks listed with the command and commit that produced it.
 */
class DocsTest {
    private static final Path BENCHMARKS = Fork.ROOT.resolve("docs/benchmarks");
    private static final Pattern ROW = Pattern.compile("^\\| `([^`]+)` \\| ([0-9a-f]{7,40}) \\|", Pattern.MULTILINE);
    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)|^\\[[^\\]]+\\]:\\s*(\\S+)",
            Pattern.MULTILINE);
    private static final Pattern HEADING = Pattern.compile("^#{1,6} (.+)$", Pattern.MULTILINE);
    private static final Pattern FORK_VERSION = Pattern.compile("\\d+\\.\\d+\\.\\d+\\.Final-h2uring-\\d+");
    private static final int PROSE_BUDGET = 100_000;

    /** Budgets of the files with a job of their own; each patch's doc (its Fork-Doc) gets {@value #PATCH_DOC}. */
    private static final Map<String, Integer> BUDGETS = new LinkedHashMap<>();
    private static final int PATCH_DOC = 12_000;

    static {
        BUDGETS.put("README.md", 8_000);
        BUDGETS.put("PATCHES.md", 8_000);
        BUDGETS.put("docs/evidence.md", 12_000);
        BUDGETS.put("docs/soak.md", 12_000);
        BUDGETS.put("docs/frameworks.md", 12_000);
        BUDGETS.put("docs/risks.md", 8_000);
        BUDGETS.put("docs/maintaining.md", 10_000);
        // An index of raw files, not prose: outside the prose budget, with one of its own.
        BUDGETS.put("docs/benchmarks/README.md", 20_000);
    }

    @Test
    void everyDocIsWithinItsBudget() throws IOException {
        Map<String, Integer> budgets = new LinkedHashMap<>(BUDGETS);
        for (Path patch : Fork.patches()) {
            for (String doc : Fork.trailers(patch, "Fork-Doc")) {
                budgets.put(doc, PATCH_DOC);
            }
        }
        List<String> over = new ArrayList<>();
        for (Map.Entry<String, Integer> budget : budgets.entrySet()) {
            long size = Files.size(Fork.ROOT.resolve(budget.getKey()));
            if (size > budget.getValue()) {
                over.add(budget.getKey() + ": " + size + " bytes, budget " + budget.getValue());
            }
        }
        assertThat(over).as("docs over their budget").isEmpty();
        Set<String> unbudgeted = new TreeSet<>(proseFiles());
        unbudgeted.removeAll(budgets.keySet());
        assertThat(unbudgeted).as("docs with no job (budget) of their own: give them one here or merge them").isEmpty();
    }

    @Test
    void proseFitsOneHundredKilobytes() throws IOException {
        long total = 0;
        for (String file : proseFiles()) {
            total += Files.size(Fork.ROOT.resolve(file));
        }
        assertThat(total).as("bytes of README.md, PATCHES.md and docs/*.md").isLessThanOrEqualTo(PROSE_BUDGET);
    }

    @Test
    void readmeGivesThePomsVersionOnly() {
        String readme = Fork.read(Fork.ROOT.resolve("README.md"));
        assertThat(readme).contains("<version>" + Fork.VERSION + "</version>");
        Set<String> named = new TreeSet<>();
        Matcher m = FORK_VERSION.matcher(readme);
        while (m.find()) {
            named.add(m.group());
        }
        assertThat(named).as("fork versions README names").containsExactly(Fork.VERSION);
    }

    @Test
    void everyRelativeLinkAndAnchorResolves() throws IOException {
        List<String> broken = new ArrayList<>();
        List<String> files = new ArrayList<>(proseFiles());
        files.add("docs/benchmarks/README.md");
        for (String file : files) {
            Path from = Fork.ROOT.resolve(file);
            Matcher m = LINK.matcher(stripCode(Fork.read(from)));
            while (m.find()) {
                String target = m.group(1) != null ? m.group(1) : m.group(2);
                if (target.matches("^[a-z]+:.*")) {
                    continue;
                }
                int hash = target.indexOf('#');
                String path = hash < 0 ? target : target.substring(0, hash);
                Path resolved = path.isEmpty() ? from : from.getParent().resolve(path).normalize();
                if (!Files.exists(resolved)) {
                    broken.add(file + ": " + target + " (no such file)");
                } else if (hash >= 0 && !anchors(resolved).contains(target.substring(hash + 1))) {
                    broken.add(file + ": " + target + " (no such heading)");
                }
            }
        }
        assertThat(broken).isEmpty();
    }

    @Test
    void everyResultFileIsListedOnceWithTheCommitThatLastChangedIt() throws Exception {
        List<String> files;
        try (Stream<Path> list = Files.list(BENCHMARKS)) {
            files = list.map(p -> p.getFileName().toString()).filter(n -> !n.equals("README.md")).sorted()
                    .collect(Collectors.toList());
        }
        List<String[]> rows = resultRows();
        for (String[] row : rows) {
            String last = git("log", "-1", "--format=%H", "--", "docs/benchmarks/" + row[0]);
            assertThat(last).as("last commit of docs/benchmarks/%s", row[0]).startsWith(row[1]);
        }
        assertThat(rows.stream().map(row -> row[0]).sorted().collect(Collectors.toList())).isEqualTo(files);
    }

    /**
     * Each patch says, in a {@code Fork-Last-Measured} trailer (fork-only: export strips it), the commit of the raw
     * results its PR text quotes; that commit is one that added or changed a raw file listed here.
     */
    @Test
    void everyPatchNamesTheCommitsItsFiguresWereMeasuredOn() throws Exception {
        Set<String> resultCommits = resultRows().stream().map(row -> row[1]).collect(Collectors.toSet());
        for (Path patch : Fork.patches()) {
            List<String> measured = Fork.trailers(patch, "Fork-Last-Measured");
            assertThat(measured).as("Fork-Last-Measured of %s", patch.getFileName()).isNotEmpty();
            for (String value : measured) {
                String commit = value.split(" ", 2)[0];
                assertThat(resultCommits).as("Fork-Last-Measured of %s: a commit of a raw result", patch.getFileName())
                        .contains(commit);
                git("cat-file", "-e", commit + "^{commit}");
            }
        }
    }

    /** The rows of docs/benchmarks/README.md: each listed raw file and the commit given for it. */
    private static List<String[]> resultRows() {
        List<String[]> rows = new ArrayList<>();
        Matcher m = ROW.matcher(Fork.read(BENCHMARKS.resolve("README.md")));
        while (m.find()) {
            rows.add(new String[] {m.group(1), m.group(2)});
        }
        return rows;
    }

    /** README.md, PATCHES.md and the markdown files directly under docs/. */
    private static List<String> proseFiles() throws IOException {
        List<String> files = new ArrayList<>(List.of("README.md", "PATCHES.md"));
        try (Stream<Path> list = Files.list(Fork.ROOT.resolve("docs"))) {
            list.filter(p -> p.getFileName().toString().endsWith(".md")).sorted()
                    .forEach(p -> files.add("docs/" + p.getFileName()));
        }
        return files;
    }

    /** GitHub's anchors of a markdown file's headings. */
    private static Set<String> anchors(Path file) {
        Set<String> anchors = new TreeSet<>();
        Matcher m = HEADING.matcher(stripCode(Fork.read(file)));
        while (m.find()) {
            String slug = m.group(1).trim().toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N} _-]", "")
                    .replace(' ', '-');
            String anchor = slug;
            for (int i = 1; !anchors.add(anchor); i++) {
                anchor = slug + '-' + i;
            }
        }
        return anchors;
    }

    /** The text without fenced code blocks and inline code, where brackets and hashes are not markdown. */
    private static String stripCode(String text) {
        return text.replaceAll("(?s)```.*?```", "").replaceAll("(?m)^    .*$", "").replaceAll("`[^`\\n]*`", "``");
    }

    private static String git(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("git", "-C", Fork.ROOT.toString()));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertThat(p.waitFor(1, TimeUnit.MINUTES)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        return out;
    }
}
