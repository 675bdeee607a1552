#!/usr/bin/env bash
# A network lab on this machine: two network namespaces, "server" and "client", joined by a veth pair, with an
# optional bottleneck on the server's egress. Nothing outside the two namespaces is touched: the addresses, routes,
# qdiscs and congestion control live in them, and they go away with `down`.
#
#   tools/netlab.sh up [OPTIONS]        create the lab (a stale one, from a killed run, is removed first)
#   tools/netlab.sh down                remove it (no error if there is none)
#   tools/netlab.sh exec server|client CMD [ARG...]   run CMD in that namespace
#   tools/netlab.sh run [OPTIONS] -- CMD [ARG...]     up, run CMD on the host (it reaches the namespaces with `exec`
#                                       or `ip netns exec`), then down, whatever happens (trap)
#   tools/netlab.sh addr server|client  the address of that end (for scripts); tools/netlab.sh mtu: the link's MTU
#   tools/netlab.sh show                the lab as it is: links, MTU, qdiscs, routes with their congestion control
#   tools/netlab.sh smoke               up, one TCP transfer from client to server and back, down (CI)
#
# OPTIONS (also as environment variables, in brackets; defaults after the colon):
#   --bed veth|lo       [LAB_BED: veth] veth: client and server in their own namespaces, one veth link between them;
#                       lo: both ends on the server namespace's own loopback (MTU 65536, no qdisc), the bed all
#                       earlier figures were measured on, now with the congestion control set as in the lab
#   --mtu N             [LAB_MTU: 1500] MTU of the veth pair (9000 for jumbo frames; lo keeps 65536 unless given)
#   --cc cubic|bbr|reno [LAB_CC: the host's default] congestion control of every route in both namespaces (per route,
#                       `ip route ... congctl`: the host's sysctl is not changed)
#   --qdisc tbf|htb     [LAB_QDISC: none] a bottleneck on the server's egress (veth only):
#   --rate R            [LAB_RATE] its rate (tc units: 1gbit, 10gbit)
#   --burst B           [LAB_BURST: 64kb] its bucket (tc units)
#   --limit L           [LAB_LIMIT: 1mb] its queue in bytes (tbf's limit; htb's leaf is a bfifo of that size)
#   --quickack          [LAB_QUICKACK=1] the client ACKs every segment at once (route attribute quickack): no
#                       delayed ACKs on the client's side, whatever its sending pattern
#
# Addresses (they exist only inside the namespaces): server 10.203.0.1, client 10.203.0.2
# (`tools/netlab.sh addr server` prints them for scripts). With --bed lo both are 127.0.0.1.
# Needs root, iproute2 (`ip netns`) and, for a bottleneck, tc. This kernel has htb and tbf, not fq, fq_codel or netem:
# no delay or loss can be added, BBR paces with TCP's internal pacing (no fq), and a bottleneck's queue is a plain
# FIFO (no AQM), so a run shows a short, loss-free, FIFO-queued link, not a WAN.
set -euo pipefail

PREFIX=${LAB_PREFIX:-h2lab}
NS_SERVER=$PREFIX-server
NS_CLIENT=$PREFIX-client
IF_SERVER=$PREFIX-s
IF_CLIENT=$PREFIX-c
SERVER_ADDR=10.203.0.1
CLIENT_ADDR=10.203.0.2

die() { echo "netlab: $*" >&2; exit 1; }

requirements() {
    [ "$(id -u)" = 0 ] || die "needs root (network namespaces, veth, tc); run it as root"
    command -v ip > /dev/null || die "needs ip (Debian: apt-get install iproute2)"
    ip netns list > /dev/null 2>&1 || die "'ip netns' does not work here: $(ip netns list 2>&1 | head -1)"
}

exists() { ip netns list 2>/dev/null | grep -q "^$1\b"; }

down() {
    local ns
    for ns in "$NS_SERVER" "$NS_CLIENT"; do
        if exists "$ns"; then
            # Processes left in a namespace keep sockets, not the namespace's name: kill them first.
            local pids
            pids=$(ip netns pids "$ns" 2> /dev/null || true)
            [ -z "$pids" ] || kill $pids 2> /dev/null || true
            ip netns del "$ns"
        fi
    done
    # A veth end left in the host namespace by a run killed halfway through `up`.
    ! ip link show "$IF_SERVER" > /dev/null 2>&1 || ip link del "$IF_SERVER"
    ! ip link show "$IF_CLIENT" > /dev/null 2>&1 || ip link del "$IF_CLIENT"
}

parse() {
    BED=${LAB_BED:-veth}
    MTU=${LAB_MTU:-}
    CC=${LAB_CC:-}
    QDISC=${LAB_QDISC:-}
    RATE=${LAB_RATE:-}
    BURST=${LAB_BURST:-64kb}
    LIMIT=${LAB_LIMIT:-1mb}
    QUICKACK=${LAB_QUICKACK:-}
    while [ $# -gt 0 ]; do
        case $1 in
            --bed) BED=$2; shift 2;;
            --mtu) MTU=$2; shift 2;;
            --cc) CC=$2; shift 2;;
            --qdisc) QDISC=$2; shift 2;;
            --rate) RATE=$2; shift 2;;
            --burst) BURST=$2; shift 2;;
            --limit) LIMIT=$2; shift 2;;
            --quickack) QUICKACK=1; shift;;
            --) shift; break;;
            *) die "unknown option '$1' (--bed, --mtu, --cc, --qdisc, --rate, --burst, --limit, --quickack)";;
        esac
    done
    REST=("$@")
    case $BED in veth|lo) ;; *) die "--bed: unknown value '$BED' (veth, lo)";; esac
    case $QDISC in ""|none) QDISC=;; tbf|htb) ;; *) die "--qdisc: unknown value '$QDISC' (tbf, htb; fq, fq_codel and netem are not in this kernel)";; esac
    [ -z "$QDISC" ] || [ -n "$RATE" ] || die "--qdisc $QDISC needs --rate (e.g. 1gbit)"
    [ -z "$QDISC" ] || [ "$BED" = veth ] || die "--qdisc needs --bed veth (the bottleneck is on the veth link)"
    [ -n "$MTU" ] || { [ "$BED" = lo ] && MTU=65536 || MTU=1500; }
    [[ $MTU =~ ^[0-9]+$ ]] && [ "$MTU" -ge 1280 ] || die "--mtu: '$MTU' is not a number >= 1280"
    if [ -n "$CC" ]; then
        grep -qw -- "$CC" /proc/sys/net/ipv4/tcp_available_congestion_control 2> /dev/null \
            || modprobe "tcp_$CC" 2> /dev/null \
            || die "--cc: '$CC' is not available here ($(cat /proc/sys/net/ipv4/tcp_available_congestion_control))"
    fi
}

# Every route of the namespace's main and local tables through DEV, with the congestion control and, for the
# client (QUICK non-empty), quickack.
set_routes() { # NS DEV [QUICK]
    local table route attrs=()
    [ -z "$CC" ] || attrs+=(congctl "$CC")
    [ -z "${3:-}" ] || attrs+=(quickack 1)
    [ ${#attrs[@]} -gt 0 ] || return 0
    for table in main local; do
        ip -n "$1" route show table "$table" dev "$2" | while read -r route; do
            [ -n "$route" ] || continue
            # shellcheck disable=SC2086
            ip -n "$1" route replace $route table "$table" dev "$2" "${attrs[@]}"
        done
    done
}

up() {
    requirements
    down
    # If any step fails, leave nothing behind.
    trap 'down' ERR
    ip netns add "$NS_SERVER"
    ip -n "$NS_SERVER" link set lo up
    if [ "$BED" = lo ]; then
        [ "$MTU" = 65536 ] || ip -n "$NS_SERVER" link set lo mtu "$MTU"
        [ -z "$QUICKACK" ] || die "--quickack needs --bed veth (on lo both ends share the routes)"
        set_routes "$NS_SERVER" lo
    else
        ip netns add "$NS_CLIENT"
        ip -n "$NS_CLIENT" link set lo up
        ip link add "$IF_SERVER" mtu "$MTU" netns "$NS_SERVER" type veth peer name "$IF_CLIENT" mtu "$MTU" \
            netns "$NS_CLIENT"
        ip -n "$NS_SERVER" addr add "$SERVER_ADDR/30" dev "$IF_SERVER"
        ip -n "$NS_CLIENT" addr add "$CLIENT_ADDR/30" dev "$IF_CLIENT"
        ip -n "$NS_SERVER" link set "$IF_SERVER" up
        ip -n "$NS_CLIENT" link set "$IF_CLIENT" up
        set_routes "$NS_SERVER" "$IF_SERVER"
        set_routes "$NS_CLIENT" "$IF_CLIENT" "$QUICKACK"
        case $QDISC in
            tbf)
                ip netns exec "$NS_SERVER" tc qdisc replace dev "$IF_SERVER" root tbf rate "$RATE" burst "$BURST" \
                    limit "$LIMIT";;
            htb)
                ip netns exec "$NS_SERVER" tc qdisc replace dev "$IF_SERVER" root handle 1: htb default 10
                ip netns exec "$NS_SERVER" tc class add dev "$IF_SERVER" parent 1: classid 1:10 htb rate "$RATE" \
                    ceil "$RATE" burst "$BURST"
                ip netns exec "$NS_SERVER" tc qdisc add dev "$IF_SERVER" parent 1:10 bfifo limit "$LIMIT";;
        esac
    fi
    trap - ERR
    echo "netlab: up: bed=$BED mtu=$MTU cc=${CC:-$(cat /proc/sys/net/ipv4/tcp_congestion_control) (host default)}" \
        "bottleneck=${QDISC:-none}${QDISC:+ rate=$RATE burst=$BURST limit=$LIMIT}${QUICKACK:+ client-quickack}" \
        "server=$(addr server) client=$(addr client)"
}

addr() { # server|client
    exists "$NS_SERVER" || die "no lab is up (tools/netlab.sh up)"
    if exists "$NS_CLIENT"; then
        case $1 in server) echo "$SERVER_ADDR";; client) echo "$CLIENT_ADDR";; *) die "addr: server or client";; esac
    else
        echo 127.0.0.1
    fi
}

# The MTU of the link between server and client.
mtu() {
    if exists "$NS_CLIENT"; then
        ip netns exec "$NS_SERVER" cat "/sys/class/net/$IF_SERVER/mtu"
    else
        ip netns exec "$NS_SERVER" cat /sys/class/net/lo/mtu
    fi
}

ns_of() { # server|client
    exists "$NS_SERVER" || die "no lab is up (tools/netlab.sh up)"
    case $1 in
        server) echo "$NS_SERVER";;
        # On the lo bed the client shares the server's namespace.
        client) if exists "$NS_CLIENT"; then echo "$NS_CLIENT"; else echo "$NS_SERVER"; fi;;
        *) die "exec: server or client, not '$1'";;
    esac
}

show() {
    local ns
    for ns in "$NS_SERVER" "$NS_CLIENT"; do
        exists "$ns" || continue
        echo "== $ns"
        ip -n "$ns" -br addr
        ip -n "$ns" -o link | sed -E 's/^[0-9]+: ([^:@]+)[^ ]* .* mtu ([0-9]+) .*/\1 mtu \2/'
        ip -n "$ns" route show table all | grep -v '^\(fe80\|ff00\|multicast\)\|::' || true
        ip netns exec "$ns" tc qdisc show | grep -v 'noqueue' || true
    done
}

smoke() {
    command -v python3 > /dev/null || die "smoke needs python3"
    local check='
import socket, sys
role, host = sys.argv[1], sys.argv[2]
data = bytes(range(256)) * 4096  # 1 MiB
if role == "server":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((host, 18090)); s.listen()
    print("ready", flush=True)
    c, _ = s.accept(); got = b""
    while len(got) < len(data):
        chunk = c.recv(65536)
        if not chunk: break
        got += chunk
    c.sendall(got); c.close()
else:
    c = socket.create_connection((host, 18090), timeout=10)
    cc = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
    if sys.argv[3] and cc != sys.argv[3]: sys.exit("netlab smoke: the connection runs %s, not %s" % (cc, sys.argv[3]))
    c.sendall(data); got = b""
    while len(got) < len(data):
        chunk = c.recv(65536)
        if not chunk: break
        got += chunk
    if got != data: sys.exit("netlab smoke: %d bytes came back, not the 1 MiB sent" % len(got))
    print("netlab: smoke: 1 MiB there and back over %s, congestion control %s" % (host, cc))
'
    up
    trap 'down' EXIT
    show
    local server_addr log
    server_addr=$(addr server)
    log=$(mktemp)
    ip netns exec "$(ns_of server)" python3 -c "$check" server "$server_addr" "$CC" > "$log" &
    for _ in $(seq 1 50); do grep -q ready "$log" && break; sleep 0.1; done
    ip netns exec "$(ns_of client)" python3 -c "$check" client "$server_addr" "$CC"
    wait
    rm -f "$log"
    down
    trap - EXIT
    ! exists "$NS_SERVER" && ! exists "$NS_CLIENT" || die "smoke: a namespace is left after down"
    echo "netlab: smoke: down, no namespace left"
}

cmd=${1:-}
[ $# -eq 0 ] || shift
case $cmd in
    up) parse "$@"; [ ${#REST[@]} -eq 0 ] || die "up: unexpected '${REST[*]}'"; up;;
    down) requirements; down;;
    exec) [ $# -ge 2 ] || die "usage: tools/netlab.sh exec server|client CMD [ARG...]"
          ns=$(ns_of "$1"); shift; exec ip netns exec "$ns" "$@";;
    run) parse "$@"; [ ${#REST[@]} -gt 0 ] || die "usage: tools/netlab.sh run [OPTIONS] -- CMD [ARG...]"
         up; trap 'down' EXIT INT TERM; "${REST[@]}";;
    addr) addr "${1:?usage: tools/netlab.sh addr server|client}";;
    mtu) ns_of server > /dev/null; mtu;;
    show) show;;
    smoke) parse "$@"; smoke;;
    *) die "usage: tools/netlab.sh up|down|exec|run|addr|mtu|show|smoke (the header of $0)";;
esac
