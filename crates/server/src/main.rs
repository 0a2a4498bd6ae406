//! `zipdb serve`: the MySQL-protocol server on the embedded engine.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use zipdb_engine::{Database, FlushPolicy, Options, TableFormat};
use zipdb_server::config::{self, Partial, Settings};
use zipdb_server::{Server, ServerConfig};

#[derive(Parser, Debug)]
#[command(
    name = "zipdb",
    version,
    about = "zipdb: a compressed, MySQL-compatible database"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Serve the MySQL protocol. Settings come from flags, else from the config file, else
    /// from the defaults shown.
    Serve(ServeArgs),
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// TOML config file with the same settings in snake_case (pool_mb = 512, ...). Without
    /// it, ./zipdb.toml is read if it exists.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Address to listen on. A non-loopback address only once every account has a password
    /// (ALTER USER 'root'@'localhost' IDENTIFIED BY '...'). [default: 127.0.0.1]
    #[arg(long)]
    listen: Option<std::net::IpAddr>,
    /// [default: 3307]
    #[arg(long)]
    port: Option<u16>,
    /// Data directory (created if missing). [default: ./zipdb-data]
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Buffer pool size in MiB. [default: 256]
    #[arg(long, value_parser = config::parse_positive)]
    pool_mb: Option<usize>,
    /// Storage of new tables and of ROW_FORMAT=COMPRESSED: none, lz4, zstd[:LEVEL], zlib[:LEVEL]
    /// (whole-page codecs), fsst (compact leaves, FSST-encoded rows) or fsst+zstd (fsst, pages
    /// leaving the buffer pool written as zstd). [default: fsst]
    #[arg(long, value_parser = config::parse_codec)]
    codec: Option<TableFormat>,
    /// Page size in bytes of a new database (4096 to 65536, a power of two); an existing
    /// database keeps its own, and a different explicit value is an error. [default: 16384]
    #[arg(long, value_parser = config::parse_page_size)]
    page_size: Option<usize>,
    /// When a commit returns: sync (durable), write (in the OS, synced about once a second),
    /// none (in memory). As innodb_flush_log_at_trx_commit 1, 2, 0. [default: sync]
    #[arg(long, value_parser = config::parse_flush_policy)]
    flush_policy: Option<FlushPolicy>,
    /// Connections accepted at once (beyond them, 1040 Too many connections). [default: 1000]
    #[arg(long, value_parser = config::parse_positive)]
    max_connections: Option<usize>,
    /// Connections accepted beyond --max-connections on which only the account named root
    /// may log in (others get 1040 after their login), so that an administrator can get in
    /// when every other slot is taken; 0 keeps none. [default: 1]
    #[arg(long, value_parser = config::parse_extra_connections)]
    extra_max_connections: Option<usize>,
    /// Largest packet accepted from a client, in bytes (before login: 64 KiB). [default:
    /// 67108864]
    #[arg(long, value_parser = config::parse_packet)]
    max_allowed_packet: Option<usize>,
    /// Seconds from a connection's accept to the end of its login, after which the socket is
    /// closed. [default: 10]
    #[arg(long, value_parser = config::parse_connect_timeout)]
    connect_timeout: Option<u64>,
    /// Seconds a connection may stay idle between commands before it is closed (session
    /// variable wait_timeout). [default: 28800]
    #[arg(long, value_parser = config::parse_seconds)]
    wait_timeout: Option<u64>,
    /// The wait_timeout of clients that connect as interactive (the mariadb client at a
    /// terminal). [default: 28800]
    #[arg(long, value_parser = config::parse_seconds)]
    interactive_timeout: Option<u64>,
    /// Seconds to wait for the rest of a packet once it began to arrive. [default: 30]
    #[arg(long, value_parser = config::parse_seconds)]
    net_read_timeout: Option<u64>,
    /// Seconds a reply may wait for the client to read it before the connection is
    /// aborted. [default: 60]
    #[arg(long, value_parser = config::parse_seconds)]
    net_write_timeout: Option<u64>,
    /// Prepared statements open at once over all connections (then error 1461; SET GLOBAL
    /// changes it). [default: 131072]
    #[arg(long, value_parser = config::check_prepared_count)]
    max_prepared_stmt_count: Option<u64>,
    /// Milliseconds a SELECT may run before it fails with 3024 (MySQL's variable; sessions
    /// may SET their own). [default: 0, no limit]
    #[arg(long)]
    max_execution_time: Option<u64>,
    /// Seconds (fractions allowed) any statement may run before it fails with 1969
    /// (MariaDB's variable; sessions may SET their own). [default: 0, no limit]
    #[arg(long, value_parser = config::parse_statement_time)]
    max_statement_time: Option<u64>,
    /// Bytes of rows one statement may hold in memory (buffered results, sort input,
    /// groups, hash tables) before it fails with 1290 (MariaDB's name; sessions may SET
    /// their own). [default: 1073741824]
    #[arg(long, value_parser = config::parse_session_mem)]
    max_session_mem_used: Option<u64>,
    /// How connections get threads: pool-of-threads (idle connections wait in epoll; a
    /// pool of workers runs commands, MariaDB's thread pool) or one-thread-per-connection.
    /// [default: one-thread-per-connection]
    #[arg(long, value_parser = config::parse_thread_handling)]
    thread_handling: Option<zipdb_server::ThreadHandling>,
    /// Thread groups of the pool, each running one command at a time as a rule. [default:
    /// the number of CPUs]
    #[arg(long, value_parser = config::parse_pool_size)]
    thread_pool_size: Option<usize>,
    /// Most worker threads of the pool, all groups together. [default: 65536]
    #[arg(long, value_parser = config::parse_pool_max_threads)]
    thread_pool_max_threads: Option<usize>,
    /// Milliseconds after which a group whose queue does not move gets another worker (a
    /// command waiting for a lock or the disk must not hold the others up). [default: 10]
    #[arg(long, value_parser = config::parse_stall_limit)]
    thread_pool_stall_limit: Option<u64>,
    /// Seconds after which a worker with nothing to do exits. [default: 60]
    #[arg(long, value_parser = config::parse_pool_idle_timeout)]
    thread_pool_idle_timeout: Option<u64>,
    /// Workers of a group that may run commands at once beyond the first. [default: 3]
    #[arg(long, value_parser = config::parse_oversubscribe)]
    thread_pool_oversubscribe: Option<usize>,
    /// Do not save the list of cached pages at shutdown nor reload it at startup.
    #[arg(long)]
    no_warm_restart: bool,
    /// Do not keep decoded views of fsst leaves in the buffer pool's spare memory: range scans
    /// then decode every row they return. Views use only memory the pool is not using
    /// (docs/BENCHMARKS.md, "Leaf views").
    #[arg(long)]
    no_leaf_views: bool,
    /// Open the data file with O_DIRECT, as innodb_flush_method=O_DIRECT: reads and writes
    /// bypass the OS page cache, so the buffer pool budget is the only cache. Needs a file
    /// system that supports it (not every tmpfs does). The WAL stays buffered.
    #[arg(long)]
    direct_io: bool,
}

impl ServeArgs {
    fn partial(&self) -> Partial {
        Partial {
            listen: self.listen,
            port: self.port,
            data_dir: self.data_dir.clone(),
            pool_mb: self.pool_mb,
            codec: self.codec,
            page_size: self.page_size,
            flush_policy: self.flush_policy,
            max_connections: self.max_connections,
            extra_max_connections: self.extra_max_connections,
            max_allowed_packet: self.max_allowed_packet,
            connect_timeout: self.connect_timeout,
            wait_timeout: self.wait_timeout,
            interactive_timeout: self.interactive_timeout,
            net_read_timeout: self.net_read_timeout,
            net_write_timeout: self.net_write_timeout,
            max_prepared_stmt_count: self.max_prepared_stmt_count,
            max_execution_time: self.max_execution_time,
            max_statement_time: self.max_statement_time,
            max_session_mem_used: self.max_session_mem_used,
            thread_handling: self.thread_handling,
            thread_pool_size: self.thread_pool_size,
            thread_pool_max_threads: self.thread_pool_max_threads,
            thread_pool_stall_limit: self.thread_pool_stall_limit,
            thread_pool_idle_timeout: self.thread_pool_idle_timeout,
            thread_pool_oversubscribe: self.thread_pool_oversubscribe,
            warm_restart: self.no_warm_restart.then_some(false),
            leaf_views: self.no_leaf_views.then_some(false),
            direct_io: self.direct_io.then_some(true),
        }
    }
}

/// Flags over the config file over the defaults.
fn settings(args: &ServeArgs) -> Result<Settings, config::ConfigError> {
    let (file, path) = match config::locate(args.config.as_deref()) {
        Some((path, implicit)) => {
            if implicit {
                eprintln!(
                    "zipdb: reading {} (found in the current directory; --config names another)",
                    path.display()
                );
            }
            (config::read_file(&path)?, Some(path))
        }
        None => (Partial::default(), None),
    };
    Ok(Settings::merge(&args.partial(), &file, path))
}

/// Raises the soft limit on open files towards the hard one, as MariaDB does for
/// `open_files_limit`: every connection is a descriptor, and a pooled idle connection costs
/// nothing else. Says so when the hard limit is below what `max_connections` needs.
fn raise_open_files_limit(connections: usize) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit struct, to `lim`, which outlives the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return;
    }
    // Data, WAL, listener, epoll sets and a margin.
    let want = (connections as libc::rlim_t).saturating_add(64);
    if lim.rlim_cur < want && lim.rlim_cur < lim.rlim_max {
        lim.rlim_cur = want.min(lim.rlim_max);
        // SAFETY: setrlimit reads one rlimit struct, `lim`, which outlives the call.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    }
    if lim.rlim_cur < want {
        eprintln!(
            "zipdb: open files limit {} is below what max_connections needs ({want}); \
             raise the hard limit (ulimit -Hn) to serve that many connections",
            lim.rlim_cur
        );
    }
}

// glibc's malloc family took 13-16% of the server's CPU under sysbench oltp_read_write (free
// lists consolidated on larger requests); jemalloc measured 3-21% more throughput, and kept
// 1,000 idle connections at 204 MB where mimalloc, faster still, held 1.7 GB (one heap per
// connection thread). docs/BENCHMARKS.md, "The server's allocator", session 17.
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Serve(args) => {
            let s = match settings(&args) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("zipdb: {e}");
                    return ExitCode::FAILURE;
                }
            };
            // SIGINT or SIGTERM: stop accepting, then close the database with a checkpoint, so
            // that the next start has no log to replay. Installed first, so that a signal during
            // startup (or recovery) is honoured once the database is open.
            let (tx, rx) = std::sync::mpsc::channel();
            if let Err(e) = ctrlc::set_handler(move || {
                let _ = tx.send(());
            }) {
                eprintln!("zipdb: cannot install the signal handler: {e}");
                return ExitCode::FAILURE;
            }
            let config = ServerConfig {
                listen: SocketAddr::new(s.listen, s.port),
                max_connections: s.max_connections,
                extra_max_connections: s.extra_max_connections,
                max_allowed_packet: s.max_allowed_packet,
                connect_timeout: Duration::from_secs(s.connect_timeout),
                thread_handling: s.thread_handling,
                pool: s.pool(),
                ..ServerConfig::default()
            };
            let data_dir = s.data_dir.clone();
            // Bind before opening (and maybe recovering) the database, so that a busy port is
            // reported at once; whether the address may be served depends on the accounts,
            // which `spawn` checks once the catalog is open.
            let server = match Server::bind(config) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("zipdb: {e}");
                    return ExitCode::FAILURE;
                }
            };
            // The page size is fixed when a database is created: check it before opening (and
            // maybe recovering) the database, from the data file's superblock alone.
            let mut shown = s.clone();
            match Database::data_page_size(&data_dir) {
                Ok(Some(existing)) if existing != s.page_size => {
                    if s.page_size_explicit {
                        let e =
                            zipdb_engine::Error::Open(zipdb_engine::OpenError::PageSizeMismatch {
                                file: data_dir
                                    .join(zipdb_engine::db::DATA_FILE)
                                    .display()
                                    .to_string(),
                                existing,
                                requested: s.page_size,
                            });
                        eprintln!("zipdb: {e}");
                        return ExitCode::FAILURE;
                    }
                    shown.page_size = existing;
                }
                Ok(_) => {}
                Err(e) => {
                    eprintln!(
                        "zipdb: cannot open the database in {}: {e}",
                        data_dir.display()
                    );
                    return ExitCode::FAILURE;
                }
            }
            eprintln!("zipdb: settings: {}", shown.summary());
            raise_open_files_limit(s.max_connections + s.extra_max_connections);
            let Some(pool_bytes) = s.pool_mb.checked_mul(1 << 20) else {
                eprintln!("zipdb: pool_mb {} is too large", s.pool_mb);
                return ExitCode::FAILURE;
            };
            let options = Options {
                pool_bytes,
                page_size: s.page_size,
                // The engine's codec for trees created without a format; every SQL table
                // names its own, so this only keeps the engine's default in step with them.
                codec: s.codec.image_codec(),
                flush_policy: s.flush_policy,
                warm_restart: s.warm_restart,
                direct_io: s.direct_io,
                ..Options::default()
            };
            // Opening runs crash recovery (with progress) if the last run did not stop cleanly.
            let db = match Database::open(&data_dir, options) {
                Ok(db) => {
                    db.pool().set_views(s.leaf_views);
                    db
                }
                Err(e) => {
                    eprintln!(
                        "zipdb: cannot open the database in {}: {e}",
                        data_dir.display()
                    );
                    return ExitCode::FAILURE;
                }
            };
            let instance = match zipdb_sql::Instance::open(
                db.clone(),
                zipdb_sql::InstanceOptions {
                    default_format: s.codec,
                    max_allowed_packet: s.max_allowed_packet as u64,
                    max_connections: s.max_connections as u64,
                    extra_max_connections: s.extra_max_connections as u64,
                    connect_timeout: Duration::from_secs(s.connect_timeout),
                    wait_timeout: Duration::from_secs(s.wait_timeout),
                    interactive_timeout: Duration::from_secs(s.interactive_timeout),
                    net_read_timeout: Duration::from_secs(s.net_read_timeout),
                    net_write_timeout: Duration::from_secs(s.net_write_timeout),
                    max_prepared_stmt_count: s.max_prepared_stmt_count,
                    max_execution_time: Duration::from_millis(s.max_execution_time),
                    max_statement_time: Duration::from_millis(s.max_statement_time),
                    max_session_mem_used: s.max_session_mem_used,
                    // Spilled sorts go next to the data (MariaDB's tmpdir); a crash's
                    // leftovers there are deleted at open.
                    tmpdir: Some(data_dir.join("tmp")),
                    server_variables: s
                        .server_variables(server.local_addr().map_or(s.port, |a| a.port())),
                    ..Default::default()
                },
            ) {
                Ok(i) => i,
                Err(e) => {
                    eprintln!("zipdb: cannot open the SQL catalog: {}", e.message());
                    return ExitCode::FAILURE;
                }
            };
            let running = match server.spawn(instance) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("zipdb: {e}");
                    // Nothing was served: close the database cleanly (checkpoint), so that the
                    // next start has no log to replay.
                    if let Err(e) = db.close() {
                        eprintln!("zipdb: closing the database failed: {e}");
                    }
                    return ExitCode::FAILURE;
                }
            };
            let addr = running.addr();
            eprintln!(
                "zipdb: data in {}, listening on {addr}; connect with: mariadb -h {} -P {} -u root",
                data_dir.display(),
                addr.ip(),
                addr.port()
            );
            let _ = rx.recv();
            eprintln!("zipdb: shutting down (stop accepting, checkpoint, close)");
            running.stop();
            match db.close() {
                Ok(()) => {
                    eprintln!("zipdb: clean shutdown");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("zipdb: shutdown failed: {e}; the next start recovers from the log");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
