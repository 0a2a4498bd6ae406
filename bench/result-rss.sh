#!/usr/bin/env bash
# The server's peak RSS while one client reads a large `SELECT *` (issue 20's memory target;
# docs/design/issue20-sql-engine.md §1.6, steps E1/E2). Loads ROWS sysbench-shaped rows into a
# throwaway zipdb, restarts it, warms the pool with a full scan, then reads the whole table
# with `mariadb --quick` (the client does not hold the result) and prints VmHWM (peak RSS,
# /proc/PID/status) before and after the read.
#
# usage: bench/result-rss.sh path/to/zipdb [ROWS=300000] [POOL_MB=256]
set -euo pipefail
BIN=$(realpath "${1:?usage: $0 path/to/zipdb [rows] [pool-mb]}")
ROWS=${2:-300000}
POOL=${3:-256}
WORK=$(mktemp -d)
PORT=$((20000 + RANDOM % 20000))
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT

my() { mariadb -h127.0.0.1 -P"$PORT" -uroot "$@"; }
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$PID/status"; }
start() {
    "$BIN" serve --data-dir "$WORK/d" --port "$PORT" --pool-mb "$POOL" >>"$WORK/log" 2>&1 &
    PID=$!
    for _ in $(seq 300); do
        my -e 'SELECT 1' >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    cat "$WORK/log"
    exit 1
}
stop() {
    kill "$PID"
    wait "$PID" || true
    PID=
}

start
my -e 'CREATE DATABASE sb; CREATE TABLE sb.sbtest1 (id INT PRIMARY KEY, k INT NOT NULL,
    c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL, KEY k_1 (k))'
# sysbench's shapes: c is 10 groups of 11 digits, pad 5 groups; deterministic values.
python3 - "$ROWS" <<'EOF' | my sb
import sys
rows = int(sys.argv[1])
def digits(i, groups):
    return "-".join(f"{(i * 2654435761 + g * 40503) % 10**11:011d}" for g in range(groups))
for start in range(1, rows + 1, 1000):
    vals = ",".join(f"({i},{(i * 7919) % rows},'{digits(i, 10)}','{digits(i + 1, 5)}')"
                    for i in range(start, min(start + 1000, rows + 1)))
    print(f"INSERT INTO sbtest1 VALUES {vals};")
EOF
stop
start
my -e 'SELECT COUNT(*), SUM(LENGTH(c)) FROM sb.sbtest1' >/dev/null
before=$(hwm)
bytes=$(my --quick -e 'SELECT * FROM sb.sbtest1' | wc -c)
after=$(hwm)
echo "rows=$ROWS pool_mb=$POOL result_bytes=$bytes vmhwm_before_kb=$before" \
    "vmhwm_after_kb=$after growth_mb=$(((after - before) / 1024))"
