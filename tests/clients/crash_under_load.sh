#!/usr/bin/env bash
# kill -9 of the server under sysbench load, then a restart that must recover: three cycles.
# Each cycle runs `sysbench oltp_read_write` (4 threads) and a PyMySQL writer of acknowledged
# autocommit inserts (durable_writer.py), kills the server with SIGKILL after about 4 s,
# restarts it on the same data directory (recovery replays the log) and checks that
#   - COUNT(*) and SUM(k) agree via the primary key, via index k_1 and via a full scan, and
#     the row count is unchanged (as scripts/sysbench-ci.sh checks after a clean run);
#   - every insert the writer saw acknowledged is there.
# At the end the server must shut down cleanly on SIGTERM.
#
# usage: tests/clients/crash_under_load.sh path/to/zipdb [cycles] [seconds before the kill]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(realpath "${1:?usage: $0 path/to/zipdb [cycles] [seconds]}")
CYCLES=${2:-3}
LOAD_SECS=${3:-4}
. "$HERE/lib.sh"
PY=$(find_python)
WORK=$(mktemp -d)
SERVER_PID= SB_PID= W_PID=
cleanup() {
    local p
    for p in $SB_PID $W_PID $SERVER_PID; do kill -9 "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
start_server "$BIN" "$WORK/data" "$WORK/log"
SQL() { mariadb -h 127.0.0.1 -P "$PORT" -u root --batch --skip-column-names "$@"; }
SQL -e "CREATE DATABASE sbtest"
SQL sbtest -e "CREATE TABLE acked (id BIGINT PRIMARY KEY, note VARCHAR(40))"
ROWS=1000
sb() {
    sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$PORT" --mysql-user=root \
        --mysql-db=sbtest --tables=2 --table-size=$ROWS "$@"
}
sb oltp_read_write prepare >"$WORK/prepare.out" 2>&1 || {
    cat "$WORK/prepare.out"; echo "FAILED: sysbench prepare"; exit 1; }

check_consistency() {
    local t by_pk by_k all
    for t in sbtest1 sbtest2; do
        by_pk=$(SQL sbtest -e "SELECT COUNT(*), SUM(k) FROM $t WHERE id BETWEEN -2147483648 AND 2147483647")
        by_k=$(SQL sbtest -e "SELECT COUNT(*), SUM(k) FROM $t WHERE k BETWEEN -2147483648 AND 2147483647")
        all=$(SQL sbtest -e "SELECT COUNT(*), SUM(k) FROM $t")
        echo "  $t: primary key [$by_pk], index k_1 [$by_k], scan [$all]"
        [ "$by_pk" = "$by_k" ] && [ "$by_pk" = "$all" ] || { echo "FAILED: index and table disagree"; exit 1; }
        [ "$(echo "$all" | cut -f1)" = "$ROWS" ] || { echo "FAILED: row count changed"; exit 1; }
    done
}

next_id=1
for cycle in $(seq 1 "$CYCLES"); do
    sb --threads=4 --time=30 --report-interval=1 oltp_read_write run >"$WORK/run.out" 2>&1 &
    SB_PID=$!
    "$PY" "$HERE/durable_writer.py" write "$PORT" "$WORK/acked" "$next_id" >"$WORK/writer.out" 2>&1 &
    W_PID=$!
    sleep "$LOAD_SECS"
    # Both must still be running: sysbench stops on errors it does not retry.
    kill -0 "$SB_PID" 2>/dev/null || { cat "$WORK/run.out"; echo "FAILED: sysbench ended before the kill"; exit 1; }
    kill -0 "$W_PID" 2>/dev/null || { cat "$WORK/writer.out"; echo "FAILED: writer ended before the kill"; exit 1; }
    tps=$(grep -o 'tps: [0-9.]*' "$WORK/run.out" | tail -n 1 || true)
    kill -9 "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
    # sysbench reports the lost connection as fatal and exits non-zero: expected here.
    wait "$SB_PID" 2>/dev/null || true
    SB_PID=
    grep -q "Lost connection\|gone away\|Can't connect" "$WORK/run.out" || {
        cat "$WORK/run.out"; echo "FAILED: sysbench did not see the server die"; exit 1; }
    wrc=0
    wait "$W_PID" || wrc=$?
    W_PID=
    cat "$WORK/writer.out"
    [ "$wrc" = 0 ] || { echo "FAILED: writer (exit $wrc)"; exit 1; }
    next_id=$(($(tail -n 1 "$WORK/acked") + 2))
    lines_before=$(wc -l <"$WORK/log")
    t0=$(date +%s.%N)
    start_server "$BIN" "$WORK/data" "$WORK/log"
    echo "cycle $cycle: killed under load (sysbench last $tps), restarted in" \
        "$(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }") s:"
    tail -n +"$((lines_before + 1))" "$WORK/log" | grep -i "recover" | tail -n 2 | sed 's/^/  /'
    tail -n +"$((lines_before + 1))" "$WORK/log" | grep -qi "recover" || {
        tail -n +"$((lines_before + 1))" "$WORK/log"; echo "FAILED: the restart did not run recovery"; exit 1; }
    check_consistency
    "$PY" "$HERE/durable_writer.py" check "$PORT" "$WORK/acked" "$next_id" || exit 1
done
# Still fully usable: a short clean sysbench run, then the checks once more.
sb --threads=4 --time=2 oltp_read_write run >"$WORK/run.out" 2>&1 || {
    cat "$WORK/run.out"; echo "FAILED: sysbench after the last recovery"; exit 1; }
check_consistency
stop_server "$WORK/log"
echo "crash_under_load: $CYCLES kill -9 cycles recovered consistently, no acknowledged insert lost"
