//! The commit benchmark: commits per second and commit latency by number of writer threads under
//! one flush policy, then the speed of recovery (WAL replay).
//!
//! Throughput: one tree of `keys` rows of `value_bytes` bytes, loaded and checkpointed first. For
//! each thread count, every thread runs transactions of one upsert of a random key for `seconds`
//! (after a short warm-up); a commit that fails with a conflict (deadlock, write conflict, lock
//! wait timeout) is retried and counted, and its latency runs from the first `begin` to the
//! successful commit. Keys are uniform over all rows, so threads rarely meet. Under `sync` the
//! figure that matters is how well group commit shares one fsync among concurrent committers:
//! the "16 writers / 1 writer" ratio (target >= 8x) and commits per sync.
//!
//! Recovery: fill a fresh database's WAL with `recovery_bytes` of the same small commits (policy
//! `none`, a WAL more than twice that size and a one-hour checkpoint interval, so that no
//! checkpoint starts: one starts when the WAL is half full), drop the database without `close`
//! (a crash for the data file; the WAL's buffer is written and synced at drop), reopen it, and
//! report the replay's records, bytes and time from the recovery report (target >= 200 MB/s).
//! The WAL is then in the page cache, as after a process crash; `--cold` drops the page cache
//! first, as after a machine crash (needs root).
//!
//! The default directory is under the current directory, not /tmp, which may be a RAM disk where
//! fsync costs nothing; the file system is printed with the results.
//!
//! This module talks to the engine directly instead of through `db.rs`: it needs transactions,
//! per-transaction flush policies, WAL counters and recovery reports.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use zipdb_engine::{Database, Error as DbError, FlushPolicy, Options, Tree};

use crate::db::Result;
use crate::report::{mb, r3, thousands, Out};

#[derive(Args, Debug, Clone)]
pub struct CommitArgs {
    /// CI-sized run: 1 s per thread count, threads 1,16, recovery of 32 MiB.
    #[arg(long)]
    pub quick: bool,
    /// Print one JSON object per line on stdout (one per measurement, then a summary with
    /// "bench":"commit","kind":"summary"); the readable table goes to stderr.
    #[arg(long)]
    pub json: bool,
    /// Directory for the databases, on the disk to measure (sub-directories commit and
    /// recovery are replaced) [default: ./zipdb-bench-commit].
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Measured seconds per thread count [default: 5; quick 1].
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Writer thread counts, comma-separated [default: 1,2,16,64; quick 1,16].
    #[arg(long, value_delimiter = ',')]
    pub threads: Option<Vec<usize>>,
    /// When a commit returns: sync (durable), write (in the OS), none (in memory).
    #[arg(long, value_enum, default_value_t = Policy::Sync)]
    pub policy: Policy,
    /// WAL bytes to fill and replay for the recovery figure, with an optional K, M or G suffix
    /// (binary); 0 skips it [default: 1G; quick 32M].
    #[arg(long, value_parser = parse_bytes)]
    pub recovery_bytes: Option<u64>,
    /// Rows in the tree; each commit upserts one of them at random.
    #[arg(long, default_value_t = 100_000)]
    pub keys: u64,
    /// Bytes of each value.
    #[arg(long, default_value_t = 100)]
    pub value_bytes: usize,
    /// Buffer pool in MiB.
    #[arg(long, default_value_t = 256)]
    pub pool_mb: usize,
    /// Threads that fill the WAL for the recovery figure.
    #[arg(long, default_value_t = 2)]
    pub fill_threads: usize,
    /// Drop the OS page cache before the recovery (writes /proc/sys/vm/drop_caches; root only).
    #[arg(long)]
    pub cold: bool,
    /// Seed of the keys and values.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Keep the database directories after the run.
    #[arg(long)]
    pub keep: bool,
    /// Only the recovery figure (no thread counts).
    #[arg(long)]
    pub recovery_only: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Policy {
    Sync,
    Write,
    None,
}

impl Policy {
    pub fn flush(self) -> FlushPolicy {
        match self {
            Policy::Sync => FlushPolicy::Sync,
            Policy::Write => FlushPolicy::Write,
            Policy::None => FlushPolicy::None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Policy::Sync => "sync",
            Policy::Write => "write",
            Policy::None => "none",
        }
    }
}

/// `123`, `64K`, `256M`, `1G`, `1GiB`, `2MB` (all suffixes binary).
pub fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?}: expected a number of bytes, e.g. 256M"))?;
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        other => return Err(format!("{s:?}: unknown suffix {other:?} (K, M or G)")),
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?}: too large"))
}

/// The file system holding `path` (type, device, mount point), from /proc/self/mountinfo;
/// "unknown" where that cannot be read.
pub fn fs_description(path: &Path) -> String {
    let Ok(canon) = path.canonicalize() else {
        return "unknown file system".to_string();
    };
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return "unknown file system".to_string();
    };
    // Fields: id parent major:minor root mount-point options [optional...] - type source ...
    let mut best: Option<(usize, String)> = None;
    for line in info.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let Some(mount) = pre.split(' ').nth(4) else {
            continue;
        };
        let mut post = post.split(' ');
        let (Some(fstype), Some(source)) = (post.next(), post.next()) else {
            continue;
        };
        let mount = mount.replace("\\040", " ");
        if canon.starts_with(&mount) && best.as_ref().is_none_or(|(n, _)| mount.len() >= *n) {
            best = Some((mount.len(), format!("{fstype} on {source} at {mount}")));
        }
    }
    best.map_or_else(|| "unknown file system".to_string(), |(_, d)| d)
}

fn key_of(i: u64) -> [u8; 12] {
    let mut k = *b"key:\0\0\0\0\0\0\0\0";
    k[4..].copy_from_slice(&i.to_be_bytes());
    k
}

fn is_retryable(e: &DbError) -> bool {
    matches!(
        e,
        DbError::Txn(zipdb_engine::TxnError::Deadlock)
            | DbError::Txn(zipdb_engine::TxnError::WriteConflict { .. })
            | DbError::Txn(zipdb_engine::TxnError::LockWaitTimeout { .. })
    )
}

/// One upsert in its own transaction, retried on conflicts; returns the number of retries.
fn commit_one(db: &Database, tree: &Tree, key: &[u8], value: &[u8]) -> Result<u64> {
    let mut retries = 0;
    loop {
        let mut txn = db.begin();
        let r = match txn.put(tree, key, value) {
            Ok(()) => txn.commit(),
            Err(e) => Err(e),
        };
        match r {
            Ok(()) => return Ok(retries),
            Err(e) if is_retryable(&e) => retries += 1,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A deterministic seed for stream `a`/`b` of this invocation.
fn seed_for(seed: u64, a: u64, b: u64) -> u64 {
    let mut x =
        seed ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    x ^= x >> 31;
    x.wrapping_mul(0xBF58_476D_1CE4_E5B9)
}

struct Plan {
    seconds: f64,
    warmup: f64,
    threads: Vec<usize>,
    recovery_bytes: u64,
    dir: PathBuf,
    created_dir: bool,
    fs: String,
}

pub fn run(args: CommitArgs) -> Result<()> {
    let out = Out { json: args.json };
    if args.keys == 0 || args.value_bytes == 0 {
        return Err("commit: --keys and --value-bytes must be positive".into());
    }
    let seconds = args.seconds.unwrap_or(if args.quick { 1.0 } else { 5.0 });
    // Also refuses NaN.
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err("commit: --seconds must be positive".into());
    }
    let threads = args.threads.clone().unwrap_or_else(|| {
        if args.recovery_only {
            vec![]
        } else if args.quick {
            vec![1, 16]
        } else {
            vec![1, 2, 16, 64]
        }
    });
    if threads.contains(&0) {
        return Err("commit: thread counts must be positive".into());
    }
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("zipdb-bench-commit"));
    let created_dir = !dir.exists();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let plan = Plan {
        seconds,
        warmup: (seconds * 0.2).min(1.0),
        threads,
        recovery_bytes: args
            .recovery_bytes
            .unwrap_or(if args.quick { 32 << 20 } else { 1 << 30 }),
        fs: fs_description(&dir),
        dir,
        created_dir,
    };
    let r = run_plan(&args, &plan, &out);
    if !args.keep {
        for sub in ["commit", "recovery"] {
            let _ = std::fs::remove_dir_all(plan.dir.join(sub));
        }
        if plan.created_dir {
            let _ = std::fs::remove_dir(&plan.dir);
        }
    }
    r
}

struct Measured {
    threads: usize,
    commits: u64,
    per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    conflicts: u64,
    commits_per_sync: Option<f64>,
    /// Average time of one fsync of the WAL during the run.
    sync_ms: Option<f64>,
    /// Average time a sync leader waited for other committers before syncing, per sync.
    gather_ms: Option<f64>,
}

fn run_plan(args: &CommitArgs, plan: &Plan, out: &Out) -> Result<()> {
    let policy = args.policy;
    let abs = plan.dir.canonicalize().unwrap_or_else(|_| plan.dir.clone());
    out.line(&format!(
        "zipdb commit benchmark: policy {}, {} keys, {} B values, {:.1} s per thread count (+{:.1} s warm-up), threads {:?}",
        policy.name(),
        thousands(args.keys),
        args.value_bytes,
        plan.seconds,
        plan.warmup,
        plan.threads,
    ));
    out.line(&format!("dir {} ({})", abs.display(), plan.fs));
    let mut results = Vec::new();
    if !plan.threads.is_empty() {
        let dbdir = plan.dir.join("commit");
        if dbdir.exists() {
            std::fs::remove_dir_all(&dbdir)
                .map_err(|e| format!("cannot clear {}: {e}", dbdir.display()))?;
        }
        let db = Database::open(
            &dbdir,
            Options {
                flush_policy: policy.flush(),
                pool_bytes: args.pool_mb << 20,
                recovery_progress: false,
                ..Options::default()
            },
        )?;
        let tree = db.create_tree("kv", None)?;
        load(&db, &tree, args)?;
        out.line(&format!(
            "{:>7} {:>11} {:>8} {:>8} {:>9} {:>12} {:>8} {:>9}",
            "threads",
            "commits/s",
            "p50 ms",
            "p99 ms",
            "conflicts",
            "commits/sync",
            "sync ms",
            "gather ms"
        ));
        for (i, &n) in plan.threads.iter().enumerate() {
            let m = measure(&db, &tree, args, plan, n, seed_for(args.seed, 1, i as u64))?;
            out.line(&format!(
                "{:>7} {:>11} {:>8.3} {:>8.3} {:>9} {:>12} {:>8} {:>9}",
                m.threads,
                thousands(m.per_s.round() as u64),
                m.p50_ms,
                m.p99_ms,
                m.conflicts,
                m.commits_per_sync
                    .map_or_else(|| "-".to_string(), |c| format!("{c:.2}")),
                m.sync_ms
                    .map_or_else(|| "-".to_string(), |c| format!("{c:.3}")),
                m.gather_ms
                    .map_or_else(|| "-".to_string(), |c| format!("{c:.3}")),
            ));
            out.record(&json!({
                "bench": "commit",
                "kind": "throughput",
                "policy": policy.name(),
                "threads": m.threads,
                "seconds": plan.seconds,
                "commits": m.commits,
                "commits_per_s": r3(m.per_s),
                "p50_ms": r3(m.p50_ms),
                "p99_ms": r3(m.p99_ms),
                "conflicts": m.conflicts,
                "commits_per_sync": m.commits_per_sync.map(r3),
                "sync_ms": m.sync_ms.map(r3),
                "gather_ms": m.gather_ms.map(r3),
                "fs": plan.fs,
            }));
            results.push(m);
        }
        drop(tree);
        db.close()?;
    }
    let rate = |n: usize| results.iter().find(|m| m.threads == n).map(|m| m.per_s);
    let ratio = match (rate(16), rate(1)) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    if let Some(r) = ratio {
        out.line(&format!(
            "16 writers / 1 writer: {r:.2}x{}",
            if policy == Policy::Sync {
                " (target >= 8x under sync)"
            } else {
                ""
            }
        ));
    }
    let rec = if plan.recovery_bytes > 0 {
        Some(recovery(args, plan, out)?)
    } else {
        None
    };
    let mut summary = json!({
        "bench": "commit",
        "kind": "summary",
        "policy": policy.name(),
        "seconds": plan.seconds,
        "fs": plan.fs,
        "dir": abs.display().to_string(),
        "ratio_16_1": ratio.map(r3),
        "commits_per_s": results
            .iter()
            .map(|m| (m.threads.to_string(), json!(r3(m.per_s))))
            .collect::<serde_json::Map<_, _>>(),
        "p99_ms": results
            .iter()
            .map(|m| (m.threads.to_string(), json!(r3(m.p99_ms))))
            .collect::<serde_json::Map<_, _>>(),
    });
    if let Some(r) = &rec {
        summary["recovery_bytes"] = json!(r.bytes);
        summary["recovery_records"] = json!(r.records);
        summary["recovery_s"] = json!(r3(r.seconds));
        summary["recovery_mb_per_s"] = json!(r3(r.mb_per_s));
        summary["recovery_cold"] = json!(args.cold);
    }
    out.record(&summary);
    Ok(())
}

/// Inserts every key once, in transactions of 1,000 rows that do not wait for the disk, then
/// checkpoints: the measured commits then update existing rows of a settled tree.
fn load(db: &Database, tree: &Tree, args: &CommitArgs) -> Result<()> {
    let mut rng = SmallRng::seed_from_u64(seed_for(args.seed, 0, 0));
    let mut value = vec![0u8; args.value_bytes];
    let mut i = 0;
    while i < args.keys {
        let mut txn = db.begin();
        txn.set_flush_policy(FlushPolicy::None);
        for k in i..(i + 1000).min(args.keys) {
            rng.fill(&mut value[..]);
            txn.put(tree, &key_of(k), &value)?;
        }
        txn.commit()?;
        i += 1000;
    }
    db.checkpoint()?;
    Ok(())
}

fn measure(
    db: &Database,
    tree: &Tree,
    args: &CommitArgs,
    plan: &Plan,
    threads: usize,
    seed: u64,
) -> Result<Measured> {
    let stop = AtomicBool::new(false);
    let measuring = AtomicBool::new(false);
    let barrier = Barrier::new(threads + 1);
    let (lats, conflicts, start, end, wal0, wal1) = std::thread::scope(|s| -> Result<_> {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (stop, measuring, barrier) = (&stop, &measuring, &barrier);
                s.spawn(move || -> Result<(Vec<u64>, u64)> {
                    let mut rng = SmallRng::seed_from_u64(seed_for(seed, t as u64, 7));
                    let mut value = vec![0u8; args.value_bytes];
                    rng.fill(&mut value[..]);
                    let mut lat = Vec::with_capacity(1 << 16);
                    let mut conflicts = 0;
                    barrier.wait();
                    while !stop.load(Ordering::Relaxed) {
                        let key = key_of(rng.gen_range(0..args.keys));
                        let stamp: u64 = rng.gen();
                        let n = value.len().min(8);
                        value[..n].copy_from_slice(&stamp.to_le_bytes()[..n]);
                        let counted = measuring.load(Ordering::Relaxed);
                        let t0 = Instant::now();
                        let retries = commit_one(db, tree, &key, &value)?;
                        if counted {
                            lat.push(t0.elapsed().as_nanos() as u64);
                            conflicts += retries;
                        }
                    }
                    Ok((lat, conflicts))
                })
            })
            .collect();
        barrier.wait();
        std::thread::sleep(Duration::from_secs_f64(plan.warmup));
        let wal0 = db.stats().wal;
        let start = Instant::now();
        measuring.store(true, Ordering::Relaxed);
        std::thread::sleep(Duration::from_secs_f64(plan.seconds));
        stop.store(true, Ordering::Relaxed);
        let mut lats = Vec::new();
        let mut conflicts = 0;
        let mut first_err = None;
        for h in handles {
            match h.join() {
                Ok(Ok((l, c))) => {
                    lats.extend(l);
                    conflicts += c;
                }
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert("a writer thread panicked".into());
                }
            }
        }
        // Commits that started before the stop finish after it; their time counts too.
        let end = Instant::now();
        let wal1 = db.stats().wal;
        if let Some(e) = first_err {
            return Err(e);
        }
        Ok((lats, conflicts, start, end, wal0, wal1))
    })?;
    let mut lats = lats;
    lats.sort_unstable();
    let pct = |q: f64| -> f64 {
        if lats.is_empty() {
            return 0.0;
        }
        let i = ((lats.len() - 1) as f64 * q).round() as usize;
        lats[i] as f64 / 1e6
    };
    let secs = end.duration_since(start).as_secs_f64();
    let syncs = wal1.syncs.saturating_sub(wal0.syncs);
    let sync_commits = wal1.sync_commits.saturating_sub(wal0.sync_commits);
    Ok(Measured {
        threads,
        commits: lats.len() as u64,
        per_s: lats.len() as f64 / secs,
        p50_ms: pct(0.50),
        p99_ms: pct(0.99),
        conflicts,
        commits_per_sync: (syncs > 0 && sync_commits > 0)
            .then(|| sync_commits as f64 / syncs as f64),
        sync_ms: (syncs > 0).then(|| {
            wal1.sync_ns_total.saturating_sub(wal0.sync_ns_total) as f64 / syncs as f64 / 1e6
        }),
        gather_ms: (syncs > 0).then(|| {
            wal1.gather_ns_total.saturating_sub(wal0.gather_ns_total) as f64 / syncs as f64 / 1e6
        }),
    })
}

struct Recovered {
    bytes: u64,
    records: u64,
    seconds: f64,
    mb_per_s: f64,
}

fn recovery(args: &CommitArgs, plan: &Plan, out: &Out) -> Result<Recovered> {
    let fill = plan.recovery_bytes;
    let dbdir = plan.dir.join("recovery");
    if dbdir.exists() {
        std::fs::remove_dir_all(&dbdir)
            .map_err(|e| format!("cannot clear {}: {e}", dbdir.display()))?;
    }
    // A checkpoint starts when the WAL is half full and would shorten the replay: keep the fill
    // well under half, with room for the records that land between two checks of the size.
    let wal_bytes = (fill as f64 * 2.25) as u64 + (64 << 20);
    let wal_bytes = wal_bytes.div_ceil(1 << 20) << 20;
    let opts = Options {
        flush_policy: FlushPolicy::None,
        pool_bytes: args.pool_mb << 20,
        wal_bytes,
        checkpoint_interval: Duration::from_secs(3600),
        recovery_progress: false,
        ..Options::default()
    };
    out.line(&format!(
        "recovery: filling {:.1} MiB of WAL (file {:.0} MiB) with one-upsert commits, policy none, {} threads",
        mb(fill),
        mb(wal_bytes),
        args.fill_threads.max(1)
    ));
    let created = Instant::now();
    let db = Database::open(&dbdir, opts)?;
    let tree = db.create_tree("kv", None)?;
    let base = db.stats();
    let (log0, ckpt0) = (base.wal.log_bytes, base.store.checkpoints);
    let create_s = created.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let stop = AtomicBool::new(false);
    let commits = AtomicU64::new(0);
    std::thread::scope(|s| -> Result<()> {
        let handles: Vec<_> = (0..args.fill_threads.max(1))
            .map(|t| {
                let (db, tree, stop, commits) = (&db, &tree, &stop, &commits);
                s.spawn(move || -> Result<()> {
                    let mut rng = SmallRng::seed_from_u64(seed_for(args.seed, 2, t as u64));
                    let mut value = vec![0u8; args.value_bytes];
                    rng.fill(&mut value[..]);
                    let mut n = 0u64;
                    let mut last_note = Instant::now();
                    while !stop.load(Ordering::Relaxed) {
                        let key = key_of(rng.gen_range(0..args.keys));
                        let stamp: u64 = rng.gen();
                        let m = value.len().min(8);
                        value[..m].copy_from_slice(&stamp.to_le_bytes()[..m]);
                        commit_one(db, tree, &key, &value)?;
                        n += 1;
                        // Thread 0 watches the log's size (stats() is too heavy for every
                        // commit).
                        if t == 0 && n.is_multiple_of(2048) {
                            let logged = db.stats().wal.log_bytes - log0;
                            if logged >= fill {
                                stop.store(true, Ordering::Relaxed);
                            } else if last_note.elapsed() >= Duration::from_secs(5) {
                                last_note = Instant::now();
                                eprintln!(
                                    "recovery: filled {:.0} of {:.0} MiB",
                                    mb(logged),
                                    mb(fill)
                                );
                            }
                        }
                    }
                    commits.fetch_add(n, Ordering::Relaxed);
                    Ok(())
                })
            })
            .collect();
        let mut first_err = None;
        for h in handles {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert("a fill thread panicked".into());
                }
            }
            // Stop the others at once if one failed.
            stop.store(true, Ordering::Relaxed);
        }
        first_err.map_or(Ok(()), Err)
    })?;
    let fill_s = t0.elapsed().as_secs_f64();
    let st = db.stats();
    let logged = st.wal.log_bytes - log0;
    let checkpoints = st.store.checkpoints - ckpt0;
    if checkpoints > 0 {
        out.line(&format!(
            "recovery: WARNING: {checkpoints} checkpoint(s) ran during the fill; the replay is shorter than the fill"
        ));
    }
    // Dropping without close is a crash for the data file: the trees are as of the checkpoint
    // at create, and every commit is in the WAL only. Every handle must go for the drop to
    // happen (trees hold the database).
    drop(tree);
    drop(db);
    if args.cold {
        std::fs::write("/proc/sys/vm/drop_caches", "1")
            .map_err(|e| format!("--cold: cannot drop the page cache (root only): {e}"))?;
    }
    let t1 = Instant::now();
    let db = Database::open(
        &dbdir,
        Options {
            recovery_progress: true,
            ..opts
        },
    )?;
    let open_s = t1.elapsed().as_secs_f64();
    let rr = db
        .recovery_report()
        .ok_or("recovery: the reopened database reports no recovery")?
        .clone();
    let secs = rr.elapsed.as_secs_f64();
    let mb_per_s = if secs > 0.0 { mb(rr.bytes) / secs } else { 0.0 };
    let records_per_s = if secs > 0.0 {
        rr.records as f64 / secs
    } else {
        0.0
    };
    // The replayed tree must hold rows: a replay that applied nothing would be fast and wrong.
    let rows = db.open_tree("kv")?.range(..)?.count() as u64;
    let commits = commits.load(Ordering::Relaxed);
    out.line(&format!(
        "recovery: filled {:.1} MiB ({} commits) in {:.1} s (+{:.1} s to create the WAL); \
         replayed {:.1} MiB, {} records in {:.3} s = {:.0} MB/s, {} records/s (target >= 200 MB/s); open {:.3} s; \
         {} rows; page cache {}",
        mb(logged),
        thousands(commits),
        fill_s,
        create_s,
        mb(rr.bytes),
        thousands(rr.records),
        secs,
        mb_per_s,
        thousands(records_per_s.round() as u64),
        open_s,
        thousands(rows),
        if args.cold { "dropped" } else { "warm" },
    ));
    out.record(&json!({
        "bench": "commit",
        "kind": "recovery",
        "fill_bytes": logged,
        "fill_commits": commits,
        "fill_s": r3(fill_s),
        "checkpoints_during_fill": checkpoints,
        "records": rr.records,
        "bytes": rr.bytes,
        "recovery_s": r3(secs),
        "mb_per_s": r3(mb_per_s),
        "records_per_s": r3(records_per_s),
        "open_s": r3(open_s),
        "torn_tail": rr.torn_tail,
        "rows": rows,
        "cold": args.cold,
        "fs": plan.fs,
    }));
    if (checkpoints == 0 && rr.records < commits) || rows == 0 {
        return Err(format!(
            "recovery: replayed {} records for {commits} commits and found {rows} rows",
            rr.records
        )
        .into());
    }
    db.close()?;
    Ok(Recovered {
        bytes: rr.bytes,
        records: rr.records,
        seconds: secs,
        mb_per_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("123"), Ok(123));
        assert_eq!(parse_bytes("64K"), Ok(64 << 10));
        assert_eq!(parse_bytes("256M"), Ok(256 << 20));
        assert_eq!(parse_bytes("1G"), Ok(1 << 30));
        assert_eq!(parse_bytes("2GiB"), Ok(2 << 30));
        assert_eq!(parse_bytes("32mb"), Ok(32 << 20));
        assert!(parse_bytes("1T").is_err());
        assert!(parse_bytes("M").is_err());
    }
}
