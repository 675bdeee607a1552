#!/usr/bin/env python3
"""Print a JMH JSON result as a table: per-operation values of the @AuxCounters (OPERATIONS rates divided by the
score) and ratios against a baseline parameter value measured in the same run. The benchmark method counts as a
parameter named "method".

    tools/jmh-table.py RESULT.json [--baseline PARAM=VALUE] [--per COUNTER]
    e.g. --baseline algorithm=WFQ, --baseline method=fork, --per responses
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result")
    ap.add_argument("--baseline", help="PARAM=VALUE the other rows are compared with, e.g. algorithm=WFQ")
    ap.add_argument("--per", help="COUNTER to divide the other counters by instead of the score, e.g. responses")
    args = ap.parse_args()

    with open(args.result) as f:
        runs = json.load(f)
    if not runs:
        sys.exit("jmh-table: no results in %s" % args.result)
    # The benchmark method is a parameter like the others ("method"), so that methods can be compared too.
    for r in runs:
        r["params"] = dict([("method", r["benchmark"].rsplit(".", 1)[-1])] + list(r.get("params", {}).items()))

    base_param = base_value = None
    if args.baseline:
        if "=" not in args.baseline:
            sys.exit("jmh-table: --baseline takes PARAM=VALUE, not %r" % args.baseline)
        base_param, base_value = args.baseline.split("=", 1)
        if not any(r.get("params", {}).get(base_param) == base_value for r in runs):
            sys.exit("jmh-table: no run has %s=%s" % (base_param, base_value))

    param_names = list(runs[0].get("params", {}).keys())
    counters = sorted({k for r in runs for k in r.get("secondaryMetrics", {}) if not k.startswith("·")})

    def key(run, without=None):
        p = run.get("params", {})
        return tuple(p[n] for n in param_names if n != without)

    if args.per and args.per not in counters:
        sys.exit("jmh-table: no counter %r (counters: %s)" % (args.per, ", ".join(counters)))

    def per_op(run):
        score = run["primaryMetric"]["score"]
        unit = run["secondaryMetrics"][args.per]["score"] if args.per else score
        values = {"score": score}
        for c in counters:
            m = run.get("secondaryMetrics", {}).get(c)
            values[c] = m["score"] / unit if m and unit else float("nan")
        return values

    baselines = {}
    if base_param:
        for r in runs:
            if r["params"].get(base_param) == base_value:
                baselines[key(r, base_param)] = per_op(r)

    per = "/" + (args.per or "op")
    header = param_names + ["ops/s", "±"] + ["%s%s" % (c, per) for c in counters]
    if base_param:
        header += ["ops/s vs %s" % base_value] + ["%s%s vs %s" % (c, per, base_value) for c in counters]
    rows = [header]
    for r in runs:
        v = per_op(r)
        row = [r["params"][n] for n in param_names]
        row += ["%.1f" % v["score"], "%.1f" % r["primaryMetric"]["scoreError"]]
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
