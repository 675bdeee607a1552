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
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A fork version names one series: pom.xml records, next to {@code revision}, the sha256 of patches/ it was given
 * with ({@code fork.seriesSha256}); {@code tools/series.sh check-version}, run by every patched module's build, fails
 * when patches/ differs and says how to bump; {@code tools/series.sh record-version} bumps {@code -h2uring-N} once per
 * commit and records the series. The scenarios run on copies of the repository's pom.xml, tool and patches/.
 */
class SeriesVersionTest {
    private static final Pattern REVISION = Pattern.compile("<revision>([^<]*)</revision>");
    private static final Pattern SHA = Pattern.compile("<fork.seriesSha256>([^<]*)</fork.seriesSha256>");

    @Test
    void patchesAreTheSeriesTheVersionWasRecordedWith() throws Exception {
        Fork.Result r = exec(Fork.ROOT, "bash", "tools/series.sh", "check-version");
        assertThat(r.exit).as(r.output).isZero();
        assertThat(r.output).contains("version " + Fork.VERSION + " is the series of patches/ (sha256 "
                + Fork.SERIES_SHA256 + ')');
    }

    /** A changed byte of a patch fails the check with the command and the version to bump to; recording fixes it. */
    @Test
    void changedPatchFailsUntilANewVersionIsRecorded(@TempDir Path tmp) throws Exception {
        Path copy = copy(tmp);
        String next = next(Fork.VERSION);
        flipAByte(copy);

        Fork.Result failed = exec(copy, "bash", "tools/series.sh", "check-version");
        assertThat(failed.exit).as(failed.output).isNotZero();
        assertThat(failed.output).contains("patches/ is not the series that version " + Fork.VERSION
                + " was recorded with").contains("run tools/series.sh record-version (sets revision to " + next);

        Fork.Result recorded = exec(copy, "bash", "tools/series.sh", "record-version");
        assertThat(recorded.exit).as(recorded.output).isZero();
        assertThat(pom(copy, REVISION)).isEqualTo(next);
        assertThat(pom(copy, SHA)).isNotEqualTo(Fork.SERIES_SHA256).matches("[0-9a-f]{64}");
        Fork.Result passes = exec(copy, "bash", "tools/series.sh", "check-version");
        assertThat(passes.exit).as(passes.output).isZero();

        Fork.Result again = exec(copy, "bash", "tools/series.sh", "record-version");
        assertThat(again.exit).as(again.output).isZero();
        assertThat(again.output).contains("nothing to do");
        assertThat(pom(copy, REVISION)).isEqualTo(next);
    }

    /** In a git work tree, a version bumped since the last commit is kept: one new version per commit. */
    @Test
    void oneNewVersionPerCommit(@TempDir Path tmp) throws Exception {
        Path copy = copy(tmp);
        git(copy, "init", "-q", ".");
        git(copy, "add", "-A");
        git(copy, "commit", "-q", "-m", "series recorded");
        String next = next(Fork.VERSION);

        flipAByte(copy);
        assertThat(exec(copy, "bash", "tools/series.sh", "record-version").exit).isZero();
        assertThat(pom(copy, REVISION)).isEqualTo(next);
        flipAByte(copy);
        Fork.Result kept = exec(copy, "bash", "tools/series.sh", "check-version");
        assertThat(kept.output).contains("sets revision to " + next + ' ');
        assertThat(exec(copy, "bash", "tools/series.sh", "record-version").exit).isZero();
        assertThat(pom(copy, REVISION)).as("bumped once before the commit").isEqualTo(next);

        git(copy, "commit", "-q", "-a", "-m", "new series");
        flipAByte(copy);
        assertThat(exec(copy, "bash", "tools/series.sh", "record-version").exit).isZero();
        assertThat(pom(copy, REVISION)).as("bumped again after it").isEqualTo(next(next));
    }

    /** Each bump sorts after the version before it, and before the next Netty release (VersionOrderTest). */
    @Test
    void nextVersionSortsAfterTheCurrentOne() {
        String version = Fork.VERSION;
        for (int i = 0; i < 12; i++) {
            String next = next(version);
            assertThat(new ComparableVersion(next)).as(next).isGreaterThan(new ComparableVersion(version));
            version = next;
        }
        assertThat(new ComparableVersion(version)).isLessThan(new ComparableVersion(
                Fork.BASE_VERSION.replaceFirst("\\.(\\d+)\\.Final$", ".99.Final")));
    }

    private static String next(String version) {
        Matcher m = Pattern.compile("(.*-h2uring-)(\\d+)").matcher(version);
        assertThat(m.matches()).as("%s is <base>-h2uring-<n>", version).isTrue();
        return m.group(1) + (Integer.parseInt(m.group(2)) + 1);
    }

    /** What the version tool reads: pom.xml, the tool, patches/ and the marker files of the patched modules. */
    private static Path copy(Path tmp) throws IOException {
        Path copy = Files.createDirectories(tmp.resolve("repo"));
        Files.copy(Fork.ROOT.resolve("pom.xml"), copy.resolve("pom.xml"));
        Files.createDirectories(copy.resolve("tools"));
        Files.copy(Fork.ROOT.resolve("tools/series.sh"), copy.resolve("tools/series.sh"));
        Files.createDirectories(copy.resolve("patches"));
        try (Stream<Path> files = Files.list(Fork.ROOT.resolve("patches"))) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Files.copy(f, copy.resolve("patches").resolve(f.getFileName().toString()));
            }
        }
        for (String module : Fork.PATCHED_MODULES) {
            Files.createDirectories(copy.resolve(module));
            Files.copy(Fork.ROOT.resolve(module).resolve("api-changes.txt"),
                    copy.resolve(module).resolve("api-changes.txt"));
        }
        return copy;
    }

    /** Changes one byte of the first patch's commit message, the M of "Motivation:", to a new letter each time. */
    private static void flipAByte(Path copy) throws IOException {
        Path patch = copy.resolve("patches").resolve(Fork.patches().get(0).getFileName().toString());
        int at = new String(Files.readAllBytes(Fork.patches().get(0)), StandardCharsets.ISO_8859_1)
                .indexOf("\nMotivation:") + 1;
        assertThat(at).as("Motivation: in %s", patch).isPositive();
        byte[] bytes = Files.readAllBytes(patch);
        bytes[at] = (byte) (bytes[at] == 'M' ? 'a' : bytes[at] + 1);
        Files.write(patch, bytes);
    }

    private static String pom(Path copy, Pattern property) {
        Matcher m = property.matcher(Fork.read(copy.resolve("pom.xml")));
        assertThat(m.find()).as("%s in pom.xml", property).isTrue();
        return m.group(1);
    }

    private static void git(Path dir, String... args) throws Exception {
        List<String> command = new ArrayList<>(Arrays.asList("git", "-c", "user.name=Version test",
                "-c", "user.email=version-test@fork.invalid", "-c", "commit.gpgsign=false"));
        command.addAll(Arrays.asList(args));
        Fork.Result r = exec(dir, command.toArray(new String[0]));
        assertThat(r.exit).as(r.output).isZero();
    }

    private static Fork.Result exec(Path dir, String... command) throws IOException, InterruptedException {
        Map<String, String> env = new HashMap<>();
        // A copy under the temporary folder is a git work tree only if the test makes it one.
        env.put("GIT_CEILING_DIRECTORIES", dir.getParent().toString());
        env.put("PATCH_DIR", null);
        return Fork.exec(dir, env, 1, command);
    }
}
