#!/usr/bin/env python3
"""Joins, zipdb against MariaDB 10.11 (InnoDB), on the same machine, in one run.

Starts a throwaway zipdb (release build) and a throwaway MariaDB, each with the same pool
budget and data on /dev/shm, loads the same two tables, and times each join query on both
(interleaved, median of --repeat runs). Every query's result is compared between the servers
first, so a fast wrong answer cannot count. Prints one line per query and the ratios.

  a (id INT PRIMARY KEY, k INT, u INT, pad VARCHAR(40), KEY (k))     --rows rows
  b (id INT PRIMARY KEY, a_id INT, u INT, pad VARCHAR(40), KEY (a_id)) --rows rows

usage: bench/joins.py [--zipdb target/release/zipdb] [--rows 100000] [--repeat 5]
                      [--pool-mb 256]
Needs /usr/bin/python3 with pymysql, mariadbd and mariadb-install-db (Debian packages).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import pymysql

from pair import start_mariadb, wait_port

QUERIES = [
    # (name, SQL, what zipdb's EXPLAIN should say for the second table: its access type for
    # an index lookup, else words of its Extra column)
    ("index lookup (b.a_id indexed)",
     "SELECT COUNT(*), SUM(b.u) FROM a JOIN b ON b.a_id = a.id WHERE a.k < 100", "ref"),
    ("primary-key lookup",
     "SELECT COUNT(*), SUM(a.u) FROM b JOIN a ON a.id = b.a_id WHERE b.id <= 20000", "eq_ref"),
    ("hash join (unindexed equality)",
     "SELECT COUNT(*), SUM(a.id) FROM a JOIN b ON b.u = a.u", "hash join"),
    ("LEFT JOIN anti-join (unindexed)",
     "SELECT COUNT(*) FROM a LEFT JOIN b ON b.u = a.u WHERE b.id IS NULL", "hash join"),
    ("nested loop (inequality, 2000 x 2000)",
     "SELECT COUNT(*) FROM a JOIN b ON b.u < a.u WHERE a.id <= 2000 AND b.id <= 2000",
     "nested loop"),
    ("IN subquery",
     "SELECT COUNT(*) FROM a WHERE a.u IN (SELECT u FROM b WHERE b.id <= 50000)", None),
]


def load(conn, rows, engine_opts):
    c = conn.cursor()
    c.execute("CREATE DATABASE IF NOT EXISTS jb")
    c.execute("USE jb")
    c.execute(f"CREATE TABLE a (id INT PRIMARY KEY, k INT, u INT, pad VARCHAR(40), KEY kk (k)) {engine_opts}")
    c.execute(f"CREATE TABLE b (id INT PRIMARY KEY, a_id INT, u INT, pad VARCHAR(40), KEY ka (a_id)) {engine_opts}")
    step = 2000
    for t in ("a", "b"):
        for start in range(1, rows + 1, step):
            vals = []
            for i in range(start, min(start + step, rows + 1)):
                # Deterministic pseudo-random values: the same data on both servers.
                h = (i * 2654435761) % 4294967296
                if t == "a":
                    vals.append(f"({i},{h % 10000},{h % (rows * 2)},'{'x' * 30}')")
                else:
                    vals.append(f"({i},{h % rows + 1},{(h >> 7) % (rows * 2)},'{'y' * 30}')")
            c.execute(f"INSERT INTO {t} VALUES " + ",".join(vals))
        conn.commit()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zipdb", default=os.environ.get("CARGO_TARGET_DIR", "target") + "/release/zipdb")
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pool-mb", type=int, default=256)
    args = ap.parse_args()
    work = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None, prefix="joinbench.")
    procs = []
    try:
        zport, mport = 3461, 3462
        zlog = open(os.path.join(work, "zipdb.log"), "w")
        procs.append(subprocess.Popen([args.zipdb, "serve", "--data-dir", os.path.join(work, "z"),
                                       "--port", str(zport), "--pool-mb", str(args.pool_mb)],
                                      stdout=zlog, stderr=zlog))
        procs.append(start_mariadb(work, mport, args.pool_mb))
        wait_port(zport)
        wait_port(mport)
        conns = {}
        for name, port, opts in (("zipdb", zport, "ROW_FORMAT=COMPRESSED"),
                                 ("innodb", mport, "ENGINE=InnoDB ROW_FORMAT=DYNAMIC")):
            conn = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=False)
            t0 = time.time()
            load(conn, args.rows, opts)
            print(f"loaded {name}: 2 x {args.rows} rows in {time.time() - t0:.1f} s", flush=True)
            if name == "innodb":
                # Statistics for InnoDB's optimizer (zipdb plans without them).
                conn.cursor().execute("ANALYZE TABLE a, b")
            conns[name] = conn
        print(f"{'query':42} {'zipdb ms':>10} {'InnoDB ms':>10} {'zipdb/InnoDB':>13}")
        for qname, sql, method in QUERIES:
            if method:
                c = conns["zipdb"].cursor()
                c.execute("EXPLAIN " + sql)
                last = c.fetchall()[-1]
                extra = f"type {last[3]}, Extra {last[9] or ''}"
                if method != last[3] and method not in (last[9] or ""):
                    raise SystemExit(f"{qname}: zipdb's plan says {extra!r}, expected {method!r}")
            results = {}
            times = {"zipdb": [], "innodb": []}
            for _ in range(args.repeat):
                for name, conn in conns.items():
                    c = conn.cursor()
                    t0 = time.perf_counter()
                    c.execute(sql)
                    r = c.fetchall()
                    times[name].append((time.perf_counter() - t0) * 1000)
                    conn.commit()
                    results[name] = tuple(tuple(str(v) for v in row) for row in r)
            if results["zipdb"] != results["innodb"]:
                raise SystemExit(f"{qname}: results differ: zipdb {results['zipdb']} InnoDB {results['innodb']}")
            z, m = statistics.median(times["zipdb"]), statistics.median(times["innodb"])
            print(f"{qname:42} {z:10.1f} {m:10.1f} {z / m:12.2f}x", flush=True)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
