#!/usr/bin/env bash
# The HTTP/2 scenario with a real client: h2load (Debian's nghttp2-client) at a fixed rate against
# microbench's Http2ResponseServer, upstream's artifacts and the fork's, each transport, in h2c and (TLS=...) over
# TLS with ALPN h2; prints a table.
#
#   tools/h2load-matrix.sh                      # after ./mvnw -B -ntp install -DskipTests
#
# Each of CONNECTIONS h2load connections sends a burst of BURST GETs every 10 ms for TICKS ticks (open loop: an
# h2load timing script), after a warm-up of WARMUP_TICKS ticks on the same server. The server runs on one
# event-loop thread (with DISTRIBUTOR, below); its counters (ByteBufs and DATA
# frames written, event-loop CPU time) are read from GET /stats before and after the measured run; latencies
# come from h2load's per-request log. Environment variables narrow or change the matrix:
#   ARTIFACTS="upstream fork" TRANSPORTS="NIO EPOLL IO_URING" PIPELINES="HTTP_TO_HTTP2 MULTIPLEX"
#   BODIES="65536 16384" BURSTS="4 16" CONNECTIONS=2 TICKS=500 WARMUP_TICKS=300 OUT=target/h2load
#   TLS="none jdk openssl" (default: none, h2c with prior knowledge only)
# TLS=jdk or openssl runs the server over TLS with ALPN h2 on the JDK's SSLEngine or OpenSSL's (netty-tcnative
# from microbench's class path; the server fails if it is not available), with a self-signed certificate h2load does
# not check; h2load (OpenSSL) connects to https:// offering only h2 by ALPN (--alpn-list, or --npn-list in older
# nghttp2 such as Debian 12's) and a run fails unless h2load's report says it agreed on h2. The table then has the
# TLS engine as a column and the TLS records and ByteBufs the server's SslHandler wrote to the transport, per
# response (the records counted from their 5-byte headers between the SslHandler and the transport; ByteBufs and
# DATA frames stay what the HTTP/2 codec wrote, into the SslHandler). Every run also checks that h2load received
# whole bodies (its DATA bytes against succeeded requests x body; a warning otherwise).
# DISTRIBUTOR=DEFAULT|WFQ|UNIFORM_1K|UNIFORM_16K picks the server's distributor (default: DEFAULT, the default of
# the Netty on its class path); SERVER_JAVA_OPTS adds JVM options (e.g. -Dio.netty.iouring.uncountedFlushedLimit=0).
# PERF=1 also counts, with perf stat on the server's event-loop thread during the measured run, its system calls
# and io_uring submissions (tracepoints raw_syscalls:sys_enter, io_uring:io_uring_submit_req; needs perf).
# TABLE_ONLY=1 prints the table of an earlier run's $OUT/results.tsv again.
# Loopback only: the server listens on 127.0.0.1 and h2load connects there.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARTIFACTS=${ARTIFACTS:-upstream fork}
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
# Absolute: the class path is written by Maven runs in other folders.
OUT=$(realpath -m "${OUT:-$ROOT/target/h2load}")

die() { echo "h2load-matrix: $*" >&2; exit 1; }

for a in $ARTIFACTS; do
    case $a in upstream|fork) ;; *) die "ARTIFACTS: unknown value '$a' (upstream, fork)";; esac
done
for t in $TRANSPORTS; do
    case $t in NIO|EPOLL|IO_URING) ;; *) die "TRANSPORTS: unknown value '$t' (NIO, EPOLL, IO_URING)";; esac
done
for p in $PIPELINES; do
    case $p in HTTP_TO_HTTP2|MULTIPLEX) ;; *) die "PIPELINES: unknown value '$p' (HTTP_TO_HTTP2, MULTIPLEX)";; esac
done
for t in $TLS; do
    case $t in none|jdk|openssl) ;; *) die "TLS: unknown value '$t' (none, jdk, openssl)";; esac
done

mkdir -p "$OUT"
cd "$ROOT"

ensure_h2load() {
    if ! command -v h2load > /dev/null || ! command -v nghttp > /dev/null; then
        if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
            apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nghttp2-client
        else
            die "h2load and nghttp are needed: apt-get install nghttp2-client"
        fi
    fi
}

# The server's classes and class path for each set of artifacts (microbench's -Pupstream swaps the patched
# modules for upstream's).
build_classpaths() {
    local a profile classes
    for a in $ARTIFACTS; do
        if [ "$a" = upstream ]; then profile=-Pupstream; classes=microbench/target/upstream/classes
        else profile=; classes=microbench/target/classes; fi
        ./mvnw -B -q -ntp -pl microbench $profile compile dependency:build-classpath \
            -Dmdep.outputFile="$OUT/classpath-$a.txt" \
            || die "building microbench ($a) failed; run ./mvnw -B -ntp install -DskipTests first"
        echo "$ROOT/$classes:$(cat "$OUT/classpath-$a.txt")" > "$OUT/cp-$a.txt"
    done
}

# h2load's option for its ALPN list: --alpn-list, or --npn-list (ALPN too) in older ones (Debian 12's 1.52).
alpn_option() {
    # Not h2load --help | grep -q: under pipefail, h2load's SIGPIPE would fail the pipeline.
    case "$(h2load --help 2>&1 || true)" in *--alpn-list*) echo --alpn-list;; *) echo --npn-list;; esac
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
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
    # Over TLS nghttp warns (stderr) that the self-signed certificate does not name 127.0.0.1; other errors show.
    nghttp "$1/stats" 2> "$OUT/nghttp.err" || die "GET $1/stats failed: $(cat "$OUT/nghttp.err")"
    grep -v 'Certificate verification failed' "$OUT/nghttp.err" >&2 || true
}

RESULTS="$OUT/results.tsv"
if [ -n "${TABLE_ONLY:-}" ]; then
    [ -f "$RESULTS" ] || die "TABLE_ONLY: no $RESULTS"
else
ensure_h2load
build_classpaths
# The columns from tls on came with TLS (TABLE_ONLY reads a file without them as h2c rows).
printf 'artifacts\ttransport\tpipeline\tbody\tburst\tnetty\treq_s\tp50_us\tp99_us\tfailed\tresponses\tbytebufs\tbytes\tdataframes\tcpu_ns\tsyscalls\tsubmissions\ttls\ttls_session\ttls_records\ttls_bytebufs\ttls_bytes\tdata_bytes\n' > "$RESULTS"
for a in $ARTIFACTS; do
 for tls in $TLS; do
  if [ "$tls" = none ]; then scheme=http; alpn=(); suffix=
  else scheme=https; alpn=("$(alpn_option)=h2"); suffix=-tls-$tls; fi
  for transport in $TRANSPORTS; do
    for pipeline in $PIPELINES; do
      for body in $BODIES; do
        for burst in $BURSTS; do
          name="$a-$transport-$pipeline-$body-$burst$suffix"
          port=$(free_port)
          uri="$scheme://127.0.0.1:$port"
          : > "$OUT/$name.server.log"
          # shellcheck disable=SC2086
          java $SERVER_JAVA_OPTS -cp "$(cat "$OUT/cp-$a.txt")" io.netty.microbench.http2.Http2ResponseServer \
              --transport="$transport" --distributor="$DISTRIBUTOR" --pipeline="$pipeline" --body="$body" \
              --port="$port" --tls="${tls^^}" > "$OUT/$name.server.log" 2>&1 &
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
          h2load -c "$CONNECTIONS" -t 1 -m 1000 -n $((WARMUP_TICKS * burst * CONNECTIONS)) "${alpn[@]}" \
              --timing-script-file="$OUT/warmup.txt" > "$OUT/$name.warmup.txt" 2>&1 \
              || { kill $server; die "$name: h2load failed: $(tail -5 "$OUT/$name.warmup.txt")"; }
          before=$(stats "$uri")
          perf=()
          if [ -n "${PERF:-}" ]; then
              # The event-loop thread (its name, cut to 15 characters by the kernel).
              tid=$(grep -l '^multiThreadIoEv$' /proc/$server/task/*/comm | head -1 | cut -d/ -f5)
              [ -n "$tid" ] || die "no event-loop thread in server $name"
              perf=(perf stat -x, -t "$tid" -e raw_syscalls:sys_enter,io_uring:io_uring_submit_req
                    -o "$OUT/$name.perf.csv" --)
          fi
          "${perf[@]}" h2load -c "$CONNECTIONS" -t 1 -m 1000 -n $((TICKS * burst * CONNECTIONS)) "${alpn[@]}" \
              --timing-script-file="$OUT/script.txt" --log-file="$OUT/$name.requests.tsv" \
              > "$OUT/$name.h2load.txt" 2>&1 \
              || { kill $server; die "$name: h2load failed: $(tail -5 "$OUT/$name.h2load.txt")"; }
          after=$(stats "$uri")
          kill $server
          wait $server || true
          python3 - "$a" "$transport" "$pipeline" "$body" "$burst" "$netty" "$OUT/$name.h2load.txt" \
              "$OUT/$name.requests.tsv" "$before" "$after" "$OUT/$name.perf.csv" "$tls" "$name" \
              "$OUT/$name.warmup.txt" >> "$RESULTS" <<'EOF'
import os, re, sys
a, transport, pipeline, body, burst, netty, report, log, before, after, perf, tls, name, warmup = sys.argv[1:]
text = open(report).read()
session = "-"
if tls != "none":
    # h2load (OpenSSL) reports what it negotiated; over TLS a run counts only if ALPN agreed on h2.
    for path in (warmup, report):
        t = open(path).read()
        protocol = re.search(r"^Application protocol: (\S+)", t, re.M)
        if not protocol or protocol.group(1) != "h2":
            sys.exit("h2load-matrix: %s: h2load did not agree on h2 by ALPN (%s): %s"
                     % (name, path, protocol.group(0) if protocol else t.strip()[-500:]))
    session = "%s/%s" % (re.search(r"^TLS Protocol: (\S+)", text, re.M).group(1),
                         re.search(r"^Cipher: (\S+)", text, re.M).group(1))
req_s = re.search(r"finished in .*?, ([0-9.]+) req/s", text).group(1)
failed = re.search(r"requests: .* (\d+) failed", text).group(1)
succeeded = int(re.search(r"requests: .* (\d+) succeeded", text).group(1))
# The body bytes h2load received (DATA payload): every succeeded request must have brought the whole body.
data_bytes = int(re.search(r"^traffic: .* \((\d+)\) data", text, re.M).group(1))
if data_bytes != succeeded * int(body):
    print("h2load-matrix: %s: %d body bytes for %d responses of %s bytes" % (name, data_bytes, succeeded, body),
          file=sys.stderr)
lat = sorted(int(line.split("\t")[2]) for line in open(log) if line.strip())
pct = lambda q: lat[min(len(lat) - 1, int(len(lat) * q))]
b = dict(kv.split("=") for kv in before.split())
e = dict(kv.split("=") for kv in after.split())
d = {k: int(e[k]) - int(b[k]) for k in b}
if d.get("tlsRecordErrors", 0):
    sys.exit("h2load-matrix: %s: the server lost the TLS record boundaries" % name)
counts = {"raw_syscalls:sys_enter": "", "io_uring:io_uring_submit_req": ""}
if os.path.exists(perf):
    for line in open(perf):
        parts = line.strip().split(",")
        if len(parts) > 2 and parts[2] in counts:
            counts[parts[2]] = parts[0]
print("\t".join([a, transport, pipeline, body, burst, netty, req_s, str(pct(0.50)), str(pct(0.99)), failed,
                 str(d["responses"]), str(d["byteBufs"]), str(d["bytes"]), str(d["dataFrames"]),
                 str(d["cpuNanos"]), counts["raw_syscalls:sys_enter"], counts["io_uring:io_uring_submit_req"],
                 tls, session, str(d.get("tlsRecords", 0)), str(d.get("tlsByteBufs", 0)), str(d.get("tlsBytes", 0)),
                 str(data_bytes)]))
EOF
          echo "h2load-matrix: $name done" >&2
        done
      done
    done
  done
 done
done
fi

python3 - "$RESULTS" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
# Files written before TLS have no tls columns: h2c.
tls = any(r.get("tls") not in (None, "", "none") for r in rows)
for r in rows:
    r["tls"] = r.get("tls") or "none"
    n = int(r["responses"]) or 1
    r["records"] = "%.2f" % (int(r.get("tls_records") or 0) / n)
    r["tlsbufs"] = "%.2f" % (int(r.get("tls_bytebufs") or 0) / n)
    r["bufs"] = int(r["bytebufs"]) / n
    r["bufsize"] = int(r["bytes"]) / (int(r["bytebufs"]) or 1)
    r["frames"] = int(r["dataframes"]) / n
    r["cpu"] = int(r["cpu_ns"]) / n / 1000.0
    r["p50"] = int(r["p50_us"]) / 1000.0
    r["p99"] = int(r["p99_us"]) / 1000.0
    per = lambda v: "%.2f" % (float(v) / n) if v not in (None, "") else "-"
    r["sys"] = per(r.get("syscalls"))
    r["sqe"] = per(r.get("submissions"))

def table(header, lines):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    print("| " + " | ".join(str(h).rjust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for line in lines:
        print("| " + " | ".join(str(x).rjust(w) for x, w in zip(line, widths)) + " |")

# With TLS in the run, the TLS engine is a column of the tables (and part of the ratios' key), and the records and
# ByteBufs the SslHandler wrote are two more; without, the tables are those of the h2c runs before TLS.
tls_key = (lambda r: (r["tls"],)) if tls else (lambda r: ())
tls_head = ["TLS"] if tls else []
key = lambda r: tls_key(r) + (r["transport"], r["pipeline"], r["body"], r["burst"])
print("\nPer request, as measured (server: one event-loop thread; client: h2load, %s)\n" % "one thread")
table(["artifacts"] + tls_head + ["transport", "pipeline", "body", "burst", "req/s", "p50 ms", "p99 ms", "failed",
                                  "ByteBufs/resp", "bytes/ByteBuf", "DATA frames/resp"]
      + (["TLS records/resp", "TLS ByteBufs/resp"] if tls else [])
      + ["CPU us/req", "syscalls/req", "io_uring SQEs/req"],
      [[r["artifacts"]] + list(tls_key(r))
       + [r["transport"], r["pipeline"], r["body"], r["burst"], r["req_s"], "%.2f" % r["p50"], "%.2f" % r["p99"],
          r["failed"], "%.2f" % r["bufs"], "%.0f" % r["bufsize"], "%.2f" % r["frames"]]
       + ([r["records"], r["tlsbufs"]] if tls else []) + ["%.1f" % r["cpu"], r["sys"], r["sqe"]]
       for r in rows])

up = {key(r): r for r in rows if r["artifacts"] == "upstream"}
fork = {key(r): r for r in rows if r["artifacts"] == "fork"}
# The fork on NIO in the same TLS mode, pipeline, body and burst.
but_transport = lambda k: k[:len(tls_head)] + k[len(tls_head) + 1:]
nio = {but_transport(key(r)): r for r in rows if r["artifacts"] == "fork" and r["transport"] == "NIO"}
lines = []
for k, f in fork.items():
    u = up.get(k)
    n = nio.get(but_transport(k))
    ratio = lambda x, y: "%.2fx" % (x / y) if y else "-"
    lines.append(list(k) + [ratio(f["bufs"], u["bufs"]) if u else "-", ratio(f["cpu"], u["cpu"]) if u else "-",
                            ratio(f["p99"], u["p99"]) if u else "-",
                            ratio(f["bufs"], n["bufs"]) if n else "-", ratio(f["cpu"], n["cpu"]) if n else "-"])
if lines:
    print("\nRatios: fork / upstream (same configuration), fork / fork on NIO (same %spipeline, body, burst)\n"
          % ("TLS, " if tls else ""))
    table(tls_head + ["transport", "pipeline", "body", "burst", "ByteBufs vs upstream", "CPU vs upstream",
                      "p99 vs upstream", "ByteBufs vs NIO", "CPU vs NIO"], lines)
EOF
echo "h2load-matrix: raw results in $RESULTS" >&2
