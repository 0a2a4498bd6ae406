//! zipdb benchmark drivers.
//!
//! `zipdb-bench storage [--quick] [--json] [--shape sbtest|debian_docs]`: the storage benchmark
//! (sysbench-shaped or real-text trees, see shape.rs; codecs none / lz4 / zstd, memory budgets
//! that fit the data decoded, only compressed, or neither, on a RAM disk and a real disk). See `zipdb-bench storage --help` and docs/BENCHMARKS.md.
//!
//! `zipdb-bench crash --cycles N [--json]`: kills a writing child process at random moments and
//! checks that no acknowledged commit is lost, no transaction survives in part and the data's
//! invariants hold (see crash.rs).
//!
//! `zipdb-bench commit [--quick] [--json] [--policy sync|write|none]`: commits/s and commit
//! latency by writer threads, and WAL replay speed (see commit.rs).
//!
//! `zipdb-bench codecs [--quick] [--json]`: compression ratio and per-record encode/decode time
//! of the record codecs (our FSST, fsst-rs, zstd with a dictionary, zstd per page) on sbtest
//! values, real English paragraphs and (k, id) index keys (see codecs.rs).

#![recursion_limit = "256"]

mod codecs;
mod commit;
mod crash;
mod datasets;
mod db;
mod report;
mod sbtest;
mod shape;
mod storage;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "zipdb-bench", version, about = "zipdb benchmark drivers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Sysbench-like workloads on the embedded engine: codecs x memory budgets x disks x threads.
    Storage(storage::StorageArgs),
    /// Kill a writing process at random moments; check that acknowledged commits survive whole.
    Crash(crash::CrashArgs),
    /// The child process of `crash` (internal).
    #[command(hide = true)]
    CrashChild(crash::ChildArgs),
    /// Commits/s and commit latency by writer threads under a flush policy; WAL replay speed.
    Commit(commit::CommitArgs),
    /// Record codecs: ratio and encode/decode ns per record (FSST, fsst-rs, zstd dict, zstd page).
    Codecs(codecs::CodecsArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Storage(args) => storage::run(args),
        Command::Crash(args) => crash::run(args),
        Command::CrashChild(args) => crash::child(args),
        Command::Commit(args) => commit::run(args),
        Command::Codecs(args) => codecs::run(args),
    };
    if let Err(e) = result {
        eprintln!("zipdb-bench: error: {e}");
        std::process::exit(1);
    }
}
