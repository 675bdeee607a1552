#!/usr/bin/env python3
"""Summarise a `perf script` dump of io_uring and io_uring_enter tracepoints of one process, per 10 ms tick:

    perf record -o uring.data -p PID -e io_uring:io_uring_submit_req -e io_uring:io_uring_complete \
        -e syscalls:sys_enter_io_uring_enter -e syscalls:sys_exit_io_uring_enter -e io_uring:io_uring_poll_arm \
        -- sleep 3
    perf script -i uring.data > uring.txt
    tools/iouring-trace-summary.py uring.txt [--tick-ms 10]

Prints io_uring_enter calls (and those that blocked, min_complete > 0, with the time spent blocked), submissions
and completions per opcode, poll arms (a request that had to wait for readiness), the bytes each WRITEV/SEND/
SENDMSG completed with, and the busy periods between two blocking waits (writes and io_uring_enter calls in each).
"""
import argparse
import collections
import re
import statistics

LINE = re.compile(r"\s*(\S+)\s+(\d+)\s+\[\d+\]\s+([\d.]+):\s+(\S+):\s+(.*)")
WRITE_OPS = ("WRITEV", "WRITE", "SEND", "SENDMSG", "SEND_ZC", "SENDMSG_ZC")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump", help="output of perf script")
    ap.add_argument("--tick-ms", type=float, default=10.0, help="length of one tick, in ms (default 10)")
    args = ap.parse_args()

    ops = {}
    counts = collections.Counter()
    polls = collections.Counter()
    write_bytes = []
    enters = blocking = 0
    blocked = 0.0
    enter_ts = None
    enter_blocks = False
    busy = []
    busy_start = None
    busy_writes = busy_enters = 0
    first = last = None
    with open(args.dump) as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            ts, event, rest = float(m.group(3)), m.group(4), m.group(5)
            first = ts if first is None else first
            last = ts
            if event == "syscalls:sys_enter_io_uring_enter":
                enters += 1
                enter_ts = ts
                enter_blocks = int(re.search(r"min_complete: (0x[0-9a-f]+)", rest).group(1), 16) > 0
                if enter_blocks:
                    blocking += 1
                    if busy_start is not None:
                        busy.append((ts - busy_start, busy_writes, busy_enters))
                        busy_start = None
                else:
                    busy_enters += 1
            elif event == "syscalls:sys_exit_io_uring_enter":
                if enter_blocks and enter_ts is not None:
                    blocked += ts - enter_ts
                    busy_start, busy_writes, busy_enters = ts, 0, 0
                enter_ts = None
            elif event == "io_uring:io_uring_submit_req":
                user_data = re.search(r"user_data (0x[0-9a-f]+)", rest).group(1)
                op = re.search(r"opcode (\S+),", rest).group(1)
                ops[user_data] = op
                counts["submit " + op] += 1
                if op in WRITE_OPS:
                    busy_writes += 1
            elif event == "io_uring:io_uring_complete":
                user_data = re.search(r"user_data (0x[0-9a-f]+)", rest).group(1)
                op = ops.get(user_data, "(submitted before the trace)")
                counts["complete " + op] += 1
                if op in WRITE_OPS:
                    write_bytes.append(int(re.search(r"result (-?\d+)", rest).group(1)))
            elif event == "io_uring:io_uring_poll_arm":
                op = re.search(r"opcode (\S+),", rest)
                polls[op.group(1) if op else "?"] += 1
    if first is None or last == first:
        raise SystemExit("iouring-trace-summary: no events in " + args.dump)
    ticks = (last - first) * 1000 / args.tick_ms
    print("%.2f s, %.0f ticks of %g ms" % (last - first, ticks, args.tick_ms))
    print("io_uring_enter %d (%.1f/tick), blocking %d (%.1f/tick), blocked %.3f s (%.1f%% of the time)"
          % (enters, enters / ticks, blocking, blocking / ticks, blocked, 100 * blocked / (last - first)))
    for name, n in sorted(counts.items()):
        print("  %-40s %7d (%.1f/tick)" % (name, n, n / ticks))
    print("poll arms: %s" % (dict(polls) or "none"))
    if write_bytes:
        s = sorted(write_bytes)
        n = len(s)
        print("bytes per write completion: n=%d mean=%.0f p10=%d p50=%d p90=%d max=%d errors=%d"
              % (n, statistics.mean(s), s[n // 10], s[n // 2], s[9 * n // 10], s[-1], sum(1 for x in s if x < 0)))
    if busy:
        b = sorted(busy)
        n = len(b)
        print("busy periods (blocking wait to blocking wait): %d, mean %.2f ms, %.1f writes, %.1f io_uring_enter"
              % (n, 1000 * statistics.mean(x[0] for x in b), statistics.mean(x[1] for x in b),
                 statistics.mean(x[2] for x in b)))
        for q in (0.5, 0.9, 0.99):
            x = b[min(n - 1, int(n * q))]
            print("  p%g %.2f ms (%d writes, %d io_uring_enter)" % (100 * q, 1000 * x[0], x[1], x[2]))


if __name__ == "__main__":
    main()
