#!/usr/bin/env python3
"""Checks zipdb's default collation (utf8mb4_general_ci) against MariaDB 10.11 for every code
point of the BMP (and a few beyond it), by what queries return, not by WEIGHT_STRING.

    /usr/bin/python3 tests/diff/collation_bmp.py --zipdb target/debug/zipdb

It starts both servers as sqldiff.py does, loads one row per code point (U+0000..U+FFFF without
the surrogates, plus U+10000, U+1D400, U+1F600, U+10FFFF) into a table with a secondary index on
the character and one without, and compares on both servers:

* ORDER BY c, id over the whole table (the total order of the weights), by a table scan and
  through the index;
* the classes of equal characters: each row joined (c = c, a hash join) with its group's
  smallest id from GROUP BY c, and COUNT(DISTINCT c);
* a UNIQUE key: one character per class loads, every other member of a class is a duplicate
  (1062) on both; a text primary key scanned in key order (zipdb) against ORDER BY (MariaDB);
* lookups and ranges through the index (=, BETWEEN), LIKE and LOCATE for sampled characters;
* UPPER and LOWER of every character.

Exit status 1 on any difference; the differences are listed (at most --show per check).
"""

import argparse
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqldiff  # noqa: E402

EXTRA = [0x10000, 0x1D400, 0x1F600, 0x10FFFF]


def lit(cp):
    s = chr(cp)
    if s == "\0":
        return "'\\0'"
    return sqldiff.q(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zipdb", required=True)
    ap.add_argument("--show", type=int, default=20, help="differences shown per check")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    pair = sqldiff.Pair(types.SimpleNamespace(zipdb=args.zipdb, keep=args.keep))
    cps = [c for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF] + EXTRA
    failures = 0

    def both(sql, expect_ok=True):
        a, b = pair.run_both(sql)
        if expect_ok and (a.err or b.err):
            raise SystemExit("failed: %s\n  zipdb %s\n  mariadb %s" % (sql[:200], a.err, b.err))
        return a, b

    def check(name, za, ma):
        nonlocal failures
        if za == ma:
            print("ok    %-48s %d rows" % (name, len(za)))
            return
        failures += 1
        print("DIFF  %s: zipdb %d rows, mariadb %d rows" % (name, len(za), len(ma)))
        shown = 0
        for i, (x, y) in enumerate(zip(za, ma)):
            if x != y:
                print("      row %d: zipdb %r, mariadb %r" % (i, x, y))
                shown += 1
                if shown >= args.show:
                    break

    try:
        pair.start()
        both("CREATE TABLE h (id INT PRIMARY KEY, c VARCHAR(2) NOT NULL, KEY (c))")
        both("CREATE TABLE s (id INT PRIMARY KEY, c VARCHAR(2) NOT NULL)")
        for k in range(0, len(cps), 1000):
            rows = ",".join("(%d,%s)" % (c, lit(c)) for c in cps[k:k + 1000])
            both("INSERT INTO h VALUES " + rows)
            both("INSERT INTO s VALUES " + rows)

        def rows(sql):
            a, b = both(sql)
            return a.rows, b.rows

        for t in ("s", "h"):
            check("ORDER BY c, id (%s)" % t, *rows("SELECT id FROM %s ORDER BY c, id" % t))
            check("ORDER BY c DESC, id (%s)" % t,
                  *rows("SELECT id FROM %s ORDER BY c DESC, id" % t))
        za, ma = rows("SELECT s.id, g.m FROM s JOIN (SELECT c, MIN(id) AS m FROM s GROUP BY c) g"
                      " ON s.c = g.c ORDER BY s.id")
        check("classes (GROUP BY c, hash join on c = c)", za, ma)
        classes = {}
        for cid, m in ma:
            classes.setdefault(int(m), []).append(int(cid))
        # COUNT(DISTINCT) in zipdb compares each value with every one kept so far: the Latin,
        # Greek and Cyrillic blocks only, to stay quick.
        check("COUNT(DISTINCT c) up to U+07FF",
              *rows("SELECT COUNT(DISTINCT c) FROM s WHERE id < 2048"))
        check("DISTINCT c", *rows("SELECT COUNT(*) FROM (SELECT DISTINCT c FROM s) x"))
        check("join through the index h.c = s.c",
              *rows("SELECT COUNT(*), SUM(h.id), SUM(s.id) FROM h JOIN s ON h.c = s.c"))

        # A unique key: each class once, then every other member collides.
        both("CREATE TABLE u (c VARCHAR(2) NOT NULL, UNIQUE KEY (c))")
        reps = sorted(classes)
        for k in range(0, len(reps), 1000):
            both("INSERT INTO u VALUES " + ",".join("(%s)" % lit(c) for c in reps[k:k + 1000]))
        dup_z, dup_m = [], []
        for m, members in sorted(classes.items()):
            for c in members:
                if c == m:
                    continue
                a, b = both("INSERT INTO u VALUES (%s)" % lit(c), expect_ok=False)
                dup_z.append((c, a.err[0] if a.err else 0))
                dup_m.append((c, b.err[0] if b.err else 0))
        check("UNIQUE key duplicates (1062)", dup_z, dup_m)
        check("unique index order", *rows("SELECT c FROM u ORDER BY c"))
        # zipdb returns a text primary key's rows in key order without an ORDER BY (MariaDB's
        # InnoDB does too, but that is not promised): the memcmp order of the encoded keys.
        both("CREATE TABLE k (c VARCHAR(2) NOT NULL PRIMARY KEY)")
        both("INSERT INTO k SELECT c FROM u")
        for sql in ("SELECT c FROM k", "SELECT c FROM k WHERE c >= '\\0'"):
            o = pair.z.run(sql)
            want = pair.m.run("SELECT c FROM k ORDER BY c")
            check("text primary key order (zipdb: %s)" % sql, o.rows, want.rows)

        # Lookups, ranges, LIKE and LOCATE for characters of the biggest classes and samples.
        probes = sorted(classes, key=lambda m: -len(classes[m]))[:40]
        probes += list(range(0xC0, 0x250, 7)) + list(range(0x370, 0x530, 11)) + \
            list(range(0x1E00, 0x2000, 13)) + [0xDF, 0x130, 0x131, 0x17F, 0x3C2, 0xFFFD, 0x1F600]
        look_z, look_m = [], []
        for p in probes:
            for sql in ("SELECT id FROM h WHERE c = %s ORDER BY id",
                        "SELECT id FROM s WHERE c LIKE %s ORDER BY id",
                        "SELECT COUNT(*) FROM h WHERE c BETWEEN %s AND 'Z'",
                        "SELECT COUNT(*) FROM s WHERE LOCATE(%s, CONCAT('x', c)) = 2"):
                a, b = both(sql % lit(p))
                look_z.append((p, sql[:40], a.rows))
                look_m.append((p, sql[:40], b.rows))
        check("=, LIKE, BETWEEN, LOCATE for %d probes" % len(probes), look_z, look_m)

        check("UPPER, LOWER", *rows("SELECT id, HEX(UPPER(c)), HEX(LOWER(c)) FROM s ORDER BY id"))
    finally:
        pair.stop()
    print("%s: %d check(s) differ" % ("FAIL" if failures else "PASS", failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
