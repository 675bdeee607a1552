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
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One list of patched modules: the folders with an {@code api-changes.txt} ({@link Fork#PATCHED_MODULES}). What
 * Maven can not derive from it (the reactor, the BOM) is checked against it here; the series tool and the examples
 * read it ({@code tools/series.sh modules}, {@code tools/series.sh build-props}).
 */
class ModulesTest {

    @Test
    void seriesToolReadsTheSameList() throws Exception {
        Process p = new ProcessBuilder("bash", Fork.ROOT.resolve("tools/series.sh").toString(), "modules")
                .directory(Fork.ROOT.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(1, TimeUnit.MINUTES)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out.lines().collect(Collectors.toList())).containsExactlyElementsOf(Fork.PATCHED_MODULES);
    }

    @Test
    void reactorBuildsEveryPatchedModuleBeforeTheChecks() throws Exception {
        List<String> modules = texts(pom(Fork.ROOT.resolve("pom.xml")).getDocumentElement(), "modules", "module");
        assertThat(modules).containsAll(Fork.PATCHED_MODULES).contains("build-checks");
        for (String module : Fork.PATCHED_MODULES) {
            assertThat(modules.indexOf(module)).as("%s before build-checks", module)
                    .isLessThan(modules.indexOf("build-checks"));
        }
    }

    @Test
    void patchedModulesBuildUpstreamsArtifacts() throws Exception {
        for (String module : Fork.PATCHED_MODULES) {
            Element project = pom(Fork.ROOT.resolve(module).resolve("pom.xml")).getDocumentElement();
            assertThat(child(project, "artifactId").getTextContent().trim()).isEqualTo(Fork.artifactId(module));
        }
    }

    /** The BOM pins exactly the patched modules at the fork's version (every other module comes from upstream's). */
    @Test
    void bomPinsExactlyThePatchedModules() throws Exception {
        Element project = pom(Fork.ROOT.resolve("bom/pom.xml")).getDocumentElement();
        Set<String> pinned = new TreeSet<>();
        for (Element dependency : elements(child(child(project, "dependencyManagement"), "dependencies"),
                "dependency")) {
            if (child(dependency, "version").getTextContent().trim().equals("${project.version}")) {
                pinned.add(child(dependency, "artifactId").getTextContent().trim());
            }
        }
        assertThat(pinned).isEqualTo(Fork.PATCHED_MODULES.stream().map(Fork::artifactId)
                .collect(Collectors.toCollection(TreeSet::new)));
    }

    @Test
    void readmeNamesEveryPatchedArtifact() {
        String readme = Fork.read(Fork.ROOT.resolve("README.md"));
        for (String module : Fork.PATCHED_MODULES) {
            assertThat(readme).contains('`' + Fork.artifactId(module) + '`');
        }
    }

    /**
     * The examples (projects outside the reactor, as users' would be) take the versions and the patched modules
     * from the build ({@code tools/series.sh build-props}, which .ci/run passes), never a copy of them.
     */
    @Test
    void examplesDoNotRepeatTheBuildsVersions() throws IOException {
        List<Path> files = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(Fork.ROOT.resolve("examples"))) {
            walk.filter(Files::isRegularFile).filter(f -> !f.toString().contains("/target/")).forEach(files::add);
        }
        assertThat(files).isNotEmpty();
        String junit = System.getProperty("junit.version");
        for (Path file : files) {
            String text = Fork.read(file);
            assertThat(text).as("%s repeats a version of the build", Fork.ROOT.relativize(file))
                    .doesNotContain(Fork.VERSION).doesNotContain(Fork.BASE_VERSION).doesNotContain(junit);
            // A copy of the list: every patched artifact named as a string.
            assertThat(Fork.PATCHED_MODULES.stream().allMatch(m -> text.contains('"' + Fork.artifactId(m) + '"')))
                    .as("%s lists the patched modules instead of reading -Dfork.patchedModules",
                            Fork.ROOT.relativize(file)).isFalse();
        }
    }

    private static Document pom(Path file) throws Exception {
        return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(file.toFile());
    }

    private static Element child(Element parent, String name) {
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element && n.getNodeName().equals(name)) {
                return (Element) n;
            }
        }
        throw new AssertionError("no <" + name + "> in <" + parent.getNodeName() + '>');
    }

    private static List<Element> elements(Element parent, String name) {
        List<Element> out = new ArrayList<>();
        NodeList list = parent.getChildNodes();
        for (int i = 0; i < list.getLength(); i++) {
            if (list.item(i) instanceof Element && list.item(i).getNodeName().equals(name)) {
                out.add((Element) list.item(i));
            }
        }
        return out;
    }

    private static List<String> texts(Element parent, String container, String name) {
        return elements(child(parent, container), name).stream().map(e -> e.getTextContent().trim())
                .collect(Collectors.toList());
    }
}
