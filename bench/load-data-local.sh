#!/usr/bin/env bash
# 200k sysbench-shaped rows: LOAD DATA LOCAL vs multi-row INSERT (1000 rows a statement), A B A B.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/clients/lib.sh
W=$(mktemp -d); SERVER_PID=
trap '[ -n "$SERVER_PID" ] && kill -9 $SERVER_PID 2>/dev/null; rm -rf "$W"' EXIT
start_server target/release/zipdb "$W/data" "$W/log"
db() { mariadb -h 127.0.0.1 -P "$PORT" -u root "$@"; }
python3 - "$W" <<'PY'
import random, sys
w = sys.argv[1]; random.seed(1)
rows = []
for i in range(1, 200001):
    c = "-".join("%011d" % random.randrange(10**11) for _ in range(10))
    pad = "-".join("%011d" % random.randrange(10**11) for _ in range(5))
    rows.append((i, random.randrange(1, 200001), c, pad))
with open(f"{w}/rows.tsv", "w") as f:
    for r in rows: f.write("%d\t%d\t%s\t%s\n" % r)
with open(f"{w}/rows.sql", "w") as f:
    for k in range(0, len(rows), 1000):
        f.write("INSERT INTO sbtest1 VALUES " + ",".join("(%d,%d,'%s','%s')" % r for r in rows[k:k+1000]) + ";\n")
PY
db -e "CREATE DATABASE sb"
mk() { db sb -e "DROP TABLE IF EXISTS sbtest1; CREATE TABLE sbtest1 (id INT NOT NULL, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id))"; }
for rep in 1 2; do
  mk; s=$(date +%s.%N); db --local-infile=1 sb -e "LOAD DATA LOCAL INFILE '$W/rows.tsv' INTO TABLE sbtest1"; e=$(date +%s.%N)
  echo "rep $rep LOAD DATA LOCAL: $(echo "$e - $s" | bc) s, rows $(db -N sb -e 'SELECT COUNT(*) FROM sbtest1')"
  mk; s=$(date +%s.%N); db sb <"$W/rows.sql"; e=$(date +%s.%N)
  echo "rep $rep multi-row INSERT: $(echo "$e - $s" | bc) s, rows $(db -N sb -e 'SELECT COUNT(*) FROM sbtest1')"
done
stop_server "$W/log"
