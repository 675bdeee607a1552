#!/usr/bin/env bash
# gRPC-java and Reactor Netty, each in its own configuration, on upstream's Netty and on the fork's, side by side:
# builds examples/grpc and examples/reactor-netty against both BOMs (the fork's from FORK_REPO, upstream's with
# -Pupstream), runs their harnesses (GrpcBench, ReactorNettyBench) alternately, upstream then fork for each cell,
# ROUNDS times, and prints a table with fork/upstream ratios (medians over rounds). Not part of CI.
#
#   ./mvnw -B -ntp deploy -DskipTests -DaltDeploymentRepository=ci::file://$PWD/target/ci-repo
#   tools/frameworks-bench.sh file://$PWD/target/ci-repo
#
# Environment: ROUNDS=3 TRANSPORTS="io_uring epoll" OUT=target/frameworks-bench; GRPC_ARGS (default
# "--rate 50 --calls 500 --warmup 200") and REACTOR_ARGS (default "--rate 500 --requests 3000 --warmup 1000") are the
# harness options; TABLE_ONLY=1 prints the table of $OUT/results.txt again.
# Each example resolves into its own local repository target/<example>-m2 (online the first time).
# Loopback only; every harness run is bounded in calls and stops by itself.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FORK_REPO=${1:?usage: tools/frameworks-bench.sh FORK_REPO_URL (e.g. file://$ROOT/target/ci-repo)}
ROUNDS=${ROUNDS:-3}
TRANSPORTS=${TRANSPORTS:-io_uring epoll}
OUT=${OUT:-$ROOT/target/frameworks-bench}
GRPC_ARGS=${GRPC_ARGS:---rate 50 --calls 500 --warmup 200}
REACTOR_ARGS=${REACTOR_ARGS:---rate 500 --requests 3000 --warmup 1000}
mkdir -p "$OUT"
cd "$ROOT"

if [ "${TABLE_ONLY:-0}" != 1 ]; then
  read -r -a build_props <<<"$(tools/series.sh build-props)"
  for ex in grpc reactor-netty; do
    for netty in upstream fork; do
      profile=()
      [ "$netty" = upstream ] && profile=(-Pupstream)
      ./mvnw -B -ntp -q -f "examples/$ex/pom.xml" "${profile[@]}" -Dfork.repo="$FORK_REPO" "${build_props[@]}" \
        -Dmaven.repo.local="$ROOT/target/$ex-m2" -DskipTests package dependency:build-classpath \
        -Dmdep.includeScope=runtime -Dmdep.outputFile="$OUT/$ex-$netty.cp"
    done
  done
  : > "$OUT/results.txt"
  for round in $(seq 1 "$ROUNDS"); do
    for transport in $TRANSPORTS; do
      for netty in upstream fork; do
        for workload in unary stream; do
          # shellcheck disable=SC2086
          java -cp "examples/grpc/target/classes:$(cat "$OUT/grpc-$netty.cp")" com.example.grpc.GrpcBench \
            --transport "$transport" --workload "$workload" $GRPC_ARGS | grep '^RESULT' | tee -a "$OUT/results.txt"
        done
        # shellcheck disable=SC2086
        java -cp "examples/reactor-netty/target/classes:$(cat "$OUT/reactor-netty-$netty.cp")" \
          com.example.reactornetty.ReactorNettyBench --transport "$transport" $REACTOR_ARGS \
          | grep '^RESULT' | tee -a "$OUT/results.txt"
      done
    done
  done
fi

python3 - "$OUT/results.txt" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    kv = dict(f.split('=', 1) for f in line.split()[1:])
    side = 'upstream' if kv['netty'].count('-') == 0 else 'fork'
    rows[(kv['framework'], kv['workload'], kv['transport'], side)].append(kv)
metrics = [('dataFramesPerMessage', 'DATA frames/msg'), ('bytesPerDataFrame', 'bytes/DATA frame'),
           ('serverCpuUsPerCall', 'server loop CPU us/call'), ('p50us', 'p50 us'), ('p99us', 'p99 us')]
keys = sorted({k[:3] for k in rows})
print('| framework | workload | transport | metric | upstream | fork | fork/upstream |')
print('| --- | --- | --- | --- | ---: | ---: | ---: |')
for k in keys:
    up, fk = rows.get(k + ('upstream',), []), rows.get(k + ('fork',), [])
    if not up or not fk:
        continue
    for m, label in metrics:
        u = statistics.median(float(r[m]) for r in up)
        f = statistics.median(float(r[m]) for r in fk)
        ratio = f / u if u else float('nan')
        fmt = lambda x: f'{x:.0f}' if x >= 100 else f'{x:.3g}'
        print(f'| {k[0]} | {k[1]} | {k[2]} | {label} | {fmt(u)} | {fmt(f)} | {ratio:.2f} |')
n = {len(v) for v in rows.values()}
rates = sorted({(k[0], k[1], r['rate'], r['calls']) for k, v in rows.items() for r in v})
print(f'\nmedians of {",".join(map(str, sorted(n)))} run(s) per cell; ' + '; '.join(
    f'{fw} {wl}: {rate}/s, {calls} calls measured' for fw, wl, rate, calls in rates))
PY
