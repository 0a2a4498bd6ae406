#!/usr/bin/env python3
"""Issue 20's query-engine targets, zipdb against MariaDB 10.11 (InnoDB), in one run.

Starts a throwaway zipdb (release build) and a throwaway MariaDB, each with the same pool
budget (large enough to hold the data) and data on /dev/shm. Loads the same sysbench-shaped
table three times: zipdb COMPRESSION='none', zipdb ROW_FORMAT=COMPRESSED (the server's default
compressed format) and InnoDB ROW_FORMAT=DYNAMIC. Then times each query on the three
(interleaved: one run of each in turn, --repeat rounds, medians), after one untimed warm-up
run each. Every query's result is compared across the three first, so a fast wrong answer
cannot count. Prints one line per query with the ratios to InnoDB (issue 20's target: each
<= 1.2x).

  sbtest (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL,
          KEY k_1 (k))          --rows rows, sysbench's value shapes (random digits)

With --dump, it then measures the memory target: zipdb restarted on the same data with a pool
of half the uncompressed table's size, `mariadb-dump --quick` of that table, and the server's
peak RSS (VmHWM) against the pool (target: RSS <= pool + 200 MB).

usage: bench/engine.py [--zipdb target/release/zipdb] [--rows 1000000] [--repeat 3]
                       [--pool-mb 1024] [--dump] [--queries like,group,offset]
Needs /usr/bin/python3 with pymysql, mariadbd, mariadb-install-db and mariadb-dump
(Debian packages).
"""
import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import pymysql

from pair import start_mariadb, wait_port

QUERIES = {
    "like": ("full scan, c LIKE '%123%'",
             "SELECT COUNT(*) FROM {t} WHERE c LIKE '%123%'"),
    "group": ("GROUP BY k % 100, COUNT, SUM(LENGTH(c))",
              "SELECT k % 100, COUNT(*), SUM(LENGTH(c)) FROM {t} GROUP BY 1"),
    "offset": ("ORDER BY c LIMIT 10 OFFSET n/2",
               "SELECT id, k, c FROM {t} ORDER BY c LIMIT 10 OFFSET {half}"),
}

TABLES = [
    # (label, server, table name, table options)
    ("zipdb none", "zipdb", "sb_none", "COMPRESSION='none'"),
    ("zipdb compressed", "zipdb", "sb_comp", "ROW_FORMAT=COMPRESSED"),
    ("InnoDB dynamic", "innodb", "sb_inno", "ENGINE=InnoDB ROW_FORMAT=DYNAMIC"),
]


def batches(rows, seed=20):
    """INSERT value lists of sysbench's shapes: c is 10 groups of 11 random digits joined by
    '-', pad 5 groups; k uniform in [1, rows]. Generated once, loaded into every table."""
    rng = random.Random(seed)

    def digits(groups):
        return "-".join(f"{rng.randrange(10**11):011d}" for _ in range(groups))

    out = []
    step = 1000
    for start in range(1, rows + 1, step):
        out.append(",".join(f"({i},{rng.randint(1, rows)},'{digits(10)}','{digits(5)}')"
                            for i in range(start, min(start + step, rows + 1))))
    return out


def load(conn, table, opts, values):
    c = conn.cursor()
    c.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL,"
              f" pad CHAR(60) NOT NULL, KEY k_1 (k)) {opts}")
    for v in values:
        c.execute(f"INSERT INTO {table} VALUES {v}")
        conn.commit()


def start_zipdb(args, work, port, pool_mb):
    log = open(os.path.join(work, "zipdb.log"), "a")
    return subprocess.Popen([args.zipdb, "serve", "--data-dir", os.path.join(work, "z"),
                             "--port", str(port), "--pool-mb", str(pool_mb),
                             "--flush-policy", "write"],
                            stdout=log, stderr=log)


def vmhwm_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1])
    raise SystemExit("no VmHWM")


def stop(p):
    p.terminate()
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zipdb", default=os.environ.get("CARGO_TARGET_DIR", "target") + "/release/zipdb")
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pool-mb", type=int, default=1024)
    ap.add_argument("--queries", default="like,group,offset")
    ap.add_argument("--dump", action="store_true", help="also measure mariadb-dump --quick's RSS")
    args = ap.parse_args()
    work = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None, prefix="enginebench.")
    procs = {}
    try:
        zport, mport = 3471, 3472
        procs["zipdb"] = start_zipdb(args, work, zport, args.pool_mb)
        procs["innodb"] = start_mariadb(work, mport, args.pool_mb,
                                        "--innodb-flush-log-at-trx-commit=2")
        wait_port(zport)
        wait_port(mport)
        ports = {"zipdb": zport, "innodb": mport}
        t0 = time.time()
        values = batches(args.rows)
        print(f"generated {args.rows} rows in {time.time() - t0:.1f} s", flush=True)
        conns = {}
        for label, server, table, opts in TABLES:
            conn = pymysql.connect(host="127.0.0.1", port=ports[server], user="root", autocommit=False)
            conn.cursor().execute("CREATE DATABASE IF NOT EXISTS eb")
            conn.select_db("eb")
            t0 = time.time()
            load(conn, table, opts, values)
            print(f"loaded {label}: {args.rows} rows in {time.time() - t0:.1f} s (one client,"
                  " 1000-row INSERTs, a commit each)", flush=True)
            if server == "innodb":
                conn.cursor().execute(f"ANALYZE TABLE {table}")
            conns[label] = (conn, table)
        del values
        print(f"{'query':42} " + " ".join(f"{label + ' ms':>20}" for label, *_ in TABLES)
              + f" {'none/InnoDB':>12} {'comp/InnoDB':>12}")
        failed = False
        for key in args.queries.split(","):
            name, sql = QUERIES[key]
            results, times, errors = {}, {label: [] for label, *_ in TABLES}, {}
            for rnd in range(args.repeat + 1):
                for label, (conn, table) in conns.items():
                    c = conn.cursor()
                    q = sql.format(t=table, half=args.rows // 2)
                    t0 = time.perf_counter()
                    try:
                        c.execute(q)
                        r = c.fetchall()
                    except pymysql.MySQLError as e:
                        errors[label] = str(e)
                        conn.rollback()
                        continue
                    elapsed = (time.perf_counter() - t0) * 1000
                    conn.commit()
                    if rnd > 0:  # round 0 warms caches
                        times[label].append(elapsed)
                    results[label] = tuple(tuple(str(v) for v in row) for row in r)
            if errors:
                print(f"{name:42} errors: {errors}", flush=True)
                failed = True
                continue
            if len(set(results.values())) != 1:
                print(f"{name:42} results differ: " + "; ".join(
                    f"{k}: {str(v)[:200]}" for k, v in results.items()), flush=True)
                failed = True
                continue
            med = {label: statistics.median(ts) for label, ts in times.items()}
            inno = med["InnoDB dynamic"]
            print(f"{name:42} " + " ".join(f"{med[label]:20.1f}" for label, *_ in TABLES)
                  + f" {med['zipdb none'] / inno:11.2f}x {med['zipdb compressed'] / inno:11.2f}x",
                  flush=True)
        for conn, _ in conns.values():
            conn.close()
        if args.dump:
            failed |= dump_rss(args, work, zport, procs)
        return 1 if failed else 0
    finally:
        for p in procs.values():
            stop(p)
        shutil.rmtree(work, ignore_errors=True)


def dump_rss(args, work, port, procs):
    """Restart zipdb with a pool half the uncompressed table's size and dump that table."""
    conn = pymysql.connect(host="127.0.0.1", port=port, user="root", database="eb")
    c = conn.cursor()
    c.execute("SELECT DATA_LENGTH + INDEX_LENGTH FROM information_schema.TABLES"
              " WHERE TABLE_SCHEMA = 'eb' AND TABLE_NAME = 'sb_none'")
    size_mb = int(c.fetchone()[0]) // (1 << 20)
    conn.close()
    pool_mb = max(16, size_mb // 2)
    stop(procs["zipdb"])
    procs["zipdb"] = start_zipdb(args, work, port, pool_mb)
    wait_port(port)
    pid = procs["zipdb"].pid
    before = vmhwm_kb(pid)
    t0 = time.time()
    out = subprocess.run(["mariadb-dump", "-h127.0.0.1", f"-P{port}", "-uroot", "--quick",
                          "--skip-lock-tables", "eb", "sb_none"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.time() - t0
    after = vmhwm_kb(pid)
    ok = out.returncode == 0 and out.stdout.count(b"INSERT INTO") > 0
    growth_mb = (after - pool_mb * 1024) / 1024
    print(f"mariadb-dump --quick of sb_none ({size_mb} MB, pool {pool_mb} MB): rc={out.returncode}"
          f" {len(out.stdout) >> 20} MB of SQL in {elapsed:.1f} s; VmHWM {before // 1024} MB at"
          f" start, {after // 1024} MB after = pool + {growth_mb:.0f} MB (target <= pool + 200 MB)",
          flush=True)
    if not ok:
        print(out.stderr.decode(errors="replace")[-2000:])
    return not ok or growth_mb > 200


if __name__ == "__main__":
    sys.exit(main())
