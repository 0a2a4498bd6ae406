#!/usr/bin/env python3
"""Differential SQL tester: zipdb against MariaDB 10.11 as the oracle.

It starts a throwaway zipdb (the binary given by --zipdb) and a throwaway MariaDB, generates
random schemas, data and statements from a seed, runs every statement on both servers and
compares what comes back: result rows (as text, as a multiset unless the ORDER BY fixes a total
order), column count, affected rows, info message, warning count and codes, error number, and
after every DML statement the whole table. A mismatch is written to --out as a replayable,
self-contained .sql script (shrunk where that is cheap). --replay runs such scripts.

See tests/diff/README.md. Needs only Python 3 and PyMySQL (/usr/bin/python3 on Debian).
"""

import argparse
import collections
import glob
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unicodedata

import pymysql

ALL_FEATURES = ["select", "agg", "groupby", "distinct", "order", "func", "dml", "null",
                "collation", "ignore", "join", "subquery", "union"]
DEFAULT_FEATURES = ["select", "agg", "groupby", "distinct", "order", "func", "dml", "null",
                    "collation"]
DOUBLE_TYPES = {4, 5}  # MYSQL_TYPE_FLOAT, MYSQL_TYPE_DOUBLE
CONN_LOST = {0, 2006, 2013, 2014}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---- servers ---------------------------------------------------------------------------------

class Server:
    name = "?"

    def __init__(self, tmp):
        self.tmp = tmp
        self.proc = None
        self.port = None
        self.conn = None

    def connect(self, db=None):
        deadline = time.time() + 60
        while True:
            try:
                self.conn = pymysql.connect(host="127.0.0.1", port=self.port, user="root",
                                            password="", database=db, conv={},
                                            autocommit=True, connect_timeout=10,
                                            read_timeout=60, write_timeout=60)
                return
            except pymysql.err.OperationalError:
                if time.time() > deadline or (self.proc and self.proc.poll() is not None):
                    raise
                time.sleep(0.1)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def run(self, sql):
        """Runs one statement; returns an Outcome."""
        cur = self.conn.cursor()
        try:
            cur.execute(sql)
        except pymysql.err.MySQLError as e:
            code = e.args[0] if e.args and isinstance(e.args[0], int) else 0
            msg = e.args[1] if len(e.args) > 1 else str(e)
            return Outcome(err=(code, msg))
        res = self.conn._result
        out = Outcome()
        if cur.description:
            # (name, wire type, decimals)
            out.cols = [(d[0], d[1], d[5]) for d in cur.description]
            out.rows = [tuple(cell(v) for v in r) for r in cur.fetchall()]
        else:
            out.affected = res.affected_rows
            out.info = info_text(res.message)
        out.warnings = res.warning_count
        cur.close()
        return out

    def warning_codes(self):
        o = self.run("SHOW WARNINGS")
        if o.err:
            return ["SHOW WARNINGS failed: %s" % (o.err,)]
        return [(r[0], r[1], r[2]) for r in o.rows]


def info_text(msg):
    """The OK packet's info string; PyMySQL leaves its length prefix on when the server sends
    session-state tracking."""
    if not msg:
        return ""
    if isinstance(msg, str):
        msg = msg.encode("latin-1", "replace")
    if len(msg) > 0 and msg[0] == len(msg) - 1:
        msg = msg[1:]
    return msg.decode("utf-8", "replace")


def cell(v):
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (bytes, bytearray)):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return "0x" + bytes(v).hex()
    return str(v)


class Zipdb(Server):
    name = "zipdb"

    def __init__(self, tmp, binary):
        super().__init__(tmp)
        self.binary = binary
        self.n = 0

    def start(self):
        self.n += 1
        data = os.path.join(self.tmp, "zipdb%d" % self.n)
        os.makedirs(data)
        self.logfile = os.path.join(self.tmp, "zipdb%d.log" % self.n)
        logf = open(self.logfile, "w")
        self.proc = subprocess.Popen([self.binary, "serve", "--data-dir", data, "--port", "0",
                                      "--pool-mb", "64"], stdout=logf, stderr=logf,
                                     start_new_session=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(self.logfile).read())
            if m:
                self.port = int(m.group(1))
                self.connect()
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise SystemExit("zipdb did not start:\n" + open(self.logfile).read()[-3000:])

    def tail(self):
        try:
            return open(self.logfile, errors="replace").read()[-3000:]
        except OSError:
            return ""


class Maria(Server):
    name = "mariadb"

    def start(self):
        data = os.path.join(self.tmp, "maria")
        os.makedirs(data)
        out = subprocess.run(["mariadb-install-db", "--no-defaults", "--datadir=" + data,
                              "--auth-root-authentication-method=normal", "--skip-test-db"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit("mariadb-install-db failed:\n" + out.stdout + out.stderr)
        self.port = free_port()
        user = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
        self.logfile = os.path.join(self.tmp, "maria.err")
        cmd = ["mariadbd", "--no-defaults", "--user=" + user, "--datadir=" + data,
               "--socket=" + os.path.join(self.tmp, "maria.sock"), "--port=%d" % self.port,
               "--bind-address=127.0.0.1", "--skip-grant-tables",
               # zipdb's (and MySQL 8's) default charset; MariaDB's built-in one is latin1
               "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci", "--log-error=" + self.logfile,
               # zipdb's sessions are in UTC (UNIX_TIMESTAMP, FROM_UNIXTIME)
               "--default-time-zone=+00:00",
               "--pid-file=" + os.path.join(self.tmp, "maria.pid"),
               "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M",
               "--innodb-flush-log-at-trx-commit=0", "--skip-log-bin", "--performance-schema=OFF"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        try:
            self.connect()
        except Exception:
            raise SystemExit("mariadbd did not start:\n" + self.tail())

    def tail(self):
        try:
            return open(self.logfile, errors="replace").read()[-3000:]
        except OSError:
            return ""


# ---- outcomes and comparison -----------------------------------------------------------------

class Outcome:
    def __init__(self, err=None):
        self.err = err
        self.cols = None
        self.rows = None
        self.affected = None
        self.info = ""
        self.warnings = 0
        self.warn_list = None

    def show(self, limit=20):
        if self.err:
            return "ERROR %d: %s" % self.err
        if self.cols is not None:
            lines = ["columns %s (types %s), %d rows, %d warnings" % (
                [c[0] for c in self.cols],
                [c[1] if c[1] != 246 else "%d(%s)" % (c[1], c[2]) for c in self.cols], len(self.rows),
                self.warnings)]
            for r in self.rows[:limit]:
                lines.append("  " + " | ".join("NULL" if v is None else repr(v) for v in r))
            if len(self.rows) > limit:
                lines.append("  ... %d more" % (len(self.rows) - limit))
        else:
            lines = ["OK, %s affected, info %r, %d warnings" % (self.affected, self.info,
                                                                 self.warnings)]
        if self.warn_list:
            lines.append("  warnings: %s" % (self.warn_list,))
        return "\n".join(lines)


def as_float(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def close_enough(a, b):
    fa, fb = as_float(a), as_float(b)
    if fa is None or fb is None:
        return False
    if fa == fb:
        return True
    return abs(fa - fb) <= 1e-9 * max(abs(fa), abs(fb)) or abs(fa - fb) < 1e-12


def fold_char(ch):
    """Roughly the utf8mb4_general_ci weight of ch, enough to make the collation-equal values
    a group, DISTINCT or MIN/MAX may return (which one is undefined) compare equal: the base
    letter of an accented one (not Й), ß as s, everything outside the BMP as U+FFFD; lower
    case. scripts/gen-general-ci.py has the exact rules."""
    if ord(ch) > 0xFFFF:
        return "\ufffd"
    if ch == "ß":
        return "s"
    if ch not in "Йй":
        ch = unicodedata.normalize("NFD", ch)[0]
    return ch.lower()


def fold(v):
    return None if v is None else "".join(fold_char(ch) for ch in v.rstrip(" "))


def norm_rows(rows, fold_cols):
    if not fold_cols:
        return rows
    return [tuple(fold(v) if i in fold_cols else v for i, v in enumerate(r)) for r in rows]


def rows_equal(a, b, dbl_cols):
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b):
        if len(ra) != len(rb):
            return False
        for i, (x, y) in enumerate(zip(ra, rb)):
            if x == y:
                continue
            if i in dbl_cols and close_enough(x, y):
                continue
            return False
    return True


def sort_key(row, dbl_cols):
    key = []
    for i, v in enumerate(row):
        if v is None:
            key.append((0, ""))
        elif i in dbl_cols and as_float(v) is not None:
            key.append((1, "%.9e" % as_float(v)))
        else:
            key.append((2, v))
    return key


IGNORE_WARNINGS = False


def exact_warnings(sql):
    """Whether the statement's warning count is determined by its rows: INSERT/REPLACE of
    VALUES, where each value is converted once. Elsewhere MariaDB's count depends on its plan:
    it evaluates constant expressions while optimizing, a varying number of times (`WHERE 1=0
    AND 'x'+1` raises four warnings on an empty table), and a filter on however many rows its
    access path reads. There the kinds of warnings (the set of codes) are compared instead."""
    return (re.match(r"\s*(INSERT|REPLACE)\b", sql, re.I) is not None
            and re.search(r"\bSELECT\b", sql, re.I) is None)


def compare(a, b, ordered, fold_cols, exact=True):
    """Returns None when outcomes a (zipdb) and b (MariaDB) agree, else a reason. `exact`:
    compare warning counts (else only which codes were raised; see exact_warnings)."""
    if a.err or b.err:
        if a.err and b.err:
            return None if a.err[0] == b.err[0] else "error codes differ"
        return "only one side failed"
    if (a.cols is None) != (b.cols is None):
        return "result set vs. OK"
    if a.cols is not None:
        if len(a.cols) != len(b.cols):
            return "column counts differ"
        dbl = {i for i, c in enumerate(b.cols) if c[1] in DOUBLE_TYPES or a.cols[i][1] in
               DOUBLE_TYPES}
        ra, rb = norm_rows(a.rows, fold_cols), norm_rows(b.rows, fold_cols)
        if not ordered:
            ra = sorted(ra, key=lambda r: sort_key(r, dbl))
            rb = sorted(rb, key=lambda r: sort_key(r, dbl))
        if not rows_equal(ra, rb, dbl):
            return "rows differ" if len(ra) == len(rb) else "row counts differ"
    else:
        if a.affected != b.affected:
            return "affected rows differ"
        # MariaDB leaves UPDATE's "Rows matched" info off when the optimizer finds the WHERE
        # impossible: compare infos only when both sent one.
        ia, ib = a.info, b.info
        if IGNORE_WARNINGS or not exact:
            ia, ib = [re.sub(r"Warnings: \d+", "", x) for x in (ia, ib)]
        if ia and ib and ia != ib:
            return "info messages differ"
    if IGNORE_WARNINGS:
        return None
    if not exact:
        if (a.warnings > 0) != (b.warnings > 0):
            return "warning counts differ"
        if a.warnings and a.warn_list is not None and b.warn_list is not None:
            if set(w[1] for w in a.warn_list) != set(w[1] for w in b.warn_list):
                return "warning codes differ"
        return None
    if a.warnings != b.warnings:
        return "warning counts differ"
    if a.warnings and a.warn_list is not None and b.warn_list is not None:
        if sorted(w[1] for w in a.warn_list) != sorted(w[1] for w in b.warn_list):
            return "warning codes differ"
    return None


def compare_types(a, b):
    """For '-- @types': None when the columns have the same wire types (and, for DECIMAL
    columns, the same number of decimals), else a reason."""
    if a.cols is None or b.cols is None:
        return None
    ta = [(c[1], c[2] if c[1] == 246 else None) for c in a.cols]
    tb = [(c[1], c[2] if c[1] == 246 else None) for c in b.cols]
    return None if ta == tb else "column types differ"


# ---- the pair of servers ---------------------------------------------------------------------

class Pair:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="sqldiff.")
        self.z = Zipdb(self.tmp, args.zipdb)
        self.m = Maria(self.tmp)
        self.crashes = 0

    def start(self):
        self.m.start()
        self.z.start()
        for s in (self.z, self.m):
            s.run("CREATE DATABASE IF NOT EXISTS d")
            s.run("USE d")

    def stop(self):
        self.z.stop()
        self.m.stop()
        if not self.args.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def sql_modes(self):
        return [s.run("SELECT @@sql_mode") for s in (self.z, self.m)]

    def use(self, db):
        for s in (self.z, self.m):
            s.run("DROP DATABASE IF EXISTS %s" % db)
            s.run("CREATE DATABASE %s" % db)
            s.run("USE %s" % db)

    def run_both(self, sql):
        a = self.z.run(sql)
        if a.err and a.err[0] in CONN_LOST and not self.z.alive():
            self.crashes += 1
            log("zipdb died on: %s\n%s" % (sql, self.z.tail()))
            a.err = (-1, "zipdb crashed")
            self.z.proc = None
            self.z.start()
            self.z.run("CREATE DATABASE IF NOT EXISTS d")
            self.z.run("USE d")
        b = self.m.run(sql)
        if a.warnings or b.warnings:
            a.warn_list = self.z.warning_codes() if not a.err and a.warnings else []
            b.warn_list = self.m.warning_codes() if not b.err and b.warnings else []
        return a, b


# ---- statements ------------------------------------------------------------------------------

class Stmt:
    """One generated statement and how to compare it."""

    def __init__(self, sql, kind, ordered=False, fold=(), table=None, rows=None, prefix=None):
        self.sql = sql
        self.kind = kind
        self.ordered = ordered
        self.fold = set(fold)
        self.table = table  # a DML statement's table: compared whole afterwards
        self.rows = rows  # a multi-row INSERT's row tuples (the shrinker splits them)
        self.prefix = prefix
        self.ignore_warnings = False  # '-- @ignore-warnings' in a replayed script
        self.types = False  # '-- @types': compare the columns' wire types too

    def directives(self):
        d = []
        if self.fold:
            d.append("-- @fold %s" % ",".join(str(i) for i in sorted(self.fold)))
        if self.table is None and not self.is_ddl():
            d.append("-- @ordered" if self.ordered else "-- @multiset")
        return d

    def is_ddl(self):
        return re.match(r"\s*(CREATE|DROP|ALTER|USE|SET)\b", self.sql, re.I) is not None


def dml_table(sql):
    m = re.match(r"\s*(?:INSERT|REPLACE)(?:\s+IGNORE)?\s+(?:INTO\s+)?`?(\w+)|"
                 r"\s*UPDATE(?:\s+IGNORE)?\s+`?(\w+)|\s*DELETE(?:\s+IGNORE)?\s+FROM\s+`?(\w+)",
                 sql, re.I)
    if not m:
        return None
    return next(g for g in m.groups() if g)


# ---- schema and value generation -------------------------------------------------------------

INT_TYPES = [("TINYINT", 8), ("SMALLINT", 16), ("INT", 32), ("BIGINT", 64)]
STRINGS_CI = ["a", "A", "a ", "A  ", "b", "B", "ab", "Ab", "AB ", "ba", "abc", "ABC", "aBc ",
              " a", "", " ", "x y", "b%", "a_b", "zz", "Zz", "10", "3.5", "-2", "1e2", "0",
              "O'k", "hello", "HELLO", "Hello world", "é", "É", "e", "è", "Ë ", "ß", "s", "ss",
              "Æ", "ae", "Ø", "ö", "Crème", "creme", "й", "и", "😀", "😎", "Ω"]
STRINGS_PLAIN = ["a", "b", "ab", "ba", "abc", "", "x y", "zz", "10", "3.5", "-2", "0", "hello"]
DATES = ["2000-01-01", "1999-12-31", "2000-02-29", "2024-02-29", "1970-01-01", "9999-12-31",
         "1000-01-01", "2023-06-15", "2023-06-16", "2021-11-30"]
TIMES = ["00:00:00", "23:59:59", "12:34:56", "06:00:00"]


class Col:
    def __init__(self, name, cat, sqltype, nullable, **kw):
        self.name = name
        self.cat = cat  # int dec dbl str date dt
        self.sqltype = sqltype
        self.nullable = nullable
        self.default = None
        self.bits = kw.get("bits")
        self.unsigned = kw.get("unsigned", False)
        self.prec = kw.get("prec")
        self.scale = kw.get("scale")
        self.length = kw.get("length")


class Table:
    def __init__(self, name, cols, pk, indexes):
        self.name = name
        self.cols = cols
        self.pk = pk  # list of column names (non-empty)
        self.indexes = indexes  # (unique, [cols])

    def col(self, name):
        return next(c for c in self.cols if c.name == name)

    def unique_sets(self):
        return [self.pk] + [cols for u, cols in self.indexes if u]

    def create_sql(self):
        parts = []
        for c in self.cols:
            s = "%s %s%s" % (c.name, c.sqltype, "" if c.nullable else " NOT NULL")
            if c.default is not None:
                s += " DEFAULT " + c.default
            parts.append(s)
        parts.append("PRIMARY KEY (%s)" % ", ".join(self.pk))
        for i, (u, cols) in enumerate(self.indexes):
            parts.append("%sKEY %s_k%d (%s)" % ("UNIQUE " if u else "", self.name, i,
                                                ", ".join(cols)))
        return "CREATE TABLE %s (%s)" % (self.name, ", ".join(parts))


def q(s):
    return "'" + s.replace("\\", "\\\\").replace("'", "''") + "'"


class Gen:
    def __init__(self, rnd, features):
        self.r = rnd
        self.f = set(features)
        self.tables = []

    def feat(self, name):
        return name in self.f

    def chance(self, p):
        return self.r.random() < p

    # -- schema --

    def gen_col(self, name, for_key=False):
        r = self.r
        cat = r.choice(["int", "int", "int", "dec", "str", "str", "date", "dt"] +
                       ([] if for_key else ["dbl"]))
        nullable = not for_key and self.chance(0.6)
        if cat == "int":
            t, bits = r.choice(INT_TYPES)
            uns = self.chance(0.3)
            c = Col(name, cat, t + (" UNSIGNED" if uns else ""), nullable, bits=bits,
                    unsigned=uns)
        elif cat == "dec":
            p = r.choice([5, 10, 18, 30])
            s = r.choice([0, 2, min(4, p - 1)])
            c = Col(name, cat, "DECIMAL(%d,%d)" % (p, s), nullable, prec=p, scale=s)
        elif cat == "dbl":
            c = Col(name, cat, "DOUBLE", nullable)
        elif cat == "str":
            n = r.choice([1, 3, 5, 10, 20])
            c = Col(name, cat, "%s(%d)" % ("CHAR" if self.chance(0.3) else "VARCHAR", n),
                    nullable, length=n)
        elif cat == "date":
            c = Col(name, cat, "DATE", nullable)
        else:
            c = Col(name, cat, "DATETIME", nullable)
        if self.chance(0.25):
            v = self.value(c, allow_null=nullable, valid=True)
            c.default = v
        return c

    def gen_table(self, name):
        r = self.r
        ncols = r.randint(2, 6)
        npk = 1 if self.chance(0.7) else 2
        cols = [self.gen_col("%s_%s" % (name, chr(ord("a") + i)), for_key=i < npk)
                for i in range(ncols)]
        # Keep CHAR(1) and TINYINT keys rare: they collide too often to be interesting alone.
        pk = [c.name for c in cols[:npk]]
        indexes, seen = [], {tuple(pk)}
        for _ in range(r.randint(0, 2)):
            k = r.sample(cols, r.randint(1, min(2, len(cols))))
            names = tuple(c.name for c in k)
            # MariaDB notes a duplicate index (1831); DOUBLE keys are not interesting
            if any(c.cat == "dbl" for c in k) or names in seen:
                continue
            seen.add(names)
            indexes.append((self.chance(0.4), list(names)))
        return Table(name, cols, pk, indexes)

    # -- values --

    def int_range(self, c):
        if c.unsigned:
            return 0, (1 << c.bits) - 1
        return -(1 << (c.bits - 1)), (1 << (c.bits - 1)) - 1

    def value(self, c, allow_null=True, valid=False):
        """A literal for column c: usually valid, sometimes NULL or out of range."""
        r = self.r
        if allow_null and self.feat("null") and self.chance(0.12):
            return "NULL"
        bad = not valid and self.chance(0.015)
        if c.cat == "int":
            lo, hi = self.int_range(c)
            if bad:
                return str(r.choice([lo - 1, hi + 1]))
            v = r.choice([0, 1, 2, 3, 5, 7, 10, 42, 100, -1, -2, -100, lo, hi, lo + 1, hi - 1,
                          r.randint(-50, 50), r.randint(0, 20)])
            return str(min(max(v, lo), hi))
        if c.cat == "dec":
            ip = c.prec - c.scale
            if bad:
                return "1" + "0" * ip
            choice = r.randint(0, 6)
            if choice == 0:
                s = "9" * ip + ("." + "9" * c.scale if c.scale else "")
                return ("-" if self.chance(0.5) else "") + s
            if choice == 1:
                return str(r.randint(-20, 20))
            digits = r.randint(0, min(ip, 6))
            ipart = str(r.randint(0, 10 ** digits - 1)) if digits else "0"
            nfr = r.randint(0, c.scale if valid else c.scale + 1)
            fr = "".join(str(r.randint(0, 9)) for _ in range(nfr))
            s = ipart + ("." + fr if fr else "")
            return ("-" if self.chance(0.3) else "") + s
        if c.cat == "dbl":
            return r.choice(["0", "1", "-1", "1.5", "-2.25", "0.1", "3.3333", "1e10", "1e-5",
                             "123456789.125", "2.5", "100", "-0.5", "1e300", "7"])
        if c.cat == "str":
            pool = STRINGS_CI if self.feat("collation") else STRINGS_PLAIN
            s = r.choice(pool)
            if bad:
                s = "x" * (c.length + 1)
            elif len(s) > c.length:
                s = s[:c.length]
            return q(s)
        if c.cat == "date":
            if bad:
                return q(r.choice(["2023-02-30", "2023-13-01", "abc"]))
            return q(r.choice(DATES))
        if bad:
            return q(r.choice(["2023-02-30 00:00:00", "2023-01-01 25:00:00"]))
        return q(r.choice(DATES) + " " + r.choice(TIMES))

    def literal(self, cat):
        fake = {"int": Col("x", "int", "BIGINT", True, bits=32),
                "dec": Col("x", "dec", "", True, prec=8, scale=2),
                "dbl": Col("x", "dbl", "", True),
                "str": Col("x", "str", "", True, length=10),
                "date": Col("x", "date", "", True),
                "dt": Col("x", "dt", "", True)}[cat]
        v = self.value(fake, allow_null=True, valid=True)
        if cat == "date" and v != "NULL" and self.chance(0.5):
            return "DATE " + v
        return v

    def row(self, t, cols):
        return "(" + ", ".join(self.value(c, allow_null=c.nullable or self.chance(0.02))
                               for c in cols) + ")"

    # -- expressions --

    def cols_of(self, scope, cats):
        return [(a, c) for a, t in scope for c in t.cols if c.cat in cats]

    def colref(self, alias, c):
        return "%s.%s" % (alias, c.name) if alias else c.name

    def expr(self, scope, cat, depth=0):
        """An expression of category cat (int dec dbl str date dt) over the tables in scope
        (a list of (alias, Table))."""
        r = self.r
        cands = self.cols_of(scope, [cat])
        if depth >= 2 or self.chance(0.35 if depth else 0.15):
            if cands and self.chance(0.8):
                return self.colref(*r.choice(cands))
            return self.literal(cat)
        func = self.feat("func")
        if cat in ("int", "dec", "dbl"):
            opts = ["col", "arith", "neg"]
            if func:
                opts += ["abs", "round", "floor", "case", "if", "coalesce", "nullif",
                         "greatest", "cast", "len", "datepart", "div", "mod", "sign",
                         "truncate", "locate", "strcmp", "ascii", "crc32", "datediff",
                         "timestampdiff", "datepart2", "field"]
                if cat == "dbl":
                    opts += ["sqrt", "pow", "exp", "log", "trig"]
            o = r.choice(opts)
            sub = lambda: self.expr(scope, r.choice(["int", "int", "dec", cat]), depth + 1)
            if o == "col":
                num = self.cols_of(scope, ["int", "dec", "dbl"] if cat != "int" else ["int"])
                if num:
                    return self.colref(*r.choice(num))
                return self.literal(cat)
            if o == "arith":
                op = r.choice(["+", "-", "*", "/"] if cat != "int" else ["+", "-", "*"])
                return "(%s %s %s)" % (sub(), op, sub())
            if o == "neg":
                return "-(%s)" % sub()
            if o == "abs":
                return "ABS(%s)" % sub()
            if o == "round":
                if self.chance(0.5):
                    return "ROUND(%s)" % sub()
                return "ROUND(%s, %d)" % (sub(), r.choice([0, 1, 2, -1]))
            if o == "floor":
                return "%s(%s)" % (r.choice(["FLOOR", "CEIL", "CEILING"]), sub())
            if o == "case":
                return self.case(scope, cat, depth)
            if o == "if":
                return "IF(%s, %s, %s)" % (self.pred(scope, depth + 1), sub(), sub())
            if o == "coalesce":
                return "%s(%s, %s)" % (r.choice(["COALESCE", "IFNULL"]), sub(), sub())
            if o == "nullif":
                return "NULLIF(%s, %s)" % (sub(), sub())
            if o == "greatest":
                return "%s(%s, %s)" % (r.choice(["GREATEST", "LEAST"]), sub(), sub())
            if o == "cast":
                to = {"int": r.choice(["SIGNED", "UNSIGNED"]), "dec": "DECIMAL(10,2)",
                      "dbl": "DOUBLE"}[cat]
                src = self.expr(scope, r.choice(["int", "dec", "str", cat]), depth + 1)
                return "CAST(%s AS %s)" % (src, to)
            if o == "len":
                return "%s(%s)" % (r.choice(["LENGTH", "CHAR_LENGTH"]),
                                   self.expr(scope, "str", depth + 1))
            if o == "datepart":
                return "%s(%s)" % (r.choice(["YEAR", "MONTH", "DAY", "DAYOFMONTH"]),
                                   self.expr(scope, r.choice(["date", "dt"]), depth + 1))
            if o == "div":
                return "(%s DIV %s)" % (sub(), sub())
            if o == "mod":
                if self.chance(0.5):
                    return "MOD(%s, %s)" % (sub(), sub())
                return "(%s %% %s)" % (sub(), sub())
            if o == "sign":
                return "SIGN(%s)" % sub()
            if o == "truncate":
                return "TRUNCATE(%s, %d)" % (sub(), r.choice([0, 1, 2, -1, 5]))
            if o == "locate":
                s1, s2 = self.expr(scope, "str", depth + 1), self.expr(scope, "str", depth + 1)
                k = r.choice(["LOCATE2", "LOCATE3", "INSTR", "POSITION"])
                if k == "LOCATE2":
                    return "LOCATE(%s, %s)" % (s1, s2)
                if k == "LOCATE3":
                    return "LOCATE(%s, %s, %d)" % (s1, s2, r.choice([0, 1, 2, 3, -1]))
                if k == "INSTR":
                    return "INSTR(%s, %s)" % (s1, s2)
                return "POSITION(%s IN %s)" % (s1, s2)
            if o == "strcmp":
                return "STRCMP(%s, %s)" % (self.expr(scope, "str", depth + 1),
                                           self.expr(scope, "str", depth + 1))
            if o == "ascii":
                return "ASCII(%s)" % self.expr(scope, "str", depth + 1)
            if o == "crc32":
                return "CRC32(%s)" % self.expr(scope, r.choice(["str", "int"]), depth + 1)
            if o == "datediff":
                return "DATEDIFF(%s, %s)" % (self.expr(scope, r.choice(["date", "dt"]), depth + 1),
                                             self.expr(scope, r.choice(["date", "dt"]), depth + 1))
            if o == "timestampdiff":
                return "TIMESTAMPDIFF(%s, %s, %s)" % (
                    r.choice(["SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER",
                              "YEAR"]),
                    self.expr(scope, r.choice(["date", "dt"]), depth + 1),
                    self.expr(scope, r.choice(["date", "dt"]), depth + 1))
            if o == "datepart2":
                return "%s(%s)" % (r.choice(["HOUR", "MINUTE", "SECOND", "DAYOFWEEK", "WEEKDAY",
                                             "DAYOFYEAR", "QUARTER", "WEEK"]),
                                   self.expr(scope, r.choice(["date", "dt"]), depth + 1))
            if o == "field":
                return "FIELD(%s, %s, %s)" % (sub(), sub(), sub())
            if o == "exp":
                return "EXP(%s)" % r.choice(["0", "1", "-2", "0.5", sub()])
            if o == "log":
                f = r.choice(["LN", "LOG", "LOG2", "LOG10"])
                if f == "LOG" and self.chance(0.3):
                    return "LOG(%d, %s)" % (r.choice([2, 10, 1, 0]), sub())
                return "%s(%s)" % (f, sub())
            if o == "trig":
                return "%s(%s)" % (r.choice(["SIN", "COS", "TAN", "DEGREES", "RADIANS"]), sub())
            if o == "sqrt":
                return "SQRT(%s)" % sub()
            if o == "pow":
                return "POW(%s, %d)" % (sub(), r.choice([0, 1, 2, 3]))
        if cat == "str":
            if not func:
                return self.colref(*r.choice(cands)) if cands else self.literal(cat)
            o = r.choice(["concat", "concat_ws", "upper", "substr", "trim", "replace", "left",
                          "hex", "cast", "case", "if", "coalesce", "repeat", "reverse", "pad",
                          "substring_index", "hash", "dayname", "date_format", "elt"])
            sub = lambda: self.expr(scope, "str", depth + 1)
            if o == "concat":
                return "CONCAT(%s, %s)" % (sub(), self.expr(scope, r.choice(
                    ["str", "int", "dec", "date"]), depth + 1))
            if o == "concat_ws":
                return "CONCAT_WS(%s, %s, %s)" % (q(r.choice([",", "-", ""])), sub(), sub())
            if o == "upper":
                return "%s(%s)" % (r.choice(["UPPER", "LOWER", "UCASE", "LCASE"]), sub())
            if o == "substr":
                if self.chance(0.5):
                    return "SUBSTRING(%s, %d)" % (sub(), r.choice([1, 2, 0, -1, -2, 5]))
                return "%s(%s, %d, %d)" % (r.choice(["SUBSTRING", "SUBSTR", "MID"]), sub(),
                                           r.choice([1, 2, 0, -1, 3]), r.choice([0, 1, 2, 10, -1]))
            if o == "trim":
                return "%s(%s)" % (r.choice(["TRIM", "LTRIM", "RTRIM"]), sub())
            if o == "replace":
                return "REPLACE(%s, %s, %s)" % (sub(), q(r.choice(["a", "A", " ", "b", ""])),
                                                q(r.choice(["x", "", "AA"])))
            if o == "left":
                return "%s(%s, %d)" % (r.choice(["LEFT", "RIGHT"]), sub(),
                                       r.choice([0, 1, 2, 5, -1]))
            if o == "hex":
                return "HEX(%s)" % self.expr(scope, r.choice(["str", "int"]), depth + 1)
            if o == "repeat":
                return "REPEAT(%s, %d)" % (sub(), r.choice([0, 1, 2, 3, -1]))
            if o == "reverse":
                return "REVERSE(%s)" % sub()
            if o == "pad":
                return "%s(%s, %d, %s)" % (r.choice(["LPAD", "RPAD"]), sub(),
                                           r.choice([0, 1, 3, 8, -1]), q(r.choice(["*", "ab", "é", ""])))
            if o == "substring_index":
                return "SUBSTRING_INDEX(%s, %s, %d)" % (sub(), q(r.choice(["a", " ", "b", ","])),
                                                         r.choice([1, 2, -1, -2, 0]))
            if o == "hash":
                return "%s(%s)" % (r.choice(["MD5", "SHA1", "TO_BASE64"]),
                                   self.expr(scope, r.choice(["str", "int", "date"]), depth + 1))
            if o == "dayname":
                return "%s(%s)" % (r.choice(["DAYNAME", "MONTHNAME"]),
                                   self.expr(scope, r.choice(["date", "dt"]), depth + 1))
            if o == "date_format":
                return "DATE_FORMAT(%s, %s)" % (
                    self.expr(scope, r.choice(["date", "dt"]), depth + 1),
                    q(r.choice(["%Y-%m-%d", "%d/%m/%y %H:%i", "%W %M %e %Y", "%j %U %u %w",
                                "%r %p %f", "%D %b %a %T"])))
            if o == "elt":
                return "ELT(%s, %s, %s)" % (self.expr(scope, "int", depth + 1), sub(), sub())
            if o == "cast":
                return "CAST(%s AS CHAR)" % self.expr(
                    scope, r.choice(["int", "dec", "dbl", "date", "dt"]), depth + 1)
            if o == "case":
                return self.case(scope, "str", depth)
            if o == "if":
                return "IF(%s, %s, %s)" % (self.pred(scope, depth + 1), sub(), sub())
            return "COALESCE(%s, %s)" % (sub(), sub())
        # date / dt
        if func and self.chance(0.3):
            src = self.expr(scope, cat, depth + 1)
            if cat == "date":
                o = r.choice(["add", "last_day", "add_days"])
                if o == "last_day":
                    return "LAST_DAY(%s)" % src
                if o == "add_days":
                    return "%s(%s, %d)" % (r.choice(["ADDDATE", "SUBDATE"]), src,
                                           r.choice([1, -1, 30, 365]))
                unit = r.choice(["DAY", "WEEK", "MONTH", "QUARTER", "YEAR"])
            else:
                if self.chance(0.2):
                    return "FROM_UNIXTIME(UNIX_TIMESTAMP(%s))" % src
                unit = r.choice(["SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR"])
            n = r.choice([1, -1, 2, 12, -31, 100])
            form = r.choice(["DATE_ADD(%s, INTERVAL %d %s)", "DATE_SUB(%s, INTERVAL %d %s)",
                             "%s + INTERVAL %d %s", "%s - INTERVAL %d %s"])
            return form % (src, n, unit)
        if func and self.chance(0.5):
            if cat == "date":
                return r.choice(["DATE(%s)", "CAST(%s AS DATE)"]) % self.expr(
                    scope, r.choice(["dt", "date", "str"]), depth + 1)
            return "CAST(%s AS DATETIME)" % self.expr(scope, r.choice(["date", "dt"]), depth + 1)
        return self.colref(*r.choice(cands)) if cands else self.literal(cat)

    def case(self, scope, cat, depth):
        r = self.r
        if self.chance(0.5):
            arms = " ".join("WHEN %s THEN %s" % (self.pred(scope, depth + 1),
                                                 self.expr(scope, cat, depth + 1))
                            for _ in range(r.randint(1, 2)))
            head = "CASE"
        else:
            c2 = r.choice(["int", "str"])
            head = "CASE %s" % self.expr(scope, c2, depth + 1)
            arms = " ".join("WHEN %s THEN %s" % (self.literal(c2), self.expr(scope, cat, depth + 1))
                            for _ in range(r.randint(1, 2)))
        tail = " ELSE %s" % self.expr(scope, cat, depth + 1) if self.chance(0.6) else ""
        return "%s %s%s END" % (head, arms, tail)

    def any_cat(self, scope):
        cols = [c for _, t in scope for c in t.cols]
        if cols and self.chance(0.8):
            return self.r.choice(cols).cat
        return self.r.choice(["int", "dec", "str", "date", "dt", "dbl"])

    def pred(self, scope, depth=0):
        r = self.r
        if depth < 2 and self.chance(0.3):
            op = r.choice(["AND", "OR", "AND", "OR", "XOR"])
            a, b = self.pred(scope, depth + 1), self.pred(scope, depth + 1)
            if op == "XOR":
                # zipdb's parser binds XOR tighter than BETWEEN (see the README): keep
                # the operands whole so the rest of the run stays useful
                a, b = "(%s)" % a, "(%s)" % b
            p = "(%s %s %s)" % (a, op, b)
            return ("NOT " + p) if self.chance(0.15) else p
        cat = self.any_cat(scope)
        o = r.choice(["cmp", "cmp", "cmp", "null", "between", "in", "like", "truth"])
        e = self.expr(scope, cat, depth + 1)
        if o == "null" and self.feat("null"):
            return "%s IS %sNULL" % (e, "NOT " if self.chance(0.5) else "")
        if o == "between":
            a, b = self.expr(scope, cat, 2), self.expr(scope, cat, 2)
            return "%s %sBETWEEN %s AND %s" % (e, "NOT " if self.chance(0.3) else "", a, b)
        if o == "in":
            items = [self.expr(scope, cat, 2) for _ in range(r.randint(1, 4))]
            return "%s %sIN (%s)" % (e, "NOT " if self.chance(0.3) else "", ", ".join(items))
        if o == "like" and cat == "str":
            pat = r.choice(["%a%", "a%", "A_", "%", "_", "%b", "a\\_b", "ab", "%B%", "a b",
                            "% ", "h%o"])
            return "%s %sLIKE %s" % (e, "NOT " if self.chance(0.3) else "", q(pat))
        if o == "truth" and cat in ("int", "dec"):
            return e
        op = r.choice(["=", "<>", "!=", "<", "<=", ">", ">=", "<=>"])
        other_cat = cat
        if self.chance(0.08):
            other_cat = r.choice(["int", "str", "dec", "date"])  # mixed-type comparison
        return "%s %s %s" % (e, op, self.expr(scope, other_cat, depth + 1))

    # -- queries --

    def select(self, kind):
        """Returns a Stmt for a single-table query of the given kind."""
        r = self.r
        t = r.choice(self.tables)
        scope = [(None, t)]
        where = " WHERE " + self.pred(scope) if self.chance(0.7) else ""
        if kind == "agg":
            items, fold = self.aggregates(scope, r.randint(1, 3))
            sql = "SELECT %s FROM %s%s" % (", ".join(items), t.name, where)
            return Stmt(sql, kind, True, fold)
        if kind == "groupby":
            return self.groupby(scope, t.name, where)
        if kind == "distinct":
            n = r.randint(1, 3)
            items, fold = [], []
            for i in range(n):
                cat = self.any_cat(scope)
                e = self.expr(scope, cat, 1)
                items.append(e)
                if cat == "str":
                    fold.append(i)
            sql = "SELECT DISTINCT %s FROM %s%s" % (", ".join(items), t.name, where)
            ordered = False
            if self.feat("order") and self.chance(0.5):
                sql += " ORDER BY " + ", ".join(str(i + 1) for i in range(n))
                ordered = True
                if self.chance(0.5):
                    sql += " LIMIT %d" % r.randint(0, 5)
            return Stmt(sql, kind, ordered, fold)
        # plain select
        if self.chance(0.2):
            items = ["*"]
        else:
            items = [self.expr(scope, self.any_cat(scope)) for _ in range(r.randint(1, 4))]
        sql = "SELECT %s FROM %s%s" % (", ".join(items), t.name, where)
        ordered = False
        if kind == "order":
            keys = [self.order_key(scope) + r.choice(["", " DESC", " ASC"])
                    for _ in range(r.randint(0, 2))]
            if self.chance(0.8):
                keys += [k + r.choice(["", " DESC"]) for k in t.pk]
                ordered = True
            if keys:
                sql += " ORDER BY " + ", ".join(keys)
                if ordered and self.chance(0.5):
                    sql += " LIMIT %d" % r.randint(0, 6)
                    if self.chance(0.3):
                        sql += " OFFSET %d" % r.randint(0, 3)
            else:
                ordered = False
        return Stmt(sql, kind, ordered)

    def order_key(self, scope):
        """An ORDER BY expression that is not a bare integer (a position)."""
        while True:
            e = self.expr(scope, self.any_cat(scope), 1)
            # a constant key is pointless, and MariaDB reads ORDER BY -(0) as a position
            if re.search(r"\b[a-z]\w*_[a-z]\b", e):
                return e

    def aggregates(self, scope, n, start=0):
        r = self.r
        items, fold = [], []
        for i in range(n):
            f = r.choice(["COUNT(*)", "COUNT", "COUNT DISTINCT", "SUM", "AVG", "MIN", "MAX"])
            if f == "COUNT(*)":
                items.append(f)
                continue
            if f in ("SUM", "AVG"):
                cat = r.choice(["int", "dec", "int", "dbl"])
            else:
                cat = self.any_cat(scope)
            e = self.expr(scope, cat, 1)
            if f == "COUNT DISTINCT":
                items.append("COUNT(DISTINCT %s)" % e)
            else:
                items.append("%s(%s)" % (f, e))
                if f in ("MIN", "MAX") and cat == "str":
                    fold.append(start + i)
        return items, fold

    def groupby(self, scope, from_sql, where, agg_scope=None):
        r = self.r
        keys = []
        for _ in range(r.randint(1, 2)):
            if self.chance(0.7):
                alias, c = r.choice([(a, c) for a, t in scope for c in t.cols])
                keys.append((self.colref(alias, c), c.cat))
            else:
                e = self.order_key(scope)
                keys.append((e, "str" if re.match(r"'|[A-Z]+\(|CASE", e) else "num"))
        items = [k for k, _ in keys]
        fold = [i for i, (_, cat) in enumerate(keys) if cat == "str"]
        aggs, afold = self.aggregates(agg_scope or scope, r.randint(1, 3), len(items))
        items += aggs
        fold += afold
        sql = "SELECT %s FROM %s%s GROUP BY %s" % (", ".join(items), from_sql, where,
                                                   ", ".join(k for k, _ in keys))
        if self.chance(0.3):
            h = r.choice(["COUNT(*) > 1", "COUNT(*) = 1", "%s IS NOT NULL" % aggs[0],
                          "%s > 0" % aggs[0]])
            sql += " HAVING " + h
        ordered = False
        if self.feat("order") and self.chance(0.5):
            sql += " ORDER BY " + ", ".join(str(i + 1) for i in range(len(keys)))
            ordered = True
            if self.chance(0.4):
                sql += " LIMIT %d" % r.randint(0, 4)
        return Stmt(sql, "groupby", ordered, fold)

    # -- two tables --

    def join_on(self, a, b):
        """An equality between comparable columns of a and b (indexed or not)."""
        r = self.r
        pairs = [(ca, cb) for ca in a.cols for cb in b.cols
                 if ca.cat == cb.cat or {ca.cat, cb.cat} <= {"int", "dec"}]
        if not pairs:
            return "x.%s = y.%s" % (a.cols[0].name, b.cols[0].name)
        ca, cb = r.choice(pairs)
        return "x.%s = y.%s" % (ca.name, cb.name)

    def join(self):
        r = self.r
        a, b = self.tables[0], self.tables[1]
        if self.chance(0.5):
            a, b = b, a
        scope = [("x", a), ("y", b)]
        on = self.join_on(a, b)
        style = r.choice(["JOIN", "LEFT JOIN", "comma", "INNER JOIN"])
        if style == "comma":
            from_sql = "%s x, %s y" % (a.name, b.name)
            where = " WHERE " + on + (" AND " + self.pred(scope) if self.chance(0.5) else "")
        else:
            extra = " AND " + self.pred(scope) if self.chance(0.2) else ""
            from_sql = "%s x %s %s y ON %s%s" % (a.name, style, b.name, on, extra)
            where = " WHERE " + self.pred(scope) if self.chance(0.5) else ""
        if self.feat("groupby") and self.chance(0.25):
            st = self.groupby(scope, from_sql, where)
            st.kind = "join"
            return st
        items = [self.expr(scope, self.any_cat(scope), 1) for _ in range(r.randint(1, 4))]
        sql = "SELECT %s FROM %s%s" % (", ".join(items), from_sql, where)
        ordered = False
        if self.chance(0.4):
            sql += " ORDER BY " + ", ".join(["x." + k for k in a.pk] + ["y." + k for k in b.pk])
            ordered = True
            if self.chance(0.5):
                sql += " LIMIT %d" % r.randint(0, 6)
        return Stmt(sql, "join", ordered)

    def subquery(self):
        r = self.r
        a, b = self.tables[0], self.tables[1]
        if self.chance(0.5):
            a, b = b, a
        outer = [("x", a)]
        inner = [("y", b)]
        both = [("x", a), ("y", b)]
        kind = r.choice(["in", "exists", "scalar_where", "scalar_select"])
        corr = self.chance(0.5)
        inner_where = self.pred(both if corr else inner) if self.chance(0.6) else None
        if kind == "in":
            ca = r.choice(a.cols)
            cands = [c for c in b.cols if c.cat == ca.cat] or b.cols
            cb = r.choice(cands)
            sub = "SELECT y.%s FROM %s y%s" % (cb.name, b.name,
                                               " WHERE " + inner_where if inner_where else "")
            cond = "x.%s %sIN (%s)" % (ca.name, "NOT " if self.chance(0.4) else "", sub)
        elif kind == "exists":
            w = self.join_on(a, b) if corr or self.chance(0.5) else self.pred(inner)
            if inner_where:
                w += " AND " + inner_where
            cond = "%sEXISTS (SELECT 1 FROM %s y WHERE %s)" % (
                "NOT " if self.chance(0.3) else "", b.name, w)
        else:
            cb = r.choice([c for c in b.cols if c.cat != "dbl"] or b.cols)
            agg = r.choice(["MAX", "MIN", "COUNT", "SUM"]) if cb.cat in ("int", "dec") \
                else r.choice(["MAX", "MIN", "COUNT"])
            w = self.join_on(a, b) if corr else (inner_where or "1 = 1")
            if self.chance(0.15):
                # may return more than one row: both sides must fail with 1242
                sub = "SELECT y.%s FROM %s y WHERE %s" % (cb.name, b.name, w)
            else:
                sub = "SELECT %s(y.%s) FROM %s y WHERE %s" % (agg, cb.name, b.name, w)
            if kind == "scalar_where":
                cond = "x.%s %s (%s)" % (r.choice([c for c in a.cols]).name,
                                         r.choice(["=", "<", ">=", "<>"]), sub)
            else:
                items = [self.expr(outer, self.any_cat(outer), 1), "(%s)" % sub]
                sql = "SELECT %s FROM %s x" % (", ".join(items), a.name)
                if self.chance(0.5):
                    sql += " WHERE " + self.pred(outer)
                if cb.cat == "str" and agg in ("MAX", "MIN"):
                    return Stmt(sql, "subquery", False, [1])
                return Stmt(sql, "subquery", False)
        items = [self.expr(outer, self.any_cat(outer), 1) for _ in range(r.randint(1, 3))]
        sql = "SELECT %s FROM %s x WHERE %s" % (", ".join(items), a.name, cond)
        return Stmt(sql, "subquery", False)

    def union(self):
        r = self.r
        n = r.randint(1, 2)
        cats = [r.choice(["int", "str", "dec", "date"]) for _ in range(n)]
        parts = []
        for _ in range(r.randint(2, 3)):
            t = r.choice(self.tables)
            scope = [(None, t)]
            items = [self.expr(scope, c, 1) for c in cats]
            s = "SELECT %s FROM %s" % (", ".join(items), t.name)
            if self.chance(0.6):
                s += " WHERE " + self.pred(scope)
            parts.append(s)
        all_ = self.chance(0.5)
        sql = (" UNION ALL " if all_ else " UNION ").join(parts)
        fold = [] if all_ else [i for i, c in enumerate(cats) if c == "str"]
        ordered = False
        if self.chance(0.4):
            sql += " ORDER BY " + ", ".join(str(i + 1) for i in range(n))
            if not all_:
                ordered = True
                if self.chance(0.5):
                    sql += " LIMIT %d" % r.randint(0, 5)
        return Stmt(sql, "union", ordered, fold)

    # -- DML --

    def insert_cols(self, t):
        required = [c for c in t.cols if (not c.nullable and c.default is None)
                    or c.name in t.pk]
        rest = [c for c in t.cols if c not in required]
        cols = required + [c for c in rest if self.chance(0.6)]
        if self.chance(0.05) and len(cols) > 1:
            cols = cols[1:]  # a NOT NULL column without a value: strict mode fails
        order = {c.name: i for i, c in enumerate(t.cols)}
        cols.sort(key=lambda c: order[c.name])
        return cols

    def insert(self, t, nrows=None, kind=None):
        r = self.r
        kind = kind or r.choice(["insert", "insert", "insert_ignore", "replace", "odku"])
        if kind == "insert_ignore" and not self.feat("ignore"):
            kind = "insert"
        cols = self.insert_cols(t)
        rows = [self.row(t, cols) for _ in range(nrows or r.randint(1, 4))]
        verb = {"insert": "INSERT INTO", "insert_ignore": "INSERT IGNORE INTO",
                "replace": "REPLACE INTO", "odku": "INSERT INTO"}[kind]
        prefix = "%s %s (%s) VALUES " % (verb, t.name, ", ".join(c.name for c in cols))
        sql = prefix + ", ".join(rows)
        if kind == "odku":
            sets = []
            for c in r.sample(t.cols, r.randint(1, min(2, len(t.cols)))):
                choice = r.randint(0, 2)
                if choice == 0 and c in cols:
                    sets.append("%s = VALUES(%s)" % (c.name, c.name))
                elif choice == 1 and c.cat == "int":
                    sets.append("%s = %s + 1" % (c.name, c.name))
                else:
                    sets.append("%s = %s" % (c.name, self.value(c)))
            sql += " ON DUPLICATE KEY UPDATE " + ", ".join(sets)
            return Stmt(sql, "odku", table=t.name)
        return Stmt(sql, kind, table=t.name, rows=rows, prefix=prefix)

    def update(self, t):
        r = self.r
        scope = [(None, t)]
        targets = r.sample(t.cols, r.randint(1, min(2, len(t.cols))))
        sets = []
        for c in targets:
            if c.name in t.pk or self.chance(0.4):
                sets.append("%s = %s" % (c.name, self.value(c)))
            else:
                sets.append("%s = %s" % (c.name, self.expr(scope, c.cat, 1)))
        where = " WHERE " + self.pred(scope) if self.chance(0.8) else ""
        limit = ""
        if self.chance(0.3):
            limit = " ORDER BY %s LIMIT %d" % (", ".join(t.pk), r.randint(0, 3))
        touches_key = any(c.name in k for k in t.unique_sets() for c in targets)
        ignore = " IGNORE" if self.feat("ignore") and self.chance(0.15) and \
            (limit or not touches_key) else ""
        sql = "UPDATE%s %s SET %s%s%s" % (ignore, t.name, ", ".join(sets), where, limit)
        return Stmt(sql, "update", table=t.name)

    def delete(self, t):
        r = self.r
        where = " WHERE " + self.pred([(None, t)]) if self.chance(0.9) else ""
        limit = ""
        if self.chance(0.3):
            limit = " ORDER BY %s LIMIT %d" % (", ".join(t.pk), r.randint(0, 3))
        return Stmt("DELETE FROM %s%s%s" % (t.name, where, limit), "delete", table=t.name)

    def statement(self):
        r = self.r
        kinds = []
        weights = []
        for k, w in [("select", 3), ("order", 2), ("agg", 2), ("groupby", 2), ("distinct", 1),
                     ("dml", 4), ("join", 2), ("subquery", 2), ("union", 1)]:
            if k in self.f:
                kinds.append(k)
                weights.append(w)
        if not kinds:
            kinds, weights = ["select"], [1]
        k = r.choices(kinds, weights)[0]
        if k == "dml":
            t = r.choice(self.tables)
            d = r.choice(["insert", "insert", "update", "update", "delete"])
            if d == "insert":
                return self.insert(t)
            return self.update(t) if d == "update" else self.delete(t)
        if k == "join":
            return self.join()
        if k == "subquery":
            return self.subquery()
        if k == "union":
            return self.union()
        return self.select(k)


# ---- the driver ------------------------------------------------------------------------------

class Tester:
    def __init__(self, args, pair):
        self.args = args
        self.pair = pair
        self.tried = collections.Counter()
        self.bad = collections.Counter()
        self.both_failed = collections.Counter()
        self.soft = collections.Counter()
        self.mismatches = 0
        self.written = 0
        self.log = []  # the current round's DDL and DML, for reproductions

    def check(self, st, history=True):
        """Runs st on both servers and compares; returns True when they agree."""
        self.tried[st.kind] += 1
        global IGNORE_WARNINGS
        a, b = self.pair.run_both(st.sql)
        saved = IGNORE_WARNINGS
        IGNORE_WARNINGS = saved or st.ignore_warnings
        why = compare(a, b, st.ordered, st.fold, exact_warnings(st.sql))
        IGNORE_WARNINGS = saved
        if why is None and st.types:
            why = compare_types(a, b)
        ta = tb = None
        table = st.table or (dml_table(st.sql) if not st.is_ddl() else None)
        if why is None and table:
            ta, tb = self.pair.run_both("SELECT * FROM %s" % table)
            if compare(ta, tb, False, ()):
                why = "table contents differ afterwards"
        if history:
            self.log.append(st)
        if a.err and b.err:
            self.both_failed[st.kind] += 1
        if self.args.verbose:
            log("%s: %s\n  -> %s" % (st.kind, st.sql, "both fail %d" % a.err[0]
                                     if a.err and b.err else (why or "ok")))
        if why is None:
            return True
        if (self.args.soft_plan_warnings and why in ("warning counts differ",
                                                     "warning codes differ")
                and not exact_warnings(st.sql)):
            # Which parts of a query MariaDB evaluates (and so warns about) depends on its
            # plan: counted and listed, not a failure (see --soft-plan-warnings).
            self.soft[st.kind] += 1
            print("SOFT (%s) [%s]: %s" % (why, st.kind, st.sql), flush=True)
            return True
        self.mismatches += 1
        self.bad[st.kind] += 1
        self.report(st, why, a, b, ta, tb)
        return False

    def report(self, st, why, a, b, ta, tb):
        text = ["MISMATCH (%s) [%s]: %s" % (why, st.kind, st.sql),
                "zipdb:   " + a.show().replace("\n", "\n         "),
                "mariadb: " + b.show().replace("\n", "\n         ")]
        if ta is not None:
            text += ["zipdb table:   " + ta.show(40).replace("\n", "\n               "),
                     "mariadb table: " + tb.show(40).replace("\n", "\n               ")]
        print("\n".join(text), flush=True)
        if not self.args.out or self.written >= self.args.max_repros:
            return
        script = self.shrink(list(self.log[:-1]), st)
        os.makedirs(self.args.out, exist_ok=True)
        self.written += 1
        path = os.path.join(self.args.out, "mismatch-%d-%03d.sql" % (self.args.seed,
                                                                     self.written))
        with open(path, "w") as f:
            f.write("-- sqldiff seed %d: %s\n" % (self.args.seed, why))
            for line in text:
                f.write("".join("-- " + l + "\n" for l in line.split("\n")))
            f.write(render(script + [st]))
        print("  reproduction: %s" % path, flush=True)

    def reproduces(self, setup, st):
        p = self.pair
        p.use("shrink")
        try:
            for s in setup:
                p.z.run(s.sql)
                p.m.run(s.sql)
            a, b = p.run_both(st.sql)
            if compare(a, b, st.ordered, st.fold, exact_warnings(st.sql)):
                return True
            table = st.table or dml_table(st.sql)
            if table:
                ta, tb = p.run_both("SELECT * FROM %s" % table)
                return compare(ta, tb, False, ()) is not None
            return False
        finally:
            for s in (p.z, p.m):
                s.run("USE d")

    def shrink(self, setup, st):
        """Drops setup statements (and rows of multi-row INSERTs) that the mismatch does not
        need; bounded by --shrink-steps replays."""
        budget = [self.args.shrink_steps]

        def still(candidate):
            if budget[0] <= 0:
                return False
            budget[0] -= 1
            return self.reproduces(candidate, st)

        if budget[0] <= 0 or not still(setup):
            return setup
        # split multi-row INSERTs into single rows when that keeps the mismatch
        split = []
        for s in setup:
            if s.rows and len(s.rows) > 1:
                split += [Stmt(s.prefix + row, s.kind, table=s.table, rows=[row],
                               prefix=s.prefix) for row in s.rows]
            else:
                split.append(s)
        if len(split) != len(setup) and still(split):
            setup = split
        chunk = max(1, len(setup) // 2)
        while chunk >= 1 and budget[0] > 0:
            i = 0
            while i < len(setup) and budget[0] > 0:
                cand = setup[:i] + setup[i + chunk:]
                if any(s.is_ddl() for s in setup[i:i + chunk]):
                    i += chunk
                    continue
                if still(cand):
                    setup = cand
                else:
                    i += chunk
            chunk //= 2
        return setup

    def round(self, gen, budget):
        """One schema: create its tables, load rows, run up to budget statements. Returns the
        number of statements run."""
        r = gen.r
        self.log = []
        ntables = 2 if ("join" in gen.f or "subquery" in gen.f or "union" in gen.f
                        or r.random() < 0.5) else 1
        gen.tables = [gen.gen_table("t%d" % (i + 1)) for i in range(ntables)]
        n = 0
        for t in gen.tables:
            for s in (Stmt("DROP TABLE IF EXISTS %s" % t.name, "ddl"),
                      Stmt(t.create_sql(), "ddl")):
                n += 1
                if not self.check(s):
                    return n
        for t in gen.tables:
            for _ in range(r.randint(1, 4)):
                n += 1
                if not self.check(gen.insert(t, r.randint(1, 8), r.choice(
                        ["insert", "insert", "insert_ignore" if "ignore" in gen.f else "insert"]))):
                    return n
        while n < budget:
            st = gen.statement()
            n += 1
            ok = self.check(st, history=st.table is not None)
            if not ok:
                return n  # the tables may differ now: start a new round
        return n


def render(stmts):
    out = []
    for s in stmts:
        out += s.directives()
        out.append(s.sql + ";")
    return "\n".join(out) + "\n"


def parse_script(text):
    """Statements of a .sql script: each ends with ';' at the end of a line; '-- @ordered',
    '-- @multiset' and '-- @fold 0,2' before a statement say how to compare its rows
    (default: ordered when it has ORDER BY); '-- @ignore-warnings' leaves its warnings
    uncompared; '-- @types' compares the columns' wire types (and DECIMAL scales) too."""
    stmts, buf, directives = [], [], {}
    for line in text.splitlines():
        s = line.strip()
        if not buf and s.startswith("--"):
            m = re.match(r"--\s*@([\w-]+)\s*(.*)", s)
            if m:
                directives[m.group(1)] = m.group(2)
            continue
        if not s and not buf:
            continue
        buf.append(line)
        if s.endswith(";"):
            sql = "\n".join(buf).strip()[:-1].strip()
            buf = []
            if "ordered" in directives:
                ordered = True
            elif "multiset" in directives:
                ordered = False
            else:
                ordered = re.search(r"\bORDER\s+BY\b", sql, re.I) is not None
            fold = [int(x) for x in directives.get("fold", "").split(",") if x.strip()]
            st = Stmt(sql, "replay", ordered, fold)
            st.ignore_warnings = "ignore-warnings" in directives
            st.types = "types" in directives
            stmts.append(st)
            directives = {}
    if buf:
        stmts.append(Stmt("\n".join(buf).strip(), "replay"))
    return stmts


def replay(args, pair):
    tester = Tester(args, pair)
    failed_files = 0
    for path in args.replay:
        stmts = parse_script(open(path).read())
        pair.use("replay")
        before = tester.mismatches
        for st in stmts:
            tester.check(st, history=False)
        for s in (pair.z, pair.m):
            s.run("USE d")
        bad = tester.mismatches - before
        failed_files += bad > 0
        print("%s: %d statements, %s" % (path, len(stmts),
                                         "%d mismatches" % bad if bad else "ok"), flush=True)
    print("replayed %d files, %d statements, %d mismatches in %d files" % (
        len(args.replay), sum(tester.tried.values()), tester.mismatches, failed_files))
    return tester.mismatches


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zipdb", required=True, help="the zipdb binary")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--queries", type=int, default=None, help="statements to run")
    ap.add_argument("--time", type=float, default=None, help="seconds to run")
    ap.add_argument("--features", default=",".join(DEFAULT_FEATURES),
                    help="comma-separated, of: " + ",".join(ALL_FEATURES) + " (or 'all')")
    ap.add_argument("--round", type=int, default=60, help="statements per schema")
    ap.add_argument("--out", default=None, help="directory for mismatch reproductions")
    ap.add_argument("--max-repros", type=int, default=50)
    ap.add_argument("--shrink-steps", type=int, default=60)
    ap.add_argument("--replay", nargs="+", default=None, metavar="FILE")
    ap.add_argument("--keep", action="store_true", help="keep the servers' temp directory")
    ap.add_argument("--ignore-warnings", action="store_true",
                    help="do not compare warning counts and codes")
    ap.add_argument("--soft-plan-warnings", action="store_true",
                    help="a query or UPDATE/DELETE whose results agree but whose warnings "
                         "differ is listed (SOFT) and counted, not a mismatch: which parts "
                         "MariaDB evaluates depends on its plan")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    feats = ALL_FEATURES if args.features == "all" else \
        [f.strip() for f in args.features.split(",") if f.strip()]
    unknown = [f for f in feats if f not in ALL_FEATURES]
    if unknown:
        ap.error("unknown features: %s" % ", ".join(unknown))
    global IGNORE_WARNINGS
    IGNORE_WARNINGS = args.ignore_warnings
    if args.queries is None and args.time is None and not args.replay:
        args.queries = 1000

    pair = Pair(args)
    t0 = time.time()
    try:
        pair.start()
        za, ma = pair.sql_modes()
        zm = za.rows[0][0] if za.rows else za.show()
        mm = ma.rows[0][0] if ma.rows else ma.show()
        print("sql_mode: zipdb %r, mariadb %r" % (zm, mm), flush=True)
        if args.replay:
            bad = replay(args, pair)
            print("time %.1f s" % (time.time() - t0))
            return 1 if bad or pair.crashes else 0
        print("seed %d, features %s" % (args.seed, ",".join(feats)), flush=True)
        rnd = random.Random(args.seed)
        gen = Gen(rnd, feats)
        tester = Tester(args, pair)
        total = 0
        while True:
            if args.queries is not None and total >= args.queries:
                break
            if args.time is not None and time.time() - t0 >= args.time:
                break
            budget = args.round if args.queries is None else min(args.round,
                                                                  args.queries - total)
            total += tester.round(gen, max(budget, 8))
        dt = time.time() - t0
        print("\nsummary: seed %d, features %s" % (args.seed, ",".join(feats)))
        print("statements %d in %.1f s (%.0f/s); mismatches %d; zipdb crashes %d" % (
            total, dt, total / dt if dt else 0, tester.mismatches, pair.crashes))
        for k in sorted(tester.tried):
            print("  %-14s %6d tried, %5d both failed, %4d mismatched%s" % (
                k, tester.tried[k], tester.both_failed[k], tester.bad[k],
                ", %d plan-dependent warning differences" % tester.soft[k]
                if tester.soft[k] else ""))
        print("replay this run: %s --zipdb %s --seed %d --features %s %s" % (
            sys.argv[0], args.zipdb, args.seed, ",".join(feats),
            "--queries %d" % total))
        # 2: zipdb crashed (always a failure); 1: mismatches.
        return 2 if pair.crashes else 1 if tester.mismatches else 0
    finally:
        pair.stop()


if __name__ == "__main__":
    sys.exit(main())
