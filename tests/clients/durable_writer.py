#!/usr/bin/env python3
"""Acknowledged commits must survive a kill -9 of the server.

write PORT ACKFILE FIRST_ID: inserts rows with ids FIRST_ID, FIRST_ID+1, ... into
sbtest.acked in autocommit mode, and appends each id to ACKFILE (flushed) only after the
server answered OK. Runs until the connection breaks (the server was killed); exits 0 then,
printing how many were acknowledged, and non-zero on any SQL error or if none was.

check PORT ACKFILE NEXT_ID: every id in ACKFILE must be in sbtest.acked, and no id there may be
>= NEXT_ID (never written) or duplicated.
"""

import sys

import pymysql

mode, port, ackfile, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
con = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", database="sbtest",
                      autocommit=True)
cur = con.cursor()

if mode == "write":
    acked = 0
    with open(ackfile, "a") as f:
        i = n
        while True:
            try:
                cur.execute("INSERT INTO acked (id, note) VALUES (%s, %s)", (i, f"row {i}"))
            except pymysql.err.OperationalError as e:
                # 2013 lost connection / 2006 gone away: the server was killed mid-statement.
                if e.args[0] not in (2006, 2013, 2003, 2055):
                    sys.exit(f"FAILED: writer: unexpected error {e.args!r}")
                break
            except pymysql.MySQLError as e:
                sys.exit(f"FAILED: writer: unexpected error {e.args!r}")
            except (ConnectionError, OSError) as e:
                break
            if cur.rowcount != 1:
                sys.exit(f"FAILED: writer: INSERT of {i} affected {cur.rowcount} rows")
            f.write(f"{i}\n")
            f.flush()
            acked += 1
            i += 1
    print(f"  writer: {acked} inserts acknowledged from id {n}")
    if acked == 0:
        sys.exit("FAILED: writer: no insert was acknowledged before the kill")
elif mode == "check":
    with open(ackfile) as f:
        want = [int(line) for line in f if line.strip()]
    cur.execute("SELECT id FROM acked ORDER BY id")
    have = [r[0] for r in cur.fetchall()]
    present = set(have)
    lost = [i for i in want if i not in present]
    if lost:
        sys.exit(f"FAILED: {len(lost)} acknowledged inserts lost after the crash, e.g. {lost[:10]}")
    if len(present) != len(have):
        sys.exit("FAILED: duplicate ids in acked")
    extra = [i for i in have if i >= n]
    if extra:
        sys.exit(f"FAILED: ids that were never written: {extra[:10]}")
    # At most one unacknowledged insert per crash may have committed (the one in flight).
    cur.execute("SELECT COUNT(*) FROM acked WHERE id BETWEEN 0 AND %s", (n,))
    (count,) = cur.fetchone()
    if count != len(have):
        sys.exit(f"FAILED: index range count {count} != scan count {len(have)}")
    print(f"  durability: all {len(want)} acknowledged inserts present "
          f"({len(have) - len(want)} in flight at a kill committed too)")
else:
    sys.exit(f"unknown mode {mode}")
