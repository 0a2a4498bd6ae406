#!/usr/bin/env python3
"""Table sizes on real text next to sbtest rows, zipdb's formats against MariaDB's (issue 19,
deliverable 6 and the size targets).

Two tables, each loaded alone into a fresh server of each format, through multi-row INSERTs of
1,000 rows per transaction, with the same small memory budget for every engine (so that most
pages leave memory while loading, as they would for a table larger than memory; zipdb's
optional cold layer only encodes pages that leave the pool):

  sbtest (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120), pad CHAR(60), KEY k_1 (k))
         filled as sysbench fills it: c is 10 groups of 11 random digits joined by '-', pad 5.
  docs   (id INT PRIMARY KEY, pkg VARCHAR(100), file VARCHAR(40), body TEXT, KEY pkg_1 (pkg))
         one row per paragraph of ../shared/datasets/debian_docs.py (real English text from
         this machine's /usr/share/doc; seed 7).

Per format and table: bytes allocated on disk after a clean shutdown (zipdb: its data file;
InnoDB: the table's .ibd, holes punched by PAGE_COMPRESSED not counted) and what
information_schema.TABLES says of data and index (zipdb: bytes of the page images; InnoDB:
pages in use, so PAGE_COMPRESSED shows its uncompressed pages there), plus the load time.

  /usr/bin/python3 bench/sizes-text.py --zipdb target/release/zipdb --out /tmp/sizes
"""
import argparse
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grid import Server  # noqa: E402  (same directory; the grid's server lifecycle)

# label -> (grid format that starts the server, table options)
VARIANTS = {
    "zipdb_none": ("zipdb_none", "COMPRESSION='none'"),
    "zipdb_fsst": ("zipdb_fsst", "COMPRESSION='fsst'"),
    "zipdb_default": ("zipdb_fsst", "ROW_FORMAT=COMPRESSED"),
    "zipdb_zstd": ("zipdb_zstd", "COMPRESSION='zstd'"),
    "zipdb_fsst_zstd": ("zipdb_fsst", "COMPRESSION='fsst+zstd'"),
    "innodb_dynamic": ("innodb_dynamic", "ENGINE=InnoDB ROW_FORMAT=DYNAMIC"),
    "innodb_kbs8": ("innodb_compressed", "ENGINE=InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8"),
    "innodb_page_compressed": ("innodb_page_compressed", "ENGINE=InnoDB PAGE_COMPRESSED=1"),
}

SHAPES = {
    "sbtest": "CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, "
              "pad CHAR(60) NOT NULL, KEY k_1 (k)) {opts}",
    "docs": "CREATE TABLE t (id INT PRIMARY KEY, pkg VARCHAR(100) NOT NULL, "
            "file VARCHAR(40) NOT NULL, body TEXT NOT NULL, KEY pkg_1 (pkg)) {opts}",
}

FIELDS = ["shape", "format", "rows", "raw_bytes", "load_s", "allocated_bytes", "data_length",
          "index_length"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def digits(rng, groups):
    return "-".join("".join(rng.choice("0123456789") for _ in range(11)) for _ in range(groups))


def sbtest_rows(n):
    rng = random.Random(7)
    return [(i, rng.randint(1, n), digits(rng, 10), digits(rng, 5)) for i in range(1, n + 1)]


def docs_rows(n, script):
    out = subprocess.run([sys.executable, script, "--rows", str(n), "--seed", "7"],
                         capture_output=True, text=True, check=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line]
    return [(i, pkg[:100], f[:40], body) for i, (pkg, f, body) in enumerate(rows, 1)]


def raw_bytes(rows):
    return sum(len(str(v).encode()) for r in rows for v in r)


def measure(a, label, shape, rows, base):
    import pymysql
    fmt, opts = VARIANTS[label]
    datadir = os.path.join(base, f"{shape}-{label}")
    s = Server(a, fmt, datadir)
    s.create()
    s.start(a.budget)
    try:
        conn = pymysql.connect(host="127.0.0.1", port=s.port, user="root", autocommit=True,
                               charset="utf8mb4")
        cur = conn.cursor()
        cur.execute("CREATE DATABASE sbtest CHARACTER SET utf8mb4")
        cur.execute("USE sbtest")
        cur.execute(SHAPES[shape].format(opts=opts))
        marks = ", ".join(["%s"] * len(rows[0]))
        t0 = time.time()
        for i in range(0, len(rows), 1000):
            cur.execute("BEGIN")
            cur.executemany(f"INSERT INTO t VALUES ({marks})", rows[i:i + 1000])
            cur.execute("COMMIT")
        load_s = time.time() - t0
        cur.execute("SELECT COUNT(*) FROM t")
        (count,) = cur.fetchone()
        if count != len(rows):
            raise SystemExit(f"{shape}/{label}: {count} rows after loading {len(rows)}")
        if a.optimize:
            # A rebuild after the load: what a table looks like after OPTIMIZE TABLE (zipdb
            # retrains its symbol table and rewrites every leaf; InnoDB rebuilds the table).
            cur.execute("OPTIMIZE TABLE t")
            cur.fetchall()
        conn.close()
    finally:
        s.stop()
    allocated, _ = s.size_bytes()
    # information_schema after a restart: zipdb counts the images its checkpoint wrote, and
    # InnoDB's statistics are then those of the flushed table.
    s.start(a.budget)
    try:
        conn = pymysql.connect(host="127.0.0.1", port=s.port, user="root", autocommit=True)
        cur = conn.cursor()
        if s.kind == "innodb":
            cur.execute("ANALYZE TABLE sbtest.t")
            cur.fetchall()
        cur.execute("SELECT DATA_LENGTH, INDEX_LENGTH FROM information_schema.TABLES "
                    "WHERE TABLE_SCHEMA = 'sbtest' AND TABLE_NAME = 't'")
        data_length, index_length = cur.fetchone()
        conn.close()
    finally:
        s.stop()
    shutil.rmtree(datadir, ignore_errors=True)
    return dict(shape=shape, format=label, rows=len(rows), raw_bytes=raw_bytes(rows),
                load_s=f"{load_s:.2f}", allocated_bytes=allocated, data_length=data_length,
                index_length=index_length)


def report(results):
    lines = ["| table | format | load s | allocated MiB | vs zipdb none | vs InnoDB PAGE_COMPRESSED "
             "| data MiB (I_S) | index MiB (I_S) |",
             "|---|---|---|---|---|---|---|---|"]
    for shape in SHAPES:
        rs = [r for r in results if r["shape"] == shape]
        ref = {r["format"]: r["allocated_bytes"] for r in rs}
        for r in rs:
            def ratio(to):
                return f"{r['allocated_bytes'] / ref[to]:.3f}" if ref.get(to) else "-"
            lines.append(
                f"| {shape} ({r['rows']:,} rows, {r['raw_bytes'] / 2**20:.1f} MiB of values) "
                f"| {r['format']} | {r['load_s']} | {r['allocated_bytes'] / 2**20:.2f} "
                f"| {ratio('zipdb_none')} | {ratio('innodb_page_compressed')} "
                f"| {int(r['data_length']) / 2**20:.2f} | {int(r['index_length']) / 2**20:.2f} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--zipdb", required=True, help="zipdb binary")
    p.add_argument("--out", default="target/sizes-text", help="directory for sizes.csv and .md")
    p.add_argument("--rows", type=int, default=100000, help="rows of each table")
    p.add_argument("--budget", type=int, default=16,
                   help="memory budget in MB, every engine (zipdb --pool-mb, InnoDB's pool)")
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--optimize", action="store_true",
                   help="run OPTIMIZE TABLE after the load, before measuring")
    p.add_argument("--formats", default=",".join(VARIANTS))
    p.add_argument("--docs-script", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "datasets",
        "debian_docs.py"))
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    base = tempfile.mkdtemp(prefix="zipdb-sizes.", dir="/dev/shm")
    results = []
    try:
        for shape in a.shapes.split(","):
            rows = sbtest_rows(a.rows) if shape == "sbtest" else docs_rows(a.rows, a.docs_script)
            log(f"{shape}: {len(rows):,} rows, {raw_bytes(rows) / 2**20:.1f} MiB of values")
            for label in a.formats.split(","):
                r = measure(a, label, shape, rows, base)
                log(f"  {label}: load {r['load_s']} s, allocated "
                    f"{r['allocated_bytes'] / 2**20:.2f} MiB, I_S data "
                    f"{int(r['data_length']) / 2**20:.2f} index {int(r['index_length']) / 2**20:.2f}")
                results.append(r)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    with open(os.path.join(a.out, "sizes.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(results)
    md = report(results)
    with open(os.path.join(a.out, "sizes.md"), "w") as f:
        f.write(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
