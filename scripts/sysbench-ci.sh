#!/usr/bin/env bash
# Every sysbench 1.0.20 Lua test against a fresh zipdb server: prepare, a short run with 4
# threads, cleanup; with server-side prepared statements (sysbench's default) and with
# --db-ps-mode=disable (everything as text queries). sysbench exits non-zero on any error it
# does not retry (it retries 1213, 1205 and 1020 after the server rolled the transaction
# back), so a zero exit is the "no other errors" check. After oltp_read_write the row count
# and the secondary index are checked against the primary key with queries; at the end the
# server is stopped with SIGTERM and must shut down cleanly.
#
# usage: scripts/sysbench-ci.sh path/to/zipdb [seconds per run]
set -euo pipefail
BIN=$(realpath "${1:?usage: $0 path/to/zipdb [seconds]}")
SECS=${2:-3}
WORK=$(mktemp -d)
"$BIN" serve --data-dir "$WORK/data" --port 0 --pool-mb 64 >"$WORK/log" 2>&1 &
PID=$!
trap 'kill -9 $PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
PORT=
for _ in $(seq 1 100); do
    PORT=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$WORK/log" | grep -o '[0-9]*$' || true)
    [ -n "$PORT" ] && break
    sleep 0.1
done
[ -n "$PORT" ] || { echo "server did not start:"; cat "$WORK/log"; exit 1; }
SQL="mariadb -h 127.0.0.1 -P $PORT -u root --batch --skip-column-names"
$SQL -e "CREATE DATABASE sbtest"
ROWS=1000
SB="sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root
    --mysql-db=sbtest --table-size=$ROWS --threads=4"
check_consistency() {
    local t
    for t in sbtest1 sbtest2; do
        local by_pk by_k
        by_pk=$($SQL sbtest -e "SELECT COUNT(*), SUM(k) FROM $t WHERE id BETWEEN -2147483648 AND 2147483647")
        by_k=$($SQL sbtest -e "SELECT COUNT(*), SUM(k) FROM $t WHERE k BETWEEN -2147483648 AND 2147483647")
        local all
        all=$($SQL sbtest -e "SELECT COUNT(*), SUM(k) FROM $t")
        echo "  $t: primary key [$by_pk], index k_1 [$by_k], scan [$all]"
        [ "$by_pk" = "$by_k" ] && [ "$by_pk" = "$all" ] || { echo "index and table disagree"; exit 1; }
        [ "$(echo "$all" | cut -f1)" = "$ROWS" ] || { echo "row count changed"; exit 1; }
    done
}
TESTS="oltp_read_write oltp_read_only oltp_write_only oltp_point_select oltp_update_index
    oltp_update_non_index oltp_insert oltp_delete select_random_points select_random_ranges
    bulk_insert"
for mode in auto disable; do
    for t in $TESTS; do
        start=$(date +%s.%N)
        # select_random_* refuse more than one table.
        case $t in select_random_*) tables=1 ;; *) tables=2 ;; esac
        SB_T="$SB --tables=$tables"
        $SB_T --db-ps-mode=$mode "$t" prepare >"$WORK/prepare.out" 2>&1 || {
            cat "$WORK/prepare.out"; echo "FAILED: $t prepare ($mode)"; exit 1; }
        $SB_T --db-ps-mode=$mode --time="$SECS" "$t" run >"$WORK/run.out" 2>&1 || {
            cat "$WORK/run.out"; echo "FAILED: $t run ($mode)"; exit 1; }
        summary=$(grep -E "transactions:|queries:|ignored errors:" "$WORK/run.out" | tr -s ' ' | tr '\n' ' ')
        echo "ok: $t ps-mode=$mode: $summary"
        if [ "$t" = oltp_read_write ]; then
            check_consistency
        fi
        $SB_T --db-ps-mode=$mode "$t" cleanup >/dev/null 2>&1 || { echo "FAILED: $t cleanup"; exit 1; }
        left=$($SQL sbtest -e "SHOW TABLES" | wc -l)
        [ "$left" = 0 ] || { echo "cleanup left $left tables"; exit 1; }
        echo "   ($(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $start }") s)"
    done
done
kill -TERM $PID
wait $PID || { cat "$WORK/log"; echo "server did not shut down cleanly"; exit 1; }
grep -q "clean shutdown" "$WORK/log" || { cat "$WORK/log"; exit 1; }
echo "sysbench: all tests passed in both modes"
