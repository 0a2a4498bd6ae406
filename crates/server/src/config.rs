//! Server settings: command-line flags, a TOML config file and defaults, merged with the
//! precedence flag > config file > default.
//!
//! The file takes the flags' names in snake_case:
//!
//! ```toml
//! listen = "127.0.0.1"
//! port = 3307
//! data_dir = "./zipdb-data"
//! pool_mb = 256
//! codec = "fsst"            # none | lz4 | zstd[:level -7..=22, not 0] | zlib[:level 1..=9] | fsst | fsst+zstd
//! page_size = 16384         # new databases only: 4096 | 8192 | 16384 | 32768 | 65536
//! flush_policy = "sync"     # sync | write | none (innodb_flush_log_at_trx_commit 1 | 2 | 0)
//! max_connections = 1000
//! extra_max_connections = 1 # more connections, for root only
//! max_allowed_packet = 67108864
//! connect_timeout = 10      # seconds; the rest as MySQL's variables of the same names
//! wait_timeout = 28800
//! interactive_timeout = 28800
//! net_read_timeout = 30
//! net_write_timeout = 60
//! max_prepared_stmt_count = 131072
//! max_execution_time = 0    # milliseconds, SELECTs (MySQL); 0: none
//! max_statement_time = 0    # seconds, fractions allowed, every statement (MariaDB); 0: none
//! max_session_mem_used = 1073741824  # bytes of rows one statement may hold in memory
//! thread_handling = "pool-of-threads"  # default "one-thread-per-connection"
//! thread_pool_size = 2      # thread groups; default: the number of CPUs
//! thread_pool_max_threads = 65536
//! thread_pool_stall_limit = 10     # milliseconds
//! thread_pool_idle_timeout = 60    # seconds
//! thread_pool_oversubscribe = 3
//! warm_restart = true
//! leaf_views = true       # keep decoded fsst leaves in buffer-pool memory the data does not need
//! direct_io = false       # open the data file with O_DIRECT (the OS page cache then holds no copy)
//! ```
//!
//! Unknown keys and bad values are errors that name the file, the key and what is allowed: a
//! typo in a config file should stop the server, not be silently ignored.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use zipdb_engine::{FlushPolicy, TableFormat};

use crate::pool::{self, ThreadHandling};

/// Name of the config file read from the working directory when `--config` is not given.
pub const DEFAULT_CONFIG_FILE: &str = "zipdb.toml";

/// Defaults, shared by `--help` texts and the merge.
pub const DEFAULT_LISTEN: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
pub const DEFAULT_PORT: u16 = 3307;
pub const DEFAULT_DATA_DIR: &str = "./zipdb-data";
pub const DEFAULT_POOL_MB: usize = 256;
pub const DEFAULT_PAGE_SIZE: usize = 16 * 1024;
pub const DEFAULT_MAX_CONNECTIONS: usize = 1000;
pub const DEFAULT_MAX_ALLOWED_PACKET: usize = 64 << 20;
pub const DEFAULT_EXTRA_MAX_CONNECTIONS: usize = 1;
/// MySQL's defaults, in seconds.
pub const DEFAULT_CONNECT_TIMEOUT: u64 = 10;
pub const DEFAULT_WAIT_TIMEOUT: u64 = 28_800;
pub const DEFAULT_INTERACTIVE_TIMEOUT: u64 = 28_800;
pub const DEFAULT_NET_READ_TIMEOUT: u64 = 30;
pub const DEFAULT_NET_WRITE_TIMEOUT: u64 = 60;
/// MariaDB's bounds for the thread pool's settings.
const POOL_SIZE_MAX: usize = 256;
const POOL_MAX_THREADS_MAX: usize = 65_536;
const STALL_LIMIT_MAX_MS: u64 = 4_294_967_295;
const OVERSUBSCRIBE_MAX: usize = 1000;
/// MySQL's bounds for max_allowed_packet.
const PACKET_MIN: usize = 1024;
const PACKET_MAX: usize = 1 << 30;
/// MySQL's bounds for the timeouts, in seconds (connect_timeout starts at 2).
const SECONDS_MAX: u64 = 31_536_000;
const CONNECT_TIMEOUT_MIN: u64 = 2;
/// MariaDB's bound for extra_max_connections (0 here turns the admin slots off).
const EXTRA_MAX: usize = 100_000;

pub const CODEC_ALLOWED: &str =
    "none, lz4, zstd, zstd:LEVEL (-7..=22, not 0), zlib, zlib:LEVEL (1..=9), fsst or fsst+zstd";
pub const FLUSH_ALLOWED: &str = "sync (or 1), write (or 2) or none (or 0)";
pub const PAGE_SIZE_ALLOWED: &str = "4096, 8192, 16384, 32768 or 65536";

/// Settings given explicitly (by flags or by the file); `None` = not given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Partial {
    pub listen: Option<IpAddr>,
    pub port: Option<u16>,
    pub data_dir: Option<PathBuf>,
    pub pool_mb: Option<usize>,
    /// How new tables are stored (`--codec`, `codec = "..."`), named as the codec for history.
    pub codec: Option<TableFormat>,
    pub page_size: Option<usize>,
    pub flush_policy: Option<FlushPolicy>,
    pub max_connections: Option<usize>,
    pub extra_max_connections: Option<usize>,
    pub max_allowed_packet: Option<usize>,
    pub connect_timeout: Option<u64>,
    pub wait_timeout: Option<u64>,
    pub interactive_timeout: Option<u64>,
    pub net_read_timeout: Option<u64>,
    pub net_write_timeout: Option<u64>,
    pub max_prepared_stmt_count: Option<u64>,
    /// Milliseconds.
    pub max_execution_time: Option<u64>,
    /// Milliseconds (given in seconds).
    pub max_statement_time: Option<u64>,
    pub max_session_mem_used: Option<u64>,
    pub thread_handling: Option<ThreadHandling>,
    pub thread_pool_size: Option<usize>,
    pub thread_pool_max_threads: Option<usize>,
    /// Milliseconds.
    pub thread_pool_stall_limit: Option<u64>,
    /// Seconds.
    pub thread_pool_idle_timeout: Option<u64>,
    pub thread_pool_oversubscribe: Option<usize>,
    pub warm_restart: Option<bool>,
    pub leaf_views: Option<bool>,
    pub direct_io: Option<bool>,
}

/// The effective settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub listen: IpAddr,
    pub port: u16,
    pub data_dir: PathBuf,
    pub pool_mb: usize,
    pub codec: TableFormat,
    /// The page size for a new database; `page_size_explicit` says whether it was asked for
    /// (an existing database with another page size is then an error, not a surprise).
    pub page_size: usize,
    pub page_size_explicit: bool,
    pub flush_policy: FlushPolicy,
    pub max_connections: usize,
    pub extra_max_connections: usize,
    pub max_allowed_packet: usize,
    /// Seconds, as MySQL's variables of the same names.
    pub connect_timeout: u64,
    pub wait_timeout: u64,
    pub interactive_timeout: u64,
    pub net_read_timeout: u64,
    pub net_write_timeout: u64,
    /// Statement limits (see `zipdb_sql::InstanceOptions`); times in milliseconds.
    pub max_prepared_stmt_count: u64,
    pub max_execution_time: u64,
    pub max_statement_time: u64,
    pub max_session_mem_used: u64,
    pub thread_handling: ThreadHandling,
    pub thread_pool_size: usize,
    pub thread_pool_max_threads: usize,
    /// Milliseconds.
    pub thread_pool_stall_limit: u64,
    /// Seconds.
    pub thread_pool_idle_timeout: u64,
    pub thread_pool_oversubscribe: usize,
    pub warm_restart: bool,
    /// Decoded views of fsst leaves in the pool's spare memory (issue 19).
    pub leaf_views: bool,
    pub direct_io: bool,
    /// The config file that was read, if any.
    pub config_file: Option<PathBuf>,
}

impl Settings {
    /// Merges: `flags` over `file` over the defaults.
    /// The pool's settings.
    pub fn pool(&self) -> pool::PoolConfig {
        pool::PoolConfig {
            size: self.thread_pool_size,
            max_threads: self.thread_pool_max_threads,
            stall_limit: std::time::Duration::from_millis(self.thread_pool_stall_limit),
            idle_timeout: std::time::Duration::from_secs(self.thread_pool_idle_timeout),
            oversubscribe: self.thread_pool_oversubscribe,
        }
    }

    /// The settings the SQL layer reports as read-only variables (`@@port`,
    /// `@@thread_handling`, `@@thread_pool_size`, ...), in MariaDB's names and units; `port`
    /// is the one the server listens on (`--port 0` picks a free one).
    pub fn server_variables(&self, port: u16) -> Vec<(&'static str, zipdb_sql::Value)> {
        use zipdb_sql::Value::{Str, UInt};
        vec![
            ("port", UInt(u64::from(port))),
            (
                "thread_handling",
                Str(self.thread_handling.name().to_string()),
            ),
            ("thread_pool_size", UInt(self.thread_pool_size as u64)),
            (
                "thread_pool_max_threads",
                UInt(self.thread_pool_max_threads as u64),
            ),
            (
                "thread_pool_stall_limit",
                UInt(self.thread_pool_stall_limit),
            ),
            (
                "thread_pool_idle_timeout",
                UInt(self.thread_pool_idle_timeout),
            ),
            (
                "thread_pool_oversubscribe",
                UInt(self.thread_pool_oversubscribe as u64),
            ),
        ]
    }

    pub fn merge(flags: &Partial, file: &Partial, config_file: Option<PathBuf>) -> Settings {
        fn pick<T: Clone>(a: &Option<T>, b: &Option<T>, d: T) -> T {
            a.clone().or_else(|| b.clone()).unwrap_or(d)
        }
        let page_size = flags.page_size.or(file.page_size);
        let limits_default = zipdb_sql::InstanceOptions::default();
        Settings {
            listen: pick(&flags.listen, &file.listen, DEFAULT_LISTEN),
            port: pick(&flags.port, &file.port, DEFAULT_PORT),
            data_dir: pick(&flags.data_dir, &file.data_dir, DEFAULT_DATA_DIR.into()),
            pool_mb: pick(&flags.pool_mb, &file.pool_mb, DEFAULT_POOL_MB),
            codec: pick(&flags.codec, &file.codec, TableFormat::COMPRESSED_DEFAULT),
            page_size: page_size.unwrap_or(DEFAULT_PAGE_SIZE),
            page_size_explicit: page_size.is_some(),
            flush_policy: pick(&flags.flush_policy, &file.flush_policy, FlushPolicy::Sync),
            max_connections: pick(
                &flags.max_connections,
                &file.max_connections,
                DEFAULT_MAX_CONNECTIONS,
            ),
            extra_max_connections: pick(
                &flags.extra_max_connections,
                &file.extra_max_connections,
                DEFAULT_EXTRA_MAX_CONNECTIONS,
            ),
            max_allowed_packet: pick(
                &flags.max_allowed_packet,
                &file.max_allowed_packet,
                DEFAULT_MAX_ALLOWED_PACKET,
            ),
            connect_timeout: pick(
                &flags.connect_timeout,
                &file.connect_timeout,
                DEFAULT_CONNECT_TIMEOUT,
            ),
            wait_timeout: pick(
                &flags.wait_timeout,
                &file.wait_timeout,
                DEFAULT_WAIT_TIMEOUT,
            ),
            interactive_timeout: pick(
                &flags.interactive_timeout,
                &file.interactive_timeout,
                DEFAULT_INTERACTIVE_TIMEOUT,
            ),
            net_read_timeout: pick(
                &flags.net_read_timeout,
                &file.net_read_timeout,
                DEFAULT_NET_READ_TIMEOUT,
            ),
            net_write_timeout: pick(
                &flags.net_write_timeout,
                &file.net_write_timeout,
                DEFAULT_NET_WRITE_TIMEOUT,
            ),
            max_prepared_stmt_count: pick(
                &flags.max_prepared_stmt_count,
                &file.max_prepared_stmt_count,
                limits_default.max_prepared_stmt_count,
            ),
            max_execution_time: pick(
                &flags.max_execution_time,
                &file.max_execution_time,
                limits_default.max_execution_time.as_millis() as u64,
            ),
            max_statement_time: pick(
                &flags.max_statement_time,
                &file.max_statement_time,
                limits_default.max_statement_time.as_millis() as u64,
            ),
            max_session_mem_used: pick(
                &flags.max_session_mem_used,
                &file.max_session_mem_used,
                limits_default.max_session_mem_used,
            ),
            thread_handling: pick(
                &flags.thread_handling,
                &file.thread_handling,
                crate::DEFAULT_THREAD_HANDLING,
            ),
            thread_pool_size: pick(
                &flags.thread_pool_size,
                &file.thread_pool_size,
                pool::default_size(),
            ),
            thread_pool_max_threads: pick(
                &flags.thread_pool_max_threads,
                &file.thread_pool_max_threads,
                pool::DEFAULT_MAX_THREADS,
            ),
            thread_pool_stall_limit: pick(
                &flags.thread_pool_stall_limit,
                &file.thread_pool_stall_limit,
                pool::DEFAULT_STALL_LIMIT_MS,
            ),
            thread_pool_idle_timeout: pick(
                &flags.thread_pool_idle_timeout,
                &file.thread_pool_idle_timeout,
                pool::DEFAULT_IDLE_TIMEOUT_SECS,
            ),
            thread_pool_oversubscribe: pick(
                &flags.thread_pool_oversubscribe,
                &file.thread_pool_oversubscribe,
                pool::DEFAULT_OVERSUBSCRIBE,
            ),
            warm_restart: pick(&flags.warm_restart, &file.warm_restart, true),
            leaf_views: pick(&flags.leaf_views, &file.leaf_views, true),
            direct_io: pick(&flags.direct_io, &file.direct_io, false),
            config_file,
        }
    }

    /// One line with every effective setting, for the startup log.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "listen={} port={} data_dir={} pool_mb={} codec={} page_size={} flush_policy={} \
             max_connections={} extra_max_connections={} max_allowed_packet={} \
             connect_timeout={} wait_timeout={} interactive_timeout={} net_read_timeout={} \
             net_write_timeout={} thread_handling={} thread_pool_size={} \
             thread_pool_max_threads={} thread_pool_stall_limit={} thread_pool_idle_timeout={} \
             thread_pool_oversubscribe={} warm_restart={} leaf_views={} direct_io={}",
            self.listen,
            self.port,
            self.data_dir.display(),
            self.pool_mb,
            self.codec,
            self.page_size,
            flush_name(self.flush_policy),
            self.max_connections,
            self.extra_max_connections,
            self.max_allowed_packet,
            self.connect_timeout,
            self.wait_timeout,
            self.interactive_timeout,
            self.net_read_timeout,
            self.net_write_timeout,
            self.thread_handling.name(),
            self.thread_pool_size,
            self.thread_pool_max_threads,
            self.thread_pool_stall_limit,
            self.thread_pool_idle_timeout,
            self.thread_pool_oversubscribe,
            if self.warm_restart { "on" } else { "off" },
            if self.leaf_views { "on" } else { "off" },
            if self.direct_io { "on" } else { "off" },
        );
        match &self.config_file {
            Some(f) => {
                let _ = write!(s, " (config file {})", f.display());
            }
            None => s.push_str(" (no config file)"),
        }
        s
    }
}

pub fn flush_name(p: FlushPolicy) -> &'static str {
    match p {
        FlushPolicy::Sync => "sync",
        FlushPolicy::Write => "write",
        FlushPolicy::None => "none",
    }
}

/// Why the settings could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {file}: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    /// TOML syntax, an unknown key or a value of the wrong type (toml's message names the key,
    /// its line and, for unknown keys, the keys allowed).
    #[error("config file {file}: {message}")]
    Parse { file: String, message: String },
    #[error("config file {file}: key `{key}`: {detail}")]
    Value {
        file: String,
        key: &'static str,
        detail: String,
    },
}

/// Parses a table format: `none`, `lz4`, `zstd`, `zstd:3`, `zlib:9`, ..., `fsst`, `fsst+zstd`.
pub fn parse_codec(s: &str) -> Result<TableFormat, String> {
    TableFormat::parse(s.trim())
        .ok_or_else(|| format!("invalid codec {s:?}: expected {CODEC_ALLOWED}"))
}

/// Parses a flush policy: `sync`, `write`, `none`, or InnoDB's 1, 2, 0.
pub fn parse_flush_policy(s: &str) -> Result<FlushPolicy, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "sync" | "1" => Ok(FlushPolicy::Sync),
        "write" | "2" => Ok(FlushPolicy::Write),
        "none" | "0" => Ok(FlushPolicy::None),
        _ => Err(format!(
            "invalid flush policy {s:?}: expected {FLUSH_ALLOWED}"
        )),
    }
}

pub fn parse_page_size(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("invalid page size {s:?}: expected {PAGE_SIZE_ALLOWED}"))?;
    check_page_size(n)
}

fn check_page_size(n: usize) -> Result<usize, String> {
    if (4096..=65536).contains(&n) && n.is_power_of_two() {
        Ok(n)
    } else {
        Err(format!(
            "invalid page size {n}: expected {PAGE_SIZE_ALLOWED}"
        ))
    }
}

pub fn parse_positive(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{s:?} is not a positive integer")),
    }
}

pub fn parse_packet(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not an integer"))?;
    check_packet(n)
}

fn check_packet(n: usize) -> Result<usize, String> {
    if (PACKET_MIN..=PACKET_MAX).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "max_allowed_packet {n} is outside {PACKET_MIN}..={PACKET_MAX} bytes"
        ))
    }
}

/// Parses a timeout in seconds (1 to 31536000, MySQL's range).
pub fn parse_seconds(s: &str) -> Result<u64, String> {
    let n: u64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    check_seconds(n, 1)
}

/// Parses max_prepared_stmt_count (0 to 1048576, MySQL's range).
pub fn check_prepared_count(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n <= 1_048_576 => Ok(n),
        _ => Err(format!("{s:?} is not a count from 0 to 1048576")),
    }
}

/// Parses max_statement_time: seconds with fractions (MariaDB), into milliseconds.
pub fn parse_statement_time(s: &str) -> Result<u64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if (0.0..=SECONDS_MAX as f64).contains(&x) => Ok((x * 1000.0).round() as u64),
        _ => Err(format!(
            "{s:?} is not a number of seconds from 0 to {SECONDS_MAX}"
        )),
    }
}

/// Parses max_session_mem_used: bytes, at least 8192 (MariaDB's bound).
pub fn parse_session_mem(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= 8192 => Ok(n),
        _ => Err(format!("{s:?} is not a number of bytes of at least 8192")),
    }
}

/// Parses connect_timeout (2 to 31536000 seconds, MySQL's range).
pub fn parse_connect_timeout(s: &str) -> Result<u64, String> {
    check_seconds(parse_seconds(s)?, CONNECT_TIMEOUT_MIN)
}

fn check_seconds(n: u64, min: u64) -> Result<u64, String> {
    if (min..=SECONDS_MAX).contains(&n) {
        Ok(n)
    } else {
        Err(format!("{n} is outside {min}..={SECONDS_MAX} seconds"))
    }
}

/// Parses extra_max_connections (0 to 100000).
pub fn parse_extra_connections(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not an integer"))?;
    check_extra(n)
}

fn check_extra(n: usize) -> Result<usize, String> {
    if n <= EXTRA_MAX {
        Ok(n)
    } else {
        Err(format!("{n} is outside 0..={EXTRA_MAX}"))
    }
}

pub fn parse_thread_handling(s: &str) -> Result<ThreadHandling, String> {
    ThreadHandling::parse(s)
}

fn check_range<T: PartialOrd + std::fmt::Display>(n: T, min: T, max: T) -> Result<T, String> {
    if n >= min && n <= max {
        Ok(n)
    } else {
        Err(format!("{n} is outside {min}..={max}"))
    }
}

fn parse_int<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("{s:?} is not an integer"))
}

/// thread_pool_size: 1 to 256 thread groups (MariaDB's range: 1 to 128 in older versions).
pub fn parse_pool_size(s: &str) -> Result<usize, String> {
    check_range(parse_int(s)?, 1, POOL_SIZE_MAX)
}

/// thread_pool_max_threads: 1 to 65536.
pub fn parse_pool_max_threads(s: &str) -> Result<usize, String> {
    check_range(parse_int(s)?, 1, POOL_MAX_THREADS_MAX)
}

/// thread_pool_stall_limit: milliseconds, 1 to 4294967295 (MariaDB's range is 1 to 4294967295 too,
/// default 500).
pub fn parse_stall_limit(s: &str) -> Result<u64, String> {
    check_range(parse_int(s)?, 1, STALL_LIMIT_MAX_MS)
}

/// thread_pool_idle_timeout: seconds, 1 to 4294967295.
pub fn parse_pool_idle_timeout(s: &str) -> Result<u64, String> {
    check_range(parse_int(s)?, 1, STALL_LIMIT_MAX_MS)
}

/// thread_pool_oversubscribe: 1 to 1000 (MariaDB's range).
pub fn parse_oversubscribe(s: &str) -> Result<usize, String> {
    check_range(parse_int(s)?, 1, OVERSUBSCRIBE_MAX)
}

/// The file's keys as TOML gives them; values are checked by [`parse_file`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileKeys {
    listen: Option<String>,
    port: Option<u16>,
    data_dir: Option<PathBuf>,
    pool_mb: Option<usize>,
    codec: Option<String>,
    /// A string or a number: `page_size = 16384` and `page_size = "16384"` both work.
    page_size: Option<toml::Value>,
    /// A string or InnoDB's number: `flush_policy = "write"` or `flush_policy = 2`.
    flush_policy: Option<toml::Value>,
    max_connections: Option<usize>,
    extra_max_connections: Option<usize>,
    max_allowed_packet: Option<usize>,
    connect_timeout: Option<u64>,
    wait_timeout: Option<u64>,
    interactive_timeout: Option<u64>,
    net_read_timeout: Option<u64>,
    net_write_timeout: Option<u64>,
    max_prepared_stmt_count: Option<u64>,
    max_execution_time: Option<u64>,
    max_statement_time: Option<f64>,
    max_session_mem_used: Option<u64>,
    thread_handling: Option<String>,
    thread_pool_size: Option<usize>,
    thread_pool_max_threads: Option<usize>,
    thread_pool_stall_limit: Option<u64>,
    thread_pool_idle_timeout: Option<u64>,
    thread_pool_oversubscribe: Option<usize>,
    warm_restart: Option<bool>,
    leaf_views: Option<bool>,
    direct_io: Option<bool>,
}

/// Parses the text of config file `file`.
pub fn parse_file(file: &str, text: &str) -> Result<Partial, ConfigError> {
    let keys: FileKeys = toml::from_str(text).map_err(|e| ConfigError::Parse {
        file: file.to_string(),
        message: e.to_string().trim_end().to_string(),
    })?;
    let value = |key: &'static str, detail: String| ConfigError::Value {
        file: file.to_string(),
        key,
        detail,
    };
    let scalar = |v: &toml::Value| match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let listen = match &keys.listen {
        Some(s) => Some(s.trim().parse::<IpAddr>().map_err(|_| {
            value(
                "listen",
                format!("{s:?} is not an IP address (e.g. \"127.0.0.1\" or \"::1\")"),
            )
        })?),
        None => None,
    };
    let positive = |key: &'static str, v: Option<usize>| match v {
        Some(0) => Err(value(key, "must be a positive integer".into())),
        v => Ok(v),
    };
    let seconds = |key: &'static str, v: Option<u64>, min: u64| {
        v.map(|n| check_seconds(n, min))
            .transpose()
            .map_err(|e| value(key, e))
    };
    Ok(Partial {
        listen,
        port: keys.port,
        data_dir: keys.data_dir,
        pool_mb: positive("pool_mb", keys.pool_mb)?,
        codec: keys
            .codec
            .as_deref()
            .map(parse_codec)
            .transpose()
            .map_err(|e| value("codec", e))?,
        page_size: keys
            .page_size
            .as_ref()
            .map(|v| parse_page_size(&scalar(v)))
            .transpose()
            .map_err(|e| value("page_size", e))?,
        flush_policy: keys
            .flush_policy
            .as_ref()
            .map(|v| parse_flush_policy(&scalar(v)))
            .transpose()
            .map_err(|e| value("flush_policy", e))?,
        max_connections: positive("max_connections", keys.max_connections)?,
        extra_max_connections: keys
            .extra_max_connections
            .map(check_extra)
            .transpose()
            .map_err(|e| value("extra_max_connections", e))?,
        max_allowed_packet: keys
            .max_allowed_packet
            .map(check_packet)
            .transpose()
            .map_err(|e| value("max_allowed_packet", e))?,
        connect_timeout: seconds("connect_timeout", keys.connect_timeout, CONNECT_TIMEOUT_MIN)?,
        wait_timeout: seconds("wait_timeout", keys.wait_timeout, 1)?,
        interactive_timeout: seconds("interactive_timeout", keys.interactive_timeout, 1)?,
        net_read_timeout: seconds("net_read_timeout", keys.net_read_timeout, 1)?,
        net_write_timeout: seconds("net_write_timeout", keys.net_write_timeout, 1)?,
        max_prepared_stmt_count: keys
            .max_prepared_stmt_count
            .map(|n| check_prepared_count(&n.to_string()))
            .transpose()
            .map_err(|e| value("max_prepared_stmt_count", e))?,
        max_execution_time: keys.max_execution_time,
        max_statement_time: keys
            .max_statement_time
            .map(|n| parse_statement_time(&n.to_string()))
            .transpose()
            .map_err(|e| value("max_statement_time", e))?,
        max_session_mem_used: keys
            .max_session_mem_used
            .map(|n| parse_session_mem(&n.to_string()))
            .transpose()
            .map_err(|e| value("max_session_mem_used", e))?,
        thread_handling: keys
            .thread_handling
            .as_deref()
            .map(ThreadHandling::parse)
            .transpose()
            .map_err(|e| value("thread_handling", e))?,
        thread_pool_size: keys
            .thread_pool_size
            .map(|n| check_range(n, 1, POOL_SIZE_MAX))
            .transpose()
            .map_err(|e| value("thread_pool_size", e))?,
        thread_pool_max_threads: keys
            .thread_pool_max_threads
            .map(|n| check_range(n, 1, POOL_MAX_THREADS_MAX))
            .transpose()
            .map_err(|e| value("thread_pool_max_threads", e))?,
        thread_pool_stall_limit: keys
            .thread_pool_stall_limit
            .map(|n| check_range(n, 1, STALL_LIMIT_MAX_MS))
            .transpose()
            .map_err(|e| value("thread_pool_stall_limit", e))?,
        thread_pool_idle_timeout: keys
            .thread_pool_idle_timeout
            .map(|n| check_range(n, 1, STALL_LIMIT_MAX_MS))
            .transpose()
            .map_err(|e| value("thread_pool_idle_timeout", e))?,
        thread_pool_oversubscribe: keys
            .thread_pool_oversubscribe
            .map(|n| check_range(n, 1, OVERSUBSCRIBE_MAX))
            .transpose()
            .map_err(|e| value("thread_pool_oversubscribe", e))?,
        warm_restart: keys.warm_restart,
        leaf_views: keys.leaf_views,
        direct_io: keys.direct_io,
    })
}

/// Which config file to read: the one given, else `./zipdb.toml` if it exists (the bool says
/// it was found implicitly, so that startup can say so), else none.
pub fn locate(given: Option<&Path>) -> Option<(PathBuf, bool)> {
    match given {
        Some(p) => Some((p.to_path_buf(), false)),
        None => {
            let p = Path::new(".").join(DEFAULT_CONFIG_FILE);
            p.is_file().then_some((p, true))
        }
    }
}

/// Reads and parses config file `path`.
pub fn read_file(path: &Path) -> Result<Partial, ConfigError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        file: name.clone(),
        source,
    })?;
    parse_file(&name, &text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zipdb_engine::Codec;

    fn err(text: &str) -> String {
        parse_file("conf/zipdb.toml", text).unwrap_err().to_string()
    }

    #[test]
    fn every_key_parses() {
        let p = parse_file(
            "f",
            r#"
            listen = "0.0.0.0"
            port = 3310
            data_dir = "/var/lib/zipdb"
            pool_mb = 1024
            codec = "zstd:3"
            page_size = 8192
            flush_policy = "write"
            max_connections = 50
            extra_max_connections = 2
            max_allowed_packet = 1048576
            connect_timeout = 5
            wait_timeout = 600
            interactive_timeout = 3600
            net_read_timeout = 20
            net_write_timeout = 40
            max_prepared_stmt_count = 5000
            max_execution_time = 1500
            max_statement_time = 2.5
            max_session_mem_used = 100000000
            thread_handling = "one-thread-per-connection"
            thread_pool_size = 4
            thread_pool_max_threads = 100
            thread_pool_stall_limit = 20
            thread_pool_idle_timeout = 30
            thread_pool_oversubscribe = 2
            warm_restart = false
            leaf_views = false
            direct_io = true
            "#,
        )
        .unwrap();
        assert_eq!(
            p,
            Partial {
                listen: Some("0.0.0.0".parse().unwrap()),
                port: Some(3310),
                data_dir: Some("/var/lib/zipdb".into()),
                pool_mb: Some(1024),
                codec: Some(TableFormat::Codec(Codec::Zstd(3))),
                page_size: Some(8192),
                flush_policy: Some(FlushPolicy::Write),
                max_connections: Some(50),
                extra_max_connections: Some(2),
                max_allowed_packet: Some(1 << 20),
                connect_timeout: Some(5),
                wait_timeout: Some(600),
                interactive_timeout: Some(3600),
                net_read_timeout: Some(20),
                net_write_timeout: Some(40),
                max_prepared_stmt_count: Some(5000),
                max_execution_time: Some(1500),
                max_statement_time: Some(2500),
                max_session_mem_used: Some(100_000_000),
                thread_handling: Some(ThreadHandling::OneThreadPerConnection),
                thread_pool_size: Some(4),
                thread_pool_max_threads: Some(100),
                thread_pool_stall_limit: Some(20),
                thread_pool_idle_timeout: Some(30),
                thread_pool_oversubscribe: Some(2),
                warm_restart: Some(false),
                leaf_views: Some(false),
                direct_io: Some(true),
            }
        );
        // InnoDB's numbers for the flush policy; page size as a string.
        let p = parse_file("f", "flush_policy = 0\npage_size = \"65536\"").unwrap();
        assert_eq!(p.flush_policy, Some(FlushPolicy::None));
        assert_eq!(p.page_size, Some(65536));
        assert_eq!(parse_file("f", "").unwrap(), Partial::default());
    }

    #[test]
    fn precedence_is_flag_then_file_then_default() {
        let flags = Partial {
            port: Some(4000),
            codec: Some(TableFormat::Codec(Codec::Lz4)),
            warm_restart: Some(false),
            ..Partial::default()
        };
        let file = Partial {
            port: Some(5000),
            pool_mb: Some(64),
            codec: Some(TableFormat::Codec(Codec::None)),
            flush_policy: Some(FlushPolicy::Write),
            ..Partial::default()
        };
        let s = Settings::merge(&flags, &file, Some("z.toml".into()));
        assert_eq!(s.port, 4000, "flag beats file");
        assert_eq!(s.codec, TableFormat::Codec(Codec::Lz4), "flag beats file");
        assert_eq!(s.pool_mb, 64, "file beats default");
        assert_eq!(s.flush_policy, FlushPolicy::Write, "file beats default");
        assert!(!s.warm_restart);
        assert!(s.leaf_views, "default");
        assert!(!s.direct_io, "default");
        assert_eq!(s.max_connections, DEFAULT_MAX_CONNECTIONS, "default");
        assert_eq!(
            (s.connect_timeout, s.wait_timeout, s.net_read_timeout),
            (10, 28_800, 30),
            "MySQL's defaults"
        );
        assert_eq!(s.extra_max_connections, 1);
        assert_eq!(s.thread_handling, crate::DEFAULT_THREAD_HANDLING);
        assert_eq!(s.pool(), pool::PoolConfig::default());
        assert_eq!(s.data_dir, PathBuf::from(DEFAULT_DATA_DIR));
        assert_eq!(
            (s.page_size, s.page_size_explicit),
            (DEFAULT_PAGE_SIZE, false)
        );
        let line = s.summary();
        assert!(
            line.contains("port=4000")
                && line.contains("codec=lz4")
                && line.contains("flush_policy=write")
                && line.contains("warm_restart=off")
                && line.contains("leaf_views=on")
                && line.contains("z.toml"),
            "{line}"
        );

        let s = Settings::merge(&Partial::default(), &Partial::default(), None);
        assert_eq!(s.codec, TableFormat::COMPRESSED_DEFAULT);
        // fsst from the file; the startup line names it.
        let file = parse_file("f", "codec = \"FSST\"").unwrap();
        assert_eq!(file.codec, Some(TableFormat::Fsst));
        let s = Settings::merge(&Partial::default(), &file, None);
        assert_eq!(s.codec, TableFormat::Fsst);
        assert!(s.summary().contains(" codec=fsst "), "{}", s.summary());
        assert_eq!(s.flush_policy, FlushPolicy::Sync);
        assert!(s.warm_restart);
        let s = Settings::merge(
            &Partial::default(),
            &Partial {
                page_size: Some(4096),
                ..Partial::default()
            },
            None,
        );
        assert_eq!((s.page_size, s.page_size_explicit), (4096, true));
    }

    #[test]
    fn unknown_keys_name_the_file_the_key_and_the_allowed_keys() {
        let e = err("port = 3307\npool_size = 10\n");
        assert!(
            e.contains("conf/zipdb.toml") && e.contains("pool_size") && e.contains("pool_mb"),
            "{e}"
        );
    }

    #[test]
    fn bad_values_name_the_file_the_key_and_what_is_allowed() {
        for (text, key, allowed) in [
            ("codec = \"brotli\"", "codec", "lz4"),
            ("codec = \"zstd:40\"", "codec", "-7..=22"),
            ("codec = \"trim\"", "codec", "fsst"),
            ("flush_policy = \"always\"", "flush_policy", "sync"),
            ("flush_policy = 3", "flush_policy", "sync"),
            ("page_size = 12000", "page_size", "16384"),
            ("listen = \"localhost:1\"", "listen", "IP address"),
            ("pool_mb = 0", "pool_mb", "positive"),
            ("max_connections = 0", "max_connections", "positive"),
            ("max_allowed_packet = 10", "max_allowed_packet", "1024"),
            ("connect_timeout = 1", "connect_timeout", "2..=31536000"),
            ("wait_timeout = 0", "wait_timeout", "1..=31536000"),
            (
                "net_write_timeout = 99999999",
                "net_write_timeout",
                "31536000",
            ),
            (
                "extra_max_connections = 100001",
                "extra_max_connections",
                "100000",
            ),
            (
                "thread_handling = \"no-threads\"",
                "thread_handling",
                "pool-of-threads",
            ),
            ("thread_pool_size = 0", "thread_pool_size", "1..=256"),
            (
                "thread_pool_stall_limit = 0",
                "thread_pool_stall_limit",
                "1..=",
            ),
            (
                "thread_pool_oversubscribe = 1001",
                "thread_pool_oversubscribe",
                "1..=1000",
            ),
        ] {
            let e = err(text);
            assert!(
                e.contains("conf/zipdb.toml")
                    && e.contains(&format!("`{key}`"))
                    && e.contains(allowed),
                "{text}: {e}"
            );
        }
        // Wrong types and syntax are reported by the TOML parser, with the key and line.
        for (text, key) in [
            ("port = \"x\"", "port"),
            ("port = 70000", "port"),
            ("warm_restart = 1", "warm_restart"),
            ("leaf_views = \"yes\"", "leaf_views"),
        ] {
            let e = err(text);
            assert!(
                e.contains("conf/zipdb.toml") && e.contains(key),
                "{text}: {e}"
            );
        }
        assert!(err("port = ").contains("conf/zipdb.toml"));
    }

    #[test]
    fn flag_value_parsers() {
        assert_eq!(
            parse_codec("ZSTD:5"),
            Ok(TableFormat::Codec(Codec::Zstd(5)))
        );
        assert_eq!(parse_codec("zlib"), Ok(TableFormat::Codec(Codec::Zlib(6))));
        assert_eq!(parse_codec(" fsst "), Ok(TableFormat::Fsst));
        assert_eq!(parse_codec("fsst+zstd"), Ok(TableFormat::FsstZstd));
        let e = parse_codec("zlib:0").unwrap_err();
        assert!(e.contains("zlib:LEVEL") && e.contains("fsst"), "{e}");
        assert!(parse_codec("fsst:1").is_err());
        assert_eq!(parse_flush_policy("2"), Ok(FlushPolicy::Write));
        assert_eq!(parse_page_size("32768"), Ok(32768));
        assert!(parse_page_size("2048").is_err());
        assert!(parse_positive("0").is_err());
        assert!(parse_packet("1073741825").is_err());
        assert_eq!(parse_seconds("1"), Ok(1));
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("1.5").is_err());
        assert!(parse_connect_timeout("1").is_err());
        assert_eq!(parse_connect_timeout("2"), Ok(2));
        assert_eq!(parse_extra_connections("0"), Ok(0));
        assert_eq!(
            parse_thread_handling("Pool_Of_Threads"),
            Ok(ThreadHandling::PoolOfThreads)
        );
        assert!(parse_thread_handling("threads").is_err());
        assert_eq!(parse_pool_size("8"), Ok(8));
        assert!(parse_pool_size("0").is_err());
        assert_eq!(parse_stall_limit("500"), Ok(500));
        assert!(parse_oversubscribe("x").is_err());
    }

    #[test]
    fn a_missing_file_is_an_error_naming_it() {
        let e = read_file(Path::new("/nonexistent/zipdb.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/zipdb.toml"), "{e}");
    }
}
