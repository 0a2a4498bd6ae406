#!/usr/bin/env bash
# LOAD DATA LOCAL INFILE with the real tools: the `mariadb` client (--local-infile=1),
# `mysqlimport --local` and PyMySQL (local_infile=True) load the same files into zipdb; the
# rows read back, the info line and the warnings must be what MariaDB gives for them
# (docs/COMPATIBILITY.md). Then a client that may not send files gets 4166 (as with
# `local_infile` OFF), a load of a server file 1290, and the connection stays usable after
# each. A KILL QUERY from another connection stops a long load with 1317 and leaves nothing.
#
# usage: tests/clients/load_data_local.sh path/to/zipdb
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(realpath "${1:?usage: $0 path/to/zipdb}")
. "$HERE/lib.sh"
WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
    [ -n "$SERVER_PID" ] && { kill -9 "$SERVER_PID" && wait "$SERVER_PID"; } 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

start_server "$BIN" "$WORK/data" "$WORK/server.log"
db() { mariadb -h 127.0.0.1 -P "$PORT" -u root "$@"; }

db -e "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, n INT, c VARCHAR(20) DEFAULT 'dflt')"

# Tabs, \N, an escaped tab, a short row (1261), a long row (1262), a duplicate key (skipped).
printf '1\t10\ta\n2\t\\N\tb\\tc\n3\t30\n4\t40\tx\textra\n1\t99\tdup\n' >"$WORK/t.tsv"
out=$(db --local-infile=1 -vv d -e "LOAD DATA LOCAL INFILE '$WORK/t.tsv' INTO TABLE t; SHOW WARNINGS" 2>&1)
echo "$out" | grep -q "Records: 5  Deleted: 0  Skipped: 1  Warnings: 3" || fail "info line: $out"
for code in 1261 1262 1062; do
    echo "$out" | grep -q "$code" || fail "warning $code missing: $out"
done
got=$(db -N d -e "SELECT id, IFNULL(n, 'NULL'), c FROM t ORDER BY id")
want=$(printf '1\t10\ta\n2\tNULL\tb\\tc\n3\t30\tdflt\n4\t40\tx')
[ "$got" = "$want" ] || fail "rows after mariadb load: $got"

# mysqlimport: the table is the file's base name; CSV with quotes, REPLACE.
printf '"1","11","one, quoted"\n"5","50","q""q"\n' >"$WORK/t.txt"
mysqlimport --local -h 127.0.0.1 -P "$PORT" -u root --replace \
    --fields-terminated-by=, --fields-optionally-enclosed-by='"' d "$WORK/t.txt" >"$WORK/imp.out" 2>&1 ||
    fail "mysqlimport: $(cat "$WORK/imp.out")"
grep -q "Records: 2  Deleted: 1  Skipped: 0  Warnings: 0" "$WORK/imp.out" || fail "mysqlimport: $(cat "$WORK/imp.out")"
got=$(db -N d -e "SELECT id, n, c FROM t WHERE id IN (1, 5) ORDER BY id")
want=$(printf '1\t11\tone, quoted\n5\t50\tq"q')
[ "$got" = "$want" ] || fail "rows after mysqlimport: $got"

# 200,000 rows in one load (200 INSERT batches, one transaction).
seq 1 200000 | awk '{printf "%d\t%d\tr%d\n", $1 + 1000, $1 % 97, $1}' >"$WORK/big.tsv"
db --local-infile=1 d -e "LOAD DATA LOCAL INFILE '$WORK/big.tsv' INTO TABLE t" || fail "big load"
[ "$(db -N d -e 'SELECT COUNT(*), SUM(n) FROM t WHERE id > 1000')" = "$(printf '200000\t%s' "$(awk '{s += $2} END {print s}' "$WORK/big.tsv")")" ] ||
    fail "big load rows"

# Refusals; the connection goes on after each.
out=$(db --local-infile=0 d -e "LOAD DATA LOCAL INFILE '$WORK/t.tsv' INTO TABLE t; SELECT 1" 2>&1 || true)
echo "$out" | grep -q "ERROR 4166" || fail "no 4166 without local-infile: $out"
[ "$(db -N -e "SHOW VARIABLES LIKE 'local_infile'")" = "$(printf 'local_infile\tON')" ] ||
    fail "local_infile not ON by default"
out=$(db --local-infile=1 d -e "SET local_infile = 0" 2>&1 || true)
echo "$out" | grep -q "ERROR 1229" || fail "session local_infile: $out"
# (The mariadb client stops after a refused LOCAL load, even with --force.)
db -e "SET GLOBAL local_infile = OFF"
[ "$(db -N -e "SELECT @@local_infile")" = 0 ] || fail "local_infile not OFF"
out=$(db --local-infile=1 d -e "LOAD DATA LOCAL INFILE '$WORK/t.tsv' INTO TABLE t" 2>&1 || true)
echo "$out" | grep -q "ERROR 4166" || fail "local_infile OFF: $out"
db -e "SET GLOBAL local_infile = DEFAULT"
[ "$(db -N -e "SELECT @@local_infile")" = 1 ] || fail "local_infile not back ON"
out=$(db --local-infile=1 d -e "LOAD DATA INFILE '/etc/passwd' INTO TABLE t" 2>&1 || true)
echo "$out" | grep -q "ERROR 1290" || fail "server file not refused: $out"
# A file the client cannot open: it sends the empty packet at once and reports its own error
# (the mariadb client then stops, even with --force); the server answers and stays up.
out=$(db --local-infile=1 d -e "LOAD DATA LOCAL INFILE '$WORK/missing' INTO TABLE t" 2>&1 || true)
echo "$out" | grep -q "not found" || fail "missing file: $out"
[ "$(db -N -e "SELECT 'alive'")" = alive ] || fail "server gone after a missing file"

# KILL QUERY from another connection during a long load (1,000,000 rows): 1317 and none of
# its rows stay. (The mariadb client stops after a failed LOCAL load, even with --force; the
# unit tests check that the session goes on.)
before=$(db -N d -e "SELECT COUNT(*) FROM t")
for _ in 1 2 3 4 5; do cat "$WORK/big.tsv"; done | awk '{ $1 = NR + 300000; print }' OFS='\t' >"$WORK/huge.tsv"
db --local-infile=1 d -e "LOAD DATA LOCAL INFILE '$WORK/huge.tsv' INTO TABLE t" \
    >"$WORK/kill.out" 2>&1 &
LOADER=$!
victim=
for _ in $(seq 1 100); do
    victim=$(db -N -e "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'LOAD DATA%'")
    [ -n "$victim" ] && break
    sleep 0.05
done
[ -n "$victim" ] || fail "the load never showed in the processlist"
db -e "KILL QUERY $victim"
wait "$LOADER" || true
grep -q "ERROR 1317" "$WORK/kill.out" || fail "killed load: $(cat "$WORK/kill.out")"
[ "$(db -N d -e "SELECT COUNT(*) FROM t")" = "$before" ] || fail "a killed load left rows"

PY=$(find_python)
"$PY" "$HERE/load_data_local.py" "$PORT" "$WORK" || fail "pymysql"

kill -0 "$SERVER_PID" || fail "server died"
stop_server "$WORK/server.log"
echo "load_data_local: ok"
