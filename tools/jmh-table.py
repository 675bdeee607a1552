#!/usr/bin/env python3
"""Print a JMH JSON result as a table: per-operation values of the @AuxCounters (OPERATIONS rates divided by the
score) and ratios against a baseline parameter value measured in the same run. The benchmark method counts as a
parameter named "method".

    tools/jmh-table.py RESULT.json [--baseline PARAM=VALUE] [--per COUNTER] [--only PARAM=V1,V2 ...]
                       [--counters C1,C2]
    e.g. --baseline algorithm=WFQ, --baseline method=openLoop, --per responses

Several results can be put side by side as LABEL=RESULT.json: the label becomes a parameter named "artifacts",
e.g. tools/jmh-table.py upstream=a.json fork=b.json --baseline artifacts=upstream. With --per COUNTER, the
COUNTER's own column is its rate (per second) rather than 1.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result", nargs="+", help="RESULT.json or LABEL=RESULT.json")
    ap.add_argument("--baseline", help="PARAM=VALUE the other rows are compared with, e.g. algorithm=WFQ")
    ap.add_argument("--per", help="COUNTER to divide the other counters by instead of the score, e.g. responses")
    ap.add_argument("--only", action="append", default=[], help="PARAM=V1,V2: keep the rows with these values")
    ap.add_argument("--counters", help="C1,C2: show only these counters")
    args = ap.parse_args()

    runs = []
    for arg in args.result:
        label, path = arg.split("=", 1) if "=" in arg else (None, arg)
        with open(path) as f:
            loaded = json.load(f)
        if not loaded:
            sys.exit("jmh-table: no results in %s" % path)
        # The benchmark method is a parameter like the others ("method"), so that methods can be compared too.
        for r in loaded:
            params = [("method", r["benchmark"].rsplit(".", 1)[-1])] + list(r.get("params", {}).items())
            if label is not None:
                params = [("artifacts", label)] + params
            r["params"] = dict(params)
        runs += loaded
    for only in args.only:
        if "=" not in only:
            sys.exit("jmh-table: --only takes PARAM=V1,V2, not %r" % only)
        name, values = only.split("=", 1)
        if not any(name in r["params"] for r in runs):
            sys.exit("jmh-table: --only: no parameter %r" % name)
        runs = [r for r in runs if r["params"].get(name) in values.split(",")]
    if not runs:
        sys.exit("jmh-table: no run left after --only")

    base_param = base_value = None
    if args.baseline:
        if "=" not in args.baseline:
            sys.exit("jmh-table: --baseline takes PARAM=VALUE, not %r" % args.baseline)
        base_param, base_value = args.baseline.split("=", 1)
        if not any(r.get("params", {}).get(base_param) == base_value for r in runs):
            sys.exit("jmh-table: no run has %s=%s" % (base_param, base_value))

    param_names = list(runs[0].get("params", {}).keys())
    counters = sorted({k for r in runs for k in r.get("secondaryMetrics", {}) if not k.startswith("·")})
    if args.counters:
        unknown = [c for c in args.counters.split(",") if c not in counters]
        if unknown:
            sys.exit("jmh-table: no counter %s (counters: %s)" % (", ".join(unknown), ", ".join(counters)))
        counters = [c for c in args.counters.split(",")]

    def key(run, without=None):
        p = run.get("params", {})
        return tuple(p[n] for n in param_names if n != without)

    all_counters = {k for r in runs for k in r.get("secondaryMetrics", {})}
    if args.per and args.per not in all_counters:
        sys.exit("jmh-table: no counter %r (counters: %s)" % (args.per, ", ".join(counters)))

    def per_op(run):
        score = run["primaryMetric"]["score"]
        unit = run["secondaryMetrics"][args.per]["score"] if args.per else score
        values = {"score": score}
        for c in counters:
            m = run.get("secondaryMetrics", {}).get(c)
            if c == args.per:
                values[c] = m["score"]
            else:
                values[c] = m["score"] / unit if m and unit else float("nan")
        return values

    baselines = {}
    if base_param:
        for r in runs:
            if r["params"].get(base_param) == base_value:
                baselines[key(r, base_param)] = per_op(r)

    per = "/" + (args.per or "op")
    names = ["%s/s" % c if c == args.per else "%s%s" % (c, per) for c in counters]
    header = param_names + ["ops/s", "±"] + names
    if base_param:
        header += ["ops/s vs %s" % base_value] + ["%s vs %s" % (n, base_value) for n in names]
    rows = [header]
    for r in runs:
        v = per_op(r)
        row = [r["params"][n] for n in param_names]
        error = r["primaryMetric"]["scoreError"]
        row += ["%.1f" % v["score"], "%.1f" % error if isinstance(error, (int, float)) else "-"]
        row += ["%.2f" % v[c] for c in counters]
        if base_param:
            b = baselines.get(key(r, base_param))
            row += ["%.2fx" % (v["score"] / b["score"]) if b else "-"]
            row += ["%.3fx" % (v[c] / b[c]) if b and b[c] else "-" for c in counters]
        rows.append(row)

    widths = [max(len(str(row[i])) for row in rows) for i in range(len(header))]
    for i, row in enumerate(rows):
        print("| " + " | ".join(str(c).rjust(w) for c, w in zip(row, widths)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


if __name__ == "__main__":
    main()
