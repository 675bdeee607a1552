#!/usr/bin/env python3
"""The rows and tables of tools/h2load-matrix.sh.

  h2load-summary.py --row KEY=VALUE...          one run's row of results.tsv (its columns: the script's header)
  h2load-summary.py RESULTS.tsv [--plot F.svg]  per configuration and arm: median and range over the rounds, and the
                                                ratios to the first arm (per round, then their median and range);
                                                --plot draws p99 and CPU per response (gnuplot)
"""
import csv
import os
import re
import statistics
import subprocess
import sys


def die(message):
    sys.exit("h2load-summary: " + message)


def row(args):
    a = dict(arg.split("=", 1) for arg in args)
    name = a["name"]
    text = open(a["report"]).read()
    session = "-"
    if a["tls"] != "none":
        # h2load (OpenSSL) reports what it negotiated; over TLS a run counts only if ALPN agreed on h2.
        for path in (a["warmup"], a["report"]):
            t = open(path).read()
            protocol = re.search(r"^Application protocol: (\S+)", t, re.M)
            if not protocol or protocol.group(1) != "h2":
                die("%s: h2load did not agree on h2 by ALPN (%s): %s"
                    % (name, path, protocol.group(0) if protocol else t.strip()[-500:]))
        session = "%s/%s" % (re.search(r"^TLS Protocol: (\S+)", text, re.M).group(1),
                             re.search(r"^Cipher: (\S+)", text, re.M).group(1))
    req_s = re.search(r"finished in .*?, ([0-9.]+) req/s", text).group(1)
    failed = re.search(r"requests: .* (\d+) failed", text).group(1)
    if int(failed):
        die("%s: %s of h2load's requests failed (%s)" % (name, failed, a["report"]))
    succeeded = int(re.search(r"requests: .* (\d+) succeeded", text).group(1))
    # The body bytes h2load received (DATA payload): every succeeded request must have brought the whole body.
    data_bytes = int(re.search(r"^traffic: .* \((\d+)\) data", text, re.M).group(1))
    if data_bytes != succeeded * int(a["body"]):
        print("h2load-matrix: %s: %d body bytes for %d responses of %s bytes" % (name, data_bytes, succeeded,
                                                                              a["body"]), file=sys.stderr)
    lat = sorted(int(line.split("\t")[2]) for line in open(a["log"]) if line.strip())
    if not lat:
        die("%s: no request in h2load's log %s" % (name, a["log"]))
    pct = lambda q: lat[min(len(lat) - 1, int(len(lat) * q))]
    over10 = sum(1 for v in lat if v > 10000) / len(lat)
    b = dict(kv.split("=") for kv in a["before"].split())
    e = dict(kv.split("=") for kv in a["after"].split())
    d = {k: int(e[k]) - int(b[k]) for k in b if k in e}
    if d.get("tlsRecordErrors", 0):
        die("%s: the server lost the TLS record boundaries" % name)
    tb = dict(kv.split("=") for kv in a["tcp_before"].split())
    ta = dict(kv.split("=") for kv in a["tcp_after"].split())
    tcp = lambda k: str(int(ta.get(k, 0)) - int(tb.get(k, 0))) if k in ta else ""
    counts = {"raw_syscalls:sys_enter": "", "io_uring:io_uring_submit_req": ""}
    if os.path.exists(a["perf"]):
        for line in open(a["perf"]):
            parts = line.strip().split(",")
            if len(parts) > 2 and parts[2] in counts:
                counts[parts[2]] = parts[0]
    # ss -tin of the server's connections, sampled during the run: the last sample with connections in it; the
    # largest cwnd and pacing rate among them, BBR's mode by its gains.
    ss = ""
    if os.path.exists(a["ss"]):
        samples = [x for x in open(a["ss"]).read().split("\n# ") if "cwnd:" in x]
        ss = samples[-1] if samples else ""
    cwnd = [int(x) for x in re.findall(r"\bcwnd:(\d+)", ss)]
    pacing = [float(x) for x in re.findall(r"\bpacing_rate (\d+)bps", ss)]
    gains = re.findall(r"pacing_gain:([0-9.]+),cwnd_gain:([0-9.]+)", ss)
    bbr = ";".join(bbr_mode(float(p), float(c)) for p, c in gains) or "-"
    values = {
        "round": a["round"], "bed": a["bed"], "cc": a["cc"], "arm": a["arm"], "artifacts": a["artifacts"],
        "transport": a["transport"], "pipeline": a["pipeline"], "body": a["body"], "burst": a["burst"],
        "netty": a["netty"], "req_s": req_s, "p50_us": pct(0.50), "p99_us": pct(0.99), "p999_us": pct(0.999),
        "max_us": lat[-1], "over10ms": "%.4f" % over10, "failed": failed, "responses": d["responses"],
        "bytebufs": d["byteBufs"], "bytes": d["bytes"], "dataframes": d["dataFrames"], "cpu_ns": d["cpuNanos"],
        "user_ns": d.get("userNanos", ""), "unwritable": d.get("unwritable", ""),
        "stream_events": d.get("streamWritabilityEvents", ""),
        "syscalls": counts["raw_syscalls:sys_enter"], "submissions": counts["io_uring:io_uring_submit_req"],
        "tls": a["tls"], "tls_session": session, "tls_records": d.get("tlsRecords", 0),
        "tls_bytebufs": d.get("tlsByteBufs", 0), "tls_bytes": d.get("tlsBytes", 0), "data_bytes": data_bytes,
        "retrans_segs": tcp("TcpRetransSegs"), "loss_probes": tcp("TcpExtTCPLossProbes"),
        "ss_cwnd": max(cwnd) if cwnd else "", "ss_pacing_bps": "%.0f" % max(pacing) if pacing else "",
        "ss_bbr_state": bbr, "mtu": a["mtu"],
    }
    header = open(os.path.join(os.path.dirname(a["report"]), "results.tsv")).readline().rstrip("\n").split("\t")
    print("\t".join(str(values[h]) for h in header))


def bbr_mode(pacing_gain, cwnd_gain):
    """BBR's mode, from the gains ss prints (Linux's BBRv1): STARTUP 2.89/2.89, DRAIN 0.35/2.89, PROBE_RTT 1/1."""
    if pacing_gain > 2.5:
        return "startup"
    if pacing_gain < 0.5 and cwnd_gain > 2.5:
        return "drain"
    if pacing_gain == 1 and cwnd_gain == 1:
        return "probe_rtt"
    return "probe_bw"


def number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def table(header, lines):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    print("| " + " | ".join(str(h).rjust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for line in lines:
        print("| " + " | ".join(str(x).rjust(w) for x, w in zip(line, widths)) + " |")


def spread(values, fmt):
    """Median and range: 'median (min-max)'; the median alone for one value."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return fmt % values[0]
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(values), min(values), max(values))


METRICS = [
    # name, header, value of a row, format
    ("p50", "p50 ms", lambda r: number(r["p50_us"]) / 1000.0, "%.2f"),
    ("p99", "p99 ms", lambda r: number(r["p99_us"]) / 1000.0, "%.2f"),
    ("over10", ">10 ms %", lambda r: 100 * number(r.get("over10ms")) if number(r.get("over10ms")) is not None
        else None, "%.2f"),
    ("cpu", "CPU us/resp", lambda r: number(r["cpu_ns"]) / max(1, number(r["responses"])) / 1000.0, "%.1f"),
    ("sys", "of it kernel us", lambda r: (number(r["cpu_ns"]) - number(r["user_ns"])) / max(1, number(r["responses"]))
        / 1000.0 if number(r.get("user_ns")) is not None else None, "%.1f"),
    ("frames", "DATA frames/resp", lambda r: number(r["dataframes"]) / max(1, number(r["responses"])), "%.2f"),
    ("bufs", "ByteBufs/resp", lambda r: number(r["bytebufs"]) / max(1, number(r["responses"])), "%.2f"),
    ("unwritable", "unwritable/1k resp", lambda r: 1000 * number(r["unwritable"]) / max(1, number(r["responses"]))
        if number(r.get("unwritable")) is not None else None, "%.0f"),
    ("stream", "stream events/resp", lambda r: number(r["stream_events"]) / max(1, number(r["responses"]))
        if number(r.get("stream_events")) is not None else None, "%.2f"),
    ("retrans", "retrans segs", lambda r: number(r.get("retrans_segs")), "%.0f"),
    ("tlp", "loss probes", lambda r: number(r.get("loss_probes")), "%.0f"),
    ("cwnd", "cwnd", lambda r: number(r.get("ss_cwnd")), "%.0f"),
]


def summary(path, plot):
    rows = list(csv.DictReader(open(path), delimiter="\t"))
    if not rows:
        die("%s has no runs" % path)
    for r in rows:
        # Files written before rounds and arms: one round, the artifacts as the arm, the host's loopback.
        r.setdefault("round", "1")
        r["arm"] = r.get("arm") or r["artifacts"]
        r["bed"] = r.get("bed") or "host-lo"
        r["cc"] = r.get("cc") or "-"
        r["tls"] = r.get("tls") or "none"
    key = lambda r: (r["bed"], r["cc"], r["tls"], r["transport"], r["pipeline"], r["body"], r["burst"])
    configs = []
    arms = []
    for r in rows:
        if key(r) not in configs:
            configs.append(key(r))
        if r["arm"] not in arms:
            arms.append(r["arm"])
    rounds = sorted({r["round"] for r in rows}, key=int)
    print("\nPer configuration and arm: median (range) over %d round(s); server on one event-loop thread, client "
          "h2load\n" % len(rounds))
    lines = []
    for k in configs:
        for arm in arms:
            runs = [r for r in rows if key(r) == k and r["arm"] == arm]
            if runs:
                lines.append(list(k) + [arm, len(runs)] + [spread([m[2](r) for r in runs], m[3]) for m in METRICS])
    table(["bed", "cc", "TLS", "transport", "pipeline", "body", "burst", "arm", "rounds"] + [m[1] for m in METRICS],
          lines)
    base = arms[0]
    ratio_metrics = [m for m in METRICS if m[0] in ("p50", "p99", "cpu")]
    lines = []
    ratios = {}
    for k in configs:
        for arm in arms[1:]:
            per_metric = []
            for m in ratio_metrics:
                values = []
                for rnd in rounds:
                    x = [m[2](r) for r in rows if key(r) == k and r["arm"] == arm and r["round"] == rnd]
                    y = [m[2](r) for r in rows if key(r) == k and r["arm"] == base and r["round"] == rnd]
                    if x and y and x[0] is not None and y[0]:
                        values.append(x[0] / y[0])
                per_metric.append(values)
                ratios[(k, arm, m[0])] = values
            if any(per_metric):
                lines.append(list(k) + [arm + " / " + base] + [spread(v, "%.2fx") for v in per_metric])
    if lines:
        print("\nRatios to %s, per round (same configuration), then their median (range)\n" % base)
        table(["bed", "cc", "TLS", "transport", "pipeline", "body", "burst", "arms"]
              + [m[1] for m in ratio_metrics], lines)
    if plot:
        draw(plot, rows, configs, arms, key)


def draw(plot, rows, configs, arms, key):
    """Two panels, p99 and CPU per response: per configuration a group of bars, one per arm, at the median over the
    rounds, with the rounds' range as error bars. Written with gnuplot (Debian's gnuplot-nox), SVG or PNG."""
    data = os.path.splitext(plot)[0] + ".dat"
    # What varies between the configurations names them.
    varies = [len({k[i] for k in configs}) > 1 for i in range(7)]
    short = {"HTTP_TO_HTTP2": "H2H", "MULTIPLEX": "MUX", "none": "h2c"}
    label = lambda k: " ".join(short.get(x, x) + ("B" if i == 5 else "") if i != 6 else "x" + x
                               for i, x in enumerate(k) if varies[i]) or " ".join(k)
    metrics = [m for m in METRICS if m[0] in ("p99", "cpu")]
    with open(data, "w") as f:
        f.write("# config " + " ".join("%s_%s_med %s_%s_min %s_%s_max" % (a, m[0], a, m[0], a, m[0])
                                       for m in metrics for a in arms) + "\n")
        for k in configs:
            values = []
            for m in metrics:
                for arm in arms:
                    v = [m[2](r) for r in rows if key(r) == k and r["arm"] == arm]
                    v = [x for x in v if x is not None]
                    values += ["%.3f" % statistics.median(v), "%.3f" % min(v), "%.3f" % max(v)] if v \
                        else ["NaN"] * 3
            f.write('"%s" %s\n' % (label(k), " ".join(values)))
    terminal = "pngcairo size 1200,%d" if plot.endswith(".png") else "svg size 1200,%d dynamic"
    height = 260 + 22 * len(configs)
    n = len(arms)
    script = ["set terminal " + terminal % (2 * height), "set output '%s'" % plot, "set multiplot layout 2,1",
              "set style data histograms", "set style histogram errorbars gap 1 lw 1", "set style fill solid 0.6",
              "set key outside right top", "set xtics nomirror rotate by -30 noenhanced", "set grid ytics",
              "set bmargin 6"]
    for i, (m, title) in enumerate(zip(metrics, ["p99 latency, ms, log scale (median of the rounds; bars: their range)",
                                                  "server event-loop CPU per response, us (median; range)"])):
        script.append("set title '%s' noenhanced" % title)
        # p99 spans orders of magnitude (a 2 ms run next to an 85 ms one): a log scale for it.
        script.append("set logscale y; set yrange [0.5:*]" if m[0] == "p99" else "unset logscale y; set yrange [0:*]")
        cols = []
        for j, arm in enumerate(arms):
            c = 2 + 3 * (i * n + j)
            cols.append("'%s' using %d:%d:%d:xtic(1) title '%s' noenhanced" % (data, c, c + 1, c + 2, arm))
        script.append("plot " + ", ".join(cols))
    script.append("unset multiplot")
    try:
        subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True)
    except FileNotFoundError:
        die("--plot needs gnuplot (Debian: apt-get install gnuplot-nox)")
    print("h2load-summary: drew %s (data: %s)" % (plot, data), file=sys.stderr)


def main(argv):
    if argv[:1] == ["--row"]:
        row(argv[1:])
        return
    if not argv or argv[0].startswith("-"):
        die("usage: h2load-summary.py RESULTS.tsv [--plot FILE.svg] | --row KEY=VALUE...")
    plot = None
    if len(argv) == 3 and argv[1] == "--plot":
        plot = argv[2]
    elif len(argv) != 1:
        die("usage: h2load-summary.py RESULTS.tsv [--plot FILE.svg]")
    summary(argv[0], plot)


if __name__ == "__main__":
    main(sys.argv[1:])
