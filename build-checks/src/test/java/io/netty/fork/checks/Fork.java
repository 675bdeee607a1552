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

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Where the fork's build puts things, and what the patch series touches.
 */
final class Fork {
    static final Path ROOT = Paths.get(property("fork.root")).toAbsolutePath().normalize();
    /**
     * Folders of the patched modules, as in Netty's tree; each builds {@code netty-<folder>}. A patched module is a
     * folder with an {@code api-changes.txt}: the same marker switches on the parent pom's {@code patched-module}
     * profile and makes the folder one of {@code tools/series.sh modules}.
     */
    static final List<String> PATCHED_MODULES = patchedModules(ROOT);
    static final String VERSION = property("fork.version");
    static final String BASE_VERSION = property("netty.base.version");
    /** The build's Maven local repository, wherever settings.xml or -Dmaven.repo.local put it. */
    static final String LOCAL_REPOSITORY = property("fork.localRepository");
    /** The sha256 of patches/ that {@link #VERSION} was recorded with (pom.xml's fork.seriesSha256). */
    static final String SERIES_SHA256 = property("fork.seriesSha256");
    /** The series' identity in each patched module's jar, read at run time (README, "Using the fork"). */
    static final String SERIES_RESOURCE = "META-INF/io.netty.h2uring-series.properties";

    private static final Pattern DIFF_LINE = Pattern.compile("^diff --git a/(\\S+) b/(\\S+)$", Pattern.MULTILINE);

    private Fork() {
    }

    private static String property(String name) {
        String value = System.getProperty(name);
        if (value == null || value.isEmpty()) {
            throw new IllegalStateException("system property " + name + " is not set (run through Maven)");
        }
        return value;
    }

    static List<String> patchedModules(Path root) {
        try (Stream<Path> dirs = Files.list(root)) {
            List<String> modules = new ArrayList<>();
            dirs.filter(d -> Files.isRegularFile(d.resolve("api-changes.txt")))
                    .filter(d -> Files.isRegularFile(d.resolve("pom.xml")))
                    .map(d -> d.getFileName().toString()).sorted().forEach(modules::add);
            return List.copyOf(modules);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String artifactId(String module) {
        return "netty-" + module;
    }

    /** The fork's jar of a module, as the module's build left it. */
    static Path forkJar(String module, String classifier) {
        String suffix = classifier == null ? "" : '-' + classifier;
        return ROOT.resolve(module).resolve("target").resolve(artifactId(module) + '-' + VERSION + suffix + ".jar");
    }

    /**
     * The upstream jar of a module at the base release, as the module's build copied it (the parent's
     * {@code patched-module} profile) next to its own.
     */
    static Path upstreamJar(String module, String classifier) {
        String suffix = classifier == null ? "" : '-' + classifier;
        return ROOT.resolve(module).resolve("target/upstream").resolve(
                artifactId(module) + '-' + BASE_VERSION + suffix + ".jar");
    }

    /** The patch files in the order of {@code patches/series}. */
    static List<Path> patches() {
        return patches(ROOT);
    }

    /** The patch files in the order of {@code patches/series} of a copy of the repository at {@code root}. */
    static List<Path> patches(Path root) {
        List<Path> patches = new ArrayList<>();
        for (String line : read(root.resolve("patches/series")).split("\n")) {
            String name = line.replaceAll("#.*", "").trim();
            if (!name.isEmpty()) {
                patches.add(root.resolve("patches").resolve(name));
            }
        }
        return patches;
    }

    /** The values of a trailer of a patch's commit message (its last paragraph before the "---" line). */
    static List<String> trailers(Path patch, String key) {
        List<String> lines = new ArrayList<>();
        for (String line : read(patch).split("\n")) {
            if (line.equals("---")) {
                break;
            }
            if (line.isEmpty()) {
                lines.clear();
            } else {
                lines.add(line);
            }
        }
        List<String> values = new ArrayList<>();
        for (String line : lines) {
            if (line.startsWith(key + ": ")) {
                values.add(line.substring(key.length() + 2).trim());
            }
        }
        return values;
    }

    /** The subject of a patch's commit message, without "[PATCH] ", its folded lines joined. */
    static String subject(Path patch) {
        StringBuilder subject = new StringBuilder();
        boolean in = false;
        for (String line : read(patch).split("\n")) {
            if (line.startsWith("Subject: [PATCH] ")) {
                subject.append(line.substring("Subject: [PATCH] ".length()));
                in = true;
            } else if (in && line.startsWith(" ")) {
                subject.append(line);
            } else if (in) {
                break;
            }
        }
        return subject.toString();
    }

    /** The patch's number, as its file name starts ({@code 0001}). */
    static String number(Path patch) {
        return patch.getFileName().toString().substring(0, 4);
    }

    /** Paths (as in Netty's tree) that the series touches: added, removed or modified. */
    static Set<String> touchedPaths() {
        Set<String> paths = new TreeSet<>();
        for (Path patch : patches()) {
            Matcher m = DIFF_LINE.matcher(read(patch));
            while (m.find()) {
                paths.add(m.group(1));
                paths.add(m.group(2));
            }
        }
        return paths;
    }

    /**
     * Binary names of top-level classes ({@code io/netty/x/Y}) whose sources the series touches in a module: only
     * their class files ({@code Y.class}, {@code Y$*.class}) may differ in the set of entries of the jar.
     */
    static Set<String> touchedClasses(String module) {
        String prefix = module + "/src/main/java/";
        Set<String> classes = new TreeSet<>();
        for (String path : touchedPaths()) {
            if (path.startsWith(prefix) && path.endsWith(".java")) {
                classes.add(path.substring(prefix.length(), path.length() - ".java".length()));
            }
        }
        return classes;
    }

    /** Resources ({@code META-INF/...}) the series touches in a module. */
    static Set<String> touchedResources(String module) {
        String prefix = module + "/src/main/resources/";
        Set<String> resources = new TreeSet<>();
        for (String path : touchedPaths()) {
            if (path.startsWith(prefix)) {
                resources.add(path.substring(prefix.length()));
            }
        }
        return resources;
    }

    static String read(Path file) {
        try {
            return new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A command's exit code and its output (standard output and error together). */
    static final class Result {
        final int exit;
        final String output;

        Result(int exit, String output) {
            this.exit = exit;
            this.output = output;
        }
    }

    /**
     * Runs {@code command} in {@code dir} with no input and {@code env} applied to this process's environment (a
     * {@code null} value removes the variable); fails if it has not finished within {@code timeoutMinutes}.
     */
    static Result exec(Path dir, Map<String, String> env, long timeoutMinutes, String... command)
            throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        for (Map.Entry<String, String> e : env.entrySet()) {
            if (e.getValue() == null) {
                pb.environment().remove(e.getKey());
            } else {
                pb.environment().put(e.getKey(), e.getValue());
            }
        }
        Process p = pb.start();
        p.getOutputStream().close();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(timeoutMinutes, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            throw new AssertionError(command[0] + " did not finish within " + timeoutMinutes + " minutes: " + output);
        }
        return new Result(p.exitValue(), output);
    }
}
