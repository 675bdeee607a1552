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
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipFile;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The series tooling: a round trip through the editing work tree leaves {@code patches/} byte-identical, and a
 * patch that does not apply (or touches a module the build does not patch) fails with its name and the file.
 */
class SeriesToolTest {
    private static final String TARGET = "codec-http2/src/main/java/io/netty/handler/codec/http2/Http2CodecUtil.java";

    @Test
    void roundTripIsByteIdentical() throws Exception {
        Fork.Result r = run(null, "roundtrip");
        assertThat(r.exit).as(r.output).isZero();
        assertThat(r.output).contains("byte-identical");
    }

    /**
     * One PR file per patch, with the files its Fork-PR-File trailers list, without the fork-only trailers, each
     * applying onto upstream alone. A file that upstream has in a module the series does not patch (a benchmark of
     * microbench) is changed, any other added.
     */
    @Test
    void exportWritesOneCheckedPrFilePerPatch(@TempDir Path tmp) throws Exception {
        Path out = tmp.resolve("export");
        // --no-build: the build of each PR alone runs in .ci/run (tools/series.sh export), not inside this build.
        Fork.Result r = run(null, "export", "--no-build", out.toString());
        assertThat(r.exit).as(r.output).isZero();
        assertThat(r.output).contains("each checked to apply");
        for (Path patch : Fork.patches()) {
            Path exported = out.resolve(patch.getFileName());
            assertThat(exported).exists();
            String text = new String(Files.readAllBytes(exported), StandardCharsets.UTF_8);
            List<String> files = Fork.trailers(patch, "Fork-PR-File");
            assertThat(files).as("Fork-PR-File trailers of %s", patch.getFileName()).isNotEmpty();
            for (String file : files) {
                String diff = "diff --git a/" + file + " b/" + file + '\n';
                assertThat(text).contains(diff);
                boolean added = text.startsWith("new file mode", text.indexOf(diff) + diff.length());
                assertThat(added).as("%s added (not changed) by %s", file, patch.getFileName())
                        .isEqualTo(!inUpstreamSourcesOfAnUnpatchedModule(file));
            }
            String message = text.substring(0, text.indexOf("\n---\n"));
            assertThat(message).contains("Motivation:").doesNotContain("Upstream-Status:").doesNotContain("\nFork-");
        }
    }

    /**
     * Whether {@code file} lies in a module the series does not patch and the sources jar of that module that export
     * copied to target/upstream-sources has it.
     */
    private static boolean inUpstreamSourcesOfAnUnpatchedModule(String file) throws IOException {
        String module = file.substring(0, file.indexOf('/'));
        String prefix = module + "/src/main/java/";
        Path dir = Fork.ROOT.resolve("target/upstream-sources");
        if (Fork.PATCHED_MODULES.contains(module) || !file.startsWith(prefix)) {
            return false;
        }
        List<Path> jars;
        try (Stream<Path> list = Files.list(dir)) {
            jars = list.filter(j -> j.getFileName().toString().startsWith("netty-" + module + '-'))
                    .collect(Collectors.toList());
        }
        // export looks for every such file in the module's sources jar.
        assertThat(jars).as("sources jar of %s in %s", module, dir).isNotEmpty();
        for (Path jar : jars) {
            try (ZipFile zip = new ZipFile(jar.toFile())) {
                if (zip.getEntry(file.substring(prefix.length())) != null) {
                    return true;
                }
            }
        }
        return false;
    }

    /** A new file goes to one PR: listed by two patches, export stops and names the file and both patches. */
    @Test
    void exportRejectsAFileListedByTwoPatches(@TempDir Path tmp) throws Exception {
        List<Path> patches = Fork.patches();
        assertThat(patches).as("a series of at least two patches").hasSizeGreaterThan(1);
        String shared = Fork.trailers(patches.get(0), "Fork-PR-File").get(0);
        Path dir = Files.createDirectories(tmp.resolve("patches"));
        for (Path p : patches) {
            Files.copy(p, dir.resolve(p.getFileName()));
        }
        Files.copy(Fork.ROOT.resolve("patches/series"), dir.resolve("series"));
        Path second = dir.resolve(patches.get(1).getFileName());
        String text = Fork.read(second);
        int end = text.indexOf("\n---\n");
        Files.write(second, (text.substring(0, end) + "\nFork-PR-File: " + shared + text.substring(end))
                .getBytes(StandardCharsets.UTF_8));

        Fork.Result r = run(dir, "export", "--no-build", tmp.resolve("export").toString());
        assertThat(r.exit).isNotZero();
        assertThat(r.output).contains(shared + " is a Fork-PR-File of both " + patches.get(0).getFileName()
                + " and " + patches.get(1).getFileName());
    }

    /** A file bound for upstream that names the fork stops the export, naming the file and the line. */
    @Test
    void exportRejectsAPrFileThatNamesTheFork(@TempDir Path tmp) throws Exception {
        Path copy = tmp.resolve("repo");
        copyRepository(Fork.ROOT, copy, true);
        Path patch = Fork.patches().get(0);
        String file = Fork.trailers(patch, "Fork-PR-File").get(0);
        Path source = copy.resolve(file);
        List<String> lines = new ArrayList<>(Files.readAllLines(source, StandardCharsets.UTF_8));
        int at = lines.indexOf("") + 1;
        lines.add(at, "// Measured on 4.2.18.Final-h2uring-18.");
        Files.write(source, lines, StandardCharsets.UTF_8);

        Fork.Result r = execIn(copy, "bash", copy.resolve("tools/series.sh").toString(), "export", "--no-build",
                tmp.resolve("export").toString());
        assertThat(r.exit).isNotZero();
        assertThat(r.output).contains(file + " (a file of " + patch.getFileName() + "'s PR, bound for upstream)"
                + " names the fork, line " + (at + 1) + ": // Measured on 4.2.18.Final-h2uring-18.");
    }

    /** The PR text is the patch's message (subject first) without the fork-only trailers. */
    @Test
    void prTextIsTheCommitMessageWithoutForkTrailers() throws Exception {
        for (Path patch : Fork.patches()) {
            Fork.Result r = run(null, "pr-text", Fork.number(patch));
            assertThat(r.exit).as(r.output).isZero();
            String subject = Fork.subject(patch);
            assertThat(r.output).startsWith(subject + "\n\nMotivation:\n").contains("\nModifications:\n")
                    .contains("\nResult:\n").doesNotContain("Upstream-Status").doesNotContain("Fork-");
            assertThat(Fork.read(patch)).contains(r.output.substring(subject.length()).trim());
        }
    }

    /**
     * Each patch's metadata: an OpenEmbedded Upstream-Status, its effect, its long form, its PR's new files and the
     * earlier patches it builds on, if any.
     */
    @Test
    void everyPatchCarriesItsMetadata() {
        assertThat(Fork.patches()).isNotEmpty();
        for (Path patch : Fork.patches()) {
            String name = patch.getFileName().toString();
            assertThat(Fork.trailers(patch, "Upstream-Status")).as("Upstream-Status of %s", name).singleElement()
                    .asString()
                    .matches("Pending|Submitted \\[.+]|Accepted \\[.+]|Inappropriate \\[.+]|Backport|Denied");
            assertThat(Fork.trailers(patch, "Fork-Effect")).as("Fork-Effect of %s", name).hasSize(1);
            List<String> doc = Fork.trailers(patch, "Fork-Doc");
            assertThat(doc).as("Fork-Doc of %s", name).hasSize(1);
            Path docFile = Fork.ROOT.resolve(doc.get(0));
            assertThat(docFile).isRegularFile();
            String docText = Fork.read(docFile);
            for (String file : Fork.trailers(patch, "Fork-PR-File")) {
                assertThat(Fork.ROOT.resolve(file)).as("Fork-PR-File of %s", name).isRegularFile();
                // The long form says what each new file proves.
                String simpleName = file.substring(file.lastIndexOf('/') + 1);
                assertThat(docText).as("%s mentions %s", doc.get(0), file).contains(simpleName);
            }
            // A stacked PR builds on earlier patches of the series only.
            for (String dependency : Fork.trailers(patch, "Fork-Depends-On")) {
                assertThat(dependency).as("Fork-Depends-On of %s", name).matches("[0-9]{4}")
                        .isLessThan(Fork.number(patch));
                assertThat(Fork.patches().stream().map(Fork::number)).as("Fork-Depends-On of %s", name)
                        .contains(dependency);
            }
        }
    }

    /** patches/series lists every patch file once and nothing else; the tool refuses a series that does not. */
    @Test
    void seriesFileListsExactlyThePatchFiles(@TempDir Path tmp) throws Exception {
        List<String> files;
        try (Stream<Path> list = Files.list(Fork.ROOT.resolve("patches"))) {
            files = list.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".patch")).sorted()
                    .collect(Collectors.toList());
        }
        assertThat(Fork.patches().stream().map(p -> p.getFileName().toString())).containsExactlyElementsOf(files);

        Path patches = Files.createDirectories(tmp.resolve("patches"));
        Files.write(patches.resolve("0001-codec-http2-broken.patch"), brokenPatch(), StandardCharsets.UTF_8);
        Files.write(patches.resolve("series"), List.of("# empty"), StandardCharsets.UTF_8);
        Fork.Result unlisted = run(patches, "pr-text", "0001");
        assertThat(unlisted.exit).isNotZero();
        assertThat(unlisted.output).contains("0001-codec-http2-broken.patch").contains("not listed");

        Files.write(patches.resolve("series"), List.of("0001-codec-http2-broken.patch", "0002-missing.patch"),
                StandardCharsets.UTF_8);
        Fork.Result missing = run(patches, "pr-text", "0001");
        assertThat(missing.exit).isNotZero();
        assertThat(missing.output).contains("0002-missing.patch").contains("no such file");
    }

    /** PATCHES.md's table is what tools/series.sh index generates from the patches. */
    @Test
    void patchesIndexIsGeneratedFromTheSeries() throws Exception {
        Fork.Result r = run(null, "index", "--check");
        assertThat(r.exit).as(r.output).isZero();
        for (Path patch : Fork.patches()) {
            assertThat(Fork.read(Fork.ROOT.resolve("PATCHES.md"))).contains("patches/" + patch.getFileName());
        }
    }

    /**
     * Retiring the first patch (merged upstream) on a copy of the repository: it leaves the series and patches/, the
     * others keep their numbers and their content but for a Fork-Depends-On naming it (upstream has it now), its
     * api-changes.txt sections go and the others' stay, PATCHES.md's index follows, and a round trip still gives the
     * same files. After the last patch is retired too, a patch added at the end gets a number above both: a retired
     * number is never used again.
     */
    @Test
    void retireDropsThePatchAndTheOthersKeepTheirNumbers(@TempDir Path tmp) throws Exception {
        Path copy = tmp.resolve("repo");
        copyRepository(Fork.ROOT, copy, true);
        List<Path> before = Fork.patches();
        assertThat(before).as("a series of at least three patches").hasSizeGreaterThan(2);
        String retired = before.get(0).getFileName().toString();
        String tool = copy.resolve("tools/series.sh").toString();

        Fork.Result r = execIn(copy, "bash", tool, "retire", "0001");
        assertThat(r.exit).as(r.output).isZero();

        List<String> series = fileNames(Fork.patches(copy));
        assertThat(series).hasSize(before.size() - 1).doesNotContain(retired);
        assertThat(Files.readAllLines(copy.resolve("patches/series"))).contains("# retired " + retired + " ("
                + Fork.BASE_VERSION + ")");
        assertThat(copy.resolve("patches").resolve(retired)).doesNotExist();
        boolean dependencyDropped = false;
        for (int i = 1; i < before.size(); i++) {
            String name = before.get(i).getFileName().toString();
            assertThat(series.get(i - 1)).isEqualTo(name);
            String old = Fork.read(before.get(i));
            String now = Fork.read(copy.resolve("patches").resolve(name));
            assertThat(now).isEqualTo(old.replace("\nFork-Depends-On: 0001\n", "\n"));
            dependencyDropped |= !now.equals(old);
        }
        assertThat(dependencyDropped).as("a patch that depended on 0001 (0004)").isTrue();
        String md = Fork.read(copy.resolve("PATCHES.md"));
        assertThat(md).doesNotContain("patches/" + retired).contains("patches/" + series.get(0));
        for (String module : Fork.PATCHED_MODULES) {
            String oldApi = Fork.read(Fork.ROOT.resolve(module).resolve("api-changes.txt"));
            String newApi = Fork.read(copy.resolve(module).resolve("api-changes.txt"));
            assertThat(newApi).doesNotContainPattern("(?m)^# " + Fork.number(before.get(0)) + " .*"
                    + Pattern.quote(subjectWords(before.get(0))));
            for (int i = 1; i < before.size(); i++) {
                String header = "\n# " + Fork.number(before.get(i)) + ' ';
                assertThat(newApi.contains(header)).as("%s of %s", header.trim(), module)
                        .isEqualTo(oldApi.contains(header));
            }
        }
        assertThat(Fork.read(copy.resolve("codec-http2/api-changes.txt")))
                .doesNotContain("WholeChunkStreamByteDistributor");
        Fork.Result roundTrip = execIn(copy, "bash", tool, "roundtrip");
        assertThat(roundTrip.exit).as(roundTrip.output).isZero();

        // The last patch goes too; a new patch at the end then takes the number after it, not its number again.
        String last = Fork.number(before.get(before.size() - 1));
        Fork.Result retireLast = execIn(copy, "bash", tool, "retire", last);
        assertThat(retireLast.exit).as(retireLast.output).isZero();
        Path work = tmp.resolve("work");
        assertThat(execIn(copy, "bash", tool, "materialise", work.toString()).exit).isZero();
        Files.write(work.resolve("codec-http2/NEW.txt"), List.of("new"), StandardCharsets.UTF_8);
        assertThat(execIn(work, "git", "add", "-A").exit).isZero();
        assertThat(execIn(work, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m",
                "HTTP2: A new patch").exit).isZero();
        Fork.Result regenerated = execIn(copy, "bash", tool, "regenerate", work.toString());
        assertThat(regenerated.exit).as(regenerated.output).isZero();
        List<String> grown = fileNames(Fork.patches(copy));
        assertThat(grown.subList(0, grown.size() - 1)).isEqualTo(series.subList(0, series.size() - 1));
        assertThat(grown.get(grown.size() - 1))
                .isEqualTo(String.format("%04d", Integer.parseInt(last) + 1) + "-HTTP2-A-new-patch.patch");
    }

    private static List<String> fileNames(List<Path> paths) {
        return paths.stream().map(p -> p.getFileName().toString()).collect(Collectors.toList());
    }

    @Test
    void statusReplacesTheTrailerWhereItStandsAndRejectsUnknownValues(@TempDir Path tmp) throws Exception {
        Path copy = tmp.resolve("repo");
        copyRepository(Fork.ROOT, copy, true);
        Path patch = copy.resolve("patches").resolve(Fork.patches().get(0).getFileName().toString());
        String before = Fork.read(patch);
        String tool = copy.resolve("tools/series.sh").toString();

        Fork.Result unknown = execIn(copy, "bash", tool, "status", "0001", "Merged");
        assertThat(unknown.exit).as(unknown.output).isNotZero();
        assertThat(unknown.output).contains("unknown Upstream-Status 'Merged'");
        assertThat(Fork.read(patch)).isEqualTo(before);

        Fork.Result submitted = execIn(copy, "bash", tool, "status", "0001",
                "Submitted [https://github.com/netty/netty/pull/1]");
        assertThat(submitted.exit).as(submitted.output).isZero();
        String after = Fork.read(patch);
        assertThat(after).contains("\nUpstream-Status: Submitted [https://github.com/netty/netty/pull/1]\n")
                .doesNotContain("Upstream-Status: Pending");
        // Only that line changed, in place: the rest of the file is byte-identical.
        assertThat(after.replace("Upstream-Status: Submitted [https://github.com/netty/netty/pull/1]",
                "Upstream-Status: Pending")).isEqualTo(before);
        assertThat(Fork.read(copy.resolve("PATCHES.md")))
                .contains("| Submitted [https://github.com/netty/netty/pull/1] |");
    }

    private static String subjectWords(Path patch) {
        String subject = Fork.subject(patch);
        return subject.substring(subject.indexOf(':') + 1).trim();
    }

    /**
     * The repository's own files (no build output, no git metadata), and with {@code withSources} the upstream
     * sources jars the patched modules' builds copied (so that the tool needs no Maven run for them).
     */
    private static void copyRepository(Path from, Path to, boolean withSources) throws IOException {
        try (Stream<Path> paths = Files.walk(from)) {
            for (Path p : paths.collect(Collectors.toList())) {
                Path rel = from.relativize(p);
                if (rel.toString().isEmpty()) {
                    Files.createDirectories(to);
                    continue;
                }
                boolean sourcesJar = withSources && rel.getNameCount() == 4
                        && rel.getName(1).toString().equals("target") && rel.getName(2).toString().equals("upstream")
                        && rel.toString().endsWith("-sources.jar");
                boolean skip = false;
                for (Path part : sourcesJar ? rel.getFileName() : rel) {
                    String n = part.toString();
                    if (n.equals("target") || n.equals(".git")) {
                        skip = true;
                        break;
                    }
                }
                if (skip) {
                    continue;
                }
                if (Files.isDirectory(p)) {
                    Files.createDirectories(to.resolve(rel.toString()));
                } else {
                    Files.createDirectories(to.resolve(rel.toString()).getParent());
                    Files.copy(p, to.resolve(rel.toString()), StandardCopyOption.COPY_ATTRIBUTES);
                }
            }
        }
    }

    @Test
    void materialisedTreeHasBaseCommitThenOneCommitPerPatch(@TempDir Path tmp) throws Exception {
        Path tree = tmp.resolve("tree");
        Fork.Result r = run(null, "materialise", tree.toString());
        assertThat(r.exit).as(r.output).isZero();
        Fork.Result log = exec(tree, null, "git", "log", "--format=%s", "upstream-base..HEAD");
        assertThat(log.output.lines().filter(l -> !l.isEmpty()).count()).isEqualTo(Fork.patches().size());
        assertThat(tree.resolve(TARGET)).exists();
    }

    @Test
    void patchThatDoesNotApplyNamesPatchAndFile(@TempDir Path tmp) throws Exception {
        Path patches = Files.createDirectories(tmp.resolve("patches"));
        Files.write(patches.resolve("0001-codec-http2-broken.patch"), brokenPatch(), StandardCharsets.UTF_8);
        Files.write(patches.resolve("series"), List.of("0001-codec-http2-broken.patch"), StandardCharsets.UTF_8);
        Path root = unpackCodecHttp2(tmp);

        Fork.Result r = run(patches, "apply", "codec-http2", root.toString());
        assertThat(r.exit).isNotZero();
        assertThat(r.output).contains("0001-codec-http2-broken.patch").contains(TARGET).contains("does not apply");
    }

    @Test
    void materialiseStopsAtThePatchThatDoesNotApply(@TempDir Path tmp) throws Exception {
        Path patches = Files.createDirectories(tmp.resolve("patches"));
        Files.write(patches.resolve("0001-codec-http2-broken.patch"), brokenPatch(), StandardCharsets.UTF_8);
        Files.write(patches.resolve("series"), List.of("0001-codec-http2-broken.patch"), StandardCharsets.UTF_8);
        Fork.Result r = run(patches, "materialise", tmp.resolve("tree").toString());
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
        Files.write(patches.resolve("series"), List.of("0001-handler-change.patch"), StandardCharsets.UTF_8);
        Path root = unpackCodecHttp2(tmp);

        Fork.Result r = run(patches, "apply", "codec-http2", root.toString());
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
        Fork.Result r = run(null, "unpack", "codec-http2", Fork.upstreamJar("codec-http2", "sources").toString(),
                root.toString());
        assertThat(r.exit).as(r.output).isZero();
        assertThat(root.resolve(TARGET)).exists();
        return root;
    }

    /**
     * The tool finds the upstream sources through Maven, never through {@code $HOME}: in a checkout where nothing was
     * built yet (a copy without target folders), with HOME an empty folder and a local repository of its own (which
     * reads what it lacks from the build's, as Maven's chained local repository does), materialise works and writes
     * nothing under HOME.
     */
    @Test
    void materialiseAsksMavenNotHome(@TempDir Path tmp) throws Exception {
        Path home = Files.createDirectories(tmp.resolve("home"));
        Path repo = tmp.resolve("repo");
        Path tree = tmp.resolve("tree");
        Path checkout = tmp.resolve("checkout");
        copyRepository(Fork.ROOT, checkout, false);
        Path sources = checkout.resolve("target/upstream-sources");
        Map<String, String> env = new HashMap<>();
        env.put("HOME", home.toString());
        // Where the wrapper keeps its Maven: as for the build, not under the empty HOME.
        String userHome = System.getenv("MAVEN_USER_HOME");
        env.put("MAVEN_USER_HOME", userHome != null ? userHome : System.getenv("HOME") + "/.m2");
        env.put("MAVEN_ARGS", "-Dmaven.repo.local=" + repo + " -Dmaven.repo.local.tail=" + Fork.LOCAL_REPOSITORY);
        Fork.Result r = execWith(checkout, env, "bash", checkout.resolve("tools/series.sh").toString(),
                "materialise", tree.toString());
        assertThat(r.exit).as(r.output).isZero();
        assertThat(tree.resolve(TARGET)).exists();
        assertThat(sources.resolve("netty-codec-http2-" + Fork.BASE_VERSION + "-sources.jar"))
                .exists();
        try (Stream<Path> files = Files.list(home)) {
            assertThat(files).as("files under HOME").isEmpty();
        }
    }

    /**
     * The rebase check from class jars alone, against the fork's own jars, which carry the series: every patch then
     * conflicts, in the methods it changes (a patch that adds a class finds it there too). The comparison is of
     * bytecode, so this fails if the check misses a patched method or reads its hunks in the wrong class.
     */
    @Test
    void classCheckFindsEveryPatchInTheForksOwnJars(@TempDir Path tmp) throws Exception {
        Path tree = tmp.resolve("tree");
        Fork.Result materialised = run(null, "materialise", tree.toString());
        assertThat(materialised.exit).as(materialised.output).isZero();
        Path jars = Files.createDirectories(tmp.resolve("jars"));
        for (String module : Fork.PATCHED_MODULES) {
            Files.createSymbolicLink(jars.resolve(Fork.artifactId(module) + '-' + Fork.BASE_VERSION + ".jar"),
                    Fork.upstreamJar(module, null));
            Files.createSymbolicLink(jars.resolve(Fork.artifactId(module) + '-' + Fork.VERSION + ".jar"),
                    Fork.forkJar(module, null));
        }
        List<String> command = new ArrayList<>(List.of("python3",
                Fork.ROOT.resolve("tools/rebase-classes.py").toString(), tree.toString(), Fork.BASE_VERSION,
                Fork.VERSION, jars.toString()));
        Fork.patches().forEach(p -> command.add(p.toString()));
        Fork.Result r = execIn(Fork.ROOT, command.toArray(new String[0]));
        assertThat(r.exit).as(r.output).isZero();
        for (Path patch : Fork.patches()) {
            String[] row = row(r.output, patch);
            assertThat(row[2]).as("verdict of %s: %s", patch.getFileName(), r.output).isEqualTo("conflicts");
            assertThat(row[5]).as("methods of %s changed in %s", patch.getFileName(), Fork.VERSION).isNotEqualTo("-");
        }
    }

    /**
     * The same check of the base against itself, through {@code tools/series.sh} (the jars the build copied, no
     * Maven run): every patch passes, each class it touches unchanged.
     */
    @Test
    void classCheckOfTheBaseAgainstItselfPassesEveryPatch() throws Exception {
        Fork.Result r = run(null, "rebase-check", "--classes", Fork.BASE_VERSION);
        assertThat(r.exit).as(r.output).isZero();
        for (Path patch : Fork.patches()) {
            String[] row = row(r.output, patch);
            assertThat(row[2]).as(r.output).isEqualTo("passes");
            assertThat(row[3]).as("classes %s touches", patch.getFileName()).isNotEqualTo("-");
            assertThat(row[4] + row[5]).isEqualTo("--");
        }
        assertThat(r.output).doesNotContain("Sources of");
    }

    /** Bad input loses nothing and says what is missing: a malformed version, a release Maven cannot resolve. */
    @Test
    void rebaseCheckNamesWhatIsMissing() throws Exception {
        Fork.Result malformed = run(null, "rebase-check", "4.2 Final");
        assertThat(malformed.exit).isNotZero();
        assertThat(malformed.output).contains("not a release version: '4.2 Final'");

        Fork.Result unknown = run(null, "rebase-check", "--classes", "4.0.999.Final");
        assertThat(unknown.exit).isNotZero();
        assertThat(unknown.output).contains("Maven cannot resolve io.netty:"
                + Fork.artifactId(Fork.PATCHED_MODULES.get(0)) + ":4.0.999.Final:jar (the class jar)");
    }

    /** The release CI checks: the newest of the base's line that the registry serves, never older than the base. */
    @Test
    void newestReleaseIsOfTheBasesLine() throws Exception {
        Fork.Result r = run(null, "newest-release");
        assertThat(r.exit).as(r.output).isZero();
        String[] lines = r.output.trim().split("\n");
        String newest = lines[lines.length - 1];
        String line = Fork.BASE_VERSION.substring(0, Fork.BASE_VERSION.indexOf('.', 2) + 1);
        assertThat(newest).startsWith(line);
        assertThat(new ComparableVersion(newest)).isGreaterThanOrEqualTo(new ComparableVersion(Fork.BASE_VERSION));
    }

    /** The cells of the markdown row of a patch in the check's output. */
    private static String[] row(String output, Path patch) {
        String name = patch.getFileName().toString();
        String line = output.lines().filter(l -> l.startsWith("| " + name + " |")).findFirst()
                .orElseThrow(() -> new AssertionError("no row for " + name + " in: " + output));
        String[] cells = line.split(" \\| ", -1);
        return new String[] {name, cells[0], cells[1], cells[2], cells[3], cells[4].replaceAll(" \\|$", "")};
    }

    private static Fork.Result run(Path patchDir, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add("bash");
        command.add(Fork.ROOT.resolve("tools/series.sh").toString());
        command.addAll(Arrays.asList(args));
        return exec(Fork.ROOT, patchDir, command.toArray(new String[0]));
    }

    /** Runs a command in another checkout, with the build's local repository. */
    private static Fork.Result execIn(Path dir, String... command) throws IOException, InterruptedException {
        return exec(dir, null, command);
    }

    private static Fork.Result exec(Path dir, Path patchDir, String... command) throws IOException, InterruptedException {
        Map<String, String> env = new HashMap<>();
        if (patchDir != null) {
            env.put("PATCH_DIR", patchDir.toString());
        }
        // The tool's Maven runs use the build's local repository, wherever the build was told it is.
        String args = System.getenv("MAVEN_ARGS");
        env.put("MAVEN_ARGS", (args == null ? "" : args + ' ') + "-Dmaven.repo.local=" + Fork.LOCAL_REPOSITORY);
        return execWith(dir, env, command);
    }

    private static Fork.Result execWith(Path dir, Map<String, String> env, String... command)
            throws IOException, InterruptedException {
        return Fork.exec(dir, env, 5, command);
    }
}
