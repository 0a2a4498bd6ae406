#!/usr/bin/env bash
# mariadb-dump (Debian's mysqldump) round trip: a database with every column type, NULLs,
# unicode, binary blobs, indexes, a table without a primary key and compressed tables is
# dumped from zipdb and restored, through the `mariadb` client, into a fresh zipdb and into a
# throwaway MariaDB 10.11 started here. A checksum of every table, computed client-side from
# `SELECT * ... ORDER BY` in batch mode, must be the same on all three servers.
#
# Two dumps: the default one keeps zipdb's table options (COMPRESSION='lz4', which MariaDB
# refuses with error 1911) and goes back into zipdb, where the codecs must survive; the one for
# MariaDB is made with --compatible=no_table_options (zipdb then leaves the options out of
# SHOW CREATE TABLE), as for any move between engines, and restored as utf8mb4.
#
# Known differences kept out of the data (docs/COMPATIBILITY.md): zipdb does not pad BINARY(n)
# with zero bytes, and prints DATETIME(6) without its fraction when that is zero.
#
# usage: tests/clients/mysqldump_roundtrip.sh path/to/zipdb
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(realpath "${1:?usage: $0 path/to/zipdb}")
. "$HERE/lib.sh"
WORK=$(mktemp -d)
SERVER_PID=
SECOND_PID=
MARIA_PID=
cleanup() {
    for p in $SERVER_PID $SECOND_PID $MARIA_PID; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# --- source: a zipdb with the test data ------------------------------------------------------
start_server "$BIN" "$WORK/src" "$WORK/src.log"
SRC_PORT=$PORT
SRC_PID=$SERVER_PID
src() { mariadb -h 127.0.0.1 -P "$SRC_PORT" -u root "$@"; }
src -e "CREATE DATABASE rt"
# A 70 000-byte blob, spelled out (REPEAT() is not there yet: error 1305).
BIG=$(head -c 70000 /dev/zero | tr '\0' '\245' | od -An -v -tx1 | tr -d ' \n')
src rt <<SQL
CREATE TABLE types (
  id INT NOT NULL AUTO_INCREMENT,
  ti TINYINT, si SMALLINT, mi MEDIUMINT, i INT, bi BIGINT, ubi BIGINT UNSIGNED,
  f FLOAT, d DOUBLE, dec1 DECIMAL(20,6),
  c CHAR(10), vc VARCHAR(100), tx TEXT, mtx MEDIUMTEXT,
  bn BINARY(4), vb VARBINARY(16), bl BLOB, lbl LONGBLOB,
  dt DATE, dtm DATETIME(6), ts TIMESTAMP NULL DEFAULT NULL,
  PRIMARY KEY (id),
  KEY k_i (i),
  UNIQUE KEY u_vc (vc)
) COMPRESSION='zstd';
INSERT INTO types VALUES
  (1, -128, -32768, -8388608, -2147483648, -9223372036854775808, 0,
   -1.5, -2.25e-300, -12345678901234.123456,
   'a', 'plain ascii', 'text', 'medium', X'00010203', X'FF00', X'DEADBEEF', X'00',
   '1000-01-01', '1000-01-01 00:00:00.000001', '1970-01-01 00:00:01'),
  (2, 127, 32767, 8388607, 2147483647, 9223372036854775807, 18446744073709551615,
   3.5, 1.7976931348623157e308, 99999999999999.999999,
   'zzzzzzzzzz', 'héllo wörld', '日本語のテキスト', 'emoji 🎉 and ☃', X'FFFFFFFF',
   X'0102030405060708090A0B0C0D0E0F10', X'000102030405FEFF', X'$BIG',
   '9999-12-31', '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07'),
  (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (4, 0, 0, 0, 0, 0, 1, 0, 0, 0, '', 'quote '' backslash \\\\ tab \\t newline \\n nul \\0 end',
   'ctrl \\r\\Z chars', '', X'61626364', X'', X'', X'', '2024-02-29', '2024-02-29 12:34:56.5',
   '2024-02-29 12:34:56');
CREATE TABLE nopk (a INT, b VARCHAR(20)) COMPRESSION='none';
INSERT INTO nopk VALUES (1, 'x'), (1, 'x'), (NULL, NULL), (2, 'ÿ');
CREATE TABLE multi (a INT NOT NULL, b VARCHAR(10) NOT NULL, c INT, PRIMARY KEY (a, b),
  KEY k_cb (c, b)) COMPRESSION='lz4';
SQL
# A few thousand rows, so that the dump's extended INSERTs split and pages compress.
awk 'BEGIN {
  for (s = 0; s < 5; s++) {
    printf "INSERT INTO multi VALUES ";
    for (i = 0; i < 600; i++) {
      n = s * 600 + i;
      printf "%s(%d, \"k%05d\", %s)", (i ? "," : ""), n % 97, n, (n % 7 ? n * 13 : "NULL");
    }
    print ";";
  }
}' | src rt
src rt -e "CREATE TABLE empty_t (id INT PRIMARY KEY, v VARCHAR(5))"

TABLES="types nopk multi empty_t"
# The ORDER BY of each table: every column, so that the table without a key sorts too.
order_of() {
    case $1 in
    types) echo "id" ;;
    nopk) echo "a, b" ;;
    multi) echo "a, b" ;;
    empty_t) echo "id" ;;
    esac
}
# checksum PORT: one line per table, "name rows md5"; the rows are kept in $WORK/rows.PORT.*
# for the diff that a mismatch prints.
checksum() {
    local port=$1 t
    for t in $TABLES; do
        local f=$WORK/rows.$port.$t
        mariadb -h 127.0.0.1 -P "$port" -u root --default-character-set=utf8mb4 --batch --skip-column-names rt \
            -e "SELECT * FROM \`$t\` ORDER BY $(order_of "$t")" >"$f"
        printf '%s %s %s\n' "$t" "$(wc -l <"$f")" "$(md5sum <"$f" | cut -d' ' -f1)"
    done
}
# same_sums A B: the checksum files agree, or the differing rows are shown.
same_sums() {
    local a=$1 b=$2 t
    diff -q "$WORK/sum.$a" "$WORK/sum.$b" >/dev/null && return 0
    for t in $TABLES; do
        diff -a "$WORK/rows.$3.$t" "$WORK/rows.$4.$t" | cut -c1-300 | cat -v >&2 || true
    done
    return 1
}
checksum "$SRC_PORT" >"$WORK/sum.src"
cat "$WORK/sum.src"
grep -q '^types 4 ' "$WORK/sum.src" || fail "types should have 4 rows"
grep -q '^multi 3000 ' "$WORK/sum.src" || fail "multi should have 3000 rows"

# --- the dumps --------------------------------------------------------------------------------
# Default options, as a user runs it: the first dump also asks for tablespaces (subqueries over
# INFORMATION_SCHEMA.FILES and PARTITIONS; zipdb has none to list), locks tables (LOCK TABLES
# ... READ LOCAL, SHOW TABLE STATUS) and asks for routines, events and triggers (there are
# none); the second reads one snapshot (START TRANSACTION WITH CONSISTENT SNAPSHOT, SAVEPOINT
# per table).
DUMP_OPTS=(-h 127.0.0.1 -P "$SRC_PORT" -u root)
mariadb-dump "${DUMP_OPTS[@]}" --routines --events --triggers --databases rt >"$WORK/dump.sql" 2>"$WORK/dump.err" ||
    { cat "$WORK/dump.err" >&2; fail "mariadb-dump failed"; }
mariadb-dump "${DUMP_OPTS[@]}" --single-transaction --compatible=no_table_options --databases rt \
    >"$WORK/dump-portable.sql" 2>"$WORK/dump-portable.err" ||
    { cat "$WORK/dump-portable.err" >&2; fail "mariadb-dump --compatible=no_table_options failed"; }
[ -s "$WORK/dump.err" ] && { cat "$WORK/dump.err" >&2; fail "mariadb-dump printed warnings"; }
grep -q "COMPRESSION='lz4'" "$WORK/dump.sql" || fail "the dump lost the table's codec"
grep -q "COMPRESSION=" "$WORK/dump-portable.sql" && fail "the portable dump has zipdb's options"
grep -q '^INSERT INTO `multi` VALUES' "$WORK/dump.sql" || fail "no rows in the dump"

# --- restore into a fresh zipdb ---------------------------------------------------------------
start_server "$BIN" "$WORK/dst" "$WORK/dst.log"
# start_server set SERVER_PID to the new server: keep both for the cleanup (a CI run once left
# the source server running after the script ended).
SECOND_PID=$SERVER_PID
SERVER_PID=$SRC_PID
DST_PORT=$PORT
mariadb -h 127.0.0.1 -P "$DST_PORT" -u root <"$WORK/dump.sql" || fail "restore into zipdb failed"
checksum "$DST_PORT" >"$WORK/sum.dst"
same_sums src dst "$SRC_PORT" "$DST_PORT" || fail "zipdb -> zipdb checksums differ"
# The codecs came back with the tables.
for pair in types:zstd nopk:none multi:lz4; do
    mariadb -h 127.0.0.1 -P "$DST_PORT" -u root -N rt -e "SHOW CREATE TABLE ${pair%%:*}" |
        grep -q "COMPRESSION='${pair#*:}'" || fail "${pair%%:*} did not keep COMPRESSION='${pair#*:}'"
done
# The restored indexes answer lookups.
[ "$(mariadb -h 127.0.0.1 -P "$DST_PORT" -u root -N rt -e "SELECT COUNT(*) FROM multi WHERE c = 13")" = 1 ] ||
    fail "index lookup after restore"

# --- restore into MariaDB ---------------------------------------------------------------------
if ! command -v mariadbd >/dev/null && [ -x /usr/sbin/mariadbd ]; then PATH=$PATH:/usr/sbin; fi
if command -v mariadbd >/dev/null; then
    mkdir -p "$WORK/maria"
    mariadb-install-db --no-defaults --datadir="$WORK/maria/data" \
        --auth-root-authentication-method=normal --skip-test-db >"$WORK/maria.install" 2>&1 ||
        { cat "$WORK/maria.install" >&2; fail "mariadb-install-db"; }
    MARIA_PORT=$("$(find_python)" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    mariadbd --no-defaults --user="$(id -un)" --datadir="$WORK/maria/data" \
        --socket="$WORK/maria/sock" --port="$MARIA_PORT" --bind-address=127.0.0.1 \
        --skip-grant-tables --default-time-zone=+00:00 --innodb-buffer-pool-size=16M \
        --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
        --log-error="$WORK/maria/err" --pid-file="$WORK/maria/pid" >/dev/null 2>&1 &
    MARIA_PID=$!
    for _ in $(seq 1 300); do
        mariadb -h 127.0.0.1 -P "$MARIA_PORT" -u root -e "SELECT 1" >/dev/null 2>&1 && break
        kill -0 "$MARIA_PID" 2>/dev/null || { cat "$WORK/maria/err" >&2; fail "mariadbd exited"; }
        sleep 0.2
    done
    # The portable dump has no SET NAMES (mariadb-dump leaves it out in compatible modes)
    # and no table charsets: the client and the server are told utf8mb4, zipdb's only one.
    mariadb -h 127.0.0.1 -P "$MARIA_PORT" -u root --default-character-set=utf8mb4 \
        <"$WORK/dump-portable.sql" ||
        fail "restore into MariaDB failed"
    checksum "$MARIA_PORT" >"$WORK/sum.maria"
    same_sums src maria "$SRC_PORT" "$MARIA_PORT" || fail "zipdb -> MariaDB checksums differ"
    echo "zipdb, zipdb restored and MariaDB $(mariadb -h 127.0.0.1 -P "$MARIA_PORT" -u root -N -e 'SELECT VERSION()') agree"
elif [ -n "${ZIPDB_REQUIRE_MARIADB:-}" ] || [ "${CI:-}" = true ]; then
    fail "mariadbd not installed (apt-get install mariadb-server)"
else
    echo "mariadbd not installed: the MariaDB leg was skipped"
fi
echo "mysqldump round trip: ok"
