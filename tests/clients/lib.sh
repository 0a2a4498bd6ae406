# Shared by the client test scripts (sourced): start and stop zipdb servers.
#
# start_server BIN DATADIR LOG: starts `BIN serve` on a port of its choosing, appending its
# stderr to LOG; sets SERVER_PID and PORT once it listens (30 s allowed: a restart after a
# crash runs recovery first). Callers set a trap that kills $SERVER_PID.
start_server() {
    local bin=$1 data=$2 log=$3 from
    from=1
    [ -f "$log" ] && from=$(($(wc -l <"$log") + 1))
    "$bin" serve --data-dir "$data" --port 0 --pool-mb 64 >>"$log" 2>&1 &
    SERVER_PID=$!
    PORT=
    for _ in $(seq 1 300); do
        PORT=$(tail -n +"$from" "$log" | grep -o 'listening on 127.0.0.1:[0-9]*' | grep -o '[0-9]*$' || true)
        [ -n "$PORT" ] && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "server did not start:" >&2
    cat "$log" >&2
    return 1
}

# stop_server LOG: SIGTERM, which must end in a clean exit and a "clean shutdown" line.
stop_server() {
    local log=$1 rc=0
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" || rc=$?
    if [ "$rc" != 0 ] || ! grep -q "clean shutdown" "$log"; then
        tail -n 30 "$log" >&2
        echo "server did not shut down cleanly (exit $rc)" >&2
        return 1
    fi
    SERVER_PID=
}

# The Python that has PyMySQL (Debian's python3-pymysql goes with /usr/bin/python3).
find_python() {
    local p
    for p in python3 /usr/bin/python3; do
        if command -v "$p" >/dev/null && "$p" -c 'import pymysql' 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    echo "no python3 with pymysql (apt-get install python3-pymysql)" >&2
    return 1
}
