#!/usr/bin/env bash
# LOAD DATA LOCAL of the client test's 200,000-row file, zipdb A against zipdb B (and
# MariaDB if MARIA_PORT names a running server), alternately, ROUNDS rounds each; each
# round loads into a fresh table. Prints one line per load: who, round, seconds.
#
# usage: scripts/bench-load-data.sh path/to/zipdb-A path/to/zipdb-B [ROUNDS]
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
. "$HERE/tests/clients/lib.sh"
A=$(realpath "$1") B=$(realpath "$2") ROUNDS=${3:-3}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT
seq 1 200000 | awk '{printf "%d\t%d\tr%d\n", $1 + 1000, $1 % 97, $1}' >"$WORK/big.tsv"
start_server "$A" "$WORK/a" "$WORK/a.log"
PORT_A=$PORT
PIDS+=("$SERVER_PID")
start_server "$B" "$WORK/b" "$WORK/b.log"
PORT_B=$PORT
PIDS+=("$SERVER_PID")
one() { # name port round
    local m=(mariadb -h 127.0.0.1 -P "$2" -u root)
    "${m[@]}" -e "CREATE DATABASE IF NOT EXISTS bench; DROP TABLE IF EXISTS bench.t;
        CREATE TABLE bench.t (id INT PRIMARY KEY, n INT, c VARCHAR(20) DEFAULT 'dflt')"
    local t0 t1
    t0=$(date +%s.%N)
    "${m[@]}" --local-infile=1 bench -e "LOAD DATA LOCAL INFILE '$WORK/big.tsv' INTO TABLE t"
    t1=$(date +%s.%N)
    [ "$("${m[@]}" -N bench -e 'SELECT COUNT(*) FROM t')" = 200000 ] || {
        echo "$1: wrong row count" >&2
        exit 1
    }
    printf '%s\t%s\t%.3f\n' "$1" "$3" "$(echo "$t1 - $t0" | bc)"
}
for r in $(seq 1 "$ROUNDS"); do
    one A "$PORT_A" "$r"
    one B "$PORT_B" "$r"
    [ -n "${MARIA_PORT:-}" ] && one MariaDB "$MARIA_PORT" "$r"
done
