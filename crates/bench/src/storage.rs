//! The storage benchmark: sysbench-shaped trees on the embedded engine.
//!
//! For each disk (a RAM disk, and a directory on a real disk opened with O_DIRECT) and each codec,
//! load `tables` trees of `rows` rows of the chosen shape (sbtest rows, or real-text paragraphs:
//! see shape.rs) and checkpoint. Size three memory budgets from the
//! measured sizes: the data fits decoded, fits only compressed, or fits in neither. Then for each
//! budget, workload, thread count and codec: reopen the database from its checkpointed file with
//! that budget (a cold pool), warm up (one sequential scan of every tree, then a short spell of
//! the workload), and run the workload for a fixed time, collecting the deltas of the pool and
//! store counters. A run's database is reopened from what the previous run left (its writes
//! are checkpointed at close); the data keeps its shape, since updates and re-inserts write rows
//! of the same size. Codecs are the innermost loop, so every codec-vs-none
//! and 2-vs-1-thread ratio compares runs of the same process, taken minutes apart at most.
//!
//! Ids are drawn uniformly (sysbench's default distribution is "special", a hot-spot mix; uniform
//! is the harder case for a cache and is what this benchmark uses).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use zipdb_storage::Codec;

use crate::db::{Db, DbOptions, Delta, Format, Result, Space, Table};
use crate::report::{mb, opt2, opt3, pct, r3, thousands, Out};
use crate::sbtest;
use crate::shape::{Shape, ShapeArgs};

#[derive(Args, Debug, Clone)]
pub struct StorageArgs {
    /// Quick mode: 16 x 10,000 rows, short runs, 2 threads for point gets only (under 2 minutes).
    #[arg(long, conflicts_with = "smoke")]
    pub quick: bool,
    /// Smoke mode: a tiny data set and very short runs, to check that everything works (seconds).
    #[arg(long)]
    pub smoke: bool,
    /// Print one JSON object per line on stdout (one per run, load and in-memory figure); the
    /// readable table goes to stderr.
    #[arg(long)]
    pub json: bool,
    /// Rows per tree [default: full 25,000; quick 10,000; smoke 500].
    #[arg(long)]
    pub rows: Option<u64>,
    /// Number of trees (sysbench tables).
    #[arg(long, default_value_t = 16)]
    pub tables: usize,
    /// Measured seconds per run [default: full 3; quick 0.3; smoke 0.05].
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Warm-up seconds per run, after the cold reopen [default: full 1; quick 0.1; smoke 0.02].
    #[arg(long)]
    pub warmup: Option<f64>,
    /// Directory on a real disk for the "disk" runs (files opened with O_DIRECT)
    /// [default: ./target/zipdb-bench-data].
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// RAM-disk directory for the "ram" runs.
    #[arg(long, default_value = "/dev/shm")]
    pub ram_dir: PathBuf,
    /// Tree formats, comma-separated: whole-page codecs none, lz4, zstd, zstd:3, zlib:6, ...,
    /// or the record formats compact, fsst and fsst+zstd (issue 19; fsst+zstd is loaded
    /// through a pool of an eighth of the data, so that most pages leave it and take the cold
    /// layer, as a table larger than memory would) [default: none,lz4,zstd:1,fsst; smoke:
    /// none,fsst (fsst is what `ROW_FORMAT=COMPRESSED` picks)]. `none` is always run first so
    /// that ratios can be computed.
    #[arg(long, value_delimiter = ',', value_parser = parse_codec)]
    pub codecs: Option<Vec<Format>>,
    /// Thread counts, comma-separated [default: 1,2; in quick and smoke mode 2 threads run
    /// point_get only]. Given explicitly, every workload runs at every count.
    #[arg(long, value_delimiter = ',')]
    pub threads: Option<Vec<usize>>,
    /// Workloads, comma-separated [default: all].
    #[arg(long, value_delimiter = ',', value_enum)]
    pub workloads: Option<Vec<Workload>>,
    /// Disks, comma-separated [default: ram,disk; smoke: ram (disk if there is no RAM disk)].
    #[arg(long, value_delimiter = ',', value_enum)]
    pub disks: Option<Vec<Disk>>,
    /// Memory budgets, comma-separated [default: all three].
    #[arg(long, value_delimiter = ',', value_enum)]
    pub budgets: Option<Vec<Budget>>,
    /// Logical page size in bytes.
    #[arg(long, default_value_t = 16384)]
    pub page_size: usize,
    /// Seed of every random generator (data and workload).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Rows of the single in-memory tree used for the point-get ns/op figure; 0 skips it
    /// [default: full 1,000,000; quick 100,000; smoke 5,000].
    #[arg(long)]
    pub inmem_rows: Option<u64>,
    /// Keep the database directories after the run.
    #[arg(long)]
    pub keep: bool,
    /// When commits return: `write` (to the OS; synced about once a second — the setting the
    /// storage figures are compared under), `sync` (durable), `none` (in memory).
    #[arg(long, value_enum, default_value_t = Flush::Write)]
    pub flush_policy: Flush,
    /// Keep decoded views of compact leaves in the pool's spare memory (the engine's
    /// default); `--leaf-views false` measures FSST leaves decoded row by row.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub leaf_views: bool,
    #[command(flatten)]
    pub shape: ShapeArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Flush {
    Sync,
    Write,
    None,
}

fn parse_codec(s: &str) -> std::result::Result<Format, String> {
    Format::parse(s).ok_or_else(|| {
        format!(
            "unknown codec {s:?} (none, lz4, zstd[:level], zlib[:level], compact, fsst, fsst+zstd)"
        )
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum)]
pub enum Workload {
    /// One point get of a random id.
    #[value(name = "point_get")]
    PointGet,
    /// A forward scan of 100 rows from a random id.
    #[value(name = "range_100")]
    Range100,
    /// Read a random row, k = k + 1 and a new random c, write it back.
    #[value(name = "update")]
    Update,
    /// Delete a random id and insert it back with new random columns.
    #[value(name = "insert_delete")]
    InsertDelete,
    /// sysbench oltp_read_write without SQL: 10 point gets, 4 ranges of 100, an update of k, an
    /// update of c, and a delete + insert, per op ("transaction").
    #[value(name = "write_mix")]
    WriteMix,
}

impl Workload {
    pub const ALL: [Workload; 5] = [
        Workload::PointGet,
        Workload::Range100,
        Workload::Update,
        Workload::InsertDelete,
        Workload::WriteMix,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Workload::PointGet => "point_get",
            Workload::Range100 => "range_100",
            Workload::Update => "update",
            Workload::InsertDelete => "insert_delete",
            Workload::WriteMix => "write_mix",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum)]
pub enum Disk {
    /// A RAM disk (tmpfs, --ram-dir).
    Ram,
    /// A directory on a real disk (--dir), O_DIRECT.
    Disk,
}

impl Disk {
    pub fn name(self) -> &'static str {
        match self {
            Disk::Ram => "ram",
            Disk::Disk => "disk",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum)]
#[allow(clippy::enum_variant_names)]
pub enum Budget {
    /// 1.5x the decoded (logical) bytes.
    #[value(name = "fits_decoded")]
    FitsDecoded,
    /// Halfway between compressed and decoded bytes, at least 1.15x compressed.
    #[value(name = "fits_compressed")]
    FitsCompressed,
    /// Half the compressed bytes.
    #[value(name = "fits_neither")]
    FitsNeither,
}

impl Budget {
    pub const ALL: [Budget; 3] = [
        Budget::FitsDecoded,
        Budget::FitsCompressed,
        Budget::FitsNeither,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Budget::FitsDecoded => "fits_decoded",
            Budget::FitsCompressed => "fits_compressed",
            Budget::FitsNeither => "fits_neither",
        }
    }
}

/// Everything a benchmark invocation does, with the mode's defaults applied.
#[derive(Debug, Clone)]
struct Plan {
    mode: &'static str,
    tables: usize,
    rows: u64,
    seconds: f64,
    warmup: f64,
    codecs: Vec<Format>,
    disks: Vec<(Disk, PathBuf)>,
    budgets: Vec<Budget>,
    workloads: Vec<Workload>,
    threads: Vec<usize>,
    /// Thread counts above 1 run point_get only.
    multi_thread_point_get_only: bool,
    page_size: usize,
    seed: u64,
    inmem_rows: u64,
    keep: bool,
    flush: Flush,
    leaf_views: bool,
    shape: Shape,
}

impl Plan {
    fn new(a: &StorageArgs, out: &Out) -> Result<Plan> {
        let mode = if a.smoke {
            "smoke"
        } else if a.quick {
            "quick"
        } else {
            "full"
        };
        fn pick<T>(mode: &str, smoke: T, quick: T, full: T) -> T {
            match mode {
                "smoke" => smoke,
                "quick" => quick,
                _ => full,
            }
        }
        let mut codecs = a.codecs.clone().unwrap_or_else(|| {
            if a.smoke {
                vec![Format::NONE, Format::DEFAULT]
            } else {
                vec![
                    Format::NONE,
                    Format::classic(Codec::Lz4),
                    Format::classic(Codec::Zstd(1)),
                    Format::DEFAULT,
                ]
            }
        });
        // `none` first (the baseline of every ratio), no duplicates.
        codecs.sort_by_key(|c| *c != Format::NONE);
        let mut seen = Vec::new();
        codecs.retain(|c| {
            let new = !seen.contains(c);
            seen.push(*c);
            new
        });
        if a.tables == 0 {
            return Err("--tables must be at least 1".into());
        }
        let rows = a.rows.unwrap_or(pick(mode, 500, 10_000, 25_000));
        if rows < 100 || rows > i32::MAX as u64 {
            return Err("--rows must be from 100 to 2^31-1 (a range reads 100 rows)".into());
        }
        let seconds = a.seconds.unwrap_or(pick(mode, 0.05, 0.3, 3.0));
        let warmup = a.warmup.unwrap_or(pick(mode, 0.02, 0.1, 1.0));
        let valid = seconds > 0.0 && seconds < 3600.0 && (0.0..3600.0).contains(&warmup);
        if !valid {
            return Err("--seconds must be in (0, 3600) and --warmup in [0, 3600)".into());
        }
        let mut threads = a.threads.clone().unwrap_or_else(|| vec![1, 2]);
        threads.sort_unstable();
        threads.dedup();
        if threads.first() == Some(&0) || threads.is_empty() {
            return Err("--threads must be positive".into());
        }
        let ram_ok = a.ram_dir.is_dir();
        let disk_dir = match &a.dir {
            Some(d) => d.clone(),
            None => std::env::current_dir()?
                .join("target")
                .join("zipdb-bench-data"),
        };
        let wanted = a.disks.clone().unwrap_or_else(|| {
            if !a.smoke {
                vec![Disk::Ram, Disk::Disk]
            } else if ram_ok {
                vec![Disk::Ram]
            } else {
                vec![Disk::Disk]
            }
        });
        let tag = format!("zipdb-bench-{}", std::process::id());
        let mut disks = Vec::new();
        for d in wanted {
            if disks.iter().any(|(x, _)| *x == d) {
                continue;
            }
            match d {
                Disk::Ram if !ram_ok => out.line(&format!(
                    "note: {} is not a directory: skipping the RAM-disk runs",
                    a.ram_dir.display()
                )),
                Disk::Ram => disks.push((d, a.ram_dir.join(&tag))),
                Disk::Disk => disks.push((d, disk_dir.join(&tag))),
            }
        }
        if disks.is_empty() {
            return Err("no usable disk".into());
        }
        Ok(Plan {
            mode,
            tables: a.tables,
            rows,
            seconds,
            warmup,
            codecs,
            disks,
            budgets: a.budgets.clone().unwrap_or_else(|| Budget::ALL.to_vec()),
            workloads: a
                .workloads
                .clone()
                .unwrap_or_else(|| Workload::ALL.to_vec()),
            multi_thread_point_get_only: a.threads.is_none() && mode != "full",
            threads,
            page_size: a.page_size,
            seed: a.seed,
            inmem_rows: a
                .inmem_rows
                .unwrap_or(pick(mode, 5_000, 100_000, 1_000_000)),
            keep: a.keep,
            flush: a.flush_policy,
            leaf_views: a.leaf_views,
            shape: Shape::new(&a.shape, a.smoke, a.page_size)?,
        })
    }

    fn threads_for(&self, w: Workload) -> Vec<usize> {
        self.threads
            .iter()
            .copied()
            .filter(|&t| t == 1 || !self.multi_thread_point_get_only || w == Workload::PointGet)
            .collect()
    }

    fn total_rows(&self) -> u64 {
        self.rows * self.tables as u64
    }

    /// A pool that holds everything, for loading.
    fn big_pool(&self, rows: u64) -> usize {
        let bytes = rows * (sbtest::KEY_LEN + self.shape.avg_value_len()) as u64;
        (bytes * 3 + (64 << 20)) as usize
    }

    /// The load pool of a format with a cold layer: an eighth of the raw data (at least
    /// 4 MiB), so that most pages are written as they leave the pool. With [`Self::big_pool`]
    /// every page would stay resident and the checkpoint would write it with the image codec.
    fn cold_load_pool(&self, rows: u64) -> usize {
        let bytes = rows * (sbtest::KEY_LEN + self.shape.avg_value_len()) as u64;
        ((bytes / 8) as usize).max(4 << 20)
    }
}

fn table_name(i: usize) -> String {
    format!("sbtest{}", i + 1)
}

fn codec_dir(c: Format) -> String {
    c.to_string().replace(':', "_")
}

/// A deterministic seed for stream `a`/`b` of this invocation.
fn seed_for(seed: u64, a: u64, b: u64) -> u64 {
    let mut x =
        seed ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    x ^= x >> 31;
    x.wrapping_mul(0xBF58_476D_1CE4_E5B9)
}

pub fn run(args: StorageArgs) -> Result<()> {
    let out = Out { json: args.json };
    let plan = Plan::new(&args, &out)?;
    let started = Instant::now();
    let result = run_plan(&plan, &out);
    if !plan.keep {
        for (_, dir) in &plan.disks {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    result?;
    out.line(&format!(
        "\ndone in {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

fn run_plan(plan: &Plan, out: &Out) -> Result<()> {
    out.line(&format!(
        "zipdb storage benchmark ({} mode): {} trees x {} {} rows, {} B pages, uniform ids, seed {}",
        plan.mode,
        plan.tables,
        thousands(plan.rows),
        plan.shape.name(),
        plan.page_size,
        plan.seed
    ));
    out.line(&format!(
        "runs: cold reopen, one scan of every tree, {:.2} s warm-up, {:.2} s measured; codecs {}; threads {:?}{}",
        plan.warmup,
        plan.seconds,
        plan.codecs.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", "),
        plan.threads,
        if plan.multi_thread_point_get_only {
            " (more than 1 for point_get only)"
        } else {
            ""
        }
    ));
    if let Some(note) = plan.shape.describe(plan.page_size) {
        out.line(&note);
    }
    for (d, dir) in &plan.disks {
        let how = if *d == Disk::Disk { ", O_DIRECT" } else { "" };
        out.line(&format!("disk {:<4} = {}{how}", d.name(), dir.display()));
    }
    if plan.inmem_rows > 0 {
        in_memory(plan, out)?;
    }
    let mut results: HashMap<RunKey, f64> = HashMap::new();
    for (disk, dir) in &plan.disks {
        run_disk(plan, out, *disk, dir, &mut results)?;
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct RunKey {
    disk: Disk,
    budget: Budget,
    workload: Workload,
    threads: usize,
    codec: Format,
}

struct Loaded {
    codec: Format,
    dir: PathBuf,
    seconds: f64,
    space: Space,
}

/// Creates a database in `dir` and loads `tables` trees of `rows` rows each, several trees in
/// parallel, then checkpoints it. Returns the load time (checkpoint included) and the space used.
fn load(
    plan: &Plan,
    disk: Disk,
    dir: &Path,
    codec: Format,
    tables: usize,
    rows: u64,
) -> Result<(f64, Space)> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let opts = DbOptions {
        page_size: plan.page_size,
        pool_bytes: if codec.has_cold_layer() {
            plan.cold_load_pool(rows * tables as u64)
        } else {
            plan.big_pool(rows * tables as u64)
        },
        codec: codec.db_codec(),
        direct_io: disk == Disk::Disk,
        flush: plan.flush,
        leaf_views: plan.leaf_views,
    };
    let db = Db::open(dir, &opts)?;
    let t0 = Instant::now();
    let trees = (0..tables)
        .map(|i| db.create_table(&table_name(i), codec))
        .collect::<Result<Vec<_>>>()?;
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(tables);
    std::thread::scope(|s| -> Result<()> {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let trees = &trees;
                s.spawn(move || -> Result<()> {
                    let mut v = Vec::with_capacity(sbtest::VALUE_LEN);
                    for (i, t) in trees.iter().enumerate().skip(w).step_by(workers) {
                        let mut rng = SmallRng::seed_from_u64(seed_for(plan.seed, 1, i as u64));
                        for id in 1..=rows {
                            plan.shape.load_value(&mut rng, i, id, rows, &mut v);
                            t.insert(&sbtest::encode_key(id as i64), &v)?;
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| "a loader thread panicked")??;
        }
        Ok(())
    })?;
    db.checkpoint()?;
    let seconds = t0.elapsed().as_secs_f64();
    let space = db.space();
    db.close()?;
    Ok((seconds, space))
}

/// The three budgets, in bytes, sized from the measured sizes after loading.
struct Budgets {
    decoded: u64,
    compressed: u64,
    reference: Format,
    floor: u64,
}

impl Budgets {
    fn new(loaded: &[Loaded], page_size: usize) -> Budgets {
        let decoded = loaded
            .iter()
            .map(|l| l.space.logical_bytes)
            .max()
            .unwrap_or(0);
        // The reference is what `ROW_FORMAT=COMPRESSED` picks if it ran (so that the budgets
        // fit what compressed tables occupy), else a zstd level, else the best compressed.
        let reference = loaded
            .iter()
            .min_by_key(|l| {
                let default = l.codec == Format::DEFAULT;
                let zstd = matches!(l.codec.classic_codec(), Some(Codec::Zstd(_)));
                (!default, !zstd, l.space.physical_bytes)
            })
            .map(|l| (l.codec, l.space.physical_bytes))
            .unwrap_or((Format::NONE, decoded));
        Budgets {
            decoded,
            compressed: reference.1,
            reference: reference.0,
            floor: 64 * page_size as u64,
        }
    }

    fn bytes(&self, b: Budget) -> u64 {
        let (d, c) = (self.decoded as f64, self.compressed as f64);
        let x = match b {
            Budget::FitsDecoded => 1.5 * d,
            Budget::FitsCompressed => ((c + d) / 2.0).max(1.15 * c),
            Budget::FitsNeither => 0.5 * c,
        };
        (x as u64).max(self.floor)
    }
}

fn run_disk(
    plan: &Plan,
    out: &Out,
    disk: Disk,
    base: &Path,
    results: &mut HashMap<RunKey, f64>,
) -> Result<()> {
    out.line(&format!(
        "\n== disk: {} ({}) — loading {} x {} rows per codec",
        disk.name(),
        base.display(),
        plan.tables,
        thousands(plan.rows)
    ));
    let mut loaded = Vec::new();
    for &codec in &plan.codecs {
        let dir = base.join(codec_dir(codec));
        let (seconds, space) = load(plan, disk, &dir, codec, plan.tables, plan.rows)?;
        let ratio = space.physical_bytes as f64 / space.logical_bytes.max(1) as f64;
        out.line(&format!(
            "load {:<8} {:>6.2} s  {:>9} rows/s  logical {:>7.1} MB  physical {:>7.1} MB  ratio {:.2}  pages {}",
            codec.to_string(),
            seconds,
            thousands((plan.total_rows() as f64 / seconds) as u64),
            mb(space.logical_bytes),
            mb(space.physical_bytes),
            ratio,
            thousands(space.pages)
        ));
        out.record(&json!({
            "bench": "storage", "workload": "load", "mode": plan.mode, "shape": plan.shape.name(),
            "disk": disk.name(),
            "codec": codec.to_string(), "default": codec == Format::DEFAULT,
            "rows": plan.total_rows(), "tables": plan.tables, "page_size": plan.page_size, "seconds": r3(seconds),
            "rows_per_s": (plan.total_rows() as f64 / seconds).round(),
            "logical_mb": r3(mb(space.logical_bytes)), "physical_mb": r3(mb(space.physical_bytes)),
            "pages": space.pages, "compression_ratio": r3(ratio),
        }));
        loaded.push(Loaded {
            codec,
            dir,
            seconds,
            space,
        });
    }
    if let Some(none) = loaded.iter().find(|l| l.codec == Format::NONE) {
        let base_s = none.seconds;
        let rel: Vec<String> = loaded
            .iter()
            .filter(|l| l.codec != Format::NONE)
            .map(|l| format!("{} {:.2}x", l.codec, l.seconds / base_s))
            .collect();
        if !rel.is_empty() {
            out.line(&format!("load time vs none: {}", rel.join(", ")));
        }
    }
    let budgets = Budgets::new(&loaded, plan.page_size);
    out.line(&format!(
        "budgets from decoded {:.1} MB and {} compressed {:.1} MB: {}",
        mb(budgets.decoded),
        budgets.reference,
        mb(budgets.compressed),
        Budget::ALL
            .iter()
            .map(|&b| format!("{} {:.1} MB", b.name(), mb(budgets.bytes(b))))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    out.line("");
    out.line(&format!(
        "{:<4} {:<15} {:>7} {:<7} {:>3} {:<13} {:>10} {:>7} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "disk",
        "budget",
        "mem_MB",
        "codec",
        "thr",
        "workload",
        "ops/s",
        "vs_none",
        "vs_1t",
        "hit_dec",
        "hit_cmp",
        "miss/op",
        "dec/op",
        "phys_MB"
    ));
    for &budget in &plan.budgets {
        let pool_bytes = budgets.bytes(budget);
        for &workload in &plan.workloads {
            for threads in plan.threads_for(workload) {
                for l in &loaded {
                    let key = RunKey {
                        disk,
                        budget,
                        workload,
                        threads,
                        codec: l.codec,
                    };
                    let seed = seed_for(plan.seed, 2, results.len() as u64);
                    let r = run_one(plan, disk, l, pool_bytes, workload, threads, seed)?;
                    results.insert(key, r.ops_per_s());
                    let vs_none = results
                        .get(&RunKey {
                            codec: Format::NONE,
                            ..key
                        })
                        .map(|n| r.ops_per_s() / n)
                        .filter(|x| x.is_finite());
                    let vs_1t = (threads > 1)
                        .then(|| results.get(&RunKey { threads: 1, ..key }))
                        .flatten()
                        .map(|n| r.ops_per_s() / n)
                        .filter(|x| x.is_finite());
                    report_run(plan, out, &key, pool_bytes, l, &r, vs_none, vs_1t);
                }
            }
        }
    }
    if !plan.keep {
        let _ = std::fs::remove_dir_all(base);
    }
    Ok(())
}

/// What one run measured.
struct RunResult {
    ops: u64,
    seconds: f64,
    /// CPU time the workers spent in the measured window, all threads together: on a shared
    /// machine, a steadier figure than wall time (other processes take the CPU, not this).
    cpu_ns: u64,
    delta: Delta,
    /// Seconds of the preloading scan before the warm-up (0 if none).
    preload_s: f64,
}

impl RunResult {
    fn ops_per_s(&self) -> f64 {
        self.ops as f64 / self.seconds
    }
}

#[allow(clippy::too_many_arguments)]
fn report_run(
    plan: &Plan,
    out: &Out,
    key: &RunKey,
    pool_bytes: u64,
    l: &Loaded,
    r: &RunResult,
    vs_none: Option<f64>,
    vs_1t: Option<f64>,
) {
    let d = &r.delta;
    let per_op = |x: u64| x as f64 / r.ops.max(1) as f64;
    let decodes_per_op = d.decodes.map(per_op);
    out.line(&format!(
        "{:<4} {:<15} {:>7.1} {:<7} {:>3} {:<13} {:>10} {:>7} {:>6} {:>7} {:>7} {:>7.3} {:>7} {:>7.1}",
        key.disk.name(),
        key.budget.name(),
        mb(pool_bytes),
        key.codec.to_string(),
        key.threads,
        key.workload.name(),
        thousands(r.ops_per_s().round() as u64),
        opt2(vs_none),
        opt2(vs_1t),
        pct(d.hit_decoded, d.accesses()),
        pct(d.hit_compressed, d.accesses()),
        per_op(d.miss),
        opt3(decodes_per_op),
        mb(l.space.physical_bytes),
    ));
    let opt_r3 = |x: Option<f64>| x.map(r3);
    out.record(&json!({
        "bench": "storage",
        "mode": plan.mode,
        "shape": plan.shape.name(),
        "disk": key.disk.name(),
        "budget": key.budget.name(),
        "mem_mb": r3(mb(pool_bytes)),
        "codec": key.codec.to_string(),
        "default": key.codec == Format::DEFAULT,
        "threads": key.threads,
        "workload": key.workload.name(),
        "key_distribution": "uniform",
        "ops": r.ops,
        "seconds": r3(r.seconds),
        "warmup_seconds": r3(plan.warmup),
        "preload_seconds": r3(r.preload_s),
        "ops_per_s": r.ops_per_s().round(),
        "cpu_ns_per_op": (r.cpu_ns as f64 / r.ops.max(1) as f64).round(),
        "ratio_vs_none": opt_r3(vs_none),
        "ratio_vs_1t": opt_r3(vs_1t),
        "rows": plan.total_rows(),
        "tables": plan.tables,
        "page_size": plan.page_size,
        "logical_mb": r3(mb(l.space.logical_bytes)),
        "physical_mb": r3(mb(l.space.physical_bytes)),
        "compression_ratio": r3(l.space.physical_bytes as f64 / l.space.logical_bytes.max(1) as f64),
        "hit_decoded": d.hit_decoded,
        "hit_compressed": d.hit_compressed,
        "miss": d.miss,
        "decodes": d.decodes,
        "decode_ns": d.decode_ns,
        "decodes_per_op": opt_r3(decodes_per_op),
        "decode_ns_per_decode": d.decode_ns.zip(d.decodes).filter(|(_, n)| *n > 0).map(|(ns, n)| (ns as f64 / n as f64).round()),
        "encodes": d.encodes,
        "encode_ns": d.encode_ns,
        "demotions": d.demotions,
        "evictions": d.evictions,
        "writebacks": d.writebacks,
        "misses_per_op": r3(per_op(d.miss)),
        "page_accesses_per_op": r3(per_op(d.accesses())),
        "reads": d.reads,
        "read_mb": r3(mb(d.read_bytes)),
        "read_ns": d.read_ns,
        "writes": d.writes,
        "write_mb": r3(mb(d.write_bytes)),
        "seed": plan.seed,
    }));
}

/// Reopens the database in `l.dir` with `pool_bytes` (a cold pool), warms up, and measures.
fn run_one(
    plan: &Plan,
    disk: Disk,
    l: &Loaded,
    pool_bytes: u64,
    workload: Workload,
    threads: usize,
    seed: u64,
) -> Result<RunResult> {
    let opts = DbOptions {
        page_size: plan.page_size,
        pool_bytes: pool_bytes as usize,
        codec: l.codec.db_codec(),
        direct_io: disk == Disk::Disk,
        flush: plan.flush,
        leaf_views: plan.leaf_views,
    };
    let db = Db::open(&l.dir, &opts)?;
    let trees = (0..plan.tables)
        .map(|i| db.open_table(&table_name(i)))
        .collect::<Result<Vec<_>>>()?;
    // Warm-up, part 1: one sequential pass over every tree, so that a budget that holds the data
    // starts the measurement with it cached (random gets alone would need many seconds to fault
    // every page in from a real disk). Part 2 is `warmup` seconds of the workload itself.
    let t0 = Instant::now();
    for t in &trees {
        t.scan(&sbtest::encode_key(i64::MIN), usize::MAX, |_, _| {})?;
    }
    let preload_s = t0.elapsed().as_secs_f64();
    let mut r = measure(
        &db,
        &plan.shape,
        &trees,
        plan.rows,
        workload,
        threads,
        seed,
        plan.warmup,
        plan.seconds,
    )?;
    r.preload_s = preload_s;
    if std::env::var_os("ZIPDB_BENCH_DEBUG").is_some() {
        eprintln!("  pool after run: {}", db.pool_debug());
    }
    db.close()?;
    Ok(r)
}

const WARM: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// Runs `workload` on `threads` threads: `warmup` seconds, then `seconds` measured.
#[allow(clippy::too_many_arguments)]
fn measure(
    db: &Db,
    shape: &Shape,
    trees: &[Table],
    rows: u64,
    workload: Workload,
    threads: usize,
    seed: u64,
    warmup: f64,
    seconds: f64,
) -> Result<RunResult> {
    let phase = AtomicU8::new(WARM);
    std::thread::scope(|s| -> Result<RunResult> {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let phase = &phase;
                s.spawn(move || -> Result<(u64, u64)> {
                    let mut w = Worker::new(shape, trees, rows, seed_for(seed, 3, t as u64));
                    let mut ops = 0u64;
                    let mut cpu0 = None;
                    loop {
                        let p = phase.load(Ordering::Relaxed);
                        if p == STOP {
                            break;
                        }
                        if p == MEASURE && cpu0.is_none() {
                            cpu0 = Some(thread_cpu_ns());
                        }
                        w.op(workload)?;
                        ops += (p == MEASURE) as u64;
                    }
                    std::hint::black_box(w.sink);
                    Ok((ops, cpu0.map_or(0, |c| thread_cpu_ns().saturating_sub(c))))
                })
            })
            .collect();
        // Stop the workers even if this thread bails out early.
        let stop = |phase: &AtomicU8| phase.store(STOP, Ordering::Relaxed);
        sleep_unless_finished(&handles, warmup);
        let before = db.counters();
        let t0 = Instant::now();
        phase.store(MEASURE, Ordering::Relaxed);
        sleep_unless_finished(&handles, seconds);
        stop(&phase);
        let elapsed = t0.elapsed().as_secs_f64();
        let (mut ops, mut cpu_ns) = (0, 0);
        let mut err = None;
        for h in handles {
            match h.join() {
                Ok(Ok((n, cpu))) => (ops, cpu_ns) = (ops + n, cpu_ns + cpu),
                Ok(Err(e)) => err = err.or(Some(e)),
                Err(_) => err = err.or(Some("a worker thread panicked".into())),
            }
        }
        if let Some(e) = err {
            return Err(e);
        }
        let after = db.counters();
        Ok(RunResult {
            ops,
            seconds: elapsed,
            cpu_ns,
            delta: Delta::between(&before, &after),
            preload_s: 0.0,
        })
    })
}

/// CPU time of the calling thread, in ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the call writes only it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps `seconds`, returning early if a worker has already finished (it failed).
fn sleep_unless_finished<T>(handles: &[std::thread::ScopedJoinHandle<'_, T>], seconds: f64) {
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    loop {
        let now = Instant::now();
        if now >= end || handles.iter().any(|h| h.is_finished()) {
            return;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(20)));
    }
}

/// One client thread: the sysbench statements, on the trees.
struct Worker<'a> {
    shape: &'a Shape,
    trees: &'a [Table],
    rows: u64,
    rng: SmallRng,
    val: Vec<u8>,
    val2: Vec<u8>,
    sink: u64,
}

impl<'a> Worker<'a> {
    fn new(shape: &'a Shape, trees: &'a [Table], rows: u64, seed: u64) -> Worker<'a> {
        Worker {
            shape,
            trees,
            rows,
            rng: SmallRng::seed_from_u64(seed),
            val: Vec::with_capacity(256),
            val2: Vec::with_capacity(256),
            sink: 0,
        }
    }

    fn pick(&mut self) -> (usize, [u8; sbtest::KEY_LEN]) {
        let t = self.rng.gen_range(0..self.trees.len());
        let id = self.rng.gen_range(1..=self.rows) as i64;
        (t, sbtest::encode_key(id))
    }

    fn op(&mut self, w: Workload) -> Result<()> {
        match w {
            Workload::PointGet => self.point_get(),
            Workload::Range100 => self.range(),
            Workload::Update => self.update(),
            Workload::InsertDelete => self.delete_insert(),
            Workload::WriteMix => {
                for _ in 0..10 {
                    self.point_get()?;
                }
                for _ in 0..4 {
                    self.range()?;
                }
                self.update_k()?;
                self.update_c()?;
                self.delete_insert()
            }
        }
    }

    /// `SELECT c FROM sbtest WHERE id = ?`
    fn point_get(&mut self) -> Result<()> {
        let (t, key) = self.pick();
        if self.trees[t].get(&key, &mut self.val)? {
            self.sink = self.sink.wrapping_add(self.shape.read(&self.val));
        }
        Ok(())
    }

    /// `SELECT c FROM sbtest WHERE id BETWEEN ? AND ? + 99`
    fn range(&mut self) -> Result<()> {
        let t = self.rng.gen_range(0..self.trees.len());
        let start = self.rng.gen_range(1..=self.rows.saturating_sub(99).max(1)) as i64;
        let mut sum = 0u64;
        self.trees[t].scan(&sbtest::encode_key(start), 100, |k, v| {
            let id = sbtest::decode_key(k).unwrap_or(0) as u64;
            sum = sum.wrapping_add(id + v.len() as u64)
        })?;
        self.sink = self.sink.wrapping_add(sum);
        Ok(())
    }

    /// Read the row, `k = k + 1` and a new `c`, write it back.
    fn update(&mut self) -> Result<()> {
        let (t, key) = self.pick();
        if self.trees[t].get(&key, &mut self.val)?
            && self.shape.bump(&mut self.rng, &mut self.val)
            && self
                .shape
                .new_text(&mut self.rng, &self.val, &mut self.val2)
        {
            self.trees[t].upsert(&key, &self.val2)?;
        }
        Ok(())
    }

    /// `UPDATE sbtest SET k = k + 1 WHERE id = ?`
    fn update_k(&mut self) -> Result<()> {
        let (t, key) = self.pick();
        if self.trees[t].get(&key, &mut self.val)? && self.shape.bump(&mut self.rng, &mut self.val)
        {
            self.trees[t].upsert(&key, &self.val)?;
        }
        Ok(())
    }

    /// `UPDATE sbtest SET c = ? WHERE id = ?`
    fn update_c(&mut self) -> Result<()> {
        let (t, key) = self.pick();
        if self.trees[t].get(&key, &mut self.val)?
            && self
                .shape
                .new_text(&mut self.rng, &self.val, &mut self.val2)
        {
            self.trees[t].upsert(&key, &self.val2)?;
        }
        Ok(())
    }

    /// `DELETE FROM sbtest WHERE id = ?` then `INSERT INTO sbtest (id, k, c, pad) VALUES (...)`
    /// with the same id and new random columns. (Another thread may have deleted or re-inserted
    /// the same id in between; both outcomes are fine.)
    fn delete_insert(&mut self) -> Result<()> {
        let (t, key) = self.pick();
        self.trees[t].delete(&key)?;
        self.shape
            .insert_value(&mut self.rng, self.rows, &mut self.val);
        self.trees[t].insert(&key, &self.val)?;
        Ok(())
    }
}

/// The in-memory figure: point gets on one tree of `inmem_rows` rows (3 levels or more at the
/// default sizes), in a pool that holds all of it, preloaded; 1 thread then 2 threads.
fn in_memory(plan: &Plan, out: &Out) -> Result<()> {
    let (disk, base) = plan
        .disks
        .iter()
        .find(|(d, _)| *d == Disk::Ram)
        .unwrap_or(&plan.disks[0]);
    let rows = plan.inmem_rows.max(100);
    // none, one whole-page codec (zstd if it ran, else the last classic one), and every
    // record format asked for: the in-memory target of issue 19 is about the record formats.
    let mut codecs = vec![Format::NONE];
    let mut classic = plan.codecs.iter().filter(|c| c.classic_codec().is_some());
    if let Some(c) = classic
        .clone()
        .find(|c| matches!(c.classic_codec(), Some(Codec::Zstd(_))))
        .or(classic.next_back())
    {
        if *c != Format::NONE {
            codecs.push(*c);
        }
    }
    codecs.extend(plan.codecs.iter().filter(|c| c.classic_codec().is_none()));
    out.line(&format!(
        "\n== in memory: point gets on one tree of {} rows ({} disk, whole tree cached)",
        thousands(rows),
        disk.name()
    ));
    let mut one_thread: Option<f64> = None;
    for codec in codecs {
        let dir = base.join(format!("inmem-{}", codec_dir(codec)));
        let (load_s, space) = load(plan, *disk, &dir, codec, 1, rows)?;
        let opts = DbOptions {
            page_size: plan.page_size,
            pool_bytes: plan.big_pool(rows),
            codec: codec.db_codec(),
            direct_io: *disk == Disk::Disk,
            flush: plan.flush,
            leaf_views: plan.leaf_views,
        };
        let db = Db::open(&dir, &opts)?;
        let tree = db.open_table(&table_name(0))?;
        let height = db.height(&table_name(0))?;
        // Preload: one full scan brings every leaf (and the inner pages on its way) into the pool.
        let n = tree.scan(&sbtest::encode_key(i64::MIN), usize::MAX, |_, _| {})?;
        if n as u64 != rows {
            return Err(format!("in-memory tree holds {n} rows, expected {rows}").into());
        }
        let trees = std::slice::from_ref(&tree);
        let seconds = plan.seconds.max(0.05);
        let mut per_thread = Vec::new();
        for &threads in &plan.threads {
            let r = measure(
                &db,
                &plan.shape,
                trees,
                rows,
                Workload::PointGet,
                threads,
                plan.seed,
                plan.warmup.min(0.2),
                seconds,
            )?;
            per_thread.push((threads, r));
        }
        db.close()?;
        let _ = std::fs::remove_dir_all(&dir);
        let base_ops = per_thread
            .iter()
            .find(|(t, _)| *t == 1)
            .map(|(_, r)| r.ops_per_s());
        for (threads, r) in &per_thread {
            let ns = 1e9 * r.seconds * *threads as f64 / r.ops.max(1) as f64;
            let vs_1t = base_ops.filter(|_| *threads > 1).map(|b| r.ops_per_s() / b);
            let vs_none = (codec != Format::NONE && *threads == 1)
                .then_some(one_thread)
                .flatten()
                .map(|b| r.ops_per_s() / b);
            if codec == Format::NONE && *threads == 1 {
                one_thread = Some(r.ops_per_s());
            }
            out.line(&format!(
                "point_get in memory {:<7} {} thr: {:>10} ops/s  {:>7.0} ns/op per thread  levels {}  pages {}{}{}",
                codec.to_string(),
                threads,
                thousands(r.ops_per_s().round() as u64),
                ns,
                height.map_or_else(|| "?".to_string(), |h| h.to_string()),
                thousands(space.pages),
                vs_1t.map_or_else(String::new, |x| format!("  {threads}t/1t {x:.2}")),
                vs_none.map_or_else(String::new, |x| format!("  vs none {x:.2}")),
            ));
            out.record(&json!({
                "bench": "storage", "mode": plan.mode, "shape": plan.shape.name(),
                "workload": "point_get", "budget": "in_memory",
                "disk": disk.name(), "codec": codec.to_string(),
                "default": codec == Format::DEFAULT, "threads": threads,
                "rows": rows, "tables": 1, "page_size": plan.page_size, "levels": height,
                "pages": space.pages, "load_seconds": r3(load_s),
                "logical_mb": r3(mb(space.logical_bytes)), "physical_mb": r3(mb(space.physical_bytes)),
                "ops": r.ops, "seconds": r3(r.seconds), "ops_per_s": r.ops_per_s().round(),
                "ns_per_op": ns.round(), "ratio_vs_1t": vs_1t.map(r3), "ratio_vs_none": vs_none.map(r3),
                "hit_decoded": r.delta.hit_decoded, "hit_compressed": r.delta.hit_compressed,
                "miss": r.delta.miss, "decodes": r.delta.decodes,
                "decodes_per_op": r.delta.decodes.map(|x| r3(x as f64 / r.ops.max(1) as f64)),
            }));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(codec: impl Into<Format>, logical: u64, physical: u64) -> Loaded {
        Loaded {
            codec: codec.into(),
            dir: PathBuf::new(),
            seconds: 1.0,
            space: Space {
                pages: logical / 16384,
                logical_bytes: logical,
                physical_bytes: physical,
            },
        }
    }

    #[test]
    fn budgets_follow_the_measured_sizes() {
        let mb = 1u64 << 20;
        let l = [
            loaded(Codec::None, 100 * mb, 100 * mb),
            loaded(Codec::Lz4, 100 * mb, 90 * mb),
            loaded(Codec::Zstd(1), 100 * mb, 50 * mb),
        ];
        let b = Budgets::new(&l, 16384);
        assert_eq!(b.reference, Format::classic(Codec::Zstd(1)));
        assert_eq!(b.bytes(Budget::FitsDecoded), 150 * mb);
        assert_eq!(b.bytes(Budget::FitsCompressed), 75 * mb);
        assert_eq!(b.bytes(Budget::FitsNeither), 25 * mb);
        // Compressed close to decoded: at least 1.15x compressed.
        let l = [
            loaded(Codec::None, 100 * mb, 100 * mb),
            loaded(Codec::Lz4, 100 * mb, 90 * mb),
        ];
        let b = Budgets::new(&l, 16384);
        assert_eq!(b.reference, Format::classic(Codec::Lz4));
        assert_eq!(
            b.bytes(Budget::FitsCompressed),
            (90.0 * 1.15 * mb as f64) as u64
        );
        // Tiny data: never below 64 pages.
        let l = [loaded(Codec::None, 16384, 16384)];
        assert_eq!(
            Budgets::new(&l, 16384).bytes(Budget::FitsNeither),
            64 * 16384
        );
    }

    /// Whatever `ROW_FORMAT=COMPRESSED` picks sizes the compressed budget when it ran, even
    /// if another format (a zstd level, fsst) compressed better.
    #[test]
    fn budgets_follow_the_default_format_when_it_ran() {
        let mb = 1u64 << 20;
        let mut l = vec![
            loaded(Codec::Zstd(19), 100 * mb, 30 * mb),
            loaded(Format::FSST, 100 * mb, 35 * mb),
        ];
        l.retain(|x| x.codec != Format::DEFAULT);
        l.push(loaded(Format::DEFAULT, 100 * mb, 60 * mb));
        let b = Budgets::new(&l, 16384);
        assert_eq!((b.reference, b.compressed), (Format::DEFAULT, 60 * mb));
    }

    #[test]
    fn seeds_differ() {
        assert_ne!(seed_for(1, 1, 0), seed_for(1, 1, 1));
        assert_ne!(seed_for(1, 1, 0), seed_for(1, 2, 0));
        assert_ne!(seed_for(1, 1, 0), seed_for(2, 1, 0));
    }
}
