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
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Where the fork's build puts things, and what the patch series touches.
 */
final class Fork {
    /** Folders of the patched modules, as in Netty's tree; each builds {@code netty-<folder>}. */
    static final List<String> PATCHED_MODULES =
            List.of("transport", "codec-http2", "transport-classes-io_uring", "transport-native-io_uring");

    static final Path ROOT = Paths.get(property("fork.root")).toAbsolutePath().normalize();
    static final String VERSION = property("fork.version");
    static final String BASE_VERSION = property("netty.base.version");
    static final Path UPSTREAM_JARS = Paths.get(property("upstream.jars"));
    /** The build's Maven local repository, wherever settings.xml or -Dmaven.repo.local put it. */
    static final String LOCAL_REPOSITORY = property("fork.localRepository");

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

    static String artifactId(String module) {
        return "netty-" + module;
    }

    /** The fork's jar of a module, as the module's build left it. */
    static Path forkJar(String module, String classifier) {
        String suffix = classifier == null ? "" : '-' + classifier;
        return ROOT.resolve(module).resolve("target").resolve(artifactId(module) + '-' + VERSION + suffix + ".jar");
    }

    /** The upstream jar of a module at the base release. */
    static Path upstreamJar(String module, String classifier) {
        String suffix = classifier == null ? "" : '-' + classifier;
        return UPSTREAM_JARS.resolve(artifactId(module) + '-' + BASE_VERSION + suffix + ".jar");
    }

    static List<Path> patches() {
        try (Stream<Path> files = Files.list(ROOT.resolve("patches"))) {
            List<Path> patches = new ArrayList<>();
            files.filter(p -> p.getFileName().toString().endsWith(".patch")).sorted().forEach(patches::add);
            return patches;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
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
}
