#!/usr/bin/env bash
# ChannelOutboundBuffer's NIO/epoll cycle (microbench's ChannelOutboundBufferBenchmark) with the fork's
# netty-transport against upstream's (netty.base.version), side by side in one JVM: each JVM loads the cycle twice,
# with each jar in its own class loader, and runs them in alternating slices of about 20 ms (60 pairs after a
# warm-up), reporting the thread CPU time per operation of each (descheduled time does not count). Both see the same
# machine at the same moments, so the ratios of one JVM's pairs lie close together; the JIT still compiles each JVM
# its own way, hence ROUNDS JVMs per configuration, which alternate the jar that warms up first. Prints a table:
# medians over the JVMs, and each JVM's median ratio fork/upstream.
#
#   ./mvnw -B -ntp install -DskipTests        # the fork's jars, once
#   tools/outbound-buffer-cpu.sh              # ROUNDS=5 CONFIGS="16:BELOW_LOW 1:ABOVE_HIGH ..." narrow or widen it
#   FORK_JAR=/tmp/x.jar tools/outbound-buffer-cpu.sh   # another netty-transport jar instead of the installed one
#   JAVA_OPTS="-XX:+UseParallelGC" tools/outbound-buffer-cpu.sh   # options of the measuring JVMs
#
# Upstream's jars are resolved by Maven into target/; nothing is committed. Fork tooling; not part of any upstream PR.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-5}
CONFIGS=${CONFIGS:-"1:BELOW_LOW 1:BETWEEN_MARKS 1:ABOVE_HIGH 16:BELOW_LOW 16:BETWEEN_MARKS 16:ABOVE_HIGH"}
work=$TOP/target/outbound-buffer-cpu
die() { echo "outbound-buffer-cpu: ERROR: $*" >&2; exit 1; }
case $ROUNDS in ''|*[!0-9]*|0) die "ROUNDS must be a positive number, not '$ROUNDS'" ;; esac
for config in $CONFIGS; do
  [[ $config =~ ^[1-9][0-9]*:(BELOW_LOW|BETWEEN_MARKS|ABOVE_HIGH)$ ]] \
    || die "CONFIGS entries are MESSAGES:BELOW_LOW|BETWEEN_MARKS|ABOVE_HIGH, not '$config'"
done

base=$(sed -n 's:.*<netty.base.version>\(.*\)</netty.base.version>.*:\1:p' "$TOP/pom.xml" | head -n 1)
fork=$(sed -n 's:.*<revision>\(.*\)</revision>.*:\1:p' "$TOP/pom.xml" | head -n 1)
rm -rf "$work" && mkdir -p "$work/jars" "$work/upstream" "$work/fork" "$work/harness"
cd "$TOP"
for artifact in common buffer resolver transport; do
  ./mvnw -q -B -N dependency:copy "-Dartifact=io.netty:netty-$artifact:$base" "-DoutputDirectory=$work/jars" >&2 \
    || die "Maven cannot resolve io.netty:netty-$artifact:$base"
done
if [ -n "${FORK_JAR:-}" ]; then
  [ -f "$FORK_JAR" ] || die "FORK_JAR: no such file: $FORK_JAR"
  fork=$(basename "$FORK_JAR" .jar)
  cp "$FORK_JAR" "$work/jars/netty-transport-$fork.jar"
else
  ./mvnw -q -B -o -N dependency:copy "-Dartifact=io.netty:netty-transport:$fork" "-DoutputDirectory=$work/jars" >&2 \
    || die "no io.netty:netty-transport:$fork in Maven's local repository (run ./mvnw -B -ntp install -DskipTests first)"
fi
shared=$work/jars/netty-common-$base.jar:$work/jars/netty-buffer-$base.jar:$work/jars/netty-resolver-$base.jar
javac -nowarn --release 8 -d "$work/harness" "$TOP/tools/outbound-buffer-cpu/OutboundBufferCpu.java"
for side in upstream fork; do
  version=$base
  [ "$side" = fork ] && version=$fork
  javac -nowarn --release 8 -d "$work/$side" -cp "$shared:$work/jars/netty-transport-$version.jar" \
    "$TOP/tools/outbound-buffer-cpu/BufferCycle.java"
done

echo "outbound-buffer-cpu: $ROUNDS JVMs per configuration; netty-transport $base against $fork; JVM options: ${JAVA_OPTS:-none}"
for config in $CONFIGS; do
  for round in $(seq "$ROUNDS"); do
    first=upstream
    [ $((round % 2)) = 0 ] && first=fork
    # shellcheck disable=SC2086
    java ${JAVA_OPTS:-} -cp "$work/harness:$shared" OutboundBufferCpu "${config%%:*}" "${config##*:}" \
      "$work/upstream:$work/jars/netty-transport-$base.jar" "$work/fork:$work/jars/netty-transport-$fork.jar" "$first"
  done
done | tee "$work/results.txt" | python3 -c '
import statistics, sys
rows = {}
for line in sys.stdin:
    f = line.split()
    if f:
        rows.setdefault((int(f[0]), f[1]), []).append(f[2:])
print("| messages | pending | CPU ns/op upstream | CPU ns/op fork | fork/upstream (median) | per JVM (median of 60 pairs) |")
print("|---|---|---|---|---|---|")
for (messages, pending), jvms in rows.items():
    ratios = [float(j[3]) for j in jvms]
    print("| %d | %s | %.1f | %.1f | %.3f | %s |" % (messages, pending,
          statistics.median(float(j[0]) for j in jvms), statistics.median(float(j[1]) for j in jvms),
          statistics.median(ratios), " ".join("%.3f" % r for r in ratios)))
'
