#!/usr/bin/env bash
# The HTTP/2 scenario with a real client: h2load (Debian's nghttp2-client) at a fixed rate against microbench's
# Http2ResponseServer, on upstream's artifacts and the fork's ("arms", below), each transport, in h2c and (TLS=...)
# over TLS with ALPN h2, on loopback or in the network lab (tools/netlab.sh); ROUNDS alternating rounds; prints the
# median and spread of each configuration and arm, and the ratios to the first arm.
#
#   tools/h2load-matrix.sh                      # after ./mvnw -B -ntp install -DskipTests
#   LAB=veth CCS="cubic bbr" ROUNDS=5 TRANSPORTS=EPOLL PIPELINES=HTTP_TO_HTTP2 BODIES=65536 BURSTS=16 \
#       tools/h2load-matrix.sh                  # in the lab: MTU 1500, both congestion controls
#
# Each of CONNECTIONS h2load connections sends a burst of BURST GETs every 10 ms for TICKS ticks (open loop: an
# h2load timing script), after a warm-up of WARMUP_TICKS ticks on the same server. The server runs on one event-loop
# thread; its counters (ByteBufs and DATA frames written, event-loop CPU time, user and kernel, unwritable events, the
# stream channels' writability events with Http2MultiplexHandler) are read from GET /stats before and after the
# measured run; latencies come from h2load's per-request log.
# Environment variables narrow or change the matrix:
#   ARMS="upstream fork" TRANSPORTS="NIO EPOLL IO_URING" PIPELINES="HTTP_TO_HTTP2 MULTIPLEX"
#   BODIES="65536 16384" BURSTS="4 16" CONNECTIONS=2 TICKS=500 WARMUP_TICKS=300 ROUNDS=1 OUT=target/h2load
#   TLS="none jdk openssl" (default: none, h2c with prior knowledge only)
# ARMS: what runs, in this order within each configuration of each round (the first is the ratios' baseline):
#   upstream        4.2.18.Final's artifacts (microbench -Pupstream), their default distributor
#   fork            the fork's artifacts, their defaults
#   fork-wfq        the fork with -Dio.netty.http2.defaultStreamByteDistributor=weightedFairQueue
#   upstream-wc     4.2.18.Final's artifacts with the fork's WholeChunkStreamByteDistributor passed explicitly (the
#                   class alone, from the fork's netty-codec-http2 jar, on the class path)
#   fork-hwm1x      the fork with io_uring's default water marks upstream's (32/64 KiB; the fork's: 64/128 KiB)
#   fork-limit      fork-hwm1x with the uncounted flushed limit (0002, opt-in) at the high water mark: the same
#                   memory bound as the fork's default on io_uring
#   NAME=ARTIFACTS[,SERVER_ARG|JAVA_OPT|classes=DIR...]   any other: ARTIFACTS upstream or fork, then server options
#                   (--hwm=...), JVM options (-D...) and classes=DIR, classes put before the artifacts' (one PR's
#                   classes over upstream's: 4.2.18.Final plus that PR; DIR from the caller's folder), e.g.
#                   fork-1m=fork,--hwm=1048576
# LAB: "" (the default) runs on the host's loopback (127.0.0.1, whatever congestion control the host has); veth or
#   lo runs in tools/netlab.sh's lab (server and client in their namespaces over a veth pair, or both on the server
#   namespace's loopback), with LAB_MTU, LAB_QDISC, LAB_RATE, LAB_BURST, LAB_LIMIT, LAB_QUICKACK passed on
#   (tools/netlab.sh's header). CCS="cubic bbr" runs each round once per congestion control (set per route in the lab; needs LAB).
# TLS=jdk or openssl runs the server over TLS with ALPN h2 on the JDK's SSLEngine or OpenSSL's (netty-tcnative from
# microbench's class path), with a self-signed certificate h2load does not check; h2load (OpenSSL) connects to
# https:// offering only h2 by ALPN (--alpn-list, or --npn-list in older nghttp2 such as Debian 12's) and a run fails
# unless h2load's report says it agreed on h2. The table then has the TLS records and ByteBufs the server's SslHandler
# wrote to the transport, per response (ByteBufs and DATA frames stay what the HTTP/2 codec wrote, into the
# SslHandler). Every run also checks that h2load received whole bodies (a warning otherwise).
# DISTRIBUTOR=DEFAULT|WFQ|WFQ_16K|UNIFORM_1K|UNIFORM_16K|WHOLE_CHUNK picks the server's distributor for every arm that does
# not pick one; SERVER_JAVA_OPTS adds JVM options to every server.
# With every run: TCP counters of the server's namespace (nstat: retransmitted segments, tail-loss probes) over the
# measured run, and `ss -tin` of the server's connections every half second of it (cwnd, pacing rate, BBR's state),
# kept in $OUT/NAME.ss.txt; the summary prints the medians of the last samples. PERF=1 also counts, with perf stat on the server's event-loop
# thread, its system calls and io_uring submissions.
# TABLE_ONLY=1 prints the tables of an earlier run's $OUT/results.tsv again; PLOT=FILE.svg also draws p99 and CPU per
# response of each arm, per configuration, with the spread of the rounds (tools/h2load-summary.py, gnuplot).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARMS=${ARMS:-${ARTIFACTS:-upstream fork}}
TRANSPORTS=${TRANSPORTS:-NIO EPOLL IO_URING}
PIPELINES=${PIPELINES:-HTTP_TO_HTTP2 MULTIPLEX}
BODIES=${BODIES:-65536 16384}
BURSTS=${BURSTS:-4 16}
CONNECTIONS=${CONNECTIONS:-2}
DISTRIBUTOR=${DISTRIBUTOR:-DEFAULT}
SERVER_JAVA_OPTS=${SERVER_JAVA_OPTS:-}
TLS=${TLS:-none}
TICKS=${TICKS:-500}
WARMUP_TICKS=${WARMUP_TICKS:-300}
ROUNDS=${ROUNDS:-1}
LAB=${LAB:-}
CCS=${CCS:-}
# Absolute: the class path is written by Maven runs in other folders.
OUT=$(realpath -m "${OUT:-$ROOT/target/h2load}")
NETLAB=$ROOT/tools/netlab.sh

die() { echo "h2load-matrix: $*" >&2; exit 1; }

for t in $TRANSPORTS; do
    case $t in NIO|EPOLL|IO_URING) ;; *) die "TRANSPORTS: unknown value '$t' (NIO, EPOLL, IO_URING)";; esac
done
for p in $PIPELINES; do
    case $p in HTTP_TO_HTTP2|MULTIPLEX) ;; *) die "PIPELINES: unknown value '$p' (HTTP_TO_HTTP2, MULTIPLEX)";; esac
done
for t in $TLS; do
    case $t in none|jdk|openssl) ;; *) die "TLS: unknown value '$t' (none, jdk, openssl)";; esac
done
case $DISTRIBUTOR in DEFAULT|WFQ|WFQ_16K|UNIFORM_1K|UNIFORM_16K|WHOLE_CHUNK) ;;
    *) die "DISTRIBUTOR: unknown value '$DISTRIBUTOR' (DEFAULT, WFQ, WFQ_16K, UNIFORM_1K, UNIFORM_16K, WHOLE_CHUNK)";; esac
case $LAB in ""|veth|lo) ;; *) die "LAB: unknown value '$LAB' (empty: the host's loopback; veth, lo)";; esac
[ -z "$CCS" ] || [ -n "$LAB" ] || die "CCS needs LAB (the congestion control is set per route in the lab)"
for cc in $CCS; do
    grep -qw -- "$cc" /proc/sys/net/ipv4/tcp_available_congestion_control \
        || die "CCS: '$cc' is not available here ($(cat /proc/sys/net/ipv4/tcp_available_congestion_control))"
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS: '$ROUNDS' is not a number >= 1"

# An arm: its artifacts, then its server arguments and JVM options, one a line.
arm_spec() { # NAME
    case $1 in
        upstream) echo upstream;;
        fork) echo fork;;
        fork-wfq) printf 'fork\n-Dio.netty.http2.defaultStreamByteDistributor=weightedFairQueue\n';;
        upstream-wc) printf 'upstream\n--distributor=WHOLE_CHUNK\n';;
        fork-hwm1x) printf 'fork\n-Dio.netty.iouring.defaultWriteBufferHighWaterMark=65536\n';;
        fork-limit) arm_spec fork-hwm1x; echo -Dio.netty.iouring.uncountedFlushedLimit=65536;;
        *=*) local spec=${1#*=}
             case ${spec%%,*} in upstream|fork) ;; *) die "ARMS: '$1': artifacts must be upstream or fork";; esac
             tr ',' '\n' <<< "$spec";;
        *) die "ARMS: unknown arm '$1' (upstream, fork, fork-wfq, upstream-wc, fork-hwm1x, fork-limit, NAME=ARTIFACTS[,OPTION...])";;
    esac
}
arm_name() { echo "${1%%=*}"; }
# Each arm checked once; a classes=DIR made absolute here (DIR is the caller's; the runs start in $ROOT).
arms=
for arm in $ARMS; do
    arm_spec "$arm" > /dev/null
    for o in $(arm_spec "$arm"); do
        [[ $o == classes=* ]] || continue
        [ -d "${o#classes=}" ] || die "ARMS: '$arm': ${o#classes=} is not a folder"
        arm=${arm/"$o"/classes=$(realpath "${o#classes=}")}
    done
    arms="$arms $arm"
done
ARMS=${arms# }

mkdir -p "$OUT"
cd "$ROOT"

ensure_tools() {
    if ! command -v h2load > /dev/null || ! command -v nghttp > /dev/null || ! command -v nstat > /dev/null; then
        if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
            apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nghttp2-client iproute2
        else
            die "h2load, nghttp and nstat are needed: apt-get install nghttp2-client iproute2"
        fi
    fi
}

# The server's classes and class path for each set of artifacts (microbench's -Pupstream swaps the patched
# modules for upstream's); upstream-wc's adds WholeChunkStreamByteDistributor from the fork's jar.
build_classpaths() {
    local a profile classes wc=
    for arm in $ARMS; do [ "$(arm_spec "$arm" | grep -c -- '--distributor=WHOLE_CHUNK')" = 0 ] || wc=1; done
    for a in upstream fork; do
        arm_spec_artifacts_used "$a" || [ "$a:$wc" = fork:1 ] || continue
        if [ "$a" = upstream ]; then profile=-Pupstream; classes=microbench/target/upstream/classes
        else profile=; classes=microbench/target/classes; fi
        ./mvnw -B -q -ntp -pl microbench $profile compile dependency:build-classpath \
            -Dmdep.outputFile="$OUT/classpath-$a.txt" \
            || die "building microbench ($a) failed; run ./mvnw -B -ntp install -DskipTests first"
        echo "$ROOT/$classes:$(cat "$OUT/classpath-$a.txt")" > "$OUT/cp-$a.txt"
    done
    if [ -n "$wc" ]; then
        local jar
        jar=$(tr ':' '\n' < "$OUT/cp-fork.txt" | grep '/netty-codec-http2-[^/]*\.jar$' | head -1)
        [ -n "$jar" ] || die "upstream-wc: no netty-codec-http2 jar of the fork on its class path"
        rm -rf "$OUT/whole-chunk"
        mkdir -p "$OUT/whole-chunk"
        (cd "$OUT/whole-chunk" && unzip -q "$jar" 'io/netty/handler/codec/http2/WholeChunkStreamByteDistributor*') \
            || die "upstream-wc: $jar has no WholeChunkStreamByteDistributor"
        echo "$OUT/whole-chunk:$(cat "$OUT/cp-upstream.txt")" > "$OUT/cp-upstream-wc.txt"
    fi
}
arm_spec_artifacts_used() { # ARTIFACTS
    local arm
    for arm in $ARMS; do [ "$(arm_spec "$arm" | head -1)" != "$1" ] || return 0; done
    return 1
}

# h2load's option for its ALPN list: --alpn-list, or --npn-list (ALPN too) in older ones (Debian 12's 1.52).
alpn_option() {
    # Not h2load --help | grep -q: under pipefail, h2load's SIGPIPE would fail the pipeline.
    case "$(h2load --help 2>&1 || true)" in *--alpn-list*) echo --alpn-list;; *) echo --npn-list;; esac
}

# Where the server and the client run: the host, or the lab's namespaces (netlab.sh exec replaces itself with the
# command, so a process started in the background keeps its pid: $! is the server's).
SERVER=() CLIENT=()
if [ -n "$LAB" ]; then SERVER=("$NETLAB" exec server) CLIENT=("$NETLAB" exec client); fi
in_server() { "${SERVER[@]}" "$@"; }
in_client() { "${CLIENT[@]}" "$@"; }

free_port() {
    in_server python3 -c 'import socket, sys; s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' \
        "$SERVER_HOST"
}

# One line per request: time offset (ms) and URI; every connection follows the whole script.
script() { # BASE_URI BURST TICKS FILE
    local t i
    for ((t = 0; t < $3; t++)); do
        for ((i = 0; i < $2; i++)); do
            printf '%d\t%s/\n' $((t * 10)) "$1"
        done
    done > "$4"
}

stats() { # BASE_URI
    # Over TLS nghttp warns (stderr) that the self-signed certificate does not name the address; other errors show.
    in_client nghttp "$1/stats" 2> "$OUT/nghttp.err" || die "GET $1/stats failed: $(cat "$OUT/nghttp.err")"
    grep -v 'Certificate verification failed' "$OUT/nghttp.err" >&2 || true
}

# The server namespace's TCP counters (absolute; nstat's history is neither read nor written).
tcp_counters() { in_server nstat -asz 2> /dev/null | awk 'NR > 1 && NF >= 2 { printf "%s=%s ", $1, $2 }'; }

lab_up() { # CC
    [ -n "$LAB" ] || return 0
    LAB_BED=$LAB LAB_CC=$1 "$NETLAB" up >&2
}

RESULTS="$OUT/results.tsv"
SUMMARY=(python3 "$ROOT/tools/h2load-summary.py" "$RESULTS")
[ -z "${PLOT:-}" ] || SUMMARY+=(--plot "$PLOT")
if [ -n "${TABLE_ONLY:-}" ]; then
    [ -f "$RESULTS" ] || die "TABLE_ONLY: no $RESULTS"
    exec "${SUMMARY[@]}"
fi
ensure_tools
build_classpaths
# Whatever ends the run, no server is left behind, nor the lab.
server=
cleanup() {
    [ -z "$server" ] || kill "$server" 2> /dev/null || true
    [ -z "$LAB" ] || "$NETLAB" down >&2
}
trap cleanup EXIT
trap 'exit 1' INT TERM
printf '%s\n' round bed cc arm artifacts transport pipeline body burst netty req_s p50_us p99_us p999_us max_us \
    over10ms failed responses bytebufs bytes dataframes cpu_ns user_ns unwritable stream_events syscalls submissions tls \
    tls_session tls_records tls_bytebufs tls_bytes data_bytes retrans_segs loss_probes ss_cwnd ss_pacing_bps \
    ss_bbr_state mtu | paste -s > "$RESULTS"
for ((round = 1; round <= ROUNDS; round++)); do
 for cc in ${CCS:-default}; do
  [ "$cc" != default ] || cc=
  lab_up "$cc"
  SERVER_HOST=127.0.0.1
  [ -z "$LAB" ] || SERVER_HOST=$("$NETLAB" addr server)
  # The bed's name says what differs: a bottleneck, the client's quickack.
  bed=${LAB:-host-lo}${LAB_QDISC:+-$LAB_QDISC-${LAB_RATE:-}}${LAB_QUICKACK:+-quickack}
  cc_name=${cc:-$(cat /proc/sys/net/ipv4/tcp_congestion_control)}
  for tls in $TLS; do
   if [ "$tls" = none ]; then scheme=http; alpn=(); suffix=
   else scheme=https; alpn=("$(alpn_option)=h2"); suffix=-tls-$tls; fi
   for transport in $TRANSPORTS; do
    for pipeline in $PIPELINES; do
     for body in $BODIES; do
      for burst in $BURSTS; do
       for arm in $ARMS; do
        mapfile -t spec < <(arm_spec "$arm")
        a=${spec[0]}
        label=$(arm_name "$arm")
        server_args=() java_opts=() classes=
        for o in "${spec[@]:1}"; do
            case $o in
                -D*|-X*) java_opts+=("$o");;
                --*) server_args+=("$o");;
                classes=?*) classes="${o#classes=}:";;
                *) die "ARMS: '$arm': option '$o'";;
            esac
        done
        cp_file=$OUT/cp-$a.txt
        [[ "$a ${server_args[*]} " != *"upstream "*"--distributor=WHOLE_CHUNK "* ]] || cp_file=$OUT/cp-upstream-wc.txt
        name="r$round-$bed${cc:+-$cc}-$label-$transport-$pipeline-$body-$burst$suffix"
        port=$(free_port)
        uri="$scheme://$SERVER_HOST:$port"
        : > "$OUT/$name.server.log"
        # shellcheck disable=SC2086
        "${SERVER[@]}" java $SERVER_JAVA_OPTS "${java_opts[@]}" -cp "$classes$(cat "$cp_file")" \
            io.netty.microbench.http2.Http2ResponseServer --transport="$transport" --distributor="$DISTRIBUTOR" \
            --pipeline="$pipeline" --body="$body" --host="$SERVER_HOST" --port="$port" --tls="${tls^^}" \
            "${server_args[@]}" > "$OUT/$name.server.log" 2>&1 &
        server=$!
        for _ in $(seq 1 100); do
            grep -q '^listening' "$OUT/$name.server.log" && break
            kill -0 $server 2> /dev/null || die "server $name did not start: $(cat "$OUT/$name.server.log")"
            sleep 0.1
        done
        netty=$(sed -n 's/^listening.* netty=//p' "$OUT/$name.server.log")
        case "$a:$netty" in
            upstream:*-h2uring-*|fork:|upstream:|fork:*[0-9].Final) kill $server; die "$name runs Netty '$netty'";;
        esac
        grep -q "^listening.* tls=${tls^^} " "$OUT/$name.server.log" \
            || { kill $server; die "$name: not tls=${tls^^}: $(head -1 "$OUT/$name.server.log")"; }
        script "$uri" "$burst" "$WARMUP_TICKS" "$OUT/warmup.txt"
        script "$uri" "$burst" "$TICKS" "$OUT/script.txt"
        # -n counts all connections' requests; h2load notes that it exceeds the script's lines (per connection).
        in_client h2load -c "$CONNECTIONS" -t 1 -m 1000 -n $((WARMUP_TICKS * burst * CONNECTIONS)) "${alpn[@]}" \
            --timing-script-file="$OUT/warmup.txt" > "$OUT/$name.warmup.txt" 2>&1 \
            || { kill $server; die "$name: h2load failed: $(tail -5 "$OUT/$name.warmup.txt")"; }
        before=$(stats "$uri")
        tcp_before=$(tcp_counters)
        perf=()
        if [ -n "${PERF:-}" ]; then
            # The event-loop thread (its name, cut to 15 characters by the kernel).
            tid=$(grep -l '^multiThreadIoEv$' /proc/$server/task/*/comm | head -1 | cut -d/ -f5)
            [ -n "$tid" ] || die "no event-loop thread in server $name"
            perf=(perf stat -x, -t "$tid" -e raw_syscalls:sys_enter,io_uring:io_uring_submit_req
                  -o "$OUT/$name.perf.csv" --)
        fi
        # The kernel's view of the server's connections every half second of the measured run (the summary reads
        # the last sample).
        (while :; do echo "# $(date +%s.%N)"; in_server ss -tin state established "( sport = :$port )"; sleep 0.5
         done > "$OUT/$name.ss.txt" 2>&1) &
        sampler=$!
        in_client "${perf[@]}" h2load -c "$CONNECTIONS" -t 1 -m 1000 -n $((TICKS * burst * CONNECTIONS)) \
            "${alpn[@]}" --timing-script-file="$OUT/script.txt" --log-file="$OUT/$name.requests.tsv" \
            > "$OUT/$name.h2load.txt" 2>&1 \
            || { kill $sampler $server; die "$name: h2load failed: $(tail -5 "$OUT/$name.h2load.txt")"; }
        kill $sampler
        wait $sampler 2> /dev/null || true
        tcp_after=$(tcp_counters)
        after=$(stats "$uri")
        kill $server
        wait $server || true
        if [ -n "$LAB" ]; then mtu=$("$NETLAB" mtu); else mtu=$(cat /sys/class/net/lo/mtu); fi
        python3 "$ROOT/tools/h2load-summary.py" --row round="$round" bed="$bed" cc="$cc_name" arm="$label" \
            artifacts="$a" transport="$transport" pipeline="$pipeline" body="$body" burst="$burst" netty="$netty" \
            tls="$tls" name="$name" mtu="$mtu" report="$OUT/$name.h2load.txt" warmup="$OUT/$name.warmup.txt" \
            log="$OUT/$name.requests.tsv" perf="$OUT/$name.perf.csv" ss="$OUT/$name.ss.txt" \
            before="$before" after="$after" tcp_before="$tcp_before" tcp_after="$tcp_after" >> "$RESULTS"
        echo "h2load-matrix: $name done" >&2
       done
      done
     done
    done
   done
  done
  [ -z "$LAB" ] || "$NETLAB" down >&2
 done
done
"${SUMMARY[@]}"
echo "h2load-matrix: raw results in $RESULTS" >&2
