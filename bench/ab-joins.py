#!/usr/bin/env python3
"""Joins, zipdb binary A against binary B, interleaved (issue 20 E7: a hash join whose build
side fits, and a nested loop whose inner table fits, must cost nothing for the spill path).

Starts a throwaway server per binary (data on /dev/shm, random high ports), loads the same two
tables into both (bench/joins.py's shape), then runs each query on A and B in turn, --repeat
rounds, after one untimed warm-up each, and prints the median and min seconds and the ratio
B/A. The two results are compared first, so a fast wrong answer cannot count. Both servers stop
at the end, whatever happens.

usage: bench/ab-joins.py A B [--rows 100000] [--repeat 7] [--large]
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
    ("hash join (unindexed equality)",
     "SELECT COUNT(*), SUM(a.id) FROM a JOIN b ON b.u = a.u"),
    ("LEFT JOIN anti-join (unindexed)",
     "SELECT COUNT(*) FROM a LEFT JOIN b ON b.u = a.u WHERE b.id IS NULL"),
    ("hash join, rows sent (LIMIT 20000)",
     "SELECT a.id, b.id, b.pad FROM a JOIN b ON b.u = a.u LIMIT 20000"),
    ("derived table build (GROUP BY)",
     "SELECT COUNT(*), SUM(d.n) FROM a JOIN (SELECT u, COUNT(*) AS n FROM b GROUP BY u) d "
     "ON d.u = a.u"),
    ("nested loop (inequality, 2000 x 2000)",
     "SELECT COUNT(*) FROM a JOIN b ON b.u < a.u WHERE a.id <= 2000 AND b.id <= 2000"),
]
# With --large: a build side past the default tmp_memory_table_size (16 MiB), which spills
# since E7 (it was held in memory before).
LARGE = [
    ("hash join, wide build (spills on E7)",
     "SELECT COUNT(*), SUM(LENGTH(b.pad)) FROM a JOIN b ON b.u = a.u"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--large", action="store_true")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ab-joins-", dir="/dev/shm")
    rng = random.Random()
    base = rng.randrange(40000, 60000)
    ports = {"A": base, "B": base + 1}
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
            cur.execute("CREATE DATABASE jb")
            cur.execute("USE jb")
            pad = 200 if args.large else 40
            cur.execute("CREATE TABLE a (id INT PRIMARY KEY, k INT, u INT, pad VARCHAR(40))")
            cur.execute(f"CREATE TABLE b (id INT PRIMARY KEY, a_id INT, u INT, pad VARCHAR({pad}))")
            conns[label] = c
        rows = args.rows
        for t in ("a", "b"):
            for start in range(1, rows + 1, 2000):
                vals = []
                for i in range(start, min(start + 2000, rows + 1)):
                    h = (i * 2654435761) % 4294967296
                    if t == "a":
                        vals.append(f"({i},{h % 10000},{h % (rows * 2)},'{'x' * 30}')")
                    else:
                        w = 190 if args.large else 30
                        vals.append(f"({i},{h % rows + 1},{(h >> 7) % (rows * 2)},'{'y' * w}')")
                sql = f"INSERT INTO {t} VALUES " + ",".join(vals)
                for c in conns.values():
                    c.cursor().execute(sql)
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
