"""The sysbench grid: zipdb against MariaDB 10.11 on the same machine, in one run.

Run it through bench/sysbench-grid (which installs the tools and builds zipdb). Every measured
point starts a throwaway server with the point's memory budget, warms it up with the same
workload, measures, and stops it, so that no other server runs while one is measured; the
points are interleaved (round, then disk, then budget, then format) so that drift of a shared
machine hits every format alike.

Formats (--formats):
  zipdb_none, zipdb_lz4, zipdb_zstd   zipdb tables with COMPRESSION='none'|'lz4'|'zstd'
  zipdb_fsst                          zipdb tables with COMPRESSION='fsst' (compact leaves, FSST records)
  innodb_dynamic                      InnoDB ROW_FORMAT=DYNAMIC
  innodb_compressed                   InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8
  innodb_page_compressed              InnoDB PAGE_COMPRESSED=1 (zlib, hole punching)
  myrocks                             MyRocks, lz4 with zstd for the bottommost level

Memory budget: zipdb --pool-mb (decoded and compressed pages together), InnoDB
innodb_buffer_pool_size, MyRocks rocksdb_block_cache_size (its memtables come on top).

Disks: "ram" is /dev/shm (tmpfs); "disk" is a directory on a real file system (--disk-dir) with
O_DIRECT data files where the engine has it (zipdb --direct-io, innodb_flush_method=O_DIRECT,
MyRocks direct reads and direct flush/compaction), so that the OS page cache does not hold what
the budget does not. Commits are durable on every engine (zipdb flush policy sync,
innodb_flush_log_at_trx_commit=1, MyRocks rocksdb_flush_log_at_trx_commit=1).

Size: bytes allocated on disk (st_blocks, so punched holes do not count) by the files holding
the tables' data and indexes, after a clean shutdown: zipdb.data; InnoDB's sbtest/*.ibd; MyRocks'
*.sst files (memtables flushed first). Logs (zipdb's WAL, InnoDB's redo and undo, RocksDB's
WAL) are excluded for every engine.
"""

import argparse
import csv
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

FORMATS = {
    # name: (kind, sysbench table options)
    "zipdb_none": ("zipdb", "innodb COMPRESSION='none'"),
    "zipdb_lz4": ("zipdb", "innodb COMPRESSION='lz4'"),
    "zipdb_zstd": ("zipdb", "innodb COMPRESSION='zstd'"),
    "zipdb_fsst": ("zipdb", "innodb COMPRESSION='fsst'"),
    "innodb_dynamic": ("innodb", "innodb ROW_FORMAT=DYNAMIC"),
    "innodb_compressed": ("innodb", "innodb ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8"),
    "innodb_page_compressed": ("innodb", "innodb PAGE_COMPRESSED=1"),
    "myrocks": ("myrocks", "rocksdb"),
}
# The formats of the "compressed vs uncompressed" experiments.
PAIR_FORMATS = "zipdb_none,zipdb_fsst,innodb_dynamic,innodb_compressed"
EXPERIMENTS = ("grid", "scaling", "sizes", "readonly", "pareto")

RUN_FIELDS = [
    "experiment", "disk", "format", "budget_mb", "tables", "rows", "threads", "test",
    "rand_type", "round", "secs", "tps", "qps", "p95_ms", "errors", "reconnects",
]
LOAD_FIELDS = [
    "experiment", "disk", "format", "tables", "rows", "round", "load_s", "size_bytes",
    "file_bytes",
]
SIZE_FIELDS = [
    "disk", "format", "rows", "insert_s", "size_bytes", "scan_ms", "point_select_us",
]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def allocated_bytes(paths):
    """Bytes allocated on disk (holes punched by PAGE_COMPRESSED do not count), and the files'
    apparent sizes (which count holes, and not space allocated past the end)."""
    st = [os.stat(p) for p in paths if os.path.isfile(p)]
    return sum(s.st_blocks * 512 for s in st), sum(s.st_size for s in st)


class Server:
    """A throwaway server of one format on one data directory."""

    def __init__(self, args, fmt, datadir):
        self.args = args
        self.fmt = fmt
        self.kind, self.engine = FORMATS[fmt]
        self.datadir = datadir
        self.disk = "disk" if not datadir.startswith("/dev/shm") else "ram"
        self.proc = None
        self.port = None
        self.logfile = os.path.join(os.path.dirname(datadir), os.path.basename(datadir) + ".log")

    # -- lifecycle -------------------------------------------------------------------------

    def create(self):
        os.makedirs(self.datadir, exist_ok=True)
        if self.kind != "zipdb":
            out = subprocess.run(
                ["mariadb-install-db", "--no-defaults", f"--datadir={self.datadir}",
                 "--auth-root-authentication-method=normal", "--skip-test-db"],
                capture_output=True, text=True)
            if out.returncode != 0:
                raise SystemExit(f"mariadb-install-db failed for {self.fmt}:\n{out.stdout}{out.stderr}")

    def start(self, budget_mb):
        self.port = free_port()
        logf = open(self.logfile, "a")
        if self.kind == "zipdb":
            cmd = [self.args.zipdb, "serve", "--data-dir", self.datadir, "--port", str(self.port),
                   "--pool-mb", str(budget_mb), "--flush-policy", "sync"]
            if self.disk == "disk":
                cmd.append("--direct-io")
        else:
            user = os.environ.get("USER") or subprocess.run(
                ["id", "-un"], capture_output=True, text=True).stdout.strip()
            cmd = ["mariadbd", "--no-defaults", f"--user={user}", f"--datadir={self.datadir}",
                   f"--socket={self.datadir}.sock", f"--port={self.port}",
                   "--bind-address=127.0.0.1", "--skip-grant-tables", "--max-connections=1000",
                   "--max-prepared-stmt-count=1000000", f"--log-error={self.logfile}.err",
                   f"--pid-file={self.datadir}.pid", "--innodb-flush-log-at-trx-commit=1"]
            if self.kind == "innodb":
                cmd.append(f"--innodb-buffer-pool-size={budget_mb}M")
                if self.disk == "disk":
                    cmd.append("--innodb-flush-method=O_DIRECT")
            else:
                # InnoDB still holds the system tables: give it the minimum.
                cmd += ["--plugin-load-add=ha_rocksdb.so", "--default-storage-engine=rocksdb",
                        "--innodb-buffer-pool-size=8M",
                        f"--rocksdb-block-cache-size={budget_mb * 1024 * 1024}",
                        "--rocksdb-flush-log-at-trx-commit=1",
                        "--rocksdb-default-cf-options="
                        "compression=kLZ4Compression;bottommost_compression=kZSTD"]
                if self.disk == "disk":
                    cmd += ["--rocksdb-use-direct-reads=ON",
                            "--rocksdb-use-direct-io-for-flush-and-compaction=ON"]
        self.proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"{self.fmt} exited at start; log {self.logfile}:\n"
                                 + self.tail())
            if self.sql("SELECT 1", check=False).returncode == 0:
                return
            time.sleep(0.2)
        raise SystemExit(f"{self.fmt} did not start in 120 s; log {self.logfile}:\n" + self.tail())

    def tail(self):
        text = ""
        for f in (self.logfile, self.logfile + ".err"):
            if os.path.exists(f):
                text += open(f, errors="replace").read()[-3000:]
        return text

    def stop(self):
        """Clean shutdown (zipdb checkpoints, InnoDB flushes its pool)."""
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    # -- helpers ---------------------------------------------------------------------------

    def sql(self, stmt, check=True):
        out = subprocess.run(
            ["mariadb", "-h", "127.0.0.1", "-P", str(self.port), "-u", "root", "--batch",
             "--skip-column-names", "-e", stmt], capture_output=True, text=True)
        if check and out.returncode != 0:
            raise SystemExit(f"{self.fmt}: {stmt}: {out.stderr}")
        return out

    def flush(self):
        """Before measuring size: MyRocks' memtables into SST files."""
        if self.kind == "myrocks":
            self.sql("SET GLOBAL rocksdb_force_flush_memtable_now = 1")

    def size_bytes(self):
        if self.kind == "zipdb":
            return allocated_bytes([os.path.join(self.datadir, "zipdb.data")])
        if self.kind == "innodb":
            d = os.path.join(self.datadir, "sbtest")
            return allocated_bytes(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".ibd"))
        d = os.path.join(self.datadir, "#rocksdb")
        return allocated_bytes(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".sst"))

    def sysbench(self, args, test, action, threads, extra=()):
        cmd = ["sysbench", "--db-driver=mysql", "--mysql-host=127.0.0.1",
               f"--mysql-port={self.port}", "--mysql-user=root", "--mysql-db=sbtest",
               f"--tables={args.tables}", f"--table-size={args.rows}",
               f"--mysql_storage_engine={self.engine}", f"--threads={threads}",
               "--db-ps-mode=auto", *extra, test, action]
        return subprocess.run(cmd, capture_output=True, text=True)


def parse_run(text):
    def field(prefix, idx):
        for line in text.splitlines():
            if prefix in line:
                return line.split()[idx]
        return "0"
    tps = field("transactions:", 2).strip("(")
    qps = field("queries:", 2).strip("(")
    p95 = field("95th percentile:", 2)
    errors = field("ignored errors:", 2)
    reconnects = field("reconnects:", 1)
    return float(tps), float(qps), float(p95), int(errors), int(reconnects)


class Runner:
    def __init__(self, args):
        self.args = args
        self.servers = []
        self.started = time.time()
        self.steps_done = 0
        self.steps_total = 0
        self.steps_left = {}  # kind -> [steps left, guessed seconds each]
        self.step_secs = {}  # kind -> [seconds of each step done]
        self.current_kind = None
        os.makedirs(args.out, exist_ok=True)
        self.base = {"ram": tempfile.mkdtemp(prefix="zipdb-grid.", dir="/dev/shm")}
        if "disk" in args.disks:
            os.makedirs(args.disk_dir, exist_ok=True)
            self.base["disk"] = tempfile.mkdtemp(prefix="zipdb-grid.", dir=args.disk_dir)
        self.csv = {}
        for name, fields in (("runs", RUN_FIELDS), ("loads", LOAD_FIELDS),
                             ("sizes", SIZE_FIELDS)):
            f = open(os.path.join(args.out, f"{name}.csv"), "w", newline="")
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            self.csv[name] = (f, w)

    def record(self, name, row):
        f, w = self.csv[name]
        w.writerow(row)
        f.flush()

    def cleanup(self):
        for s in self.servers:
            s.kill()
        for d in self.base.values():
            shutil.rmtree(d, ignore_errors=True)

    def progress(self, what, kind):
        """One line per step: what runs now, and an estimate of what is left (from the mean
        time of the steps of each kind so far: loads and measured points differ tenfold)."""
        self.steps_done += 1
        self.current_kind = kind
        el = time.time() - self.started
        left = 0.0
        for k, (n_left, guess) in self.steps_left.items():
            done = self.step_secs.get(k, [])
            left += n_left * (statistics.mean(done) if done else guess)
        self.steps_left[kind][0] -= 1
        log(f"[{self.steps_done}/{self.steps_total}  {el / 60:5.1f} min, ~{left / 60:.1f} min"
            f" left] {what}")

    def timed_step(self, fn):
        t0 = time.time()
        r = fn()
        self.step_secs.setdefault(self.current_kind, []).append(time.time() - t0)
        return r

    # -- one format on one disk -------------------------------------------------------------

    def server(self, experiment, disk, fmt, name=None):
        datadir = os.path.join(self.base[disk], f"{experiment}-{name or fmt}")
        s = Server(self.args, fmt, datadir)
        self.servers.append(s)
        return s

    def load(self, experiment, disk, fmt, budget_mb, rnd=1):
        """Creates and loads the sysbench tables; records load time and size. Rounds after the
        first load into a throwaway directory, removed afterwards (they only time the load)."""
        s = self.server(experiment, disk, fmt, None if rnd == 1 else f"{fmt}-load{rnd}")
        s.create()
        s.start(budget_mb)
        s.sql("CREATE DATABASE sbtest")
        t0 = time.time()
        out = s.sysbench(self.args, "oltp_read_write", "prepare", self.args.load_threads)
        load_s = time.time() - t0
        if out.returncode != 0:
            raise SystemExit(f"prepare failed on {fmt} ({disk}):\n{out.stdout[-2000:]}{out.stderr}")
        s.flush()
        s.stop()
        size, file_bytes = s.size_bytes()
        self.record("loads", dict(experiment=experiment, disk=disk, format=fmt,
                                  tables=self.args.tables, rows=self.args.rows, round=rnd,
                                  load_s=f"{load_s:.2f}", size_bytes=size,
                                  file_bytes=file_bytes))
        log(f"    load {fmt} ({disk}): {load_s:.2f} s, {size / 2**20:.1f} MiB")
        if rnd > 1:
            self.servers.remove(s)
            shutil.rmtree(s.datadir, ignore_errors=True)
        return s

    def measure(self, experiment, s, budget_mb, test, threads, rnd, rand_type="special"):
        a = self.args
        s.start(budget_mb)
        extra = [f"--rand-type={rand_type}"]
        if a.warmup > 0:
            w = s.sysbench(a, test, "run", threads, [*extra, f"--time={a.warmup}"])
            if w.returncode != 0:
                raise SystemExit(f"warm-up failed on {s.fmt}:\n{w.stdout[-2000:]}{w.stderr}")
        out = s.sysbench(a, test, "run", threads,
                         [*extra, f"--time={a.time}", "--percentile=95"])
        s.stop()
        if out.returncode != 0:
            raise SystemExit(f"{test} failed on {s.fmt}:\n{out.stdout[-2000:]}{out.stderr}")
        tps, qps, p95, errors, reconnects = parse_run(out.stdout)
        self.record("runs", dict(
            experiment=experiment, disk=s.disk, format=s.fmt, budget_mb=budget_mb,
            tables=a.tables, rows=a.rows, threads=threads, test=test, rand_type=rand_type,
            round=rnd, secs=a.time, tps=tps, qps=qps, p95_ms=p95, errors=errors,
            reconnects=reconnects))
        log(f"    {qps:10.0f} qps  {tps:8.0f} tps  p95 {p95:7.2f} ms  errors {errors}")

    # -- experiments ----------------------------------------------------------------------

    def point_s(self):
        return self.args.time + self.args.warmup + 6

    def plan(self, exps):
        """Counts the steps of each kind, for the progress line."""
        a = self.args
        n = {"load": 0, "run": 0, "bigload": 0, "size": 0}
        if "grid" in exps:
            n["load"] += len(a.disks) * len(a.formats) * a.load_rounds
            n["run"] += len(a.disks) * len(a.formats) * a.rounds * len(a.budgets)
        if "pareto" in exps:
            n["load"] += len(a.disks) * len(a.formats)
            n["run"] += len(a.disks) * len(a.formats) * a.rounds
        if "scaling" in exps:
            n["load"] += len(a.pair_formats)
            n["run"] += len(a.pair_formats) * a.rounds * len(a.clients)
        if "readonly" in exps:
            n["bigload"] += len(a.pair_formats)
            n["run"] += len(a.pair_formats) * a.rounds
        if "sizes" in exps:
            n["size"] += len(a.size_formats)
        guess = {"load": 10, "run": self.point_s(), "bigload": 120, "size": 20}
        self.steps_left = {k: [v, guess[k]] for k, v in n.items()}
        self.steps_total = sum(n.values())

    def grid(self, experiment="grid", budgets=None, rand_type="special"):
        a = self.args
        budgets = budgets or a.budgets
        servers = {}
        load_rounds = a.load_rounds if experiment == "grid" else 1
        for lrnd in range(1, load_rounds + 1):
            for disk in a.disks:
                for fmt in a.formats:
                    self.progress(f"{experiment}: load {fmt} on {disk}, round {lrnd}", "load")
                    s = self.timed_step(
                        lambda: self.load(experiment, disk, fmt, max(budgets), lrnd))
                    servers.setdefault((disk, fmt), s)
        for rnd in range(1, a.rounds + 1):
            for disk in a.disks:
                for budget in budgets:
                    for fmt in a.formats:
                        self.progress(f"{experiment}: oltp_read_write {fmt} on {disk}, {budget} MB,"
                                      f" {a.threads} threads, {rand_type}, round {rnd}",
                                      "run")
                        self.timed_step(lambda: self.measure(
                            experiment, servers[disk, fmt], budget, "oltp_read_write",
                            a.threads, rnd, rand_type))

    def scaling(self):
        a = self.args
        servers = {}
        for fmt in a.pair_formats:
            self.progress(f"scaling: load {fmt} on ram", "load")
            servers[fmt] = self.timed_step(lambda: self.load("scaling", "ram", fmt, a.budgets[0]))
        for rnd in range(1, a.rounds + 1):
            for c in a.clients:
                for fmt in a.pair_formats:
                    self.progress(f"scaling: oltp_read_write {fmt}, {c} clients, "
                                  f"{a.budgets[0]} MB, round {rnd}", "run")
                    self.timed_step(lambda: self.measure(
                        "scaling", servers[fmt], a.budgets[0], "oltp_read_write", c, rnd))

    def readonly(self):
        """In-memory read-only on a working set several times the grid's."""
        a = self.args
        saved = (a.tables, a.rows)
        a.tables, a.rows = a.ro_tables, a.ro_rows
        try:
            servers = {}
            for fmt in a.pair_formats:
                self.progress(f"readonly: load {fmt}, {a.tables} x {a.rows} rows", "bigload")
                servers[fmt] = self.timed_step(
                    lambda: self.load("readonly", "ram", fmt, a.ro_budget))
            for rnd in range(1, a.rounds + 1):
                for fmt in a.pair_formats:
                    self.progress(f"readonly: oltp_read_only {fmt}, {a.ro_budget} MB, "
                                  f"round {rnd}", "run")
                    self.timed_step(lambda: self.measure(
                        "readonly", servers[fmt], a.ro_budget, "oltp_read_only", a.threads, rnd))
        finally:
            a.tables, a.rows = saved

    def sizes(self):
        """The classic KEY_BLOCK_SIZE table: (id int primary key, txt char(8)), 50,000 rows."""
        import random
        import pymysql
        a = self.args
        rng = random.Random(42)
        alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
        rows = [(i, "".join(rng.choice(alphabet) for _ in range(8)))
                for i in range(1, a.size_rows + 1)]
        lookups = [rng.randint(1, a.size_rows) for _ in range(5000)]
        for label in a.size_formats:
            self.progress(f"sizes: {label}", "size")
            t_step = time.time()
            fmt, opts = SIZE_VARIANTS[label]
            s = self.server("sizes", "ram", fmt, label)
            s.create()
            s.start(a.budgets[0])
            conn = pymysql.connect(host="127.0.0.1", port=s.port, user="root", autocommit=True)
            cur = conn.cursor()
            cur.execute("CREATE DATABASE sbtest")
            cur.execute("USE sbtest")
            cur.execute(f"CREATE TABLE t (id INT PRIMARY KEY, txt CHAR(8)) {opts}")
            t0 = time.time()
            for i in range(0, len(rows), 1000):
                cur.execute("BEGIN")
                cur.executemany("INSERT INTO t VALUES (%s, %s)", rows[i:i + 1000])
                cur.execute("COMMIT")
            insert_s = time.time() - t0
            scans = []
            for _ in range(5):
                t0 = time.time()
                cur.execute("SELECT COUNT(*) FROM t WHERE txt LIKE '%zz%'")
                cur.fetchall()
                scans.append(time.time() - t0)
            t0 = time.time()
            for k in lookups:
                cur.execute("SELECT txt FROM t WHERE id = %s", (k,))
                cur.fetchall()
            point_us = (time.time() - t0) / len(lookups) * 1e6
            cur.execute("SELECT COUNT(*) FROM t")
            (count,) = cur.fetchone()
            assert count == a.size_rows, f"{label}: {count} rows after loading {a.size_rows}"
            conn.close()
            s.flush()
            s.stop()
            size, _ = s.size_bytes()
            self.record("sizes", dict(disk="ram", format=label, rows=a.size_rows,
                                      insert_s=f"{insert_s:.2f}", size_bytes=size,
                                      scan_ms=f"{statistics.median(scans) * 1000:.1f}",
                                      point_select_us=f"{point_us:.0f}"))
            log(f"    {label}: insert {insert_s:.2f} s, {size / 1024:.0f} KiB, scan "
                f"{statistics.median(scans) * 1000:.1f} ms, point select {point_us:.0f} us")
            self.step_secs.setdefault("size", []).append(time.time() - t_step)


# The size table's variants: label -> (format that gives the server, table options).
SIZE_VARIANTS = {
    "zipdb_none": ("zipdb_none", "COMPRESSION='none'"),
    "zipdb_lz4": ("zipdb_lz4", "COMPRESSION='lz4'"),
    "zipdb_zstd": ("zipdb_zstd", "COMPRESSION='zstd'"),
    "zipdb_fsst": ("zipdb_fsst", "COMPRESSION='fsst'"),
    "innodb_dynamic": ("innodb_dynamic", "ENGINE=InnoDB ROW_FORMAT=DYNAMIC"),
    "innodb_kbs8": ("innodb_compressed", "ENGINE=InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8"),
    "innodb_kbs4": ("innodb_compressed", "ENGINE=InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4"),
    "innodb_kbs1": ("innodb_compressed", "ENGINE=InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=1"),
    "innodb_page_compressed": ("innodb_page_compressed", "ENGINE=InnoDB PAGE_COMPRESSED=1"),
}


def csv_list(text, allowed=None, conv=str):
    items = [conv(x.strip()) for x in text.split(",") if x.strip()]
    if allowed is not None:
        for x in items:
            if x not in allowed:
                raise argparse.ArgumentTypeError(f"{x!r}: expected one of {', '.join(allowed)}")
    return items


def main():
    p = argparse.ArgumentParser(
        prog="bench/sysbench-grid", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--zipdb", required=True, help="zipdb binary")
    p.add_argument("--out", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"),
                                                  "sysbench-grid"),
                   help="directory for the CSVs, summary.md and plots")
    p.add_argument("--quick", action="store_true",
                   help="CI smoke run: RAM disk, 32 MB, zipdb_fsst (the default) vs innodb_dynamic, short runs")
    p.add_argument("--all", action="store_true", help="the grid and every other experiment")
    p.add_argument("--no-grid", action="store_true", help="skip the grid itself")
    p.add_argument("--scaling", action="store_true",
                   help="(a) client scaling, compressed vs uncompressed (--clients)")
    p.add_argument("--sizes", action="store_true",
                   help="(b) size table: (id int primary key, txt char(8)) at KEY_BLOCK_SIZE "
                        "1/4/8, PAGE_COMPRESSED, uncompressed and zipdb's codecs")
    p.add_argument("--readonly", action="store_true",
                   help="(c) in-memory oltp_read_only on a larger working set (--ro-*)")
    p.add_argument("--pareto", action="store_true",
                   help="(d) the grid's formats at the smallest budget with --rand-type=pareto")
    p.add_argument("--formats", type=lambda t: csv_list(t, FORMATS), default=list(FORMATS))
    p.add_argument("--pair-formats", type=lambda t: csv_list(t, FORMATS),
                   default=csv_list(PAIR_FORMATS), help="formats of --scaling and --readonly")
    p.add_argument("--size-formats", type=lambda t: csv_list(t, SIZE_VARIANTS),
                   default=list(SIZE_VARIANTS))
    p.add_argument("--disks", type=lambda t: csv_list(t, ("ram", "disk")), default=["ram", "disk"])
    p.add_argument("--disk-dir", default=os.path.abspath(
        os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "grid-disk")),
        help="where the real-disk data goes (a real file system, not tmpfs)")
    p.add_argument("--budgets", type=lambda t: csv_list(t, conv=int), default=[128, 64, 32],
                   help="memory budgets in MB (the first is also the one of --scaling and --sizes)")
    p.add_argument("--clients", type=lambda t: csv_list(t, conv=int),
                   default=[8, 16, 32, 64, 128])
    p.add_argument("--tables", type=int, default=16)
    p.add_argument("--rows", type=int, default=10000)
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--load-threads", type=int, default=4)
    p.add_argument("--load-rounds", type=int, default=3,
                   help="loads of each grid format (interleaved; the first is kept for the runs)")
    p.add_argument("--time", type=int, default=30, help="seconds of each measured run")
    p.add_argument("--warmup", type=int, default=10, help="seconds of warm-up before each")
    p.add_argument("--rounds", type=int, default=2, help="repetitions of every point")
    p.add_argument("--rand-type", default="special",
                   choices=("special", "uniform", "gaussian", "pareto", "zipfian"),
                   help="sysbench --rand-type of the grid itself (uniform makes every row the "
                        "working set, so that a budget between the compressed and uncompressed "
                        "sizes is one where only the compressed data fits)")
    p.add_argument("--ro-tables", type=int, default=16)
    p.add_argument("--ro-rows", type=int, default=200000)
    p.add_argument("--ro-budget", type=int, default=2048)
    p.add_argument("--size-rows", type=int, default=50000)
    a = p.parse_args()
    if a.quick:
        a.formats = ["zipdb_fsst", "innodb_dynamic"]
        a.disks = ["ram"]
        a.budgets = [32]
        a.time, a.warmup, a.rounds, a.load_rounds = 10, 3, 1, 1
    exps = [] if a.no_grid else ["grid"]
    for e in EXPERIMENTS[1:]:
        if a.all or getattr(a, e):
            exps.append(e)
    if not os.access(a.zipdb, os.X_OK):
        raise SystemExit(f"no zipdb binary at {a.zipdb}")
    if "disk" in a.disks:
        fs = subprocess.run(["stat", "-f", "-c", "%T", os.path.dirname(a.disk_dir) or "."],
                            capture_output=True, text=True).stdout.strip()
        if fs == "tmpfs":
            raise SystemExit(f"--disk-dir {a.disk_dir} is on tmpfs: the real-disk runs need a disk")

    r = Runner(a)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    machine = (f"{os.cpu_count()} cores, "
               f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB")
    zv = subprocess.run([a.zipdb, "--version"], capture_output=True, text=True).stdout.strip()
    mv = subprocess.run(["mariadbd", "--version"], capture_output=True, text=True).stdout.split()
    sv = subprocess.run(["sysbench", "--version"], capture_output=True, text=True).stdout.strip()
    log(f"sysbench-grid: {machine}; {zv}; MariaDB {mv[2] if len(mv) > 2 else '?'}; {sv}")
    log(f"experiments {', '.join(exps)}; formats {', '.join(a.formats)}; disks "
        f"{', '.join(a.disks)}; budgets {a.budgets} MB; {a.tables} x {a.rows} rows, "
        f"{a.threads} threads, {a.warmup}+{a.time} s x {a.rounds} rounds; out {a.out}")
    with open(os.path.join(a.out, "meta.txt"), "w") as f:
        f.write(f"command: bench/sysbench-grid {' '.join(sys.argv[1:])}\n")
        f.write(f"machine: {machine}, {os.uname().release}\nzipdb: {zv}\n")
        f.write(f"mariadb: {' '.join(mv[2:3])}\nsysbench: {sv}\n")
        f.write(f"date: {time.strftime('%Y-%m-%d %H:%M')}\n")
    r.plan(exps)
    try:
        if "grid" in exps:
            r.grid(rand_type=a.rand_type)
        if "pareto" in exps:
            r.grid("pareto", [min(a.budgets)], "pareto")
        if "scaling" in exps:
            r.scaling()
        if "readonly" in exps:
            r.readonly()
        if "sizes" in exps:
            r.sizes()
    except KeyboardInterrupt:
        log("interrupted: the CSVs hold the runs so far")
        r.cleanup()
        sys.exit(130)
    finally:
        r.cleanup()
    for f, _ in r.csv.values():
        f.close()
    import grid_report
    grid_report.report(a.out)
    log(f"total {(time.time() - r.started) / 60:.1f} min; results in {a.out}")


if __name__ == "__main__":
    main()
