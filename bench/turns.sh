#!/usr/bin/env bash
# bench/turns.sh: `POST /v2.0/sms` on SQLite through wrk, builds in turns, with Kannel beside
# them. On a 2-core VM the same build varies by a third between stretches of a minute, so a
# change is compared with the build before it round after round, each run on a fresh server
# and an empty database, and the means are what count (docs/benchmarks.md).
#
#   bench/turns.sh [-c CONNS] [-d SECS] [-r ROUNDS] [-k] BINARY [BINARY...] [-- SERVER ARGS]
#
#   -c  connections (8)      -d  seconds a run (6)      -r  rounds (3)
#   -k  Kannel too, a run each round (needs PEER_BENCH: a folder with the shared peer-bench's
#       kannel.sh, and Debian's kannel and kannel-extras)
#   arguments after `--` go to every dialtone server (`--workers false`, `--sim-step 60000`)
#
# Each run prints the accepted rate, p50 and p99, the server's CPU per accepted SMS (every
# thread, from /proc) and its writer thread's, and the SMS statuses when the load ended.
# Needs wrk and python3. Only loopback is used; every process it starts it stops.
set -euo pipefail

conns=8 secs=6 rounds=3 kannel=0
while getopts "c:d:r:k" opt; do
    case $opt in
        c) conns=$OPTARG ;;
        d) secs=$OPTARG ;;
        r) rounds=$OPTARG ;;
        k) kannel=1 ;;
        *) sed -n '2,16p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
bins=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do bins+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
server_args=("$@")
[ ${#bins[@]} -gt 0 ] || { sed -n '2,16p' "$0"; exit 2; }
if [ $kannel = 1 ] && [ ! -x "${PEER_BENCH:-}/kannel.sh" ]; then
    echo "-k needs PEER_BENCH set to the peer-bench folder (kannel.sh)" >&2; exit 2
fi

port=18090
token=turns-admin-token-123
work=$(mktemp -d /tmp/dialtone-turns.XXXXXX)
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    [ $kannel = 1 ] && PB_WORK=$work/pb "$PEER_BENCH/kannel.sh" stop >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT

# One machine-readable line per wrk run (the shared peer-bench's report.lua does the same);
# with TURNS_BODY set, the request is a JSON POST of it.
cat >"$work/report.lua" <<'EOF'
local body = os.getenv("TURNS_BODY")
if body and body ~= "" then
  wrk.method = "POST"
  wrk.body = body
  wrk.headers["content-type"] = "application/json"
end
done = function(summary, latency, requests)
  io.write(string.format('WRK %d %d %d %.1f %.1f\n', summary.requests, summary.duration,
    summary.errors.status + summary.errors.read + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
EOF

ticks() { awk '{print $14 + $15}' "$1"; }
wait_port() {
    for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
    echo "port $1 did not open" >&2; return 1
}

# run_dialtone BINARY: one run on a fresh server; prints its line and appends its rate.
run_dialtone() {
    local bin=$1 data=$work/data
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "port $port is taken" >&2; exit 1; fi
    rm -rf "$data"; mkdir -p "$data"
    DIALTONE_ADMIN_TOKEN=$token RUST_LOG=warn "$bin" serve --listen 127.0.0.1:$port \
        --data-dir "$data" "${server_args[@]}" >"$work/server.log" 2>&1 &
    server=$!
    wait_port $port
    local key
    key=$(curl -sf -X POST http://127.0.0.1:$port/admin/accounts -H "Authorization: Bearer $token" \
        -H 'content-type: application/json' -d '{"name":"turns","credit":"100000000.00"}' \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["apiKey"])')
    local writer="" t
    for t in /proc/$server/task/*; do
        [ "$(cat "$t/comm" 2>/dev/null)" = sqlite-writer ] && writer=$t
    done
    local p0 w0=0 p1 w1=0 out
    p0=$(ticks /proc/$server/stat); [ -n "$writer" ] && w0=$(ticks "$writer/stat")
    out=$(TURNS_BODY='{"body":"benchmark message"}' wrk -t2 -c"$conns" -d"${secs}s" \
        -s "$work/report.lua" -H "x-api-key: $key" \
        "http://127.0.0.1:$port/v2.0/sms?to=%2B447700900123" | grep '^WRK ')
    p1=$(ticks /proc/$server/stat); [ -n "$writer" ] && w1=$(ticks "$writer/stat")
    local ended; ended=$(date +%s%3N)
    kill "$server"; wait "$server" 2>/dev/null || true; server=
    python3 - "$bin" "$out" "$p0" "$p1" "$w0" "$w1" "$data/dialtone.db" "$(getconf CLK_TCK)" "$ended" <<'EOF'
import sqlite3, sys
bin, out, p0, p1, w0, w1, db, hz, ended = sys.argv[1:]
n, us, errors, p50, p99 = out.split()[1:]
n, us, hz = int(n), int(us), int(hz)
per = lambda a, b: 1e6 * (int(b) - int(a)) / hz / max(n, 1)
con = sqlite3.connect(db)
status = "status"
columns = [c[1] for c in con.execute("PRAGMA table_info(sms)")]
if "plan_sent_at" in columns:
    # Planned moves (migrations 0038, 0039) count as made once due, as every read shows them.
    delivered = ("WHEN plan_delivered_at <= :now THEN 'delivered' "
                 if "plan_delivered_at" in columns else "")
    status = (f"CASE {delivered}WHEN plan_queued_at <= :now THEN 'remote-queued' "
              "WHEN plan_sent_at <= :now THEN 'sent' ELSE status END")
statuses = dict(con.execute(f"SELECT {status}, count(*) FROM sms GROUP BY 1", {"now": int(ended)}))
print(f"{bin}: {n / (us / 1e6):.0f}/s p50 {float(p50) / 1000:.2f} ms p99 {float(p99) / 1000:.2f} ms"
      f" errors {errors} | CPU per SMS: server {per(p0, p1):.0f} us, writer {per(w0, w1):.0f} us"
      f" | when the load ended {statuses}")
EOF
}

run_kannel() {
    PB_WORK=$work/pb "$PEER_BENCH/kannel.sh" start >/dev/null
    local out
    out=$(wrk -t2 -c"$conns" -d"${secs}s" -s "$work/report.lua" \
        "http://127.0.0.1:13013/cgi-bin/sendsms?username=perf&password=perf&to=%2B447700900123&text=benchmark+message" \
        | grep '^WRK ')
    PB_WORK=$work/pb "$PEER_BENCH/kannel.sh" stop >/dev/null
    python3 -c 'import sys; n, us, e, p50, p99 = map(float, sys.argv[1].split()[1:]); print(f"kannel: {n / (us / 1e6):.0f}/s p50 {p50 / 1000:.2f} ms p99 {p99 / 1000:.2f} ms errors {e:.0f}")' "$out"
}

echo "POST /v2.0/sms, $conns connections, ${secs} s a run, $rounds rounds; $(nproc) cores"
for round in $(seq 1 "$rounds"); do
    echo "round $round"
    for bin in "${bins[@]}"; do run_dialtone "$bin" | tee -a "$work/lines"; done
    [ $kannel = 1 ] && run_kannel | tee -a "$work/lines"
done
echo "means over $rounds rounds (accepted/s):"
awk -F': ' '{split($2, a, "/s"); sum[$1] += a[1]; n[$1]++}
    END {for (k in sum) printf "  %s: %.0f\n", k, sum[k] / n[k]}' "$work/lines"
