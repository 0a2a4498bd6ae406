#!/usr/bin/env python3
"""GROUP BY / DISTINCT, zipdb binary A against binary B, interleaved (issue 20 E7: the spill
path must cost nothing when the groups fit in memory).

Starts a throwaway server per binary (data on /dev/shm, random high ports), loads the same
sysbench-shaped table into both, then runs each query on A and B in turn, --repeat rounds,
after one untimed warm-up each, and prints the median and min seconds and the ratio B/A. The
two results are compared first, so a fast wrong answer cannot count. Both servers stop at the
end, whatever happens.

usage: bench/ab-groupby.py A B [--rows 200000] [--repeat 7] [--large]
"""
import argparse
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time

import pymysql

from pair import wait_port

QUERIES = [
    ("GROUP BY k % 100 (100 groups)",
     "SELECT k % 100, COUNT(*), SUM(LENGTH(c)), MIN(c), AVG(id) FROM sbtest GROUP BY 1"),
    ("GROUP BY id % 20000 (20k groups, fit)",
     "SELECT id % 20000, COUNT(*), MAX(k) FROM sbtest GROUP BY 1"),
    ("DISTINCT k % 5000 (5k keys, fit)",
     "SELECT DISTINCT k % 5000 FROM sbtest"),
    ("COUNT(DISTINCT k % 1000) no GROUP BY",
     "SELECT COUNT(DISTINCT k % 1000), SUM(k) FROM sbtest"),
]
# With --large: groups past the default tmp_memory_table_size (16 MiB), which spill since E7.
LARGE = [
    ("GROUP BY id (every row a group)",
     "SELECT id, COUNT(*), SUM(k), MAX(c) FROM sbtest GROUP BY id"),
    ("DISTINCT c (every row a key)",
     "SELECT COUNT(*) FROM (SELECT DISTINCT c FROM sbtest) t"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--large", action="store_true",
                    help="also time GROUP BY/DISTINCT past 16 MiB of groups")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ab-groupby-", dir="/dev/shm")
    rng = random.Random(7)
    ports = {"A": rng.randrange(40000, 60000), "B": rng.randrange(40000, 60000) + 1}
    procs = []
    try:
        for label, binary in (("A", args.a), ("B", args.b)):
            log = open(os.path.join(work, f"{label}.log"), "w")
            procs.append(subprocess.Popen(
                [binary, "serve", "--data-dir", os.path.join(work, label), "--port",
                 str(ports[label]), "--pool-mb", "512", "--flush-policy", "write"],
                stdout=log, stderr=log))
        conns = {}
        for label in ("A", "B"):
            wait_port(ports[label])
            c = pymysql.connect(host="127.0.0.1", port=ports[label], user="root",
                                autocommit=True)
            cur = c.cursor()
            cur.execute("CREATE DATABASE b")
            cur.execute("USE b")
            cur.execute("CREATE TABLE sbtest (id INT PRIMARY KEY, k INT NOT NULL, "
                        "c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL)")
            conns[label] = c
        data = random.Random(20)
        for start in range(0, args.rows, 2000):
            vals = ",".join(
                f"({i}, {data.randrange(1, args.rows + 1)}, '{data.randrange(10**11):011d}', 'p')"
                for i in range(start + 1, min(start + 2000, args.rows) + 1))
            for c in conns.values():
                c.cursor().execute(f"INSERT INTO sbtest VALUES {vals}")
        for name, sql in QUERIES + (LARGE if args.large else []):
            times = {"A": [], "B": []}
            results = {}
            for label, c in conns.items():
                cur = c.cursor()
                cur.execute(sql)
                results[label] = cur.fetchall()
            if results["A"] != results["B"]:
                raise SystemExit(f"{name}: results differ")
            for _ in range(args.repeat):
                for label, c in conns.items():
                    cur = c.cursor()
                    t0 = time.perf_counter()
                    cur.execute(sql)
                    cur.fetchall()
                    times[label].append(time.perf_counter() - t0)
            ma, mb = statistics.median(times["A"]), statistics.median(times["B"])
            print(f"{name:40} A med {ma:.4f} min {min(times['A']):.4f}  "
                  f"B med {mb:.4f} min {min(times['B']):.4f}  B/A {mb / ma:.3f}", flush=True)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
