//! The crash benchmark: kill a writing process at random moments and check that every commit it
//! acknowledged survives, that no transaction survives in part, and that the data's invariants
//! hold.
//!
//! The parent process runs `cycles` cycles. In each one it starts a child (this binary's hidden
//! `crash-child` subcommand), which opens (recovers) the database, creates it on first use, and
//! runs `threads` threads of bank transfers under the `Sync` flush policy. Every transfer is one
//! transaction that moves an amount between two random accounts and inserts a unique id into
//! `ids` plus a row under the same id into `transfers` (from, to, amount): so a transaction that
//! survives in part shows as an id without its transfer row (or the reverse), or as a balance that
//! the transfer rows do not explain. After each commit returns, the child prints `ack <id>` on
//! stdout; the parent reads that pipe in a thread, so an id it has read was acknowledged before
//! the kill. The parent kills the child with SIGKILL, usually 50–400 ms after it printed `ready`,
//! sometimes a few ms after the spawn (while it opens and recovers).
//!
//! The check runs on a *copy* of the killed database: opening the original would replay the log
//! and checkpoint, and the next child would then have nothing to recover, so a kill during
//! recovery would test nothing. The copy is what the next child finds, byte for byte.
//!
//! A SIGKILL leaves the page cache intact, so this tests the engine's logic (log records, group
//! commit, checkpoints racing writers, the circular log's wrap, recovery and a crash during it),
//! not what survives a power cut.
//!
//! This module talks to the engine directly instead of through `db.rs`: it needs transactions,
//! recovery reports and `verify`, which the sysbench adapter does not expose.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::Args;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use zipdb_engine::{Database, Error as DbError, FlushPolicy, Options, Tree};

use crate::commit::{fs_description, Policy};
use crate::db::Result;
use crate::report::{mb, thousands};

/// Initial balance of every account.
const BALANCE: i64 = 1000;
/// Key in `meta` written in the same transaction as the accounts: its presence says that the
/// setup committed, and its value is the number of accounts.
const INIT_KEY: &[u8] = b"accounts";
/// Length of an id: cycle (u32), thread (u16), sequence (u32), big-endian so that ids sort by
/// cycle and thread.
const ID_LEN: usize = 10;
/// Names of the sub-directories this benchmark owns inside `--dir` (removed at the start).
const DB_SUBDIR: &str = "crash-db";
const CHECK_SUBDIR: &str = "crash-check";
/// A child exits by itself after this long, in case its parent died without killing it.
const CHILD_MAX_RUN: Duration = Duration::from_secs(120);
/// How long the parent waits for a child to say `ready` before calling it a failure.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// First LSN of a new WAL (the engine's `WAL_START`), to number the laps of the log.
const WAL_START: u64 = 4096;

type Id = [u8; ID_LEN];

/// A partial transaction found by the check: its id, its id row's value and its transfer row.
type PartialRows = (Id, Option<Vec<u8>>, Option<Vec<u8>>);

#[derive(Args, Debug, Clone)]
pub struct CrashArgs {
    /// Number of kill-and-check cycles.
    #[arg(long, default_value_t = 20)]
    pub cycles: u64,
    /// Print the summary as one JSON object on the last line of stdout; progress goes to stderr
    /// either way.
    #[arg(long)]
    pub json: bool,
    /// Directory for the database (sub-directories crash-db and crash-check are replaced and
    /// kept at the end) [default: a directory under the system temp dir, removed at the end
    /// unless a check failed].
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Seed of the kill times, the checkpoint intervals and the children's transfers.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Writer threads in each child.
    #[arg(long, default_value_t = 4)]
    pub threads: u16,
    /// Number of accounts (at least 2), created with a balance of 1000 each.
    #[arg(long, default_value_t = 1000)]
    pub accounts: u32,
    /// Bytes of padding in each transfer row, so that the log and the trees grow fast enough
    /// for checkpoints, log wraps and page evictions to happen within a few cycles.
    #[arg(long, default_value_t = 200)]
    pub pad: usize,
    /// Buffer pool of the children and of the check, in MiB.
    #[arg(long, default_value_t = 16)]
    pub pool_mb: usize,
    /// WAL size in MiB, fixed when the database is created. Small, so that the log wraps every
    /// few cycles and a checkpoint starts whenever half of it is used.
    #[arg(long, default_value_t = 4)]
    pub wal_mb: u64,
    /// Milliseconds after `ready` before the kill: a random time in this range (lo-hi).
    #[arg(long, default_value = "50-400", value_parser = parse_range)]
    pub kill_ms: (u64, u64),
    /// Share of cycles (0..1) in which the child is killed 0-30 ms after its spawn instead,
    /// typically while it opens and recovers the database.
    #[arg(long, default_value_t = 0.2)]
    pub early_kill: f64,
    /// Flush policy of the children. Only `sync` makes an acknowledged commit durable; `none`
    /// is for checking the checker (it must report lost commits).
    #[arg(long, value_enum, default_value_t = Policy::Sync, hide = true)]
    pub flush: Policy,
}

/// The hidden subcommand that the parent spawns; not for use by hand.
#[derive(Args, Debug, Clone)]
pub struct ChildArgs {
    #[arg(long)]
    pub dir: PathBuf,
    #[arg(long)]
    pub seed: u64,
    #[arg(long)]
    pub cycle: u32,
    #[arg(long)]
    pub threads: u16,
    #[arg(long)]
    pub accounts: u32,
    #[arg(long)]
    pub pad: usize,
    #[arg(long)]
    pub pool_mb: usize,
    #[arg(long)]
    pub wal_mb: u64,
    #[arg(long)]
    pub checkpoint_ms: u64,
    #[arg(long, value_enum)]
    pub flush: Policy,
}

fn parse_range(s: &str) -> std::result::Result<(u64, u64), String> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| format!("{s:?}: expected LO-HI in milliseconds"))?;
    let lo: u64 = a.trim().parse().map_err(|e| format!("{a:?}: {e}"))?;
    let hi: u64 = b.trim().parse().map_err(|e| format!("{b:?}: {e}"))?;
    if lo > hi {
        return Err(format!("{s:?}: LO is above HI"));
    }
    Ok((lo, hi))
}

fn options(pool_mb: usize, wal_mb: u64, checkpoint: Duration, flush: FlushPolicy) -> Options {
    Options {
        flush_policy: flush,
        pool_bytes: pool_mb << 20,
        wal_bytes: wal_mb << 20,
        checkpoint_interval: checkpoint,
        // A transfer waits for at most one other: a long wait is a bug worth seeing as an
        // error, not a 50 s stall.
        lock_wait_timeout: Duration::from_secs(5),
        recovery_progress: false,
        ..Options::default()
    }
}

fn id_key(cycle: u32, thread: u16, seq: u32) -> Id {
    let mut k = [0u8; ID_LEN];
    k[..4].copy_from_slice(&cycle.to_be_bytes());
    k[4..6].copy_from_slice(&thread.to_be_bytes());
    k[6..].copy_from_slice(&seq.to_be_bytes());
    k
}

fn id_text(id: &Id) -> String {
    let cycle = u32::from_be_bytes([id[0], id[1], id[2], id[3]]);
    let thread = u16::from_be_bytes([id[4], id[5]]);
    let seq = u32::from_be_bytes([id[6], id[7], id[8], id[9]]);
    format!("{cycle}.{thread}.{seq}")
}

fn parse_id(s: &str) -> Option<Id> {
    let mut it = s.split('.');
    let cycle = it.next()?.parse().ok()?;
    let thread = it.next()?.parse().ok()?;
    let seq = it.next()?.parse().ok()?;
    if it.next().is_some() {
        return None;
    }
    Some(id_key(cycle, thread, seq))
}

fn account_key(i: u32) -> [u8; 8] {
    let mut k = *b"acct\0\0\0\0";
    k[4..].copy_from_slice(&i.to_be_bytes());
    k
}

fn account_index(key: &[u8]) -> Option<u32> {
    let rest = key.strip_prefix(b"acct")?;
    Some(u32::from_be_bytes(rest.try_into().ok()?))
}

fn decode_i64(v: &[u8]) -> Option<i64> {
    Some(i64::from_le_bytes(v.get(..8)?.try_into().ok()?))
}

/// A transfer row: from (u32 LE), to (u32 LE), amount (i64 LE), then `pad` random bytes:
/// incompressible, so that the trees outgrow the pool and pages are evicted and read back.
fn encode_transfer(from: u32, to: u32, amount: i64, pad: usize, rng: &mut SmallRng) -> Vec<u8> {
    let mut v = Vec::with_capacity(16 + pad);
    v.extend_from_slice(&from.to_le_bytes());
    v.extend_from_slice(&to.to_le_bytes());
    v.extend_from_slice(&amount.to_le_bytes());
    v.resize(16 + pad, 0);
    rng.fill(&mut v[16..]);
    v
}

fn decode_transfer(v: &[u8]) -> Option<(u32, u32, i64)> {
    let from = u32::from_le_bytes(v.get(0..4)?.try_into().ok()?);
    let to = u32::from_le_bytes(v.get(4..8)?.try_into().ok()?);
    Some((from, to, decode_i64(v.get(8..)?)?))
}

/// A deterministic seed for stream `a`/`b` of this invocation.
fn seed_for(seed: u64, a: u64, b: u64) -> u64 {
    let mut x =
        seed ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    x ^= x >> 31;
    x.wrapping_mul(0xBF58_476D_1CE4_E5B9)
}

struct Trees {
    meta: Tree,
    accounts: Tree,
    ids: Tree,
    transfers: Tree,
}

impl Trees {
    fn open(db: &Database, create: bool) -> Result<Trees> {
        let get = |name: &str| -> Result<Tree> {
            match db.open_tree(name) {
                Ok(t) => Ok(t),
                // Each create is its own logged record, so a kill can leave some of the trees
                // created and not others: create whichever is missing.
                Err(DbError::Request(zipdb_engine::RequestError::NoSuchTree(_))) if create => {
                    Ok(db.create_tree(name, None)?)
                }
                Err(e) => Err(e.into()),
            }
        };
        Ok(Trees {
            meta: get("meta")?,
            accounts: get("accounts")?,
            ids: get("ids")?,
            transfers: get("transfers")?,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The child.

/// One line on stdout in one `write` (the line is complete and stdout's buffer is empty), so a
/// kill never leaves half a line in the pipe; the parent also ignores a last line without `\n`.
fn emit(line: &str) -> std::io::Result<()> {
    let mut s = String::with_capacity(line.len() + 1);
    s.push_str(line);
    s.push('\n');
    let mut out = std::io::stdout().lock();
    out.write_all(s.as_bytes())?;
    out.flush()
}

fn is_retryable(e: &DbError) -> bool {
    matches!(
        e,
        DbError::Txn(zipdb_engine::TxnError::Deadlock)
            | DbError::Txn(zipdb_engine::TxnError::WriteConflict { .. })
            | DbError::Txn(zipdb_engine::TxnError::LockWaitTimeout { .. })
    )
}

/// The child: open (recover), set up on first use, report `open` and `ready`, then transfer
/// until killed. Any error other than a retryable conflict ends the process with status 2,
/// which the parent counts as a failure.
pub fn child(args: ChildArgs) -> Result<()> {
    if args.accounts < 2 || args.threads == 0 {
        return Err("crash-child: need at least 2 accounts and 1 thread".into());
    }
    let opts = options(
        args.pool_mb,
        args.wal_mb,
        Duration::from_millis(args.checkpoint_ms.max(1)),
        args.flush.flush(),
    );
    let db = Database::open(&args.dir, opts)?;
    let (records, bytes, us) = db.recovery_report().map_or((0, 0, 0), |r| {
        (r.records, r.bytes, r.elapsed.as_micros() as u64)
    });
    emit(&format!("open {records} {bytes} {us}"))?;
    let trees = Trees::open(&db, true)?;
    if trees.meta.get(INIT_KEY)?.is_none() {
        // The accounts and the marker commit together: after a kill either all accounts exist
        // with their initial balances, or none does.
        let mut txn = db.begin();
        for i in 0..args.accounts {
            txn.put(&trees.accounts, &account_key(i), &BALANCE.to_le_bytes())?;
        }
        txn.put(&trees.meta, INIT_KEY, &args.accounts.to_le_bytes())?;
        txn.commit()?;
    }
    emit("ready")?;
    let deadline = Instant::now() + CHILD_MAX_RUN;
    std::thread::scope(|s| {
        // Reports the checkpoint count as it changes, so that the parent can tell whether the
        // kills land among checkpoints (the first line is the count at the start).
        s.spawn(|| {
            let mut last = None;
            while Instant::now() < deadline {
                let n = db.stats().store.checkpoints;
                if last != Some(n) {
                    last = Some(n);
                    if emit(&format!("ckpt {n}")).is_err() {
                        return;
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        for thread in 0..args.threads {
            let (db, trees, args) = (&db, &trees, &args);
            s.spawn(move || {
                if let Err(e) = transfer_loop(db, trees, args, thread, deadline) {
                    // Exit at once, so that the parent sees the failure rather than a kill.
                    eprintln!("crash-child: thread {thread}: {e}");
                    std::process::exit(2);
                }
            });
        }
    });
    Err("crash-child: not killed within the time limit".into())
}

fn transfer_loop(
    db: &Database,
    trees: &Trees,
    args: &ChildArgs,
    thread: u16,
    deadline: Instant,
) -> Result<()> {
    let mut rng = SmallRng::seed_from_u64(seed_for(
        args.seed,
        u64::from(args.cycle),
        u64::from(thread),
    ));
    let mut seq = 0u32;
    while Instant::now() < deadline {
        let id = id_key(args.cycle, thread, seq);
        let from = rng.gen_range(0..args.accounts);
        let mut to = rng.gen_range(0..args.accounts - 1);
        if to >= from {
            to += 1;
        }
        let amount = rng.gen_range(1..=100i64);
        let row = encode_transfer(from, to, amount, args.pad, &mut rng);
        loop {
            match transfer(db, trees, &id, from, to, amount, &row) {
                Ok(()) => break,
                Err(TxnError::Db(e)) if is_retryable(&e) => continue,
                Err(TxnError::Db(e)) => return Err(e.into()),
                Err(TxnError::Data(s)) => return Err(s.into()),
            }
        }
        // Only now is the commit acknowledged: the parent holds the engine to it.
        emit(&format!("ack {}", id_text(&id)))?;
        seq = seq
            .checked_add(1)
            .ok_or("crash-child: id sequence exhausted")?;
    }
    Ok(())
}

enum TxnError {
    Db(DbError),
    /// The data contradicts the setup (a missing or malformed account): an engine bug.
    Data(String),
}

impl From<DbError> for TxnError {
    fn from(e: DbError) -> TxnError {
        TxnError::Db(e)
    }
}

fn transfer(
    db: &Database,
    trees: &Trees,
    id: &Id,
    from: u32,
    to: u32,
    amount: i64,
    row: &[u8],
) -> std::result::Result<(), TxnError> {
    let mut txn = db.begin();
    let balance = |txn: &zipdb_engine::Transaction, i: u32| -> std::result::Result<i64, TxnError> {
        let v = txn.get(&trees.accounts, &account_key(i))?;
        v.as_deref()
            .and_then(decode_i64)
            .ok_or_else(|| TxnError::Data(format!("account {i} is missing or malformed: {v:?}")))
    };
    // Plain snapshot reads, then writes: a concurrent transfer that touched either account
    // after this snapshot makes the write fail with WriteConflict (first updater wins), which
    // is what keeps the sum right; a lost update would show in the check.
    let a = balance(&txn, from)?;
    let b = balance(&txn, to)?;
    txn.put(
        &trees.accounts,
        &account_key(from),
        &(a - amount).to_le_bytes(),
    )?;
    txn.put(
        &trees.accounts,
        &account_key(to),
        &(b + amount).to_le_bytes(),
    )?;
    txn.put(&trees.ids, id, &amount.to_le_bytes())?;
    txn.put(&trees.transfers, id, row)?;
    txn.commit()?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The parent.

/// What the stdout reader tells the parent while the child runs (acknowledgements are returned
/// when the reader ends).
enum Event {
    Open,
    Ready,
}

/// What one child did, as read from its stdout and exit status.
struct ChildRun {
    acks: Vec<Id>,
    /// Checkpoints that completed while the child ran transfers.
    checkpoints: u64,
    opened: bool,
    ready: bool,
    /// None when killed by us; else how it ended and its stderr.
    failure: Option<String>,
    /// Milliseconds from `ready` (or spawn, for an early kill) to the kill.
    kill_after_ms: u64,
    early: bool,
}

/// Totals over all cycles.
#[derive(Default)]
struct Totals {
    acked: HashSet<Id>,
    /// Ids that must be present from now on: acknowledged, or seen by an earlier check.
    must_have: HashSet<Id>,
    lost: HashSet<Id>,
    partial: HashSet<Id>,
    invariant_violations: u64,
    child_failures: u64,
    verify_failures: u64,
    open_failures: u64,
    sum_violations: u64,
    balance_violations: u64,
    kills_during_open: u64,
    early_kills: u64,
    checkpoints: u64,
    present: u64,
    recovery_ms_max: f64,
    recovery_records_max: u64,
    recovery_bytes_max: u64,
    torn_tails: u64,
    wal_laps: u64,
    cycles_done: u64,
}

pub fn run(args: CrashArgs) -> Result<()> {
    if args.accounts < 2 || args.threads == 0 || args.cycles == 0 {
        return Err("crash: need --accounts >= 2, --threads >= 1 and --cycles >= 1".into());
    }
    if !(0.0..=1.0).contains(&args.early_kill) {
        return Err("crash: --early-kill is a share between 0 and 1".into());
    }
    let (base, temp) = match &args.dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("zipdb-crash-{}-{}", std::process::id(), args.seed)),
            true,
        ),
    };
    let db_dir = base.join(DB_SUBDIR);
    let check_dir = base.join(CHECK_SUBDIR);
    for d in [&db_dir, &check_dir] {
        if d.exists() {
            std::fs::remove_dir_all(d).map_err(|e| format!("cannot clear {}: {e}", d.display()))?;
        }
    }
    std::fs::create_dir_all(&db_dir)
        .map_err(|e| format!("cannot create {}: {e}", db_dir.display()))?;
    eprintln!(
        "zipdb crash benchmark: {} cycles, {} threads, {} accounts, seed {}, pool {} MiB, WAL {} MiB, \
         kill {}-{} ms after ready ({:.0}% of cycles 0-30 ms after spawn); dir {} ({})",
        args.cycles,
        args.threads,
        args.accounts,
        args.seed,
        args.pool_mb,
        args.wal_mb,
        args.kill_ms.0,
        args.kill_ms.1,
        args.early_kill * 100.0,
        db_dir.display(),
        fs_description(&base),
    );
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let mut rng = SmallRng::seed_from_u64(seed_for(args.seed, u64::MAX, 0));
    let mut t = Totals::default();
    let started = Instant::now();
    for cycle in 0..args.cycles {
        let cycle32 = u32::try_from(cycle).map_err(|_| "crash: too many cycles")?;
        let early = rng.gen_bool(args.early_kill);
        let kill_ms = if early {
            rng.gen_range(0..=30)
        } else {
            rng.gen_range(args.kill_ms.0..=args.kill_ms.1)
        };
        // Vary the checkpoint interval, so that kills land before, during and after checkpoints.
        let checkpoint_ms = rng.gen_range(20..=300);
        let run = run_child(&exe, &args, &db_dir, cycle32, early, kill_ms, checkpoint_ms)?;
        t.cycles_done += 1;
        t.checkpoints += run.checkpoints;
        if run.early {
            t.early_kills += 1;
        }
        if !run.opened && run.failure.is_none() {
            t.kills_during_open += 1;
        }
        for id in &run.acks {
            t.acked.insert(*id);
            t.must_have.insert(*id);
        }
        if let Some(f) = &run.failure {
            t.child_failures += 1;
            t.invariant_violations += 1;
            eprintln!(
                "cycle {}: VIOLATION: the child failed on its own: {f}",
                cycle + 1
            );
        }
        let when = match (run.early, run.ready) {
            (true, _) => format!("{} ms after spawn", run.kill_after_ms),
            (false, true) => format!("{} ms after ready", run.kill_after_ms),
            (false, false) => "before ready".to_string(),
        };
        let phase = if !run.opened {
            " (during open)"
        } else if !run.ready {
            " (during setup)"
        } else {
            ""
        };
        let c = check(&args, &db_dir, &check_dir, &mut t);
        let line = match c {
            Ok(c) => format!(
                "cycle {}/{}: killed {when}{phase}; checkpoints {} (every {checkpoint_ms} ms); acked +{} (total {}); ids {}; recovery {} records, {:.2} MiB in {:.1} ms{}; redo from LSN {}, WAL lap {}",
                cycle + 1,
                args.cycles,
                run.checkpoints,
                run.acks.len(),
                thousands(t.acked.len() as u64),
                thousands(c.present),
                thousands(c.records),
                mb(c.bytes),
                c.ms,
                if c.torn { ", torn tail" } else { "" },
                c.start_lsn,
                c.lap,
            ),
            Err(e) => {
                t.open_failures += 1;
                t.invariant_violations += 1;
                eprintln!(
                    "cycle {}/{}: VIOLATION: the killed database does not open: {e}",
                    cycle + 1,
                    args.cycles
                );
                // Every later cycle would open the same files and fail the same way.
                break;
            }
        };
        eprintln!("{line}");
    }
    let lost = t.lost.len() as u64;
    let partial = t.partial.len() as u64;
    let clean = lost == 0 && partial == 0 && t.invariant_violations == 0;
    let unacked_present = t.present.saturating_sub(t.acked.len() as u64);
    let summary = format!(
        "{{\"bench\":\"crash\",\"cycles\":{},\"lost_commits\":{},\"partial_txns\":{},\"invariant_violations\":{},\
         \"acked\":{},\"present\":{},\"unacked_present\":{},\"child_failures\":{},\"open_failures\":{},\
         \"verify_failures\":{},\"sum_violations\":{},\"balance_violations\":{},\"early_kills\":{},\
         \"kills_during_open\":{},\"checkpoints\":{},\"torn_tails\":{},\"wal_laps\":{},\"recovery_ms_max\":{},\
         \"recovery_records_max\":{},\"recovery_bytes_max\":{},\"threads\":{},\"accounts\":{},\"seed\":{},\
         \"seconds\":{}}}",
        t.cycles_done,
        lost,
        partial,
        t.invariant_violations,
        t.acked.len(),
        t.present,
        unacked_present,
        t.child_failures,
        t.open_failures,
        t.verify_failures,
        t.sum_violations,
        t.balance_violations,
        t.early_kills,
        t.kills_during_open,
        t.checkpoints,
        t.torn_tails,
        t.wal_laps,
        crate::report::r3(t.recovery_ms_max),
        t.recovery_records_max,
        t.recovery_bytes_max,
        args.threads,
        args.accounts,
        args.seed,
        crate::report::r3(started.elapsed().as_secs_f64()),
    );
    let text = format!(
        "crash: {} cycles in {:.1} s: {} commits acknowledged, {} present ({} more committed but not yet acknowledged at the kill); \
         lost commits {lost}, partial transactions {partial}, invariant violations {}; \
         longest recovery {:.1} ms ({} records, {:.2} MiB); {} checkpoints while writing, WAL laps {}, torn tails {}, kills during open {}",
        t.cycles_done,
        started.elapsed().as_secs_f64(),
        thousands(t.acked.len() as u64),
        thousands(t.present),
        thousands(unacked_present),
        t.invariant_violations,
        t.recovery_ms_max,
        thousands(t.recovery_records_max),
        mb(t.recovery_bytes_max),
        t.checkpoints,
        t.wal_laps,
        t.torn_tails,
        t.kills_during_open,
    );
    if args.json {
        eprintln!("{text}");
        println!("{summary}");
    } else {
        println!("{text}");
    }
    let _ = std::io::stdout().flush();
    if clean {
        if temp {
            let _ = std::fs::remove_dir_all(&base);
        }
        Ok(())
    } else {
        Err(format!(
            "crash: {lost} lost commits, {partial} partial transactions, {} invariant violations; \
             the database is kept in {}",
            t.invariant_violations,
            base.display()
        )
        .into())
    }
}

/// Kills the child when dropped, so that an early return never leaves it running.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run_child(
    exe: &Path,
    args: &CrashArgs,
    db_dir: &Path,
    cycle: u32,
    early: bool,
    kill_ms: u64,
    checkpoint_ms: u64,
) -> Result<ChildRun> {
    let mut cmd = Command::new(exe);
    cmd.arg("crash-child")
        .arg("--dir")
        .arg(db_dir)
        .args(["--seed", &args.seed.to_string()])
        .args(["--cycle", &cycle.to_string()])
        .args(["--threads", &args.threads.to_string()])
        .args(["--accounts", &args.accounts.to_string()])
        .args(["--pad", &args.pad.to_string()])
        .args(["--pool-mb", &args.pool_mb.to_string()])
        .args(["--wal-mb", &args.wal_mb.to_string()])
        .args(["--checkpoint-ms", &checkpoint_ms.to_string()])
        .args(["--flush", args.flush.name()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let spawned = Instant::now();
    let mut child = KillOnDrop(
        cmd.spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?,
    );
    let stdout = child.0.stdout.take().ok_or("child without stdout")?;
    let mut stderr = child.0.stderr.take().ok_or("child without stderr")?;
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || -> (Vec<Id>, u64) {
        let mut acks = Vec::new();
        let mut ckpt: Option<(u64, u64)> = None;
        let mut r = BufReader::new(stdout);
        let mut line = String::new();
        loop {
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            // A line cut by the kill has no newline: not an acknowledgement.
            let Some(l) = line.strip_suffix('\n') else {
                break;
            };
            let mut w = l.split(' ');
            match (w.next(), w.next()) {
                (Some("ack"), Some(id)) => {
                    if let Some(id) = parse_id(id) {
                        acks.push(id);
                    }
                }
                (Some("ckpt"), Some(n)) => {
                    if let Ok(n) = n.parse::<u64>() {
                        ckpt = Some(ckpt.map_or((n, n), |(first, _)| (first, n)));
                    }
                }
                (Some("ready"), None) => {
                    let _ = tx.send(Event::Ready);
                }
                (Some("open"), _) => {
                    let _ = tx.send(Event::Open);
                }
                _ => {}
            }
        }
        (acks, ckpt.map_or(0, |(first, last)| last - first))
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let mut opened = false;
    let mut ready = false;
    let mut exited_early = None;
    let note = |e: Event, opened: &mut bool, ready: &mut bool| match e {
        Event::Open => *opened = true,
        Event::Ready => *ready = true,
    };
    let kill_at = if early {
        spawned + Duration::from_millis(kill_ms)
    } else {
        // Wait for `ready`: the kill time counts from there.
        loop {
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(e) => {
                    note(e, &mut opened, &mut ready);
                    if ready {
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Ok(Some(st)) = child.0.try_wait() {
                        exited_early = Some(st);
                        break;
                    }
                    if spawned.elapsed() > READY_TIMEOUT {
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        Instant::now() + Duration::from_millis(kill_ms)
    };
    let ready_at = Instant::now();
    if exited_early.is_none() {
        let now = Instant::now();
        if kill_at > now {
            std::thread::sleep(kill_at - now);
        }
    }
    // Child::kill sends SIGKILL on Unix: no destructor, no flush, no exit handler runs.
    let _ = child.0.kill();
    let killed_at = Instant::now();
    let status = child
        .0
        .wait()
        .map_err(|e| format!("cannot wait for the child: {e}"))?;
    let (acks, checkpoints) = reader.join().map_err(|_| "the stdout reader panicked")?;
    let err_text = err_reader
        .join()
        .map_err(|_| "the stderr reader panicked")?;
    while let Ok(e) = rx.try_recv() {
        note(e, &mut opened, &mut ready);
    }
    let failure = {
        use std::os::unix::process::ExitStatusExt;
        if status.signal() == Some(9) && exited_early.is_none() {
            None
        } else if !early && !ready && exited_early.is_none() {
            Some(format!(
                "no `ready` within {READY_TIMEOUT:?}; stderr: {}",
                err_text.trim()
            ))
        } else {
            Some(format!("{status}; stderr: {}", err_text.trim()))
        }
    };
    let from = if early { spawned } else { ready_at };
    Ok(ChildRun {
        acks,
        checkpoints,
        opened,
        ready,
        failure,
        kill_after_ms: killed_at.saturating_duration_since(from).as_millis() as u64,
        early,
    })
}

struct Checked {
    present: u64,
    records: u64,
    bytes: u64,
    ms: f64,
    torn: bool,
    start_lsn: u64,
    lap: u64,
}

/// Copies the killed database, opens (recovers) the copy and checks it; violations are added to
/// `t` and printed. Err only when the copy cannot be opened or read at all.
fn check(args: &CrashArgs, db_dir: &Path, check_dir: &Path, t: &mut Totals) -> Result<Checked> {
    if check_dir.exists() {
        std::fs::remove_dir_all(check_dir)
            .map_err(|e| format!("cannot clear {}: {e}", check_dir.display()))?;
    }
    std::fs::create_dir_all(check_dir)
        .map_err(|e| format!("cannot create {}: {e}", check_dir.display()))?;
    for name in [zipdb_engine::db::DATA_FILE, zipdb_engine::db::WAL_FILE] {
        let src = db_dir.join(name);
        // A child killed before it created the files leaves nothing to copy.
        if src.exists() {
            std::fs::copy(&src, check_dir.join(name))
                .map_err(|e| format!("cannot copy {}: {e}", src.display()))?;
        }
    }
    let cycle = t.cycles_done;
    let viol = |t: &mut Totals, what: &str| {
        t.invariant_violations += 1;
        eprintln!("cycle {cycle}: VIOLATION: {what}");
    };
    // The check never writes, so the checkpoint interval does not matter.
    let db = Database::open(
        check_dir,
        options(
            args.pool_mb,
            args.wal_mb,
            Duration::from_secs(3600),
            FlushPolicy::Sync,
        ),
    )?;
    let (records, bytes, ms, torn, start_lsn, lap) =
        db.recovery_report().map_or((0, 0, 0.0, false, 0, 0), |r| {
            let cap = r.capacity_bytes.max(1);
            (
                r.records,
                r.bytes,
                r.elapsed.as_secs_f64() * 1e3,
                r.torn_tail,
                r.start_lsn.0,
                r.end_lsn.0.saturating_sub(WAL_START) / cap,
            )
        });
    t.recovery_ms_max = t.recovery_ms_max.max(ms);
    t.recovery_records_max = t.recovery_records_max.max(records);
    t.recovery_bytes_max = t.recovery_bytes_max.max(bytes);
    t.wal_laps = t.wal_laps.max(lap);
    if torn {
        t.torn_tails += 1;
    }
    if let Err(e) = db.verify() {
        t.verify_failures += 1;
        viol(t, &format!("verify: {e}"));
    }
    // Missing trees mean a kill before the setup finished; any other error is the engine's.
    let trees = match Trees::open(&db, false) {
        Ok(t) => Some(t),
        Err(e)
            if matches!(
                e.downcast_ref::<DbError>(),
                Some(DbError::Request(zipdb_engine::RequestError::NoSuchTree(_)))
            ) =>
        {
            None
        }
        Err(e) => return Err(e),
    };
    // Both trees are keyed by id, so one merge-join over the two sorted scans finds every id
    // without its transfer row and the reverse, with no per-row maps (a hash map of a million
    // rows per cycle made late cycles of a long run take seconds).
    let mut present: Vec<Id> = Vec::new();
    let mut balances: HashMap<u32, i64> = HashMap::new();
    let mut moved: HashMap<u32, i64> = HashMap::new();
    let mut partial_now: Vec<PartialRows> = Vec::new();
    let mut init = None;
    if let Some(tr) = &trees {
        let next_row = |it: &mut dyn Iterator<Item = zipdb_engine::Result<(Vec<u8>, Vec<u8>)>>,
                        name: &str,
                        t: &mut Totals|
         -> Result<Option<(Id, Vec<u8>)>> {
            for e in &mut *it {
                let (k, v) = e?;
                match <Id>::try_from(k.as_slice()) {
                    Ok(id) => return Ok(Some((id, v))),
                    Err(_) => viol(t, &format!("{name}: malformed key {k:?}")),
                }
            }
            Ok(None)
        };
        let mut id_rows = tr.ids.range(..)?;
        let mut transfer_rows = tr.transfers.range(..)?;
        let mut a = next_row(&mut id_rows, "ids", t)?;
        let mut b = next_row(&mut transfer_rows, "transfers", t)?;
        loop {
            let take_a = match (&a, &b) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((ia, _)), Some((ib, _))) => ia <= ib,
            };
            let both = matches!((&a, &b), (Some((ia, _)), Some((ib, _))) if ia == ib);
            if both {
                let (id, amount) = a.take().expect("both");
                let (_, row) = b.take().expect("both");
                present.push(id);
                match decode_transfer(&row) {
                    Some((from, to, moved_amount)) => {
                        *moved.entry(from).or_insert(0) -= moved_amount;
                        *moved.entry(to).or_insert(0) += moved_amount;
                        if decode_i64(&amount) != Some(moved_amount) {
                            partial_now.push((id, Some(amount), Some(row)));
                        }
                    }
                    None => partial_now.push((id, Some(amount), Some(row))),
                }
                a = next_row(&mut id_rows, "ids", t)?;
                b = next_row(&mut transfer_rows, "transfers", t)?;
            } else if take_a {
                let (id, amount) = a.take().expect("a");
                present.push(id);
                partial_now.push((id, Some(amount), None));
                a = next_row(&mut id_rows, "ids", t)?;
            } else {
                let (id, row) = b.take().expect("b");
                // A transfer row without its id still moved money: count it, so that the
                // balance check does not report the same partial transaction twice.
                if let Some((from, to, moved_amount)) = decode_transfer(&row) {
                    *moved.entry(from).or_insert(0) -= moved_amount;
                    *moved.entry(to).or_insert(0) += moved_amount;
                }
                partial_now.push((id, None, Some(row)));
                b = next_row(&mut transfer_rows, "transfers", t)?;
            }
        }
        for e in tr.accounts.range(..)? {
            let (k, v) = e?;
            match (account_index(&k), decode_i64(&v)) {
                (Some(i), Some(b)) => {
                    balances.insert(i, b);
                }
                _ => viol(t, &format!("accounts: malformed row {k:?} = {v:?}")),
            }
        }
        init = tr.meta.get(INIT_KEY)?;
    }
    // `present` is sorted (the scan is in key order, and keys are the ids' bytes).
    debug_assert!(present.windows(2).all(|w| w[0] < w[1]));
    // Lost: acknowledged (or seen by an earlier check) but absent.
    let mut lost_now = 0u64;
    for id in &t.must_have {
        if present.binary_search(id).is_err() && t.lost.insert(*id) {
            lost_now += 1;
            if lost_now <= 5 {
                eprintln!("cycle {cycle}: LOST commit {}", id_text(id));
            }
        }
    }
    if lost_now > 5 {
        eprintln!("cycle {cycle}: ... {} more lost commits", lost_now - 5);
    }
    // Partial: an id without its transfer row, a row without its id, or rows that disagree.
    for (id, amount, row) in partial_now {
        if t.partial.insert(id) {
            eprintln!(
                "cycle {cycle}: PARTIAL transaction {}: ids {:?}, transfers {:?}",
                id_text(&id),
                amount,
                row.map(|r| decode_transfer(&r))
            );
        }
    }
    // Invariants: the setup committed whole; the sum of balances; each balance is its initial
    // value plus what the surviving transfer rows moved (a transfer applied to the accounts but
    // not to the rows, or the reverse, or a lost update, breaks this).
    let accounts = args.accounts;
    match init.as_deref() {
        None => {
            if !balances.is_empty() || !present.is_empty() {
                viol(
                    t,
                    &format!(
                        "no setup marker, yet {} accounts and {} ids",
                        balances.len(),
                        present.len()
                    ),
                );
            }
        }
        Some(v) if v != accounts.to_le_bytes() => {
            viol(
                t,
                &format!("setup marker {v:?} does not say {accounts} accounts"),
            );
        }
        Some(_) => {
            let sum: i64 = balances.values().sum();
            let want = i64::from(accounts) * BALANCE;
            if balances.len() != accounts as usize || sum != want {
                t.sum_violations += 1;
                viol(
                    t,
                    &format!(
                        "{} accounts with balance sum {sum}, expected {accounts} accounts summing to {want}",
                        balances.len()
                    ),
                );
            }
            let mut expected: HashMap<u32, i64> = (0..accounts).map(|i| (i, BALANCE)).collect();
            for (i, m) in &moved {
                *expected.entry(*i).or_insert(0) += m;
            }
            let wrong: Vec<_> = expected
                .iter()
                .filter(|(i, want)| balances.get(i) != Some(want))
                .collect();
            if !wrong.is_empty() {
                t.balance_violations += 1;
                let (i, want) = wrong[0];
                viol(
                    t,
                    &format!(
                        "{} accounts disagree with the transfer rows, e.g. account {i}: {:?}, expected {want}",
                        wrong.len(),
                        balances.get(i)
                    ),
                );
            }
        }
    }
    t.must_have.extend(present.iter().copied());
    t.present = present.len() as u64;
    drop(trees);
    db.close()?;
    std::fs::remove_dir_all(check_dir)
        .map_err(|e| format!("cannot remove {}: {e}", check_dir.display()))?;
    Ok(Checked {
        present: present.len() as u64,
        records,
        bytes,
        ms,
        torn,
        start_lsn,
        lap,
    })
}
