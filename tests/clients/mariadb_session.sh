#!/usr/bin/env bash
# A scripted session with the stock `mariadb` client against a fresh zipdb server:
# mariadb_session.sql is fed to `mariadb --batch --force -vvv` (--force goes on after errors;
# -vvv echoes each statement and prints "Query OK, N rows affected", the info line and tables).
# Its stdout and stderr (the "ERROR 1062 (23000) at line N: ..." lines) must match
# mariadb_session.expected exactly, timings aside.
#
# The expected file was checked line by line against MariaDB 10.11 running the same script.
# Differences that remain, all known: zipdb warns 1266 for ENGINE=InnoDB and takes
# COMPRESSION='lz4' (MariaDB refuses it, 1911); types print as MySQL 8 does (`int`, not
# `int(11)`; DEFAULT '0'); SHOW INDEX has no `Ignored` column and sends its numbers as strings;
# the error text says "zipdb server version" and 1054 says 'field list' (MySQL's wording);
# the client pads some columns to 4 ("two  ", "n    ", "Key ") because zipdb does not mark
# expressions such as 1 + 1 and COUNT(*) NOT NULL in their metadata.
#
# usage: tests/clients/mariadb_session.sh path/to/zipdb [--update]
#   --update rewrites the expected file from this run (read it before committing).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(realpath "${1:?usage: $0 path/to/zipdb [--update]}")
. "$HERE/lib.sh"
WORK=$(mktemp -d)
SERVER_PID=
trap '[ -n "$SERVER_PID" ] && kill -9 $SERVER_PID 2>/dev/null; rm -rf "$WORK"' EXIT
start_server "$BIN" "$WORK/data" "$WORK/log"

rc=0
mariadb -h 127.0.0.1 -P "$PORT" -u root --batch --force -vvv \
    <"$HERE/mariadb_session.sql" >"$WORK/stdout" 2>"$WORK/stderr" || rc=$?
{
    # Timings vary: "1 row in set (0.001 sec)", "Query OK, 0 rows affected (0.010 sec)".
    sed -E 's/ \([0-9.]+ sec\)$//' "$WORK/stdout"
    echo "==== stderr ===="
    cat "$WORK/stderr"
    echo "==== exit status $rc ===="
} >"$WORK/actual"

if [ "${2:-}" = --update ]; then
    cp "$WORK/actual" "$HERE/mariadb_session.expected"
    echo "wrote $HERE/mariadb_session.expected"
fi
if ! diff -u "$HERE/mariadb_session.expected" "$WORK/actual"; then
    echo "FAILED: mariadb session output differs from mariadb_session.expected (diff above)"
    exit 1
fi
stop_server "$WORK/log"
echo "mariadb_session: output matches ($(grep -c '^--------------$' "$WORK/actual") statement echoes)"
