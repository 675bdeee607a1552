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

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Each patched jar is a drop-in for the upstream jar: the same entries (but the classes whose sources the series
 * touches, and the series' identity a patched module's jar adds), the same class-file versions, the same resources,
 * the same manifest and {@code io.netty.versions.properties} but for the version, and a sources jar of the patched
 * sources.
 */
class JarParityTest {
    private static final Set<String> VERSION_HEADERS = Set.of("Implementation-Version", "Bundle-Version");

    static Stream<Arguments> jars() {
        List<Arguments> jars = new ArrayList<>();
        for (String module : Fork.PATCHED_MODULES) {
            jars.add(Arguments.of(module, null));
        }
        jars.add(Arguments.of("transport-native-io_uring", "linux-x86_64"));
        return jars.stream();
    }

    static Stream<String> modules() {
        return Fork.PATCHED_MODULES.stream();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("jars")
    void sameEntriesButTheTouchedClasses(String module, String classifier) throws IOException {
        Set<String> fork = entries(Fork.forkJar(module, classifier));
        Set<String> upstream = entries(Fork.upstreamJar(module, classifier));
        Set<String> touched = Fork.touchedClasses(module);

        Set<String> onlyFork = new TreeSet<>(fork);
        onlyFork.removeAll(upstream);
        Set<String> onlyUpstream = new TreeSet<>(upstream);
        onlyUpstream.removeAll(fork);
        onlyFork.removeIf(e -> isClassOf(e, touched));
        onlyUpstream.removeIf(e -> isClassOf(e, touched));
        if (classifier == null) {
            // The one entry a patched module's jar adds (seriesIdentityNamesVersionAndPatches); not the native jar.
            assertThat(onlyFork).as("entries only in the fork's jar").contains(Fork.SERIES_RESOURCE);
            onlyFork.remove(Fork.SERIES_RESOURCE);
        }
        assertThat(onlyFork).as("entries only in the fork's jar").isEmpty();
        assertThat(onlyUpstream).as("entries only in the upstream jar").isEmpty();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("jars")
    void sameClassFileVersions(String module, String classifier) throws IOException {
        try (ZipFile fork = new ZipFile(Fork.forkJar(module, classifier).toFile());
             ZipFile upstream = new ZipFile(Fork.upstreamJar(module, classifier).toFile())) {
            Map<String, Integer> upstreamMajors = majors(upstream);
            Set<Integer> allowed = new TreeSet<>(upstreamMajors.values());
            Map<String, Integer> forkMajors = majors(fork);
            for (Map.Entry<String, Integer> e : forkMajors.entrySet()) {
                Integer expected = upstreamMajors.get(e.getKey());
                if (expected != null) {
                    assertThat(e.getValue()).as("class-file major version of %s", e.getKey()).isEqualTo(expected);
                } else {
                    assertThat(allowed).as("class-file major version of added %s", e.getKey())
                            .contains(e.getValue());
                }
            }
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("jars")
    void manifestDiffersOnlyInVersion(String module, String classifier) throws IOException {
        Attributes fork = manifest(Fork.forkJar(module, classifier));
        Attributes upstream = manifest(Fork.upstreamJar(module, classifier));
        assertThat(names(fork)).isEqualTo(names(upstream));
        for (Object key : upstream.keySet()) {
            String name = key.toString();
            String expected = upstream.getValue(name);
            if (VERSION_HEADERS.contains(name)) {
                assertThat(expected).isEqualTo(Fork.BASE_VERSION);
                expected = Fork.VERSION;
            }
            assertThat(fork.getValue(name)).as("manifest header %s", name).isEqualTo(expected);
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("jars")
    void resourcesAreUpstreams(String module, String classifier) throws IOException {
        Set<String> touched = Fork.touchedResources(module);
        try (ZipFile fork = new ZipFile(Fork.forkJar(module, classifier).toFile());
             ZipFile upstream = new ZipFile(Fork.upstreamJar(module, classifier).toFile())) {
            for (Enumeration<? extends ZipEntry> en = upstream.entries(); en.hasMoreElements();) {
                String name = en.nextElement().getName();
                if (name.endsWith("/") || name.endsWith(".class") || name.endsWith(".so")
                        || name.startsWith("META-INF/maven/") || touched.contains(name)
                        || "META-INF/MANIFEST.MF".equals(name) || "META-INF/INDEX.LIST".equals(name)) {
                    continue;
                }
                byte[] expected = bytes(upstream, name);
                byte[] actual = bytes(fork, name);
                if ("META-INF/io.netty.versions.properties".equals(name)) {
                    assertVersionsProperties(load(actual), load(expected));
                } else {
                    assertThat(actual).as("resource %s", name).isEqualTo(expected);
                }
            }
            // Upstream's Java 11 module descriptors are kept (the jar tool re-serialises them, so compare content).
            for (Enumeration<? extends ZipEntry> en = upstream.entries(); en.hasMoreElements();) {
                String name = en.nextElement().getName();
                if (name.startsWith("META-INF/versions/") && name.endsWith("module-info.class")) {
                    assertThat(ModuleDescriptor.read(ByteBuffer.wrap(bytes(fork, name)))).as(name)
                            .isEqualTo(ModuleDescriptor.read(ByteBuffer.wrap(bytes(upstream, name))));
                }
            }
        }
    }

    @ParameterizedTest
    @MethodSource("modules")
    void sourcesJarHoldsThePatchedSources(String module) throws IOException {
        Path patched = Fork.ROOT.resolve(module).resolve("target/series/src/main");
        Set<String> touched = Fork.touchedPaths();
        try (ZipFile fork = new ZipFile(Fork.forkJar(module, "sources").toFile());
             ZipFile upstream = new ZipFile(Fork.upstreamJar(module, "sources").toFile())) {
            int checked = 0;
            for (Enumeration<? extends ZipEntry> en = upstream.entries(); en.hasMoreElements();) {
                String name = en.nextElement().getName();
                String dir = name.endsWith(".java") ? "java" : name.endsWith(".c") || name.endsWith(".h") ? "c" : null;
                if (dir == null) {
                    continue;
                }
                byte[] actual = bytes(fork, name);
                if (touched.contains(module + "/src/main/" + dir + '/' + name)) {
                    assertThat(actual).as("patched %s", name)
                            .isEqualTo(Files.readAllBytes(patched.resolve(dir).resolve(name)))
                            .isNotEqualTo(bytes(upstream, name));
                } else {
                    assertThat(actual).as("unpatched %s", name).isEqualTo(bytes(upstream, name));
                }
                checked++;
            }
            assertThat(checked).as("sources compared").isPositive();
        }
    }

    /**
     * The series a jar's version names, readable at run time: the version, the hash of patches/ it was recorded with,
     * the patches' subjects in the order they apply.
     */
    @ParameterizedTest
    @MethodSource("modules")
    void seriesIdentityNamesVersionAndPatches(String module) throws IOException {
        Map<String, String> expected = new TreeMap<>();
        expected.put("version", Fork.VERSION);
        expected.put("series.sha256", Fork.SERIES_SHA256);
        for (Path patch : Fork.patches()) {
            expected.put("patch." + Fork.number(patch), Fork.subject(patch));
        }
        try (ZipFile fork = new ZipFile(Fork.forkJar(module, null).toFile())) {
            Properties identity = load(bytes(fork, Fork.SERIES_RESOURCE));
            Map<String, String> actual = new TreeMap<>();
            identity.stringPropertyNames().forEach(k -> actual.put(k, identity.getProperty(k)));
            assertThat(actual).as("%s in %s", Fork.SERIES_RESOURCE, fork.getName()).isEqualTo(expected);
        }
    }

    private static void assertVersionsProperties(Properties fork, Properties upstream) {
        assertThat(fork.stringPropertyNames()).isEqualTo(upstream.stringPropertyNames());
        for (String key : upstream.stringPropertyNames()) {
            String expected = upstream.getProperty(key);
            if (key.endsWith(".version")) {
                assertThat(expected).isEqualTo(Fork.BASE_VERSION);
                expected = Fork.VERSION;
            }
            assertThat(fork.getProperty(key)).as("io.netty.versions.properties %s", key).isEqualTo(expected);
        }
    }

    private static boolean isClassOf(String entry, Set<String> classes) {
        if (!entry.endsWith(".class")) {
            return false;
        }
        String name = entry.substring(0, entry.length() - ".class".length());
        int nested = name.indexOf('$');
        return classes.contains(nested < 0 ? name : name.substring(0, nested));
    }

    private static Set<String> entries(Path jar) throws IOException {
        Set<String> names = new TreeSet<>();
        try (ZipFile zip = new ZipFile(jar.toFile())) {
            for (Enumeration<? extends ZipEntry> en = zip.entries(); en.hasMoreElements();) {
                names.add(en.nextElement().getName());
            }
        }
        return names;
    }

    private static Map<String, Integer> majors(ZipFile zip) throws IOException {
        Map<String, Integer> majors = new TreeMap<>();
        for (Enumeration<? extends ZipEntry> en = zip.entries(); en.hasMoreElements();) {
            String name = en.nextElement().getName();
            if (name.endsWith(".class")) {
                byte[] b = bytes(zip, name);
                majors.put(name, ((b[6] & 0xff) << 8) | (b[7] & 0xff));
            }
        }
        return majors;
    }

    private static Attributes manifest(Path jar) throws IOException {
        try (JarFile file = new JarFile(jar.toFile())) {
            Manifest manifest = file.getManifest();
            assertThat(manifest).as("manifest of %s", jar).isNotNull();
            return manifest.getMainAttributes();
        }
    }

    private static Set<String> names(Attributes attributes) {
        Set<String> names = new TreeSet<>();
        attributes.keySet().forEach(k -> names.add(k.toString()));
        return names;
    }

    private static byte[] bytes(ZipFile zip, String name) throws IOException {
        ZipEntry entry = zip.getEntry(name);
        assertThat(entry).as("%s in %s", name, zip.getName()).isNotNull();
        try (InputStream in = zip.getInputStream(entry)) {
            return in.readAllBytes();
        }
    }

    private static Properties load(byte[] bytes) throws IOException {
        Properties p = new Properties();
        p.load(new ByteArrayInputStream(bytes));
        return p;
    }
}
