#!/usr/bin/env bash
# The server under real clients (tests/clients/): a scripted `mariadb` session compared with
# its expected output, the `mariadb` client at a terminal, every column type through PyMySQL,
# SHOW PROCESSLIST and KILL, 500 concurrent connections, Go's go-sql-driver/mysql, Node's
# mysql2, a mariadb-dump round trip through zipdb and MariaDB, and kill -9 under sysbench load
# followed by recovery (3 cycles). Prints "ok:" or "FAILED:" per test and exits non-zero if any
# failed. A missing go or node skips its test, except under CI=true, where it fails.
#
# usage: scripts/clients-ci.sh path/to/zipdb
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:?usage: $0 path/to/zipdb}")
. tests/clients/lib.sh
PY=$(find_python)
# 500 client sockets in one Python process, 500 sessions in the server: more than a default
# soft limit of 1024 files leaves room for.
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true
echo "open files limit: $(ulimit -n)"

failed=()
run() {
    local name=$1 t0 rc=0
    shift
    t0=$(date +%s.%N)
    echo "---- $name"
    "$@" || rc=$?
    local secs
    secs=$(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }")
    if [ "$rc" = 0 ]; then
        echo "ok: $name (${secs} s)"
    else
        echo "FAILED: $name (exit $rc, ${secs} s)"
        failed+=("$name")
    fi
}

# needs TOOL: whether TOOL is installed; if not, says so, and under CI=true fails.
needs() {
    command -v "$1" >/dev/null && return 0
    if [ "${CI:-}" = true ]; then
        echo "$1 is not installed (.ci/run installs it)"
        return 1
    fi
    echo "skipped: $1 is not installed"
    return 2
}

# Go's driver: module downloads go through the Go proxy; the build is cached in $WORK.
go_driver() {
    needs go || return $(($? == 2 ? 0 : 1))
    (cd tests/clients/go && go build -o "$WORK/go-client" .) && "$WORK/go-client" "127.0.0.1:$PORT"
}

# Node's mysql2, at the version package-lock.json pins.
node_mysql2() {
    needs node || return $(($? == 2 ? 0 : 1))
    needs npm || return $(($? == 2 ? 0 : 1))
    (cd tests/clients/node && npm ci --no-audit --no-fund --loglevel=error) &&
        node tests/clients/node/mysql2_test.js "$PORT"
}

# The tests below share one server, which must then still shut down cleanly.
WORK=$(mktemp -d)
SERVER_PID=
trap '[ -n "$SERVER_PID" ] && kill -9 $SERVER_PID 2>/dev/null; rm -rf "$WORK"' EXIT
shared_server_tests() {
    start_server "$BIN" "$WORK/data" "$WORK/log" || return 1
    run "mariadb_interactive (tty)" "$PY" tests/clients/mariadb_interactive.py "$PORT"
    run "pymysql_types" "$PY" tests/clients/pymysql_types.py "$PORT"
    run "kill_processlist" "$PY" tests/clients/kill_processlist.py "$PORT"
    run "go-sql-driver/mysql" go_driver
    run "node mysql2" node_mysql2
    run "many_connections (500)" "$PY" tests/clients/many_connections.py "$PORT" 500
    stop_server "$WORK/log"
}

run "mariadb_session" bash tests/clients/mariadb_session.sh "$BIN"
run "clients on one server, clean shutdown" shared_server_tests
run "load_data_local (mariadb, mysqlimport, PyMySQL)" bash tests/clients/load_data_local.sh "$BIN"
run "mysqldump_roundtrip (zipdb -> zipdb, zipdb -> MariaDB)" bash tests/clients/mysqldump_roundtrip.sh "$BIN"
run "crash_under_load (3 x kill -9)" bash tests/clients/crash_under_load.sh "$BIN" 3

if [ "${#failed[@]}" -gt 0 ]; then
    echo "clients: FAILED: ${failed[*]}"
    exit 1
fi
echo "clients: all passed"
