//! The SQL instance (catalog over one engine database) and client sessions: statement
//! dispatch, transactions, prepared statements, session variables.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::lock_api::ArcRwLockReadGuard;
use parking_lot::{Mutex, RawRwLock, RwLock};
use sqlparser::ast;
use zipdb_engine::{Codec, Database, IsolationLevel, Transaction, Tree};

use crate::admin::show;
use crate::bind::select::compile_select;
use crate::catalog::accounts::{Account, Accounts, LoginRefusal};
use crate::catalog::{Catalog, Table};
use crate::exec::dml::{self, DmlCount, Env, Plan};
use crate::expr::{Compiler, Ctx};
use crate::types::diag::Warning;
use crate::types::result::{ColumnMeta, Outcome};
use crate::types::temporal::DateTime;
use crate::types::value::Value;
use crate::{ddl, SqlError};

/// Settings of an instance.
#[derive(Debug, Clone)]
pub struct InstanceOptions {
    /// Codec of tables created without `COMPRESSION=`/`ROW_FORMAT=`.
    pub default_codec: Codec,
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
    /// hash tables (MariaDB's `max_session_mem_used`, applied per statement; error 1290).
    pub max_session_mem_used: u64,
    /// Read-only variables the embedding server reports under MySQL/MariaDB names (its port,
    /// `thread_handling`, the `thread_pool_*` settings): shown by SHOW VARIABLES and
    /// `@@name`; SET of them fails with 1238, they are chosen at start.
    pub server_variables: Vec<(&'static str, Value)>,
}

impl Default for InstanceOptions {
    fn default() -> Self {
        InstanceOptions {
            default_codec: Codec::DEFAULT,
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
    conn_killed: AtomicBool,
    /// Set by the server: closes the connection's socket, which wakes a client read that blocks
    /// and makes the session's next read end.
    closer: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
}

impl Process {
    /// KILL CONNECTION from outside any session: the server does this to a connection whose
    /// client has gone away while a statement runs.
    pub fn kill_connection(&self) {
        self.kill();
    }

    /// KILL CONNECTION from another session.
    fn kill(&self) {
        self.interrupt.kill();
        self.conn_killed.store(true, Ordering::Release);
        if let Some(close) = self.closer.lock().as_ref() {
            close();
        }
    }
}

impl Instance {
    /// Opens the SQL catalog of `db` (creating it in a new database).
    pub fn open(db: Database, options: InstanceOptions) -> Result<Arc<Instance>, SqlError> {
        let (mut cat, sys) = Catalog::load(&db)?;
        let accounts = Accounts::from_stored(std::mem::take(&mut cat.accounts));
        let globals = crate::runtime::limits::Globals {
            max_prepared_stmt_count: AtomicU64::new(options.max_prepared_stmt_count),
            max_execution_time_ms: AtomicU64::new(options.max_execution_time.as_millis() as u64),
            max_statement_time_ms: AtomicU64::new(options.max_statement_time.as_millis() as u64),
            max_session_mem_used: AtomicU64::new(options.max_session_mem_used),
        };
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

    pub fn session(self: &Arc<Instance>, user: &str, conn_id: u64) -> Session {
        self.counters.connections.fetch_add(1, Ordering::Relaxed);
        self.counters
            .threads_connected
            .fetch_add(1, Ordering::Relaxed);
        let process = Arc::new(Process {
            id: conn_id,
            user: user.to_string(),
            host: Mutex::new("localhost".to_string()),
            activity: Mutex::new(Activity {
                db: None,
                command: "Sleep",
                info: String::new(),
                since: std::time::Instant::now(),
            }),
            interrupt: Arc::default(),
            conn_killed: AtomicBool::new(false),
            closer: Mutex::new(None),
        });
        self.processes.lock().insert(conn_id, process.clone());
        Session {
            process,
            inst: self.clone(),
            text: String::new(),
            user: user.to_string(),
            host: "localhost".to_string(),
            user_at: format!("{user}@localhost"),
            conn_id,
            db: None,
            autocommit: true,
            isolation: IsolationLevel::RepeatableRead,
            snapshot_isolation: false,
            txn: None,
            last_insert_id: 0,
            warnings: Vec::new(),
            warnings_dropped: 0,
            warnings_shown: false,
            prepared: HashMap::new(),
            next_stmt_id: 1,
            multi_statements: true,
            limits: self.globals.session_limits(),
            vars: HashMap::new(),
            user_vars: HashMap::new(),
        }
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

/// An open transaction and the shared hold on the DDL gate that comes with it.
struct OpenTxn {
    txn: Transaction,
    explicit: bool,
    _gate: ArcRwLockReadGuard<RawRwLock, ()>,
    /// SAVEPOINT names, oldest first; they end with the transaction.
    savepoints: Vec<(String, zipdb_engine::Savepoint)>,
}

/// A prepared statement.
struct Prepared {
    sql: String,
    stmt: ast::Statement,
    plan: Option<Plan>,
    version: u64,
    params: usize,
    /// Slot → client parameter index.
    order: Vec<usize>,
    columns: Arc<Vec<ColumnMeta>>,
}

/// What COM_STMT_PREPARE answers.
#[derive(Debug, Clone)]
pub struct PreparedInfo {
    pub id: u32,
    pub params: usize,
    pub columns: Arc<Vec<ColumnMeta>>,
}

/// One client's session.
pub struct Session {
    pub(crate) inst: Arc<Instance>,
    /// The text of the statement being compiled: result columns are labelled with their
    /// expressions as written, as MySQL does.
    text: String,
    pub(crate) process: Arc<Process>,
    pub(crate) user: String,
    /// Host pattern of the account the session logged in as (SET PASSWORD without FOR).
    pub(crate) host: String,
    /// `user@host` for USER() and CURRENT_USER().
    user_at: String,
    pub(crate) conn_id: u64,
    pub(crate) db: Option<String>,
    pub(crate) autocommit: bool,
    pub(crate) isolation: IsolationLevel,
    /// `innodb_snapshot_isolation`: whether a repeatable-read transaction that writes a row
    /// changed since its snapshot gets error 1020 (first updater wins) or, as by default in
    /// MariaDB 10.11 and in MySQL, locks the row and acts on its newest version.
    pub(crate) snapshot_isolation: bool,
    txn: Option<OpenTxn>,
    pub(crate) last_insert_id: u64,
    pub(crate) warnings: Vec<Warning>,
    /// Warnings the last statement raised past the [`crate::types::diag::STORED_MAX`] kept in
    /// `warnings`: they count in the OK packet, as in MySQL, but SHOW WARNINGS does not list them.
    pub(crate) warnings_dropped: u64,
    /// The last statement was SHOW WARNINGS/ERRORS: it keeps the list but, as in MySQL,
    /// reports no warnings of its own.
    pub(crate) warnings_shown: bool,
    /// Boxed: EXECUTE takes a statement out of the map and puts it back, and the parsed
    /// statement inside is large.
    prepared: HashMap<u32, Box<Prepared>>,
    next_stmt_id: u32,
    /// See [`Session::set_multi_statements`].
    multi_statements: bool,
    pub(crate) limits: crate::runtime::limits::StatementLimits,
    pub(crate) vars: HashMap<String, Value>,
    /// User variables (`SET @x = ...`), by lower-case name. Only SET reads them so far: dump
    /// files save session settings in them and restore from them (`SET @OLD_SQL_MODE =
    /// @@SQL_MODE, ...` ... `SET SQL_MODE = @OLD_SQL_MODE`).
    user_vars: HashMap<String, Value>,
}

impl Drop for Session {
    fn drop(&mut self) {
        // An open transaction is rolled back when its connection goes, as MySQL does.
        self.txn = None;
        // Its prepared statements no longer count against max_prepared_stmt_count.
        self.inst
            .counters
            .prepared_count
            .fetch_sub(self.prepared.len() as u64, Ordering::AcqRel);
        self.inst
            .counters
            .threads_connected
            .fetch_sub(1, Ordering::Relaxed);
        // Only this session's entry: embedded users may reuse an id while it is open.
        let mut procs = self.inst.processes.lock();
        if procs
            .get(&self.conn_id)
            .is_some_and(|p| Arc::ptr_eq(p, &self.process))
        {
            procs.remove(&self.conn_id);
        }
    }
}

/// Server status flags for OK/EOF packets.
pub mod status_flag {
    pub const IN_TRANS: u16 = 0x0001;
    pub const AUTOCOMMIT: u16 = 0x0002;
}

fn now_packed() -> i64 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0);
    let micro = (secs % 1_000_000) as u32;
    let s = secs / 1_000_000;
    let days = s.div_euclid(86_400);
    let rem = s.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = (yoe + era * 400 + i64::from(month <= 2)) as u16;
    DateTime {
        year,
        month,
        day,
        hour: (rem / 3600) as u8,
        minute: ((rem / 60) % 60) as u8,
        second: (rem % 60) as u8,
        micro,
    }
    .pack()
}

impl Session {
    pub fn current_db(&self) -> Option<&str> {
        self.db.as_deref()
    }

    /// Records the host pattern of the account the session logged in as (the default,
    /// `localhost`, suits embedded use).
    pub fn set_account_host(&mut self, host: &str) {
        self.host = host.to_string();
        self.user_at = format!("{}@{host}", self.user);
    }

    pub fn instance(&self) -> &Arc<Instance> {
        &self.inst
    }

    /// USE / COM_INIT_DB.
    pub fn use_db(&mut self, name: &str) -> Result<(), SqlError> {
        if !self.inst.database_exists(name) && !crate::catalog::system::is_db(name) {
            return Err(SqlError::unknown_db(name));
        }
        self.db = Some(name.to_string());
        self.process.activity.lock().db = Some(name.to_string());
        Ok(())
    }

    /// Records the client's address for SHOW PROCESSLIST (`127.0.0.1:51234`).
    pub fn set_peer(&mut self, host: &str) {
        *self.process.host.lock() = host.to_string();
    }

    /// Installs what KILL CONNECTION calls to close this session's connection (the server
    /// shuts its socket down); called at once if the session was already killed.
    pub fn set_closer(&mut self, close: Box<dyn Fn() + Send + Sync>) {
        if self.process.conn_killed.load(Ordering::Acquire) {
            close();
        }
        *self.process.closer.lock() = Some(close);
    }

    /// What other threads see of this session: the server's watchdog kills it through this.
    pub fn process(&self) -> Arc<Process> {
        self.process.clone()
    }

    /// Whether KILL CONNECTION ended this session: the server stops reading commands.
    pub fn connection_killed(&self) -> bool {
        self.process.conn_killed.load(Ordering::Acquire)
    }

    /// Whether KILL QUERY (or KILL CONNECTION) interrupted the running statement: the server
    /// stops sending its rows.
    pub fn query_killed(&self) -> bool {
        self.process.interrupt.is_set()
    }

    /// Marks the start of a command for SHOW PROCESSLIST, and forgets a KILL QUERY that came
    /// after the previous statement ended.
    fn begin_command(&self, command: &'static str, info: &str) {
        let mut a = self.process.activity.lock();
        // Under the activity lock: KILL QUERY reads `command` under it too, so it cannot set the
        // flag for the old statement after this clear.
        if !self.process.conn_killed.load(Ordering::Acquire) {
            self.process.interrupt.clear();
        }
        a.command = command;
        a.info.clear();
        a.info.push_str(info);
        a.since = std::time::Instant::now();
    }

    /// The connection is idle again.
    fn end_command(&self) {
        let mut a = self.process.activity.lock();
        a.command = "Sleep";
        a.since = std::time::Instant::now();
    }

    /// KILL [CONNECTION | QUERY] id. No privilege system: any account may kill any
    /// connection, as one with MariaDB's SUPER may.
    fn kill(&mut self, id: u64, connection: bool) -> Result<Outcome, SqlError> {
        let target = self.inst.processes.lock().get(&id).cloned();
        let Some(p) = target else {
            return Err(SqlError::new(
                1094,
                "HY000",
                format!("Unknown thread id: {id}"),
            ));
        };
        if connection {
            if Arc::ptr_eq(&p, &self.process) {
                // MariaDB answers a session that kills itself with this error, then closes it:
                // the socket stays open until the server has sent it.
                p.conn_killed.store(true, Ordering::Release);
                return Err(SqlError::new(1927, "70100", "Connection was killed"));
            }
            p.kill();
        } else {
            let a = p.activity.lock();
            // An idle connection has no statement to stop; KILL QUERY of the session itself
            // would only interrupt the KILL.
            if a.command != "Sleep" && !Arc::ptr_eq(&p, &self.process) {
                p.interrupt.kill();
            }
        }
        Ok(Outcome::done(0))
    }

    /// Whether an explicit transaction is open (its row locks are held until it ends).
    pub fn in_transaction(&self) -> bool {
        self.txn.as_ref().is_some_and(|t| t.explicit)
    }

    /// Status flags for the client (in transaction, autocommit).
    pub fn status_flags(&self) -> u16 {
        let mut f = 0;
        if self.autocommit {
            f |= status_flag::AUTOCOMMIT;
        }
        if self.txn.as_ref().is_some_and(|t| t.explicit) {
            f |= status_flag::IN_TRANS;
        }
        f
    }

    pub fn warning_count(&self) -> u16 {
        if self.warnings_shown {
            return 0;
        }
        (self.warnings.len() as u64 + self.warnings_dropped).min(65535) as u16
    }

    /// Moves what the running statement raised so far (expression warnings) into the
    /// session's list; returns how many there were.
    fn take_diag(&mut self) -> u64 {
        let d = crate::types::diag::drain();
        let room = crate::types::diag::STORED_MAX.saturating_sub(self.warnings.len());
        let kept = d.warnings.len().min(room);
        self.warnings_dropped += d.count - kept as u64;
        self.warnings.extend(d.warnings.into_iter().take(kept));
        d.count
    }

    pub(crate) fn warn(&mut self, code: u16, message: impl Into<String>) {
        self.warnings.push(Warning {
            level: "Warning",
            code,
            message: message.into(),
        });
    }

    pub(crate) fn note(&mut self, code: u16, message: impl Into<String>) {
        self.warnings.push(Warning {
            level: "Note",
            code,
            message: message.into(),
        });
    }

    /// Runs a COM_QUERY: each `;`-separated statement in turn, stopping at the first error.
    pub fn query(&mut self, sql: &str) -> Vec<Result<Outcome, SqlError>> {
        self.begin_command("Query", sql);
        let r = crate::front::depth::with_statement_stack(|| self.query_inner(sql));
        self.end_command();
        r
    }

    fn query_inner(&mut self, sql: &str) -> Vec<Result<Outcome, SqlError>> {
        self.warnings_shown = false;
        let sql = &*crate::front::parse::executable_comments(sql);
        self.inst.counters.questions.fetch_add(1, Ordering::Relaxed);
        let pieces = crate::front::split::split_statements(sql);
        match pieces.as_slice() {
            [] => return vec![Err(SqlError::empty())],
            [one] => return vec![self.statement(one)],
            [_, second, ..] if !self.multi_statements => {
                // Without CLIENT_MULTI_STATEMENTS, MySQL's parser stops at the `;` and reports
                // what follows as a syntax error; nothing runs.
                let line = 1 + sql[..second.as_ptr() as usize - sql.as_ptr() as usize]
                    .matches('\n')
                    .count();
                return vec![Err(SqlError::syntax(second.trim_start(), line as u64))];
            }
            _ => {}
        }
        // Each statement gets its own result; the first error ends the list, as in MySQL.
        let mut out = Vec::with_capacity(pieces.len());
        for piece in pieces {
            let r = self.statement(piece);
            let failed = r.is_err();
            out.push(r);
            if failed {
                break;
            }
        }
        out
    }

    /// One statement of a text query (the text holds exactly one).
    fn statement(&mut self, sql: &str) -> Result<Outcome, SqlError> {
        // SHOW is parsed here: the parser reads most SHOW forms as one opaque variable name.
        if let Some(r) = show::try_show(self, sql) {
            return r;
        }
        if let Some(r) = crate::admin::user::try_user_statement(self, sql) {
            return r;
        }
        if let Some(r) = self.compat_statement(sql) {
            return r;
        }
        let stmts = crate::front::parse::parse_ast(sql)?;
        self.text.clear();
        self.text.push_str(sql);
        match stmts.as_slice() {
            [one] => self.run(one, None, &[]),
            // The splitter and the parser disagree on where statements end (a construct the
            // splitter does not know): refused rather than guessed at.
            _ => Err(SqlError::syntax(sql.trim_start(), 1)),
        }
    }

    /// Whether the client may send several statements in one text query (it set
    /// CLIENT_MULTI_STATEMENTS at connect, or COM_SET_OPTION later). Embedded sessions may.
    pub fn set_multi_statements(&mut self, on: bool) {
        self.multi_statements = on;
    }

    /// Runs one statement; `plan` when already compiled (prepared statements). The statement
    /// is held to the session's limits: its deadline (if any) is armed for its run, and its
    /// memory charge starts at zero.
    fn run(
        &mut self,
        stmt: &ast::Statement,
        plan: Option<(&Plan, &[usize])>,
        params: &[Value],
    ) -> Result<Outcome, SqlError> {
        let interrupt = &self.process.interrupt;
        let seq = interrupt.begin_statement(self.limits.max_session_mem_used);
        let armed = self
            .limits
            .deadline(matches!(stmt, ast::Statement::Query(_)))
            .map(|(after, reason)| self.inst.deadlines.arm(interrupt, seq, after, reason));
        let r = self.run_statement(stmt, plan, params);
        self.process.interrupt.end_statement();
        if let Some(a) = armed {
            self.inst.deadlines.disarm(a);
        }
        r
    }

    fn run_statement(
        &mut self,
        stmt: &ast::Statement,
        plan: Option<(&Plan, &[usize])>,
        params: &[Value],
    ) -> Result<Outcome, SqlError> {
        use ast::Statement as S;
        if !matches!(stmt, S::ShowVariable { .. }) {
            self.warnings.clear();
            self.warnings_dropped = 0;
        }
        match stmt {
            S::Query(_) | S::Insert(_) | S::Update(_) | S::Delete(_) => {
                let compiled;
                let (plan, order) = match plan {
                    Some(p) => p,
                    None => {
                        let mut c = Compiler::new();
                        compiled = self.compile(stmt, &mut c)?;
                        if c.param_count() > 0 {
                            return Err(SqlError::new(
                                1064,
                                "42000",
                                "You have an error in your SQL syntax: '?' outside a prepared statement",
                            ));
                        }
                        (&compiled, &[][..])
                    }
                };
                let params: Vec<Value> = order.iter().map(|&i| params[i].clone()).collect();
                self.execute_plan(plan, &params)
            }
            S::StartTransaction { modes, .. } => {
                self.commit()?;
                let iso = modes.iter().find_map(|m| match m {
                    ast::TransactionMode::IsolationLevel(l) => Some(isolation_of(l)),
                    _ => None,
                });
                self.begin(iso.unwrap_or(self.isolation));
                Ok(Outcome::done(0))
            }
            S::Commit { .. } => {
                self.commit()?;
                Ok(Outcome::done(0))
            }
            S::Rollback {
                savepoint: None, ..
            } => {
                self.rollback();
                Ok(Outcome::done(0))
            }
            S::Set(set) => self.set(set),
            S::Use(u) => {
                let name = match u {
                    ast::Use::Object(n) | ast::Use::Database(n) | ast::Use::Schema(n) => {
                        n.to_string().trim_matches('`').to_string()
                    }
                    _ => return Err(SqlError::unsupported("this USE")),
                };
                self.use_db(&name)?;
                Ok(Outcome::done(0))
            }
            S::Explain { statement, .. } => self.explain(statement),
            S::Savepoint { name } => self.savepoint(&name.value),
            S::Rollback {
                savepoint: Some(name),
                ..
            } => self.savepoint_end(&name.value, true),
            S::ReleaseSavepoint { name } => self.savepoint_end(&name.value, false),
            S::Kill { modifier, id } => {
                let connection = !matches!(modifier, Some(ast::KillType::Query));
                self.kill(*id, connection)
            }
            _ => {
                // DDL commits the open transaction first, as MySQL does.
                self.commit()?;
                ddl::execute(self, stmt)
            }
        }
    }

    /// SAVEPOINT name. Outside a transaction it does nothing, as in MySQL with autocommit on.
    fn savepoint(&mut self, name: &str) -> Result<Outcome, SqlError> {
        if let Some(open) = self.txn.as_mut() {
            // A second savepoint of the same name replaces the first, as in MySQL.
            if let Some(k) = open
                .savepoints
                .iter()
                .position(|(n, _)| n.eq_ignore_ascii_case(name))
            {
                let (_, old) = open.savepoints.remove(k);
                open.txn.release(old);
            }
            let sp = open.txn.savepoint();
            open.savepoints.push((name.to_string(), sp));
        }
        Ok(Outcome::done(0))
    }

    /// ROLLBACK TO [SAVEPOINT] name (`undo`) or RELEASE SAVEPOINT name. Savepoints set after
    /// `name` go in both cases; `name` itself stays after a rollback, as in MySQL.
    fn savepoint_end(&mut self, name: &str, undo: bool) -> Result<Outcome, SqlError> {
        let missing = || SqlError::new(1305, "42000", format!("SAVEPOINT {name} does not exist"));
        let open = self.txn.as_mut().ok_or_else(missing)?;
        let k = open
            .savepoints
            .iter()
            .position(|(n, _)| n.eq_ignore_ascii_case(name))
            .ok_or_else(missing)?;
        // Newer savepoints are closed first: the engine counts open savepoints, and their
        // writes are undone (or kept) with those of `name`.
        while open.savepoints.len() > k + 1 {
            if let Some((_, sp)) = open.savepoints.pop() {
                open.txn.release(sp);
            }
        }
        if let Some((n, sp)) = open.savepoints.pop() {
            if undo {
                open.txn.rollback_to(sp);
                let again = open.txn.savepoint();
                open.savepoints.push((n, again));
            } else {
                open.txn.release(sp);
            }
        }
        Ok(Outcome::done(0))
    }

    /// Statements the parser does not read, in the forms clients send them:
    /// `START TRANSACTION WITH CONSISTENT SNAPSHOT` (mysqldump --single-transaction; every
    /// zipdb transaction reads one snapshot taken when it begins), and `LOCK TABLES ...` /
    /// `UNLOCK TABLES` (mysqldump and dump files), which are accepted without taking table
    /// locks: LOCK TABLES commits an open transaction first, as in MySQL, and row locks and
    /// snapshots keep each statement consistent; and `ALTER TABLE t DISABLE|ENABLE KEYS`.
    fn compat_statement(&mut self, sql: &str) -> Option<Result<Outcome, SqlError>> {
        let text = sql.trim().trim_end_matches(';');
        if text.contains(';') {
            return None;
        }
        let words: Vec<String> = text
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_uppercase)
            .collect();
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        match w.as_slice() {
            ["START", "TRANSACTION", "WITH", "CONSISTENT", "SNAPSHOT", modes @ ..]
                if modes
                    .iter()
                    .all(|m| matches!(*m, "READ" | "ONLY" | "WRITE")) =>
            {
                Some(self.commit().map(|()| {
                    self.begin(self.isolation);
                    Outcome::done(0)
                }))
            }
            ["LOCK", "TABLE" | "TABLES", _, ..] => Some(self.commit().map(|()| Outcome::done(0))),
            ["UNLOCK", "TABLE" | "TABLES"] => Some(Ok(Outcome::done(0))),
            // Dump files wrap each table's INSERTs in these (a MyISAM speed-up): every index
            // here is maintained as rows go in, as InnoDB does, so they change nothing.
            ["ALTER", "TABLE", _, "DISABLE" | "ENABLE", "KEYS"] => Some(Ok(Outcome::done(0))),
            _ => None,
        }
    }

    fn env_lookup(&self) -> impl Fn(&str, &str) -> Result<Arc<Table>, SqlError> + '_ {
        move |d: &str, t: &str| {
            if crate::catalog::system::is_db(d) {
                crate::catalog::system_table(t, self.inst.sys.clone())
            } else {
                self.inst.table(d, t)
            }
        }
    }

    pub(crate) fn compile(
        &self,
        stmt: &ast::Statement,
        c: &mut Compiler,
    ) -> Result<Plan, SqlError> {
        let lookup = self.env_lookup();
        let vars = |n: &str| self.sysvar(n);
        let env = Env {
            db: self.db.as_deref(),
            lookup: &lookup,
            vars: &vars,
            outer: None,
            sql: Some(&self.text),
            ctes: &[],
        };
        Ok(match stmt {
            ast::Statement::Query(q) => Plan::Select(Box::new(compile_select(q, &env, c)?)),
            ast::Statement::Insert(i) => Plan::Insert(dml::compile_insert(i, &env, c)?),
            ast::Statement::Update(u) => Plan::Update(dml::compile_update(u, &env, c)?),
            ast::Statement::Delete(d) => Plan::Delete(dml::compile_delete(d, &env, c)?),
            _ => return Err(SqlError::internal("not a DML statement")),
        })
    }

    fn ctx<'a>(&'a self, params: &'a [Value]) -> Ctx<'a> {
        Ctx {
            params,
            now: now_packed(),
            db: self.db.as_deref(),
            user: &self.user_at,
            conn_id: self.conn_id,
            last_insert_id: self.last_insert_id,
            version: &self.inst.options.server_version,
            virtual_rows: None,
            sub: None,
            outer: &[],
            killed: Some(&self.process.interrupt),
        }
    }

    fn begin(&mut self, iso: IsolationLevel) {
        let gate = self.inst.gate.read_arc();
        let mut txn = self.inst.db.begin_with(iso);
        txn.set_write_conflicts(self.snapshot_isolation);
        self.txn = Some(OpenTxn {
            txn,
            explicit: true,
            _gate: gate,
            savepoints: Vec::new(),
        });
    }

    /// Commits the open transaction, if any.
    pub fn commit(&mut self) -> Result<(), SqlError> {
        if let Some(t) = self.txn.take() {
            self.inst
                .counters
                .com_commit
                .fetch_add(1, Ordering::Relaxed);
            t.txn.commit().map_err(SqlError::engine)?;
        }
        Ok(())
    }

    /// Rolls back the open transaction, if any.
    pub fn rollback(&mut self) {
        if let Some(t) = self.txn.take() {
            self.inst
                .counters
                .com_rollback
                .fetch_add(1, Ordering::Relaxed);
            t.txn.rollback();
        }
    }

    /// Runs a compiled statement in the open transaction, or in its own (autocommit), with a
    /// diagnostics area for the warnings its expressions raise.
    fn execute_plan(&mut self, plan: &Plan, params: &[Value]) -> Result<Outcome, SqlError> {
        // Strict mode makes INSERT and UPDATE fail on a warning (not IGNORE; DELETE and
        // queries only warn), as STRICT_TRANS_TABLES does in MySQL.
        let strict = match plan {
            Plan::Insert(p) => p.mode != dml::InsertMode::Ignore,
            Plan::Update(p) => !p.ignore,
            Plan::Select(_) | Plan::Delete(_) => false,
        };
        let scope = crate::types::diag::Scope::begin(strict);
        let r = self.execute_plan_in_scope(plan, params);
        if r.is_ok() {
            self.take_diag();
        }
        let rest = scope.finish();
        debug_assert!(r.is_err() || (rest.count == 0 && rest.escalated.is_none()));
        r
    }

    fn execute_plan_in_scope(
        &mut self,
        plan: &Plan,
        params: &[Value],
    ) -> Result<Outcome, SqlError> {
        let c = &self.inst.counters;
        match plan {
            Plan::Select(_) => &c.com_select,
            Plan::Insert(_) => &c.com_insert,
            Plan::Update(_) => &c.com_update,
            Plan::Delete(_) => &c.com_delete,
        }
        .fetch_add(1, Ordering::Relaxed);
        if let Plan::Select(s) = plan {
            if !s.reads_tables() {
                let ctx = self.ctx(params);
                let rows = s.execute(None, &ctx)?;
                return Ok(Outcome::Rows {
                    columns: s.columns.clone(),
                    rows,
                });
            }
        }
        let implicit = self.txn.is_none();
        if implicit {
            if self.autocommit {
                let gate = self.inst.gate.read_arc();
                self.txn = Some(OpenTxn {
                    // A single statement reads one consistent state either way; read committed
                    // spares it snapshot bookkeeping and write conflicts, as autocommit InnoDB
                    // statements never see them.
                    txn: self.inst.db.begin_with(IsolationLevel::ReadCommitted),
                    explicit: false,
                    _gate: gate,
                    savepoints: Vec::new(),
                });
            } else {
                self.begin(self.isolation);
            }
        }
        let now = now_packed();
        let reads = match plan {
            Plan::Select(s) => Some(&**s),
            Plan::Insert(i) => i.select.as_deref(),
            _ => None,
        };
        let virtual_rows = match reads {
            Some(s) => {
                let mut kinds = Vec::new();
                s.virtual_kinds(&mut kinds);
                let mut all = Vec::with_capacity(kinds.len());
                for k in kinds {
                    all.push((k, crate::admin::infoschema::rows(self, k)?));
                }
                (!all.is_empty()).then_some(all)
            }
            _ => None,
        };
        let mut open = self.txn.take().expect("a transaction was just ensured");
        let ctx = Ctx {
            params,
            now,
            db: self.db.as_deref(),
            user: &self.user_at,
            conn_id: self.conn_id,
            last_insert_id: self.last_insert_id,
            version: &self.inst.options.server_version,
            virtual_rows: virtual_rows.as_deref(),
            sub: None,
            outer: &[],
            killed: Some(&self.process.interrupt),
        };
        let sp = (!implicit || !self.autocommit).then(|| open.txn.savepoint());
        let r = match plan {
            Plan::Select(s) => s
                .execute(Some(&mut open.txn), &ctx)
                .map(|rows| Outcome::Rows {
                    columns: s.columns.clone(),
                    rows,
                }),
            Plan::Insert(p) => p
                .execute(&mut open.txn, &ctx)
                .map(|n| self.dml_outcome(n, DmlKind::Insert)),
            Plan::Update(p) => p
                .execute(&mut open.txn, &ctx)
                .map(|n| self.dml_outcome(n, DmlKind::Update)),
            Plan::Delete(p) => p
                .execute(&mut open.txn, &ctx)
                .map(|n| self.dml_outcome(n, DmlKind::Delete)),
        };
        // KILL QUERY during the statement: its result is dropped and its changes undone below,
        // as for any failed statement. (The executor does not look at the flag while it runs,
        // so a long scan finishes its work first.)
        let r = match r {
            Ok(_) if self.process.interrupt.is_set() => Err(self.process.interrupt.error()),
            // Strict mode: a warning raised while computing the rows fails the statement.
            Ok(o) => crate::types::diag::check().map(|()| o),
            r => r,
        };
        // Engine errors name trees; the client wants the table.
        let r = r.map_err(|mut e| {
            if e.code == 1020 {
                let t = match plan {
                    Plan::Select(s) => s.table.as_ref().map(|t| t.def.name.clone()),
                    Plan::Insert(p) => Some(p.table.def.name.clone()),
                    Plan::Update(p) => Some(p.table.def.name.clone()),
                    Plan::Delete(p) => Some(p.table.def.name.clone()),
                };
                e.message = format!(
                    "Record has changed since last read in table '{}'; try restarting transaction",
                    t.unwrap_or_default()
                );
            }
            e
        });
        if let Ok(Outcome::Done { last_insert_id, .. }) = &r {
            if *last_insert_id != 0 {
                self.last_insert_id = *last_insert_id;
            }
        }
        match (&r, sp) {
            (Ok(_), None) => {
                // Autocommit: the statement is the transaction.
                open.txn.commit().map_err(SqlError::engine)?;
            }
            (Ok(_), Some(sp)) => {
                open.txn.release(sp);
                self.txn = Some(open);
            }
            (Err(e), _) if e.rolls_back_transaction() => {
                // Deadlock, lock wait timeout, write conflict: the whole transaction is rolled
                // back (clients retry it without sending ROLLBACK).
                self.inst
                    .counters
                    .rolled_back_on_conflict
                    .fetch_add(1, Ordering::Relaxed);
                open.txn.rollback();
            }
            (Err(_), None) => open.txn.rollback(),
            (Err(_), Some(sp)) => {
                // Statement atomicity: undo this statement only.
                open.txn.rollback_to(sp);
                self.txn = Some(open);
            }
        }
        r
    }

    fn dml_outcome(&mut self, mut n: DmlCount, kind: DmlKind) -> Outcome {
        // The expression warnings come first: MySQL interleaves them with the conversion
        // warnings row by row, but only their number and codes are observable together.
        n.warnings += self.take_diag();
        // MySQL's info strings: multi-row INSERT and INSERT ... SELECT, and every UPDATE (even
        // one that matched nothing); none for DELETE.
        let info = match kind {
            DmlKind::Insert if n.records > 1 || n.from_select => format!(
                "Records: {}  Duplicates: {}  Warnings: {}",
                n.records, n.duplicates, n.warnings
            ),
            DmlKind::Update => format!(
                "Rows matched: {}  Changed: {}  Warnings: {}",
                n.matched, n.changed, n.warnings
            ),
            DmlKind::Insert | DmlKind::Delete => String::new(),
        };
        for (level, code, message) in n.warns {
            self.warnings.push(Warning {
                level,
                code,
                message,
            });
        }
        Outcome::Done {
            affected_rows: n.affected,
            last_insert_id: n.first_id.unwrap_or(0),
            info,
        }
    }

    fn explain(&mut self, stmt: &ast::Statement) -> Result<Outcome, SqlError> {
        let mut c = Compiler::new();
        let plan = self.compile(stmt, &mut c)?;
        let (table, access, filter) = match &plan {
            Plan::Select(s) => (s.table.clone(), s.access.clone(), s.filter.is_some()),
            Plan::Update(u) => (Some(u.table.clone()), u.access.clone(), u.filter.is_some()),
            Plan::Delete(d) => (Some(d.table.clone()), d.access.clone(), d.filter.is_some()),
            Plan::Insert(i) => (Some(i.table.clone()), crate::exec::Access::None, false),
        };
        let (ty, key) = access.describe(table.as_deref());
        let cols = [
            "id",
            "select_type",
            "table",
            "type",
            "possible_keys",
            "key",
            "rows",
            "Extra",
        ];
        let columns: Vec<ColumnMeta> = cols.iter().map(|c| ColumnMeta::text(c)).collect();
        let s = |x: &str| Value::Str(x.to_string());
        let opt = |x: Option<String>| x.map_or(Value::Null, Value::Str);
        let mut rows = vec![vec![
            Value::Int(1),
            s("SIMPLE"),
            opt(table.as_ref().map(|t| t.def.name.clone())),
            if ty.is_empty() { Value::Null } else { s(&ty) },
            opt(key.clone()),
            opt(key),
            Value::Null,
            if filter {
                s("Using where")
            } else {
                Value::Null
            },
        ]];
        // One row per joined table, saying how it is joined (see crate::exec::join).
        if let Plan::Select(sp) = &plan {
            for j in &sp.joins {
                let (ty, key, extra) = match &j.method {
                    crate::exec::join::JoinMethod::Lookup(a) => {
                        let (ty, key) = a.describe(Some(&j.table));
                        let ty = if ty == "const" {
                            "eq_ref".to_string()
                        } else {
                            ty
                        };
                        (ty, key, "index lookup")
                    }
                    crate::exec::join::JoinMethod::Hash { .. } => {
                        ("ALL".to_string(), None, "Using join buffer (hash join)")
                    }
                    crate::exec::join::JoinMethod::Loop { .. } => {
                        ("ALL".to_string(), None, "Using join buffer (nested loop)")
                    }
                };
                let extra = if j.left {
                    format!("{extra}; left join")
                } else {
                    extra.to_string()
                };
                rows.push(vec![
                    Value::Int(1),
                    s("SIMPLE"),
                    s(&j.table.def.name),
                    s(&ty),
                    opt(key.clone()),
                    opt(key),
                    Value::Null,
                    s(&extra),
                ]);
            }
        }
        Ok(Outcome::Rows {
            columns: Arc::new(columns),
            rows,
        })
    }

    fn set(&mut self, set: &ast::Set) -> Result<Outcome, SqlError> {
        match set {
            ast::Set::SingleAssignment {
                variable,
                values,
                scope,
                ..
            } => {
                let name = variable.to_string();
                let v = values.first().ok_or_else(|| SqlError::syntax("SET", 1))?;
                let global = matches!(scope, Some(ast::ContextModifier::Global));
                self.set_var(&name, v, global)?;
            }
            ast::Set::MultipleAssignments { assignments } => {
                for a in assignments {
                    let global = matches!(a.scope, Some(ast::ContextModifier::Global));
                    self.set_var(&a.name.to_string(), &a.value, global)?;
                }
            }
            ast::Set::SetNames { .. } | ast::Set::SetNamesDefault {} => {}
            ast::Set::SetTransaction { modes, .. } => {
                for m in modes {
                    if let ast::TransactionMode::IsolationLevel(l) = m {
                        self.isolation = isolation_of(l);
                    }
                }
            }
            ast::Set::SetTimeZone { .. } => {}
            other => {
                return Err(SqlError::unsupported(&other.to_string()));
            }
        }
        Ok(Outcome::done(0))
    }

    fn set_var(&mut self, raw: &str, value: &ast::Expr, global: bool) -> Result<(), SqlError> {
        let name = raw.to_ascii_lowercase();
        let global = global || name.starts_with("@@global.") || name.starts_with("global ");
        let name = name
            .trim_start_matches("@@")
            .trim_start_matches("session.")
            .trim_start_matches("local.")
            .trim_start_matches("global.")
            .trim_start_matches("session ")
            .trim_start_matches("global ")
            .trim_matches('`')
            .to_string();
        let mut c = Compiler::new();
        let vars = |n: &str| self.sysvar(n);
        let v = match value {
            // `SET x = @saved`: a user variable (NULL when never set, as in MySQL).
            ast::Expr::Identifier(id)
                if id.value.starts_with('@') && !id.value.starts_with("@@") =>
            {
                self.user_vars
                    .get(&id.value[1..].trim_matches('`').to_ascii_lowercase())
                    .cloned()
                    .unwrap_or(Value::Null)
            }
            // `SET x = ON` / `= DEFAULT`: bare words are values here.
            ast::Expr::Identifier(id) => Value::Str(id.value.clone()),
            e => c
                .compile(
                    e,
                    &mut crate::exec::NoScope {
                        vars: &vars,
                        clause: "set",
                    },
                )?
                .eval(&[], &self.ctx(&[]))?,
        };
        if let Some(user_var) = name.strip_prefix('@') {
            self.user_vars
                .insert(user_var.trim_matches('`').to_ascii_lowercase(), v);
            return Ok(());
        }
        // Unknown variables are an error, as in MySQL.
        self.sysvar(&name)?;
        let truth = |v: &Value| -> Result<bool, SqlError> {
            match v {
                Value::Str(s) => match s.to_ascii_uppercase().as_str() {
                    "ON" | "TRUE" | "1" => Ok(true),
                    "OFF" | "FALSE" | "0" => Ok(false),
                    _ => Err(SqlError::new(
                        1231,
                        "42000",
                        format!("Variable '{name}' can't be set to the value of '{s}'"),
                    )),
                },
                other => Ok(other.truth().unwrap_or(false)),
            }
        };
        match name.as_str() {
            "autocommit" => {
                let on = truth(&v)?;
                if on && !self.autocommit {
                    self.commit()?;
                }
                self.autocommit = on;
            }
            "innodb_snapshot_isolation" => self.snapshot_isolation = truth(&v)?,
            "max_prepared_stmt_count"
            | "max_execution_time"
            | "max_statement_time"
            | "max_session_mem_used" => self.set_limit(&name, &v, global)?,
            "innodb_flush_log_at_trx_commit" => {
                return Err(SqlError::new(
                    1238,
                    "HY000",
                    format!(
                        "Variable '{name}' is a read only variable (set it with the server's --flush-policy)"
                    ),
                ))
            }
            // Read by the server at start only: accepting a new value that changes nothing
            // would mislead.
            n if matches!(n, "connect_timeout" | "extra_max_connections" | "max_connections")
                || self.inst.options.server_variables.iter().any(|(k, _)| *k == n) =>
            {
                return Err(SqlError::new(
                    1238,
                    "HY000",
                    format!(
                        "Variable '{name}' is a read only variable (set it with the server's --{} flag or config file)",
                        name.replace('_', "-")
                    ),
                ))
            }
            "tx_isolation" | "transaction_isolation" => {
                let s = v.to_string_lossy().unwrap_or_default().to_ascii_uppercase();
                self.isolation = match s.replace(' ', "-").as_str() {
                    "READ-COMMITTED" | "READ-UNCOMMITTED" => IsolationLevel::ReadCommitted,
                    "REPEATABLE-READ" | "SERIALIZABLE" => IsolationLevel::RepeatableRead,
                    _ => {
                        return Err(SqlError::new(
                            1231,
                            "42000",
                            format!("Variable '{name}' can't be set to the value of '{s}'"),
                        ))
                    }
                };
            }
            _ => {
                self.vars.insert(name, v);
            }
        }
        Ok(())
    }

    /// `SET [GLOBAL] max_execution_time | max_statement_time | max_session_mem_used |
    /// max_prepared_stmt_count` (the last is global only, as in MySQL).
    fn set_limit(&mut self, name: &str, v: &Value, global: bool) -> Result<(), SqlError> {
        let wrong = || {
            SqlError::new(
                1232,
                "42000",
                format!("Incorrect argument type to variable '{name}'"),
            )
        };
        let g = &self.inst.globals;
        match name {
            "max_prepared_stmt_count" if !global => Err(SqlError::new(
                1229,
                "HY000",
                format!("Variable '{name}' is a GLOBAL variable and should be set with SET GLOBAL"),
            )),
            "max_prepared_stmt_count" => {
                let n = v.to_i64().ok_or_else(wrong)?.clamp(0, 1_048_576) as u64;
                g.max_prepared_stmt_count.store(n, Ordering::Relaxed);
                Ok(())
            }
            "max_statement_time" => {
                // Seconds, with fractions (MariaDB).
                let secs = v.to_f64().ok_or_else(wrong)?.clamp(0.0, 31_536_000.0);
                let ms = (secs * 1000.0).round() as u64;
                if global {
                    g.max_statement_time_ms.store(ms, Ordering::Relaxed);
                } else {
                    self.limits.max_statement_time_ms = ms;
                }
                Ok(())
            }
            "max_execution_time" => {
                let ms = v.to_i64().ok_or_else(wrong)?.clamp(0, u32::MAX.into()) as u64;
                if global {
                    g.max_execution_time_ms.store(ms, Ordering::Relaxed);
                } else {
                    self.limits.max_execution_time_ms = ms;
                }
                Ok(())
            }
            _ => {
                // max_session_mem_used: MariaDB's lower bound is 8192 bytes.
                let n = v.to_i64().ok_or_else(wrong)?.max(8192) as u64;
                if global {
                    g.max_session_mem_used.store(n, Ordering::Relaxed);
                } else {
                    self.limits.max_session_mem_used = n;
                }
                Ok(())
            }
        }
    }

    /// A system variable's value (`@@name`).
    pub fn sysvar(&self, name: &str) -> Result<Value, SqlError> {
        // `@name`: a user variable (NULL when never set, as in MySQL). Read when the statement
        // compiles: text statements compile each time they run; a prepared statement keeps
        // the value it had at PREPARE.
        if let Some(u) = name.strip_prefix('@') {
            return Ok(self
                .user_vars
                .get(&u.trim_matches('`').to_ascii_lowercase())
                .cloned()
                .unwrap_or(Value::Null));
        }
        let n = name.to_ascii_lowercase();
        let n = n
            .trim_start_matches("session.")
            .trim_start_matches("global.")
            .trim_start_matches("local.");
        if let Some(v) = self.vars.get(n) {
            return Ok(v.clone());
        }
        show::sysvar_default(self, n).ok_or_else(|| {
            SqlError::new(1193, "HY000", format!("Unknown system variable '{name}'"))
        })
    }

    /// A numeric system variable as the session sees it (set, else its default), for the
    /// server's limits. `name`: lower case, without `@@` or scope. `None` when it is unknown
    /// or holds no non-negative number.
    pub fn sysvar_u64(&self, name: &str) -> Option<u64> {
        let v = match self.vars.get(name) {
            Some(v) => v.clone(),
            None => show::sysvar_default(self, name)?,
        };
        u64::try_from(v.to_i64()?).ok()
    }

    /// Sets a numeric system variable for this session only, as the server does at login
    /// (an interactive client's `wait_timeout` starts as `interactive_timeout`).
    pub fn set_sysvar_u64(&mut self, name: &str, value: u64) {
        self.vars.insert(name.to_string(), Value::UInt(value));
    }

    // ---- Prepared statements ------------------------------------------------------------

    /// COM_STMT_PREPARE.
    pub fn prepare(&mut self, sql: &str) -> Result<PreparedInfo, SqlError> {
        crate::front::depth::with_statement_stack(|| self.prepare_inner(sql))
    }

    fn prepare_inner(&mut self, sql: &str) -> Result<PreparedInfo, SqlError> {
        let mut stmts =
            crate::front::parse::parse_ast(&crate::front::parse::executable_comments(sql))?;
        if stmts.len() != 1 {
            return Err(SqlError::new(
                1064,
                "42000",
                "You have an error in your SQL syntax: a prepared statement holds one statement",
            ));
        }
        let stmt = stmts.pop().expect("one statement");
        self.text.clear();
        self.text.push_str(sql);
        let mut c = Compiler::new();
        let plan = match &stmt {
            ast::Statement::Query(_)
            | ast::Statement::Insert(_)
            | ast::Statement::Update(_)
            | ast::Statement::Delete(_) => Some(self.compile(&stmt, &mut c)?),
            _ => None,
        };
        let columns = match &plan {
            Some(Plan::Select(s)) => s.columns.clone(),
            _ => Arc::new(Vec::new()),
        };
        // The wire gives a statement's parameter count 16 bits (ER_PS_MANY_PARAM).
        if c.param_count() > usize::from(u16::MAX) {
            return Err(SqlError::new(
                1390,
                "HY000",
                "Prepared statement contains too many placeholders",
            ));
        }
        // Counted over all sessions before the statement is kept (ER_MAX_PREPARED_STMT_COUNT).
        let max = self
            .inst
            .globals
            .max_prepared_stmt_count
            .load(Ordering::Relaxed);
        let open = self
            .inst
            .counters
            .prepared_count
            .fetch_add(1, Ordering::AcqRel);
        if open >= max {
            self.inst
                .counters
                .prepared_count
                .fetch_sub(1, Ordering::AcqRel);
            return Err(SqlError::new(
                1461,
                "42000",
                format!(
                    "Can't create more than max_prepared_stmt_count statements (current value: {max})"
                ),
            ));
        }
        let id = self.next_stmt_id;
        self.next_stmt_id = self.next_stmt_id.wrapping_add(1).max(1);
        let info = PreparedInfo {
            id,
            params: c.param_count(),
            columns: columns.clone(),
        };
        self.prepared.insert(
            id,
            Box::new(Prepared {
                sql: sql.to_string(),
                stmt,
                plan,
                version: self.inst.schema_version.load(Ordering::Acquire),
                params: c.param_count(),
                order: c.param_order(),
                columns,
            }),
        );
        Ok(info)
    }

    /// Parameter count of a prepared statement.
    pub fn prepared_params(&self, id: u32) -> Option<usize> {
        self.prepared.get(&id).map(|p| p.params)
    }

    /// COM_STMT_EXECUTE.
    pub fn execute(&mut self, id: u32, params: &[Value]) -> Result<Outcome, SqlError> {
        self.warnings_shown = false;
        self.inst.counters.questions.fetch_add(1, Ordering::Relaxed);
        let Some(mut p) = self.prepared.remove(&id) else {
            return Err(unknown_stmt(id));
        };
        self.begin_command("Execute", &p.sql);
        let r = crate::front::depth::with_statement_stack(|| self.execute_prepared(&mut p, params));
        self.end_command();
        self.prepared.insert(id, p);
        r
    }

    fn execute_prepared(
        &mut self,
        p: &mut Prepared,
        params: &[Value],
    ) -> Result<Outcome, SqlError> {
        if params.len() != p.params {
            return Err(SqlError::new(
                1210,
                "HY000",
                "Incorrect arguments to mysqld_stmt_execute",
            ));
        }
        let version = self.inst.schema_version.load(Ordering::Acquire);
        if p.plan.is_some() && p.version != version {
            // A table changed since PREPARE: compile again (columns must not change shape).
            self.text.clear();
            self.text.push_str(&p.sql);
            let mut c = Compiler::new();
            p.plan = Some(self.compile(&p.stmt, &mut c)?);
            p.order = c.param_order();
            p.version = version;
            if let Some(Plan::Select(s)) = &p.plan {
                if s.columns.len() != p.columns.len() {
                    return Err(SqlError::new(
                        1615,
                        "HY000",
                        format!("Prepared statement needs to be re-prepared: {}", p.sql),
                    ));
                }
            }
        }
        // `p` is out of the session's map while it runs, so no copy of the statement is needed.
        match &p.plan {
            Some(plan) => self.run(&p.stmt, Some((plan, &p.order)), params),
            None => self.run(&p.stmt, None, params),
        }
    }

    /// COM_STMT_CLOSE.
    pub fn close_statement(&mut self, id: u32) {
        if self.prepared.remove(&id).is_some() {
            self.inst
                .counters
                .prepared_count
                .fetch_sub(1, Ordering::Relaxed);
        }
    }

    pub fn has_statement(&self, id: u32) -> bool {
        self.prepared.contains_key(&id)
    }
}

pub(crate) fn unknown_stmt(id: u32) -> SqlError {
    SqlError::new(
        1243,
        "HY000",
        format!("Unknown prepared statement handler ({id}) given to mysqld_stmt_execute"),
    )
}

fn isolation_of(l: &ast::TransactionIsolationLevel) -> IsolationLevel {
    match l {
        ast::TransactionIsolationLevel::ReadCommitted
        | ast::TransactionIsolationLevel::ReadUncommitted => IsolationLevel::ReadCommitted,
        _ => IsolationLevel::RepeatableRead,
    }
}
/// Which statement a `DmlCount` came from (for the OK packet's info string).
#[derive(Clone, Copy)]
enum DmlKind {
    Insert,
    Update,
    Delete,
}
