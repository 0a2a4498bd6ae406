"""Tables, target checks and plots from the CSVs that bench/grid.py writes.

Also runs on its own, to redo the report of an earlier run:
    /usr/bin/python3 bench/grid_report.py DIR
"""

import csv
import os
import statistics
import sys
from collections import defaultdict

LABELS = {
    "zipdb_none": "zipdb none",
    "zipdb_lz4": "zipdb lz4",
    "zipdb_zstd": "zipdb zstd",
    "zipdb_fsst": "zipdb fsst (default)",
    "innodb_dynamic": "InnoDB dynamic",
    "innodb_compressed": "InnoDB COMPRESSED KBS=8",
    "innodb_page_compressed": "InnoDB PAGE_COMPRESSED",
    "myrocks": "MyRocks",
}
DISKS = {"ram": "RAM disk", "disk": "real disk, O_DIRECT"}


def read(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def spread(values, fmt="{:,.0f}"):
    if not values:
        return "—"
    m = statistics.median(values)
    if len(values) == 1:
        return fmt.format(m)
    return f"{fmt.format(m)} ({fmt.format(min(values))}..{fmt.format(max(values))})"


def mib(b):
    return f"{int(b) / 2**20:.1f}"


def ordered(rows, key):
    return list(dict.fromkeys(r[key] for r in rows))


def report(out):
    runs = read(os.path.join(out, "runs.csv"))
    loads = read(os.path.join(out, "loads.csv"))
    sizes = read(os.path.join(out, "sizes.csv"))
    md = []
    meta = os.path.join(out, "meta.txt")
    if os.path.exists(meta):
        md += ["```", open(meta).read().strip(), "```", ""]

    qps = defaultdict(list)  # (experiment, disk, format, budget, threads) -> [qps]
    p95 = defaultdict(list)
    for r in runs:
        k = (r["experiment"], r["disk"], r["format"], int(r["budget_mb"]), int(r["threads"]))
        qps[k].append(float(r["qps"]))
        p95[k].append(float(r["p95_ms"]))
    # Load time: median of the load rounds; size: from the first load (the one measured).
    load = {}
    load_s = defaultdict(list)
    for r in loads:
        k = (r["experiment"], r["disk"], r["format"])
        load_s[k].append(float(r["load_s"]))
        if r.get("round", "1") == "1":
            load[k] = dict(r)
    for k, v in load_s.items():
        if k in load:
            load[k]["load_s"] = f"{statistics.median(v):.2f}"
            load[k]["load_spread"] = spread(v, "{:.2f}")

    def med(k):
        return statistics.median(qps[k]) if qps.get(k) else None

    # -- the grid -------------------------------------------------------------------------
    grid = [r for r in runs if r["experiment"] == "grid"]
    if grid:
        budgets = sorted({int(r["budget_mb"]) for r in grid}, reverse=True)
        threads = int(grid[0]["threads"])
        md += ["## The grid: oltp_read_write, "
               f"{grid[0]['tables']} x {grid[0]['rows']} rows, {threads} threads", "",
               "QPS: median of the rounds (min..max); p95 latency in ms: median of the rounds. "
               "Load: sysbench prepare, median (min..max) of the load rounds. Size: MiB "
               "allocated on disk by the tables' data and indexes after a clean shutdown.",
               ""]
        head = "| disk | format | load s | size MiB | " + " | ".join(
            f"{b} MB QPS" for b in budgets) + " | " + " | ".join(
            f"{b} MB p95" for b in budgets) + " |"
        md += [head, "|" + "---|" * (4 + 2 * len(budgets))]
        for disk in ordered(grid, "disk"):
            for fmt in ordered(grid, "format"):
                ld = load.get(("grid", disk, fmt))
                cells = [DISKS.get(disk, disk), LABELS.get(fmt, fmt),
                         ld["load_spread"] if ld else "—", mib(ld["size_bytes"]) if ld else "—"]
                cells += [spread(qps.get(("grid", disk, fmt, b, threads), [])) for b in budgets]
                cells += [spread(p95.get(("grid", disk, fmt, b, threads), []), "{:.1f}")
                          for b in budgets]
                md.append("| " + " | ".join(cells) + " |")
        md += [""] + targets(grid, med, load, budgets, threads) + [""]

    # -- pareto ---------------------------------------------------------------------------
    par = [r for r in runs if r["experiment"] == "pareto"]
    if par:
        b = int(par[0]["budget_mb"])
        t = int(par[0]["threads"])
        md += [f"## Skewed access: oltp_read_write --rand-type=pareto, {b} MB, {t} threads", "",
               "| disk | format | QPS | p95 ms | vs InnoDB dynamic |", "|---|---|---|---|---|"]
        for disk in ordered(par, "disk"):
            base = med(("pareto", disk, "innodb_dynamic", b, t))
            for fmt in ordered(par, "format"):
                k = ("pareto", disk, fmt, b, t)
                ratio = f"{med(k) / base:.2f}x" if base and med(k) else "—"
                md.append(f"| {DISKS.get(disk, disk)} | {LABELS.get(fmt, fmt)} | "
                          f"{spread(qps[k])} | {spread(p95[k], '{:.1f}')} | {ratio} |")
        md.append("")

    # -- scaling --------------------------------------------------------------------------
    sc = [r for r in runs if r["experiment"] == "scaling"]
    if sc:
        b = int(sc[0]["budget_mb"])
        clients = sorted({int(r["threads"]) for r in sc})
        fmts = ordered(sc, "format")
        md += [f"## Client scaling: oltp_read_write, {b} MB, RAM disk", "",
               "QPS by concurrent clients (median of rounds); in brackets, as a fraction of the "
               "format's 16-client QPS.", "",
               "| format | " + " | ".join(str(c) for c in clients) + " |",
               "|---|" + "---|" * len(clients)]
        for fmt in fmts:
            ref = med(("scaling", "ram", fmt, b, 16))
            cells = []
            for c in clients:
                v = med(("scaling", "ram", fmt, b, c))
                cells.append("—" if v is None else
                             f"{v:,.0f}" + (f" ({v / ref:.2f})" if ref else ""))
            md.append(f"| {LABELS.get(fmt, fmt)} | " + " | ".join(cells) + " |")
        md.append("")

    # -- read-only, larger working set ------------------------------------------------------
    ro = [r for r in runs if r["experiment"] == "readonly"]
    if ro:
        b = int(ro[0]["budget_mb"])
        t = int(ro[0]["threads"])
        md += [f"## In-memory oltp_read_only, {ro[0]['tables']} x {ro[0]['rows']} rows, {b} MB,"
               f" {t} threads, RAM disk", "",
               "| format | load s | size MiB | QPS | p95 ms |", "|---|---|---|---|---|"]
        for fmt in ordered(ro, "format"):
            k = ("readonly", "ram", fmt, b, t)
            ld = load.get(("readonly", "ram", fmt))
            md.append(f"| {LABELS.get(fmt, fmt)} | {ld['load_s'] if ld else '—'} | "
                      f"{mib(ld['size_bytes']) if ld else '—'} | {spread(qps[k])} | "
                      f"{spread(p95[k], '{:.1f}')} |")
        md.append("")

    # -- the size table ---------------------------------------------------------------------
    if sizes:
        md += [f"## Size table: {sizes[0]['rows']} rows of (id int primary key, txt char(8))",
               "", "Insert: batches of 1000 rows, one transaction each. Scan: `SELECT COUNT(*)"
               " ... WHERE txt LIKE '%zz%'` (median of 5). Point select: mean of 5000 by id.", "",
               "| format | size KiB | insert s | scan ms | point select µs |",
               "|---|---|---|---|---|"]
        for r in sizes:
            md.append(f"| {r['format']} | {int(r['size_bytes']) // 1024:,} | {r['insert_s']} | "
                      f"{r['scan_ms']} | {r['point_select_us']} |")
        md.append("")

    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    plots(out, runs, load)


def targets(grid, med, load, budgets, threads):
    """The issue's targets, for every zipdb codec, per disk."""
    lo, hi = min(budgets), max(budgets)
    lines = [f"Targets (issue 6), per disk, for every zipdb codec (fsst is the default):", ""]
    for disk in ordered(grid, "disk"):
        dyn = med(("grid", disk, "innodb_dynamic", lo, threads))
        comp = med(("grid", disk, "innodb_compressed", lo, threads))
        pc = load.get(("grid", disk, "innodb_page_compressed"))
        none = load.get(("grid", disk, "zipdb_none"))
        for fmt in ("zipdb_fsst", "zipdb_zstd", "zipdb_lz4", "zipdb_none"):
            z_lo = med(("grid", disk, fmt, lo, threads))
            if z_lo is None:
                continue
            z_hi = med(("grid", disk, fmt, hi, threads))
            ld = load.get(("grid", disk, fmt))
            checks = []

            def check(name, ok, detail):
                checks.append(f"{name} {detail} {'met' if ok else '**missed**'}")
            if dyn:
                check(f"{lo} MB ≥ InnoDB dynamic:", z_lo >= dyn, f"{z_lo / dyn:.2f}x")
            if comp:
                check(f"{lo} MB ≥ 3 x InnoDB COMPRESSED:", z_lo >= 3 * comp,
                      f"{z_lo / comp:.2f}x")
            if z_hi and hi != lo:
                check(f"{lo} MB ≥ 0.9 x own {hi} MB:", z_lo >= 0.9 * z_hi, f"{z_lo / z_hi:.2f}x")
            if fmt != "zipdb_none":
                if ld and pc:
                    s, p = int(ld["size_bytes"]), int(pc["size_bytes"])
                    check("size ≤ PAGE_COMPRESSED:", s <= p, f"{mib(s)} vs {mib(p)} MiB")
                if ld and none:
                    a, b = float(ld["load_s"]), float(none["load_s"])
                    check("load ≤ 1.1 x zipdb none:", a <= 1.1 * b, f"{a / b:.2f}x")
            lines.append(f"- {DISKS.get(disk, disk)}, {LABELS.get(fmt, fmt)}: " + "; ".join(checks))
    return lines


def qps_lines(ax, rows, xkey, xlabel, title):
    """One line per format: median QPS against `xkey` (log 2 axis), min..max as a bar."""
    for fmt in ordered(rows, "format"):
        pts = defaultdict(list)
        for r in rows:
            if r["format"] == fmt:
                pts[int(r[xkey])].append(float(r["qps"]))
        xs = sorted(pts)
        style = "-o" if fmt.startswith("zipdb") else "--s"
        (line,) = ax.plot(xs, [statistics.median(pts[x]) for x in xs], style,
                          label=LABELS.get(fmt, fmt))
        ax.vlines(xs, [min(pts[x]) for x in xs], [max(pts[x]) for x in xs], alpha=0.4,
                  color=line.get_color())
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.set_xticklabels([str(x) for x in xs])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("QPS (oltp_read_write)")
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.grid(alpha=0.3)


def plots(out, runs, load):
    """`load`: (experiment, disk, format) -> first load's row, load_s the median of rounds."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plots (apt-get install python3-matplotlib)", file=sys.stderr)
        return
    grid = [r for r in runs if r["experiment"] == "grid"]
    if grid:
        disks = ordered(grid, "disk")
        fig, axes = plt.subplots(1, len(disks), figsize=(6.5 * len(disks), 4.5), squeeze=False)
        for ax, disk in zip(axes[0], disks):
            qps_lines(ax, [r for r in grid if r["disk"] == disk], "budget_mb",
                      "memory budget, MB", DISKS.get(disk, disk))
        axes[0][0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "grid-qps.png"), dpi=110)
        plt.close(fig)

        gl = [r for k, r in load.items() if k[0] == "grid"]
        for what, fname, ylabel in (("size_bytes", "grid-size.png", "MiB on disk (data + index)"),
                                    ("load_s", "grid-load.png", "sysbench prepare, s (median)")):
            fmts = ordered(gl, "format")
            disks = ordered(gl, "disk")
            fig, ax = plt.subplots(figsize=(9, 4.5))
            w = 0.8 / max(1, len(disks))
            for i, disk in enumerate(disks):
                vals = []
                for fmt in fmts:
                    row = next((r for r in gl if r["disk"] == disk and r["format"] == fmt), None)
                    v = float(row[what]) if row else 0
                    vals.append(v / 2**20 if what == "size_bytes" else v)
                ax.bar([j + i * w for j in range(len(fmts))], vals, w,
                       label=DISKS.get(disk, disk))
            ax.set_xticks([j + w * (len(disks) - 1) / 2 for j in range(len(fmts))])
            ax.set_xticklabels([LABELS.get(f, f) for f in fmts], rotation=25, ha="right",
                               fontsize=8)
            ax.set_ylabel(ylabel)
            ax.legend(fontsize=8)
            ax.grid(axis="y", alpha=0.3)
            fig.tight_layout()
            fig.savefig(os.path.join(out, fname), dpi=110)
            plt.close(fig)

    sc = [r for r in runs if r["experiment"] == "scaling"]
    if sc:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        qps_lines(ax, sc, "threads", "concurrent clients",
                  f"client scaling, {sc[0]['budget_mb']} MB, RAM disk")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "scaling.png"), dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    report(sys.argv[1] if len(sys.argv) > 1 else "target/sysbench-grid")
