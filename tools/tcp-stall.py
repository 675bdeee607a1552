#!/usr/bin/env python3
"""The epoll + BBR tail without Netty: a plain TCP server that answers each request with a burst of responses,
each written as the given send()s, in the network lab (tools/netlab.sh up first).

  tools/netlab.sh up --cc bbr && tools/tcp-stall.py --sizes 65588 65381+207 60072 --rounds 5; tools/netlab.sh down

The client (client namespace) sends an 8-byte request every 10 ms on one connection, open loop, and times each burst
from its request to its last byte; the server (server namespace, TCP_NODELAY as Netty's channels) answers each with
BURST responses, each written as the send()s of one size spec: 65588 is one write of a 64 KiB HTTP/2 response in
four 16 KiB DATA frames (what the fork's default distributor writes per response), 65381+207 the same bytes in two
writes (what 4.2.18.Final's WeightedFairQueueByteDistributor writes). Sizes run alternately within each round; the
table gives per size the median (range over the rounds) of the bursts' p50, p99 and max and the share over 10 ms
(the first fifth of each run is warm-up and dropped).
"""
import argparse
import os
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time

PORT = 9107
NETLAB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netlab.sh")


def serve(host, sizes):
    payload = {n: b"x" * n for n in sizes}
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, PORT))
    listener.listen()
    print("ready", flush=True)

    def connection(c):
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pending = b""
        while True:
            data = c.recv(4096)
            if not data:
                return
            pending += data
            while len(pending) >= 8:
                (count,) = struct.unpack("!q", pending[:8])
                pending = pending[8:]
                for _ in range(count):
                    for n in sizes:
                        c.sendall(payload[n])

    while True:
        c, _ = listener.accept()
        threading.Thread(target=connection, args=(c,), daemon=True).start()


def client(host, response, burst, ticks):
    c = socket.create_connection((host, PORT), timeout=30)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sent = []
    latencies = []
    done = threading.Event()

    def reader():
        received = 0
        while len(latencies) < ticks:
            data = c.recv(1 << 20)
            if not data:
                break
            received += len(data)
            while len(latencies) < ticks and received >= (len(latencies) + 1) * response * burst:
                latencies.append(time.monotonic() - sent[len(latencies)])
        done.set()

    threading.Thread(target=reader, daemon=True).start()
    start = time.monotonic()
    for k in range(ticks):
        due = start + k * 0.01
        while time.monotonic() < due:
            time.sleep(due - time.monotonic())
        sent.append(time.monotonic())
        c.sendall(struct.pack("!q", burst))
    if not done.wait(30) or len(latencies) < ticks:
        sys.exit("tcp-stall: %d of %d bursts arrived" % (len(latencies), ticks))
    measured = sorted(latencies[ticks // 5:])
    n = len(measured)
    print("%.3f %.3f %.3f %.4f" % (1000 * measured[n // 2], 1000 * measured[int(n * 0.99)], 1000 * measured[-1],
                                   sum(1 for x in measured if x > 0.010) / n))


def lab(role, *command):
    return [NETLAB, "exec", role] + list(command)


def run(args):
    host = subprocess.run([NETLAB, "addr", "server"], check=True, capture_output=True, text=True).stdout.strip()
    peer = subprocess.run([NETLAB, "addr", "client"], check=True, capture_output=True, text=True).stdout.strip()
    cc = subprocess.run(lab("server", "ip", "route", "get", peer), capture_output=True, text=True).stdout
    results = {spec: [] for spec in args.sizes}
    me = os.path.abspath(__file__)
    for r in range(1, args.rounds + 1):
        for spec in args.sizes:
            sizes = [int(x) for x in spec.split("+")]
            server = subprocess.Popen(lab("server", sys.executable, me, "--serve", host, spec),
                                      stdout=subprocess.PIPE, text=True)
            try:
                if server.stdout.readline().strip() != "ready":
                    sys.exit("tcp-stall: the server did not start")
                out = subprocess.run(lab("client", sys.executable, me, "--client", host, str(sum(sizes)),
                                         str(args.burst), str(args.ticks)),
                                     check=True, capture_output=True, text=True).stdout.split()
            finally:
                server.kill()
                server.wait()
            results[spec].append([float(x) for x in out])
            print("tcp-stall: round %d, sends %s: p50 %s ms, p99 %s ms, max %s ms, over 10 ms %s" %
                  (r, spec, out[0], out[1], out[2], out[3]), file=sys.stderr)
    print("\nBursts of %d responses every 10 ms, one connection, %d rounds; %s" %
          (args.burst, args.rounds, " ".join(cc.split()[:12])))
    print("| sends per response | p50 ms | p99 ms | max ms | bursts over 10 ms |")
    print("|---|---|---|---|---|")
    for spec, rows in results.items():
        cell = lambda i, f: (f + " (" + f + "-" + f + ")") % (statistics.median(x[i] for x in rows),
                                                            min(x[i] for x in rows), max(x[i] for x in rows))
        print("| %s | %s | %s | %s | %s |" % (spec, cell(0, "%.2f"), cell(1, "%.2f"), cell(2, "%.1f"),
                                             cell(3, "%.3f")))


def main():
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2], [int(x) for x in sys.argv[3].split("+")])
        return
    if sys.argv[1:2] == ["--client"]:
        client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", nargs="+", default=["65588", "65381+207"],
                   help="per response, the sizes of its send()s joined by + (default: 65588 65381+207)")
    p.add_argument("--burst", type=int, default=16)
    p.add_argument("--ticks", type=int, default=600, help="bursts per run, one every 10 ms (default 600)")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    for spec in args.sizes:
        if not all(x.isdigit() and int(x) > 0 for x in spec.split("+")):
            p.error("--sizes: '%s' is not sizes joined by +" % spec)
    if subprocess.run([NETLAB, "addr", "server"], capture_output=True).returncode != 0:
        sys.exit("tcp-stall: no lab is up: run tools/netlab.sh up first")
    run(args)


if __name__ == "__main__":
    main()
