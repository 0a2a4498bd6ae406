#!/usr/bin/env bash
# zipdb against MariaDB 10.11 (InnoDB) under the same sysbench, on the same machine, in one run.
#
# Starts three throwaway servers with the same buffer-pool budget and their data on a RAM disk:
# zipdb with uncompressed tables (COMPRESSION='none'), zipdb with compressed tables
# (ROW_FORMAT=COMPRESSED, the default codec) and MariaDB InnoDB with ROW_FORMAT=DYNAMIC. Each gets
# the same sysbench tables; then the measured runs are interleaved (one run of each server in
# turn, repeated) so that drift of this shared machine hits all three alike. Prints every run,
# then the median QPS and TPS per server and the ratios the server issue targets.
#
# Durability is the default on both sides: zipdb's `sync` flush policy, InnoDB's
# innodb_flush_log_at_trx_commit=1. MariaDB runs with --skip-grant-tables (no accounts to set up).
#
# usage: bench/server-vs-mariadb.sh [-t tests] [-s secs] [-r rounds] [-c threads]
#                                   [-n tables] [-z rows] [-m pool_mb] [-b zipdb binary]
#   defaults: -t "oltp_point_select oltp_read_write" -s 60 -r 3 -c 16 -n 16 -z 10000 -m 128
#             -b target/release/zipdb (build it first: cargo build --release -p zipdb-server)
set -euo pipefail
cd "$(dirname "$0")/.."

TESTS="oltp_point_select oltp_read_write"
SECS=60
ROUNDS=3
THREADS=16
TABLES=16
ROWS=10000
POOL_MB=128
BIN=${CARGO_TARGET_DIR:-target}/release/zipdb
while getopts "t:s:r:c:n:z:m:b:h" o; do
    case $o in
        t) TESTS=$OPTARG ;;
        s) SECS=$OPTARG ;;
        r) ROUNDS=$OPTARG ;;
        c) THREADS=$OPTARG ;;
        n) TABLES=$OPTARG ;;
        z) ROWS=$OPTARG ;;
        m) POOL_MB=$OPTARG ;;
        b) BIN=$OPTARG ;;
        *) sed -n '2,18p' "$0"; exit 2 ;;
    esac
done
[ -x "$BIN" ] || { echo "no zipdb binary at $BIN (cargo build --release -p zipdb-server)"; exit 1; }
for c in sysbench mariadbd mariadb-install-db mariadb; do
    command -v $c >/dev/null || { echo "missing $c: apt-get install sysbench mariadb-server mariadb-client"; exit 1; }
done

BASE=$(mktemp -d /dev/shm/zipdb-vs-mariadb.XXXXXX 2>/dev/null || mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    sleep 1
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    rm -rf "$BASE"
}
trap cleanup EXIT
OUT=${OUT:-target/bench-server-vs-mariadb.csv}
mkdir -p "$(dirname "$OUT")"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The start functions run in this shell (not in $(...)), so that PIDS reaches the cleanup trap.
start_zipdb() { # name: sets PORT[name]
    local dir=$BASE/$1 port
    port=$(free_port)
    mkdir -p "$dir"
    "$BIN" serve --data-dir "$dir/data" --port "$port" --pool-mb "$POOL_MB" >"$dir/log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 100); do
        grep -q "listening on" "$dir/log" && break
        sleep 0.1
    done
    grep -q "listening on" "$dir/log" || { cat "$dir/log"; exit 1; }
    PORT[$1]=$port
}

start_mariadb() { # name: sets PORT[name]
    local dir=$BASE/$1 port
    port=$(free_port)
    mkdir -p "$dir/data"
    mariadb-install-db --no-defaults --datadir="$dir/data" --auth-root-authentication-method=normal \
        >"$dir/install.log" 2>&1
    # --user: mariadbd refuses to run as root without it (CI machines run as root).
    mariadbd --no-defaults --user="$(id -un)" --datadir="$dir/data" --socket="$dir/sock" --port="$port" \
        --bind-address=127.0.0.1 --skip-grant-tables --innodb-buffer-pool-size="${POOL_MB}M" \
        --max-connections=1000 --max-prepared-stmt-count=100000 \
        --log-error="$dir/log" --pid-file="$dir/pid" >/dev/null 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 200); do
        mariadb -h 127.0.0.1 -P "$port" -u root -e "SELECT 1" >/dev/null 2>&1 && break
        sleep 0.1
    done
    mariadb -h 127.0.0.1 -P "$port" -u root -e "SELECT 1" >/dev/null || { cat "$dir/log"; exit 1; }
    PORT[$1]=$port
}

# name → port, table options
declare -A PORT ENGINE
start_zipdb zipdb_none
ENGINE[zipdb_none]="innodb COMPRESSION='none'"
start_zipdb zipdb_compressed
ENGINE[zipdb_compressed]="innodb ROW_FORMAT=COMPRESSED"
start_mariadb innodb_dynamic
ENGINE[innodb_dynamic]="innodb ROW_FORMAT=DYNAMIC"
NAMES="zipdb_none zipdb_compressed innodb_dynamic"

sb() { # name, args...
    local n=$1
    shift
    sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="${PORT[$n]}" --mysql-user=root \
        --mysql-db=sbtest --tables="$TABLES" --table-size="$ROWS" \
        --mysql_storage_engine="${ENGINE[$n]}" "$@"
}

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); data in $BASE"
echo "zipdb: $("$BIN" --version); MariaDB: $(mariadbd --version | awk '{print $3}')"
echo "tables $TABLES x $ROWS rows, $THREADS threads, pool ${POOL_MB} MB, ${SECS}s x $ROUNDS rounds per test"
for n in $NAMES; do
    mariadb -h 127.0.0.1 -P "${PORT[$n]}" -u root -e "CREATE DATABASE sbtest"
    t0=$(date +%s.%N)
    sb "$n" --threads=4 oltp_read_write prepare >"$BASE/$n.prepare" 2>&1 || { cat "$BASE/$n.prepare"; exit 1; }
    t1=$(date +%s.%N)
    echo "load $n: $(echo "$t1 - $t0" | bc) s"
done

echo "test,server,round,tps,qps,p95_ms" >"$OUT"
for t in $TESTS; do
    for n in $NAMES; do # warm-up: the working set into each pool
        sb "$n" --threads="$THREADS" --time=$((SECS / 3 + 1)) "$t" run >/dev/null 2>&1
    done
    for r in $(seq 1 "$ROUNDS"); do
        for n in $NAMES; do
            sb "$n" --threads="$THREADS" --time="$SECS" --percentile=95 "$t" run >"$BASE/run.out" 2>&1 \
                || { cat "$BASE/run.out"; echo "FAILED: $t on $n"; exit 1; }
            tps=$(awk '/transactions:/ {gsub(/\(/,"",$3); print $3}' "$BASE/run.out")
            qps=$(awk '/queries:/ && /per sec/ {gsub(/\(/,"",$3); print $3}' "$BASE/run.out")
            p95=$(awk '/95th percentile:/ {print $3}' "$BASE/run.out")
            echo "$t,$n,$r,$tps,$qps,$p95" >>"$OUT"
            printf '%-18s %-17s round %s: %10s tps %11s qps  p95 %s ms\n' "$t" "$n" "$r" "$tps" "$qps" "$p95"
        done
    done
done

for n in $NAMES; do
    sz=$(du -sb "$BASE/$n/data" | cut -f1)
    tables=$(mariadb -h 127.0.0.1 -P "${PORT[$n]}" -u root --batch --skip-column-names -e \
        "SELECT SUM(DATA_LENGTH + INDEX_LENGTH) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'sbtest'")
    echo "size after the runs, $n: tables $((tables / 1048576)) MiB (information_schema.TABLES" \
        "data + index), data dir $((sz / 1048576)) MiB (logs included)"
done

python3 - "$OUT" <<'EOF'
import csv, statistics, sys
runs = list(csv.DictReader(open(sys.argv[1])))
med = {}
for t in dict.fromkeys(r["test"] for r in runs):
    print(f"\n{t}: median of rounds (min..max)")
    for n in dict.fromkeys(r["server"] for r in runs):
        q = [float(r["qps"]) for r in runs if r["test"] == t and r["server"] == n]
        p = [float(r["tps"]) for r in runs if r["test"] == t and r["server"] == n]
        med[t, n] = statistics.median(q)
        print(f"  {n:17s} {statistics.median(q):11.0f} qps ({min(q):.0f}..{max(q):.0f})"
              f"  {statistics.median(p):9.0f} tps")
    z, c, i = (med.get((t, n)) for n in ("zipdb_none", "zipdb_compressed", "innodb_dynamic"))
    if z and c and i:
        print(f"  zipdb none / InnoDB dynamic:       {z / i:.2f}x")
        print(f"  zipdb compressed / InnoDB dynamic: {c / i:.2f}x")
        print(f"  zipdb compressed / zipdb none:     {c / z:.2f}x")
EOF
echo "runs: $OUT"
