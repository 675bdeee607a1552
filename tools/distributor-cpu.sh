#!/usr/bin/env bash
# The fork's WholeChunkStreamByteDistributor against upstream's UniformStreamByteDistributor (netty.base.version),
# side by side in one JVM: each JVM
# distributes 64 KiB bodies on the same number of streams with the same budget and a 16 KiB chunk, with both classes
# in alternating slices of about 20 ms (60 pairs after a warm-up), and reports the thread CPU time per operation
# (descheduled time does not count) and the allocations per operation of each. Two classes in one JVM see the same
# machine at the same moments, so the ratios of one JVM's pairs lie close together; the JIT still compiles each JVM
# its own way, so JVMs differ, hence ROUNDS JVMs per configuration, which alternate the class that warms up first.
# Prints a table: medians over the JVMs, and each JVM's median ratio fork/upstream.
#
#   ./mvnw -B -ntp install -DskipTests        # the fork's jars, once
#   tools/distributor-cpu.sh                  # ROUNDS=5 CONFIGS="16384:2 16384:16 ..." narrow or widen it
#
# The series does not change UniformStreamByteDistributor, so the fork's jar carries upstream's class. Fork tooling;
# not part of any upstream PR.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-5}
CONFIGS=${CONFIGS:-"16384:2 16384:16 16384:100 65536:2 65536:16 65536:100 1048576:2 1048576:16 1048576:100"}
work=$TOP/target/distributor-cpu
die() { echo "distributor-cpu: ERROR: $*" >&2; exit 1; }
case $ROUNDS in ''|*[!0-9]*|0) die "ROUNDS must be a positive number, not '$ROUNDS'" ;; esac
for config in $CONFIGS; do
  [[ $config =~ ^[1-9][0-9]*:[1-9][0-9]*$ ]] || die "CONFIGS entries are BUDGET:STREAMS, both positive, not '$config'"
done

rm -rf "$work" && mkdir -p "$work/classes"
cd "$TOP"
./mvnw -q -B -o -pl microbench dependency:build-classpath "-Dmdep.outputFile=$work/classpath.txt" >&2 \
  || die "Maven cannot give microbench's class path (run ./mvnw -B -ntp install -DskipTests first)"
cp=$(cat "$work/classpath.txt")
javac -nowarn --release 8 -d "$work/classes" -cp "$cp" "$TOP/tools/distributor-cpu/DistributorCpu.java"

echo "distributor-cpu: $ROUNDS JVMs per configuration; fork jar:" \
  "$(tr ':' '\n' < "$work/classpath.txt" | grep netty-codec-http2)"
for config in $CONFIGS; do
  budget=${config%%:*} streams=${config##*:}
  for round in $(seq "$ROUNDS"); do
    first=upstream
    [ $((round % 2)) = 0 ] && first=fork
    java -cp "$work/classes:$cp" io.netty.handler.codec.http2.DistributorCpu "$budget" "$streams" "$first"
  done
done | tee "$work/results.txt" | python3 -c '
import statistics, sys
rows = {}
for line in sys.stdin:
    f = line.split()
    if f:
        rows.setdefault((int(f[0]), int(f[1])), []).append(f[2:])
print("| budget | streams | allocations/op upstream, fork | CPU ns/op upstream | CPU ns/op fork | fork/upstream (median) | per JVM (median of 60 pairs) |")
print("|---|---|---|---|---|---|---|")
for (budget, streams), jvms in rows.items():
    ratios = [float(j[3]) for j in jvms]
    print("| %d | %d | %s, %s | %.0f | %.0f | %.2f | %s |" % (budget, streams, jvms[0][5], jvms[0][6],
          statistics.median(float(j[0]) for j in jvms), statistics.median(float(j[1]) for j in jvms),
          statistics.median(ratios), " ".join("%.2f" % r for r in ratios)))
'
