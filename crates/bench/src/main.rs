//! zipdb benchmark drivers.
//!
//! `zipdb-bench storage [--quick] [--json]`: the storage benchmark (sysbench-shaped trees, codecs
//! none / lz4 / zstd, memory budgets that fit the data decoded, only compressed, or neither, on a
//! RAM disk and a real disk). See `zipdb-bench storage --help` and docs/BENCHMARKS.md.

#![recursion_limit = "256"]

mod db;
mod report;
mod sbtest;
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
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Storage(args) => storage::run(args),
    };
    if let Err(e) = result {
        eprintln!("zipdb-bench: error: {e}");
        std::process::exit(1);
    }
}
