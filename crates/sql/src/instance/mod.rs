//! Layer 9 of the SQL engine (docs/design/issue20-sql-engine.md §2.1): the SQL instance
//! (catalog over one engine database) and the state of its client sessions: the [`Session`]
//! struct with its plain accessors, transactions and savepoints, variables. Statement dispatch,
//! prepared statements and EXPLAIN are `crate::session`'s (layer 12), which ddl/ and admin/ do
//! not import.

pub(crate) mod session;
pub(crate) mod txn;
pub(crate) mod vars;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use zipdb_engine::{Database, TableFormat, Tree};

use crate::catalog::accounts::{Account, Accounts, LoginRefusal};
use crate::catalog::{Catalog, Table};
use crate::types::value::Value;
use crate::SqlError;

/// Settings of an instance.
#[derive(Debug, Clone)]
pub struct InstanceOptions {
    /// How tables created without `COMPRESSION=`/`ROW_FORMAT=` are stored.
    pub default_format: TableFormat,
    pub server_version: String,
    pub max_allowed_packet: u64,
    pub max_connections: u64,
    pub lock_wait_timeout: Duration,
    /// The server's wire limits, shown as the variables of the same names; sessions start
    /// with them and may change the last four (`SET SESSION wait_timeout = 60`), which the
    /// server reads back with [`Session::sysvar_u64`].
    pub connect_timeout: Duration,
    pub wait_timeout: Duration,
    pub interactive_timeout: Duration,
    pub net_read_timeout: Duration,
    pub net_write_timeout: Duration,
    /// Connections kept for `root` beyond `max_connections` (MariaDB's name).
    pub extra_max_connections: u64,
    /// Prepared statements open at once, over all sessions (MySQL's name and error 1461).
    pub max_prepared_stmt_count: u64,
    /// MySQL's `max_execution_time` for SELECTs (zero: none).
    pub max_execution_time: Duration,
    /// MariaDB's `max_statement_time` for every statement (zero: none).
    pub max_statement_time: Duration,
    /// Bytes of rows one statement may hold in memory: buffered results, sort input, groups,
    /// hash tables, together with its transaction's uncommitted writes (MariaDB's
    /// `max_session_mem_used`; error 1290).
    pub max_session_mem_used: u64,
    /// MariaDB's `tmpdir`: where statements spill past their memory (the server passes
    /// `<datadir>/tmp`; files left there by a crash are deleted at open). `None`: a private
    /// folder under the system's temporary one, made at the first spill and removed with the
    /// instance (embedded instances and tests).
    pub tmpdir: Option<std::path::PathBuf>,
    /// Bytes of temporary files one session may keep (`max_tmp_session_space_usage`, error
    /// 4198) and all sessions together (`max_tmp_total_space_usage`, error 4199).
    pub max_tmp_session_space_usage: u64,
    pub max_tmp_total_space_usage: u64,
    /// Bytes of rows one sort holds in memory before it writes a sorted run to a temporary
    /// file (`sort_buffer_size`).
    pub sort_buffer_size: u64,
    /// Bytes of groups (GROUP BY) or distinct keys (DISTINCT) one operator holds in memory
    /// before new ones go to a temporary file (`tmp_memory_table_size`, alias
    /// `tmp_table_size`).
    pub tmp_memory_table_size: u64,
    /// Read-only variables the embedding server reports under MySQL/MariaDB names (its port,
    /// `thread_handling`, the `thread_pool_*` settings): shown by SHOW VARIABLES and
    /// `@@name`; SET of them fails with 1238, they are chosen at start.
    pub server_variables: Vec<(&'static str, Value)>,
}

impl Default for InstanceOptions {
    fn default() -> Self {
        InstanceOptions {
            default_format: TableFormat::COMPRESSED_DEFAULT,
            server_version: format!("8.0.0-zipdb-{}", env!("CARGO_PKG_VERSION")),
            max_allowed_packet: 64 << 20,
            max_connections: 1000,
            lock_wait_timeout: Duration::from_secs(50),
            // MySQL's defaults.
            connect_timeout: Duration::from_secs(10),
            wait_timeout: Duration::from_secs(28_800),
            interactive_timeout: Duration::from_secs(28_800),
            net_read_timeout: Duration::from_secs(30),
            net_write_timeout: Duration::from_secs(60),
            extra_max_connections: 1,
            // MySQL's 16,382 is too low for sysbench's 128 clients x 16 tables (FIELD-NOTES);
            // this allows 512 clients x 16 tables. About 20 KB each at most.
            max_prepared_stmt_count: 131_072,
            max_execution_time: Duration::ZERO,
            max_statement_time: Duration::ZERO,
            max_session_mem_used: 1 << 30,
            tmpdir: None,
            max_tmp_session_space_usage: crate::runtime::spill::SESSION_MAX_DEFAULT,
            max_tmp_total_space_usage: crate::runtime::spill::TOTAL_MAX_DEFAULT,
            sort_buffer_size: crate::runtime::spill::SORT_BUFFER_DEFAULT,
            tmp_memory_table_size: crate::runtime::spill::TMP_TABLE_DEFAULT,
            server_variables: Vec::new(),
        }
    }
}

/// Server-wide counters for SHOW STATUS.
#[derive(Debug, Default)]
pub struct Counters {
    pub questions: AtomicU64,
    pub com_select: AtomicU64,
    pub com_insert: AtomicU64,
    pub com_update: AtomicU64,
    pub com_delete: AtomicU64,
    pub com_load: AtomicU64,
    pub com_commit: AtomicU64,
    pub com_rollback: AtomicU64,
    pub rolled_back_on_conflict: AtomicU64,
    pub prepared_count: AtomicU64,
    pub connections: AtomicU64,
    pub threads_connected: AtomicU64,
}

/// One SQL instance over an engine database.
pub struct Instance {
    pub db: Database,
    pub(crate) catalog: RwLock<Catalog>,
    pub(crate) sys: Tree,
    /// Serialises DDL.
    pub(crate) ddl: Mutex<()>,
    /// Held shared by every open transaction (and autocommit statement), exclusively by DDL:
    /// a table's definition cannot change under a transaction that uses it.
    pub(crate) gate: Arc<RwLock<()>>,
    pub options: InstanceOptions,
    pub counters: Counters,
    /// Bumped by every DDL; prepared statements recompile when it moved.
    pub(crate) schema_version: AtomicU64,
    pub(crate) started: std::time::Instant,
    /// User accounts; changed under `ddl`, written to the catalog tree first.
    pub(crate) accounts: RwLock<Accounts>,
    /// Set once the server listens on a non-loopback address: from then on every account
    /// must keep a password (see [`Instance::require_passwords`]).
    pub(crate) network_exposed: AtomicBool,
    /// Every open session by connection id, for SHOW PROCESSLIST and KILL.
    pub(crate) processes: Mutex<std::collections::BTreeMap<u64, Arc<Process>>>,
    /// Statement time limits in force (see [`crate::runtime::limits`]).
    pub(crate) deadlines: Arc<crate::runtime::limits::Deadlines>,
    /// The global values of the limits sessions start with (`SET GLOBAL`).
    pub(crate) globals: crate::runtime::limits::Globals,
    /// `local_infile` (global only, ON by default, as in MariaDB): whether LOAD DATA LOCAL
    /// may ask clients for files.
    pub(crate) local_infile: AtomicBool,
    /// Where statements spill (see [`InstanceOptions::tmpdir`]).
    pub(crate) temp: Arc<crate::runtime::spill::TempSpace>,
}

/// What a connection is doing, as SHOW PROCESSLIST shows it.
#[derive(Debug, Clone)]
pub(crate) struct Activity {
    pub db: Option<String>,
    /// `Sleep` between commands, `Query` or `Execute` during one.
    pub command: &'static str,
    /// The statement being run (meaningful while `command` is not `Sleep`; the buffer is
    /// reused so that marking a command does not allocate).
    pub info: String,
    /// When the current command (or the idle time) began.
    pub since: std::time::Instant,
}

/// The part of a session other connections see: its activity and its kill flags.
pub struct Process {
    pub id: u64,
    pub(crate) user: String,
    pub(crate) host: Mutex<String>,
    pub(crate) activity: Mutex<Activity>,
    /// `KILL QUERY`: the running statement stops at its next check with error 1317. Cleared when
    /// the next statement starts, so that a kill that arrives after its statement ended does
    /// not hit the following one.
    pub(crate) interrupt: Arc<crate::runtime::limits::Interrupt>,
    /// `KILL [CONNECTION]`: the connection ends after its current command.
    pub(crate) conn_killed: AtomicBool,
    /// Set by the server: closes the connection's socket, which wakes a client read that blocks
    /// and makes the session's next read end.
    pub(crate) closer: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
}

impl Process {
    /// KILL CONNECTION from outside any session: the server does this to a connection whose
    /// client has gone away while a statement runs.
    pub fn kill_connection(&self) {
        self.kill();
    }

    /// KILL CONNECTION from another session.
    pub(crate) fn kill(&self) {
        self.interrupt.kill();
        self.conn_killed.store(true, Ordering::Release);
        if let Some(close) = self.closer.lock().as_ref() {
            close();
        }
    }
}

impl Instance {
    /// A small database (8 MiB pool and WAL) in `dir` and an instance on it, for unit tests.
    #[cfg(test)]
    pub(crate) fn open_for_tests(
        dir: &std::path::Path,
    ) -> (zipdb_engine::Database, std::sync::Arc<Instance>) {
        let db = zipdb_engine::Database::open(
            dir,
            zipdb_engine::Options {
                pool_bytes: 8 << 20,
                wal_bytes: 8 << 20,
                recovery_progress: false,
                ..Default::default()
            },
        )
        .expect("open the test database");
        let inst = Instance::open(db.clone(), Default::default()).expect("open catalog");
        (db, inst)
    }

    /// Opens the SQL catalog of `db` (creating it in a new database).
    pub fn open(db: Database, options: InstanceOptions) -> Result<Arc<Instance>, SqlError> {
        let (mut cat, sys) = Catalog::load(&db)?;
        let accounts = Accounts::from_stored(std::mem::take(&mut cat.accounts));
        let globals = crate::runtime::limits::Globals {
            max_prepared_stmt_count: AtomicU64::new(options.max_prepared_stmt_count),
            max_execution_time_ms: AtomicU64::new(options.max_execution_time.as_millis() as u64),
            max_statement_time_ms: AtomicU64::new(options.max_statement_time.as_millis() as u64),
            max_session_mem_used: AtomicU64::new(options.max_session_mem_used),
            max_tmp_session_space_usage: AtomicU64::new(options.max_tmp_session_space_usage),
            sort_buffer_size: AtomicU64::new(options.sort_buffer_size),
            tmp_memory_table_size: AtomicU64::new(options.tmp_memory_table_size),
        };
        let temp = match &options.tmpdir {
            Some(dir) => crate::runtime::spill::TempSpace::open_dir(dir).map_err(|e| {
                SqlError::of(
                    crate::error::ErrorKind::ErrorOnWrite,
                    format!(
                        "Error writing file '{}' (cannot open the temporary folder: {e})",
                        dir.display()
                    ),
                )
            })?,
            None => crate::runtime::spill::TempSpace::private(),
        };
        temp.set_max(options.max_tmp_total_space_usage);
        Ok(Arc::new(Instance {
            db,
            catalog: RwLock::new(cat),
            sys,
            ddl: Mutex::new(()),
            gate: Arc::new(RwLock::new(())),
            options,
            counters: Counters::default(),
            schema_version: AtomicU64::new(1),
            started: std::time::Instant::now(),
            accounts: RwLock::new(accounts),
            network_exposed: AtomicBool::new(false),
            processes: Mutex::new(Default::default()),
            deadlines: Arc::default(),
            globals,
            local_infile: AtomicBool::new(true),
            temp: Arc::new(temp),
        }))
    }

    /// The account a login as `user` from `peer` is checked against (see
    /// [`Accounts::login`]).
    pub fn login_account(
        &self,
        user: &str,
        peer: Option<std::net::IpAddr>,
    ) -> Result<Account, LoginRefusal> {
        self.accounts.read().login(user, peer).cloned()
    }

    /// A copy of all accounts.
    pub fn accounts(&self) -> Accounts {
        self.accounts.read().clone()
    }

    /// For a server about to listen on a non-loopback address: fails, naming them, if any
    /// account has no password; otherwise makes every later statement that would leave an
    /// account without a password fail (error 1819), so that the rule still holds at the next
    /// start.
    pub fn require_passwords(&self) -> Result<(), Vec<String>> {
        // Under the DDL lock, so that no CREATE USER slips between the check and the flag.
        let _ddl = self.ddl.lock();
        let open: Vec<String> = self
            .accounts
            .read()
            .passwordless()
            .map(|a| a.to_string())
            .collect();
        if !open.is_empty() {
            return Err(open);
        }
        self.network_exposed.store(true, Ordering::Release);
        Ok(())
    }

    pub fn uptime_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    pub fn database_exists(&self, name: &str) -> bool {
        self.catalog.read().dbs.contains_key(name)
    }

    pub(crate) fn table(&self, db: &str, name: &str) -> Result<Arc<Table>, SqlError> {
        let cat = self.catalog.read();
        match cat.dbs.get(db) {
            None => Err(SqlError::unknown_db(db)),
            Some(tables) => tables
                .get(name)
                .cloned()
                .ok_or_else(|| SqlError::no_table(db, name)),
        }
    }
}
