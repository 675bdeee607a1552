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
# GRPC_WORKLOADS="unary stream": GrpcBench's workloads; unary-tls and stream-tls run them over TLS (GrpcBench --tls:
# GrpcSslContexts with OpenSSL from netty-tcnative, a certificate made at start).
# FRAMEWORKS="grpc reactor-netty" picks the examples. TRANSPORTS may name nio: ReactorNettyBench runs on it, GrpcBench
# does not (skipped there).
# REACTOR_WORKLOADS="get64k fluxNextToBulk fileNextToBulk": ReactorNettyBench's workloads; get64k takes REACTOR_ARGS,
# the streamed responses next to bulk ones (issue 29: their completion time, and how much of the bulk bytes arrived
# before them) take REACTOR_STREAM_ARGS (default "--rounds 10 --warmup 2 --window 16m": 8 x 8 MiB bulk responses and a
# 4 MiB streamed one on one connection, the client's windows 16 MiB). For a short comparison of those alone:
#   FRAMEWORKS=reactor-netty REACTOR_WORKLOADS="fluxNextToBulk fileNextToBulk" TRANSPORTS="io_uring nio" ROUNDS=1 \
#     tools/frameworks-bench.sh file://$PWD/target/ci-repo
# EXAMPLES_M2 is the local repository of the examples' builds (default: target/<example>-m2 for each); the fork's
# version is dropped from it before each build (see below).
# FORK_VARIANTS runs the fork once more per cell with JVM flags, each a column "<name>/upstream" in the table:
# space-separated NAME[@TRANSPORT]:FLAGS, FLAGS comma-separated, e.g.
#   FORK_VARIANTS="off@io_uring:-Dio.netty.iouring.uncountedFlushedLimit=0
#                  wfq:-Dio.netty.http2.defaultStreamByteDistributor=weightedFairQueue"
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
REACTOR_STREAM_ARGS=${REACTOR_STREAM_ARGS:---rounds 10 --warmup 2 --window 16m}
REACTOR_WORKLOADS=${REACTOR_WORKLOADS:-get64k fluxNextToBulk fileNextToBulk}
GRPC_WORKLOADS=${GRPC_WORKLOADS:-unary stream}
for w in $GRPC_WORKLOADS; do
  [[ $w =~ ^(unary|stream)(-tls)?$ ]] \
    || { echo "frameworks-bench: unknown grpc workload '$w' in GRPC_WORKLOADS (unary, stream, unary-tls, stream-tls)" >&2
         exit 2; }
done
FRAMEWORKS=${FRAMEWORKS:-grpc reactor-netty}
for f in $FRAMEWORKS; do
  [[ $f == grpc || $f == reactor-netty ]] \
    || { echo "frameworks-bench: unknown framework '$f' in FRAMEWORKS (grpc, reactor-netty)" >&2; exit 2; }
done
FORK_VARIANTS=${FORK_VARIANTS:-}
for v in $FORK_VARIANTS; do
  [[ $v =~ ^[a-z0-9]+(@(io_uring|epoll|nio))?:-D[^,]+(,-D[^,]+)*$ ]] \
    && [[ ${v%%[@:]*} != upstream && ${v%%[@:]*} != fork ]] \
    || { echo "frameworks-bench: bad FORK_VARIANTS entry '$v' (expected NAME[@TRANSPORT]:-Dk=v[,-Dk=v...]," \
              "NAME neither upstream nor fork)" >&2; exit 2; }
done
mkdir -p "$OUT"

# One harness run; $1 = side (upstream, fork, or a variant's name), the rest = JVM flags.
run_side() {
  local side=$1 netty=fork
  shift
  [ "$side" = upstream ] && netty=upstream
  if [[ " $FRAMEWORKS " == *" grpc "* && $transport != nio ]]; then
    for workload in $GRPC_WORKLOADS; do
      local tls=()
      [[ $workload == *-tls ]] && tls=(--tls)
      # shellcheck disable=SC2086
      java "$@" -cp "examples/grpc/target/classes:$(cat "$OUT/grpc-$netty.cp")" com.example.grpc.GrpcBench \
        --transport "$transport" --workload "${workload%-tls}" "${tls[@]}" $GRPC_ARGS | grep '^RESULT' \
        | sed "s/\$/ side=$side/" | tee -a "$OUT/results.txt"
    done
  fi
  if [[ " $FRAMEWORKS " == *" reactor-netty "* ]]; then
    for workload in $REACTOR_WORKLOADS; do
      local args=$REACTOR_STREAM_ARGS
      [ "$workload" = get64k ] && args=$REACTOR_ARGS
      # shellcheck disable=SC2086
      java "$@" -cp "examples/reactor-netty/target/classes:$(cat "$OUT/reactor-netty-$netty.cp")" \
        com.example.reactornetty.ReactorNettyBench --transport "$transport" --workload "$workload" $args \
        | grep '^RESULT' | sed "s/\$/ side=$side/" | tee -a "$OUT/results.txt"
    done
  fi
}
cd "$ROOT"

if [ "${TABLE_ONLY:-0}" != 1 ]; then
  read -r -a build_props <<<"$(tools/series.sh build-props)"
  fork_version=$(printf '%s\n' "${build_props[@]}" | sed -n 's/^-Dfork.version=//p')
  [ -n "$fork_version" ] || { echo "frameworks-bench: tools/series.sh build-props gave no -Dfork.version" >&2; exit 1; }
  for ex in $FRAMEWORKS; do
    m2=${EXAMPLES_M2:-$ROOT/target/$ex-m2}
    # Maven never downloads a release version again once its local repository has it, and every build of the fork
    # has the same version: drop the fork's artifacts from the example's repository, so that it takes the ones in
    # FORK_REPO now (not those of whichever deploy the example first resolved).
    if [ -d "$m2/io/netty" ]; then
      find "$m2/io/netty" -mindepth 2 -maxdepth 2 -type d -name "$fork_version" -exec rm -rf {} +
    fi
    for netty in upstream fork; do
      profile=()
      [ "$netty" = upstream ] && profile=(-Pupstream)
      ./mvnw -B -ntp -q -f "examples/$ex/pom.xml" "${profile[@]}" -Dfork.repo="$FORK_REPO" "${build_props[@]}" \
        -Dmaven.repo.local="$m2" -DskipTests package dependency:build-classpath \
        -Dmdep.includeScope=runtime -Dmdep.outputFile="$OUT/$ex-$netty.cp"
    done
  done
  : > "$OUT/results.txt"
  for round in $(seq 1 "$ROUNDS"); do
    for transport in $TRANSPORTS; do
      run_side upstream
      run_side fork
      for v in $FORK_VARIANTS; do
        name=${v%%:*}
        case $name in *@*) [ "${name#*@}" = "$transport" ] || continue; name=${name%@*} ;; esac
        IFS=, read -r -a flags <<<"${v#*:}"
        run_side "$name" "${flags[@]}"
      done
    done
  done
fi

python3 - "$OUT/results.txt" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
sides = []
for line in open(sys.argv[1]):
    kv = dict(f.split('=', 1) for f in line.split()[1:])
    # Lines of runs before variants existed carry no side: tell upstream from fork by the version string.
    side = kv.get('side') or ('upstream' if kv['netty'].count('-') == 0 else 'fork')
    if side not in sides:
        sides.append(side)
    rows[(kv['framework'], kv['workload'], kv['transport'], side)].append(kv)
others = [s for s in sides if s != 'upstream']
metrics = [('dataFramesPerMessage', 'DATA frames/msg'), ('bytesPerDataFrame', 'bytes/DATA frame'),
           ('serverCpuUsPerCall', 'server loop CPU us/call'), ('serverUserUsPerCall', 'of which user mode us/call'),
           ('p50us', 'p50 us'), ('p99us', 'p99 us'),
           ('streamP50ms', 'streamed response p50 ms'), ('streamMaxMs', 'streamed response max ms'),
           ('totalP50ms', 'all responses p50 ms'), ('bulkReadAtStreamEndPct', '% of bulk bytes before it ended (p50)'),
           ('bulkReadAtStreamEndMaxPct', '% of bulk bytes before it ended (max)')]
keys = sorted({k[:3] for k in rows})
fmt = lambda x: '' if x is None else (f'{x:.0f}' if x >= 100 else f'{x:.3g}')
print('| framework | workload | transport | metric | upstream | ' + ' | '.join(others) + ' | '
      + ' | '.join(f'{s}/upstream' for s in others) + ' |')
print('| --- | --- | --- | --- | ---: | ' + ' | '.join('---:' for _ in others * 2) + ' |')
for k in keys:
    up = rows.get(k + ('upstream',), [])
    if not up:
        continue
    for m, label in metrics:
        if any(m not in r for r in up):
            continue  # results of a harness that did not report this metric yet
        u = statistics.median(float(r[m]) for r in up)
        vals = []
        for s in others:
            rs = [r for r in rows.get(k + (s,), []) if m in r]
            vals.append(statistics.median(float(r[m]) for r in rs) if rs else None)
        ratios = ['' if v is None else (f'{v / u:.2f}' if u else 'nan') for v in vals]
        print(f'| {k[0]} | {k[1]} | {k[2]} | {label} | {fmt(u)} | ' + ' | '.join(fmt(v) for v in vals) + ' | '
              + ' | '.join(ratios) + ' |')
n = {len(v) for v in rows.values()}
rates = sorted({(k[0], k[1], r.get('rate'), r['calls']) for k, v in rows.items() for r in v})
print(f'\nmedians of {",".join(map(str, sorted(n)))} run(s) per cell; ' + '; '.join(
    f'{fw} {wl}: {rate}/s, {calls} calls measured' if rate else f'{fw} {wl}: {calls} rounds measured'
    for fw, wl, rate, calls in rates))
PY
