#!/usr/bin/env bash
# The server under real clients (tests/clients/): a scripted `mariadb` session compared with
# its expected output, every column type through PyMySQL, 500 concurrent connections, and
# kill -9 under sysbench load followed by recovery (3 cycles). Prints "ok:" or "FAILED:" per
# test and exits non-zero if any failed.
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

# The two Python tests share one server, which must then still shut down cleanly.
WORK=$(mktemp -d)
SERVER_PID=
trap '[ -n "$SERVER_PID" ] && kill -9 $SERVER_PID 2>/dev/null; rm -rf "$WORK"' EXIT
python_tests() {
    start_server "$BIN" "$WORK/data" "$WORK/log" || return 1
    run "pymysql_types" "$PY" tests/clients/pymysql_types.py "$PORT"
    run "many_connections (500)" "$PY" tests/clients/many_connections.py "$PORT" 500
    stop_server "$WORK/log"
}

run "mariadb_session" bash tests/clients/mariadb_session.sh "$BIN"
run "python clients, clean shutdown" python_tests
run "crash_under_load (3 x kill -9)" bash tests/clients/crash_under_load.sh "$BIN" 3

if [ "${#failed[@]}" -gt 0 ]; then
    echo "clients: FAILED: ${failed[*]}"
    exit 1
fi
echo "clients: all passed"
