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

import japicmp.cmp.JApiCmpArchive;
import japicmp.cmp.JarArchiveComparator;
import japicmp.cmp.JarArchiveComparatorOptions;
import japicmp.model.AccessModifier;
import japicmp.model.JApiBehavior;
import japicmp.model.JApiChangeStatus;
import japicmp.model.JApiClass;
import japicmp.model.JApiField;
import japicmp.model.JApiHasAccessModifier;
import japicmp.model.JApiHasChangeStatus;
import japicmp.model.JApiImplementedInterface;
import japicmp.model.JApiParameter;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The public API of each patched jar is upstream's plus exactly the changes declared in the module's
 * {@code api-changes.txt}. With an empty series the file is empty, so the rebuilt jars expose upstream's API:
 * the pipeline is faithful. japicmp-maven-plugin separately fails the build on any incompatible change.
 */
class ApiChangesTest {

    static Stream<String> modules() {
        return Fork.PATCHED_MODULES.stream();
    }

    @ParameterizedTest
    @MethodSource("modules")
    void apiIsUpstreamsPlusDeclaredChanges(String module) throws IOException {
        JarArchiveComparatorOptions options = new JarArchiveComparatorOptions();
        options.setAccessModifier(AccessModifier.PROTECTED);
        options.setClassPathMode(JarArchiveComparatorOptions.ClassPathMode.ONE_COMMON_CLASSPATH);
        options.getClassPathEntries().addAll(Arrays.asList(
                System.getProperty("java.class.path").split(File.pathSeparator)));
        List<JApiClass> classes = new JarArchiveComparator(options).compare(
                new JApiCmpArchive(Fork.upstreamJar(module, null).toFile(), Fork.BASE_VERSION),
                new JApiCmpArchive(Fork.forkJar(module, null).toFile(), Fork.VERSION));

        Set<String> actual = new TreeSet<>();
        for (JApiClass c : classes) {
            if (!visible(c) || isInternal(c.getFullyQualifiedName())) {
                continue;
            }
            String name = c.getFullyQualifiedName();
            if (c.getChangeStatus() == JApiChangeStatus.NEW || c.getChangeStatus() == JApiChangeStatus.REMOVED) {
                actual.add(c.getChangeStatus() + " class " + name);
                continue;
            }
            for (JApiImplementedInterface i : c.getInterfaces()) {
                change(actual, i, "interface " + name + " implements " + i.getFullyQualifiedName());
            }
            for (JApiBehavior b : c.getConstructors()) {
                change(actual, b, "constructor " + name + signature(b));
            }
            for (JApiBehavior b : c.getMethods()) {
                change(actual, b, "method " + name + '#' + b.getName() + signature(b));
            }
            for (JApiField f : c.getFields()) {
                change(actual, f, "field " + name + '#' + f.getName());
            }
            if (c.getChangeStatus() == JApiChangeStatus.MODIFIED && !c.getCompatibilityChanges().isEmpty()) {
                actual.add("MODIFIED class " + name + ' ' + c.getCompatibilityChanges());
            }
        }

        Path declaredFile = Fork.ROOT.resolve(module).resolve("api-changes.txt");
        Set<String> declared = Files.readAllLines(declaredFile).stream().map(String::trim)
                .filter(l -> !l.isEmpty() && !l.startsWith("#")).collect(Collectors.toCollection(TreeSet::new));
        assertThat(actual).as("API of %s against %s; declare intended changes in %s", module, Fork.BASE_VERSION,
                Fork.ROOT.relativize(declaredFile)).isEqualTo(declared);
    }

    private static <T extends JApiHasChangeStatus> void change(Set<String> out, T element, String description) {
        if (element.getChangeStatus() == JApiChangeStatus.UNCHANGED) {
            return;
        }
        if (element instanceof JApiHasAccessModifier && !visible((JApiHasAccessModifier) element)) {
            return;
        }
        out.add(element.getChangeStatus() + " " + description);
    }

    private static boolean visible(JApiHasAccessModifier element) {
        return isVisible(element.getAccessModifier().getOldModifier())
                || isVisible(element.getAccessModifier().getNewModifier());
    }

    private static boolean isVisible(Optional<AccessModifier> modifier) {
        return modifier.isPresent()
                && (modifier.get() == AccessModifier.PUBLIC || modifier.get() == AccessModifier.PROTECTED);
    }

    private static boolean isInternal(String className) {
        return className.contains(".internal.");
    }

    private static String signature(JApiBehavior behavior) {
        List<String> types = new ArrayList<>();
        for (JApiParameter p : behavior.getParameters()) {
            types.add(p.getType());
        }
        return '(' + String.join(", ", types) + ')';
    }
}
