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
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The series tooling: a round trip through the editing work tree leaves {@code patches/} byte-identical, and a
 * patch that does not apply (or touches a module the build does not patch) fails with its name and the file.
 */
class SeriesToolTest {
    private static final String TARGET = "codec-http2/src/main/java/io/netty/handler/codec/http2/Http2CodecUtil.java";

    @Test
    void roundTripIsByteIdentical() throws Exception {
        Result r = run(null, "roundtrip");
        assertThat(r.exit).as(r.output).isZero();
        assertThat(r.output).contains("byte-identical");
    }

    /** One PR file per patch, with the tests and benchmarks PATCHES.md lists, each applying onto upstream alone. */
    @Test
    void exportWritesOneCheckedPrFilePerPatch(@TempDir Path tmp) throws Exception {
        Path out = tmp.resolve("export");
        Result r = run(null, "export", out.toString());
        assertThat(r.exit).as(r.output).isZero();
        assertThat(r.output).contains("each checked to apply");
        for (Path patch : Fork.patches()) {
            Path exported = out.resolve(patch.getFileName());
            assertThat(exported).exists();
            String text = new String(Files.readAllBytes(exported), StandardCharsets.UTF_8);
            String n = patch.getFileName().toString().substring(0, 4);
            List<String> files = exportFiles(n);
            assertThat(files).as("export files of %s in PATCHES.md", n).isNotEmpty();
            for (String file : files) {
                assertThat(text).contains("diff --git a/" + file + " b/" + file);
            }
        }
    }

    private static List<String> exportFiles(String n) {
        List<String> files = new ArrayList<>();
        boolean in = false;
        for (String line : Fork.read(Fork.ROOT.resolve("PATCHES.md")).split("\n")) {
            if (line.startsWith("<!-- export " + n + ":")) {
                in = true;
            } else if (in && line.startsWith("-->")) {
                break;
            } else if (in) {
                files.add(line.trim());
            }
        }
        return files;
    }

    @Test
    void materialisedTreeHasBaseCommitThenOneCommitPerPatch(@TempDir Path tmp) throws Exception {
        Path tree = tmp.resolve("tree");
        Result r = run(null, "materialise", tree.toString());
        assertThat(r.exit).as(r.output).isZero();
        Result log = exec(tree, null, "git", "log", "--format=%s", "upstream-base..HEAD");
        assertThat(log.output.lines().filter(l -> !l.isEmpty()).count()).isEqualTo(Fork.patches().size());
        assertThat(tree.resolve(TARGET)).exists();
    }

    @Test
    void patchThatDoesNotApplyNamesPatchAndFile(@TempDir Path tmp) throws Exception {
        Path patches = Files.createDirectories(tmp.resolve("patches"));
        Files.write(patches.resolve("0001-codec-http2-broken.patch"), brokenPatch(), StandardCharsets.UTF_8);
        Path root = unpackCodecHttp2(tmp);

        Result r = run(patches, "apply", "codec-http2", root.toString());
        assertThat(r.exit).isNotZero();
        assertThat(r.output).contains("0001-codec-http2-broken.patch").contains(TARGET).contains("does not apply");
    }

    @Test
    void materialiseStopsAtThePatchThatDoesNotApply(@TempDir Path tmp) throws Exception {
        Path patches = Files.createDirectories(tmp.resolve("patches"));
        Files.write(patches.resolve("0001-codec-http2-broken.patch"), brokenPatch(), StandardCharsets.UTF_8);
        Result r = run(patches, "materialise", tmp.resolve("tree").toString());
        assertThat(r.exit).isNotZero();
        assertThat(r.output).contains("0001-codec-http2-broken.patch").contains(TARGET).contains("git am --continue");
    }

    @Test
    void patchOutsideThePatchedModulesIsRejected(@TempDir Path tmp) throws Exception {
        Path patches = Files.createDirectories(tmp.resolve("patches"));
        String file = "handler/src/main/java/io/netty/handler/ssl/SslHandler.java";
        Files.write(patches.resolve("0001-handler-change.patch"), Arrays.asList(
                "Subject: [PATCH] handler",
                "",
                "---",
                "diff --git a/" + file + " b/" + file,
                "--- a/" + file,
                "+++ b/" + file,
                "@@ -1 +1 @@",
                "-a",
                "+b"), StandardCharsets.UTF_8);
        Path root = unpackCodecHttp2(tmp);

        Result r = run(patches, "apply", "codec-http2", root.toString());
        assertThat(r.exit).isNotZero();
        assertThat(r.output).contains("0001-handler-change.patch").contains(file).contains("outside the patched modules");
    }

    private static List<String> brokenPatch() {
        return Arrays.asList(
                "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001",
                "From: Someone <someone@example.invalid>",
                "Subject: [PATCH] broken",
                "",
                "---",
                "diff --git a/" + TARGET + " b/" + TARGET,
                "--- a/" + TARGET,
                "+++ b/" + TARGET,
                "@@ -20,3 +20,3 @@",
                " this line is not in upstream's file",
                "-nor this one",
                "+replacement",
                " end");
    }

    private static Path unpackCodecHttp2(Path tmp) throws Exception {
        Path root = Files.createDirectories(tmp.resolve("series"));
        Result r = run(null, "unpack", "codec-http2", Fork.upstreamJar("codec-http2", "sources").toString(),
                root.toString());
        assertThat(r.exit).as(r.output).isZero();
        assertThat(root.resolve(TARGET)).exists();
        return root;
    }

    /**
     * The tool finds the upstream sources through Maven, never through {@code $HOME}: with HOME an empty folder and a
     * local repository of its own (which reads what it lacks from the build's, as Maven's chained local repository
     * does), materialise works and writes nothing under HOME.
     */
    @Test
    void materialiseAsksMavenNotHome(@TempDir Path tmp) throws Exception {
        Path home = Files.createDirectories(tmp.resolve("home"));
        Path repo = tmp.resolve("repo");
        Path tree = tmp.resolve("tree");
        Path sources = Fork.ROOT.resolve("target/upstream-sources");
        deleteRecursively(sources);
        Map<String, String> env = new HashMap<>();
        env.put("HOME", home.toString());
        // Where the wrapper keeps its Maven: as for the build, not under the empty HOME.
        String userHome = System.getenv("MAVEN_USER_HOME");
        env.put("MAVEN_USER_HOME", userHome != null ? userHome : System.getenv("HOME") + "/.m2");
        env.put("MAVEN_ARGS", "-Dmaven.repo.local=" + repo + " -Dmaven.repo.local.tail=" + Fork.LOCAL_REPOSITORY);
        Result r = execWith(Fork.ROOT, env, "bash", Fork.ROOT.resolve("tools/series.sh").toString(),
                "materialise", tree.toString());
        assertThat(r.exit).as(r.output).isZero();
        assertThat(tree.resolve(TARGET)).exists();
        assertThat(sources.resolve("netty-codec-http2-" + Fork.BASE_VERSION + "-sources.jar"))
                .exists();
        try (Stream<Path> files = Files.list(home)) {
            assertThat(files).as("files under HOME").isEmpty();
        }
    }

    private static void deleteRecursively(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).collect(Collectors.toList())) {
                Files.delete(p);
            }
        }
    }

    private static Result run(Path patchDir, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add("bash");
        command.add(Fork.ROOT.resolve("tools/series.sh").toString());
        command.addAll(Arrays.asList(args));
        return exec(Fork.ROOT, patchDir, command.toArray(new String[0]));
    }

    private static Result exec(Path dir, Path patchDir, String... command) throws IOException, InterruptedException {
        Map<String, String> env = new HashMap<>();
        if (patchDir != null) {
            env.put("PATCH_DIR", patchDir.toString());
        }
        // The tool's Maven runs use the build's local repository, wherever the build was told it is.
        String args = System.getenv("MAVEN_ARGS");
        env.put("MAVEN_ARGS", (args == null ? "" : args + ' ') + "-Dmaven.repo.local=" + Fork.LOCAL_REPOSITORY);
        return execWith(dir, env, command);
    }

    private static Result execWith(Path dir, Map<String, String> env, String... command)
            throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        pb.environment().putAll(env);
        Process p = pb.start();
        p.getOutputStream().close();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(5, TimeUnit.MINUTES)).as("%s finished", command[0]).isTrue();
        return new Result(p.exitValue(), output);
    }

    private static final class Result {
        final int exit;
        final String output;

        Result(int exit, String output) {
            this.exit = exit;
            this.output = output;
        }
    }
}
