#!/usr/bin/env python3
"""Table of Http2ResponseBenchmark runs made with -Dh2bench.trace=true, from their console logs.

    tools/trace-table.py LOG...

Each LOG is the output of one `./mvnw ... -Dtest=Http2ResponseBenchmark -Dh2bench.trace=true` run. Its label is the
file name without `.log` and without a trailing `-N` (so `fork-cubic-1.log` and `fork-cubic-2.log`, two rounds of
one configuration, make one row per transport and distributor). Per row, over the measured iterations: the medians
of the iterations' p50/p99/p999 latency and CPU time per response, ByteBufs per response, and from the trace the
mean of the queued and socket-write legs (server's read -> write done) of the slowest 0.1% of responses and the mean
delivery leg (server's write done -> client read END_STREAM) of the slowest 1% and 0.1% (see ResponseTrace).
"""
import os
import re
import statistics
import sys

PARAMS = re.compile(r'# Parameters: .*distributor = (\w+).*transport = (\w+)')
BAND = re.compile(r'trace \[([\d.]+)-([\d.]+)[])] n=(\d+) mean us: request (\S+) queued (\S+) socketWrite (\S+) '
                  r'delivery (\S+)')
LATENCY = re.compile(r'latency p50 ([\d.]+) us, p99 ([\d.]+) us, p999 ([\d.]+) us')
COUNTER = re.compile(r'^\s+(responses|serverCpuNanos|serverByteBufs):\s+([\d.]+) ops/s')


def main(paths):
    if not paths:
        sys.exit(__doc__)
    rows = {}
    for path in paths:
        label = re.sub(r'(-\d+)?(\.log)?$', '', os.path.basename(path))
        row, measured = None, False
        with open(path) as log:
            for line in log:
                m = PARAMS.search(line)
                if m:
                    row = rows.setdefault((label, m.group(2), m.group(1)), {
                        'bands': {}, 'p50': [], 'p99': [], 'p999': [], 'responses': [], 'serverCpuNanos': [],
                        'serverByteBufs': []})
                    measured = False
                    continue
                if row is None:
                    continue
                if 'Warmup Iteration' in line:
                    measured = False
                elif re.match(r'^Iteration\s+\d+:', line):
                    measured = True
                if not measured:
                    continue
                m = BAND.search(line)
                if m and m.group(4) != '-':
                    n = int(m.group(3))
                    band = row['bands'].setdefault(m.group(1), [0, [0, 0, 0, 0]])
                    band[0] += n
                    for leg in range(4):
                        band[1][leg] += n * float(m.group(4 + leg))
                m = LATENCY.search(line)
                if m:
                    for i, q in enumerate(('p50', 'p99', 'p999')):
                        row[q].append(float(m.group(i + 1)) / 1000)
                m = COUNTER.search(line)
                if m:
                    row[m.group(1)].append(float(m.group(2)))
    print('| configuration | transport | distributor | iterations | p50 ms | p99 ms | p999 ms | CPU us/response '
          '| ByteBufs/response | queued + socket write us (slowest 0.1%) '
          '| delivery us (slowest 1%, slowest 0.1%) |')
    print('|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|')
    for key in sorted(rows):
        row = rows[key]
        if not row['p99'] or not row['responses']:
            continue

        def leg(band, index):
            n, sums = row['bands'].get(band, [0, [0, 0, 0, 0]])
            return sums[index] / n if n else float('nan')
        cpu = statistics.median(c / r / 1000 for c, r in zip(row['serverCpuNanos'], row['responses']))
        bufs = sum(row['serverByteBufs']) / sum(row['responses'])
        print(f"| {key[0]} | {key[1]} | {key[2]} | {len(row['p99'])} | {statistics.median(row['p50']):.2f} "
              f"| {statistics.median(row['p99']):.1f} | {statistics.median(row['p999']):.1f} | {cpu:.1f} "
              f"| {bufs:.2f} | {leg('0.999', 1) + leg('0.999', 2):.0f} "
              f"| {leg('0.990', 3):.0f}, {leg('0.999', 3):.0f} |")


if __name__ == '__main__':
    main(sys.argv[1:])
