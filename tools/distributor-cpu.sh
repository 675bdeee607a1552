#!/usr/bin/env bash
# The fork's UniformStreamByteDistributor against upstream's (netty.base.version), side by side: each pair of JVMs
# (upstream, then fork) distributes 64 KiB bodies on the same streams with the same budget and a 16 KiB chunk, and
# reports the thread CPU time per operation (descheduled time does not count, so a busy 2-core machine disturbs it
# less than wall-clock throughput) and the allocations per operation. Prints a table: medians over ROUNDS pairs, and
# the fork/upstream ratio of each pair.
#
#   ./mvnw -B -ntp install -DskipTests        # the fork's jars, once
#   tools/distributor-cpu.sh                  # ROUNDS=7 CONFIGS="16384:2 16384:16 ..." narrow or widen it
#
# Upstream's class is compiled from its -sources jar (resolved by Maven) under another name in target/, never
# committed. Fork tooling; not part of any upstream PR.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-7}
CONFIGS=${CONFIGS:-"16384:2 16384:16 16384:100 65536:2 65536:16 65536:100 1048576:2 1048576:16 1048576:100"}
work=$TOP/target/distributor-cpu
die() { echo "distributor-cpu: ERROR: $*" >&2; exit 1; }
case $ROUNDS in ''|*[!0-9]*|0) die "ROUNDS must be a positive number, not '$ROUNDS'" ;; esac

version=$(sed -n 's:.*<netty.base.version>\(.*\)</netty.base.version>.*:\1:p' "$TOP/pom.xml" | head -n 1)
rm -rf "$work" && mkdir -p "$work/src" "$work/classes"
cd "$TOP"
./mvnw -q -B -o -pl microbench dependency:build-classpath "-Dmdep.outputFile=$work/classpath.txt" >&2 \
  || die "Maven cannot give microbench's class path (run ./mvnw -B -ntp install -DskipTests first)"
./mvnw -q -B -N dependency:copy "-Dartifact=io.netty:netty-codec-http2:$version:jar:sources" \
  "-DoutputDirectory=$work" >&2 || die "Maven cannot resolve io.netty:netty-codec-http2:$version:jar:sources"
unzip -q -o "$work/netty-codec-http2-$version-sources.jar" \
  io/netty/handler/codec/http2/UniformStreamByteDistributor.java -d "$work/upstream"
sed 's/\bUniformStreamByteDistributor\b/UpstreamUniformStreamByteDistributor/g' \
  "$work/upstream/io/netty/handler/codec/http2/UniformStreamByteDistributor.java" \
  > "$work/src/UpstreamUniformStreamByteDistributor.java"
cp=$(cat "$work/classpath.txt")
javac -nowarn -d "$work/classes" -cp "$cp" "$work/src/UpstreamUniformStreamByteDistributor.java" \
  "$TOP/tools/distributor-cpu/DistributorCpu.java"

echo "distributor-cpu: $ROUNDS rounds; fork jar: $(tr ':' '\n' < "$work/classpath.txt" | grep netty-codec-http2)"
for config in $CONFIGS; do
  budget=${config%%:*} streams=${config##*:}
  for _ in $(seq "$ROUNDS"); do
    for variant in upstream fork; do
      java -cp "$work/classes:$cp" io.netty.handler.codec.http2.DistributorCpu "$variant" "$budget" "$streams"
    done
  done
done | tee "$work/results.txt" | python3 -c '
import statistics, sys
rows = [line.split() for line in sys.stdin if line.strip()]
pairs = {}
for up, fork in zip(rows[0::2], rows[1::2]):
    assert up[0] == "upstream" and fork[0] == "fork" and up[1:3] == fork[1:3], (up, fork)
    pairs.setdefault((int(up[1]), int(up[2])), []).append((float(up[3]), float(fork[3]), up[4], fork[4]))
print("| budget | streams | allocations/op upstream, fork | CPU ns/op upstream | CPU ns/op fork | fork/upstream (median) | per pair |")
print("|---|---|---|---|---|---|---|")
for (budget, streams), ps in pairs.items():
    ratios = [f / u for u, f, _, _ in ps]
    print("| %d | %d | %s, %s | %.0f | %.0f | %.2f | %s |" % (budget, streams, ps[0][2], ps[0][3],
          statistics.median(u for u, _, _, _ in ps), statistics.median(f for _, f, _, _ in ps),
          statistics.median(ratios), " ".join("%.2f" % r for r in ratios)))
'
