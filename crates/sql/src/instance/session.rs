//! A client session's state: the [`Session`] struct, its plain accessors, the open
//! transaction, warnings and kill flags.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::lock_api::ArcRwLockReadGuard;
use parking_lot::{Mutex, RawRwLock};
use zipdb_engine::{IsolationLevel, Transaction};

use crate::error::{ErrorKind, SqlError};
use crate::expr::Ctx;
use crate::instance::{Activity, Instance, Process};
use crate::plan::dml::PlanRoot;
use crate::types::diag::Warning;
use crate::types::result::{ColumnMeta, Outcome};
use crate::types::temporal::DateTime;
use crate::types::value::Value;

/// An open transaction and the shared hold on the DDL gate that comes with it.
pub(crate) struct OpenTxn {
    pub(crate) txn: Transaction,
    pub(crate) explicit: bool,
    pub(crate) _gate: ArcRwLockReadGuard<RawRwLock, ()>,
    /// SAVEPOINT names, oldest first; they end with the transaction.
    pub(crate) savepoints: Vec<(String, zipdb_engine::Savepoint)>,
}

/// A prepared statement.
pub(crate) struct Prepared {
    pub(crate) sql: String,
    pub(crate) stmt: crate::front::Statement,
    pub(crate) plan: Option<PlanRoot>,
    pub(crate) version: u64,
    pub(crate) params: usize,
    /// Slot → client parameter index.
    pub(crate) order: Vec<usize>,
    pub(crate) columns: Arc<Vec<ColumnMeta>>,
}

/// One client's session.
pub struct Session {
    pub(crate) inst: Arc<Instance>,
    /// The text of the statement being compiled: result columns are labelled with their
    /// expressions as written, as MySQL does.
    pub(crate) text: String,
    pub(crate) process: Arc<Process>,
    pub(crate) user: String,
    /// Host pattern of the account the session logged in as (SET PASSWORD without FOR).
    pub(crate) host: String,
    /// `user@host` for USER() and CURRENT_USER().
    pub(crate) user_at: String,
    pub(crate) conn_id: u64,
    pub(crate) db: Option<String>,
    pub(crate) autocommit: bool,
    pub(crate) isolation: IsolationLevel,
    /// `innodb_snapshot_isolation`: whether a repeatable-read transaction that writes a row
    /// changed since its snapshot gets error 1020 (first updater wins) or, as by default in
    /// MariaDB 10.11 and in MySQL, locks the row and acts on its newest version.
    pub(crate) snapshot_isolation: bool,
    pub(crate) txn: Option<OpenTxn>,
    pub(crate) last_insert_id: u64,
    pub(crate) warnings: Vec<Warning>,
    /// Warnings the last statement raised past the [`crate::types::diag::STORED_MAX`] kept in
    /// `warnings`: they count in the OK packet, as in MySQL, but SHOW WARNINGS does not list them.
    pub(crate) warnings_dropped: u64,
    /// The last statement was SHOW WARNINGS/ERRORS: it keeps the list but, as in MySQL,
    /// reports no warnings of its own.
    pub(crate) warnings_shown: bool,
    /// `warnings` belong to an earlier statement: the running one uses no tables, so, as in
    /// MariaDB, it did not clear them (`SELECT @@warning_count` reads them) and reports none of
    /// them as its own. Its first condition replaces them ([`Session::fresh_diag`]).
    pub(crate) diag_stale: bool,
    /// Boxed: EXECUTE takes a statement out of the map and puts it back, and the parsed
    /// statement inside is large.
    pub(crate) prepared: HashMap<u32, Box<Prepared>>,
    pub(crate) next_stmt_id: u32,
    /// See [`Session::set_multi_statements`].
    pub(crate) multi_statements: bool,
    pub(crate) limits: crate::runtime::limits::StatementLimits,
    pub(crate) vars: HashMap<String, Value>,
    /// User variables (`SET @x = ...`), by lower-case name. Only SET reads them so far: dump
    /// files save session settings in them and restore from them (`SET @OLD_SQL_MODE =
    /// @@SQL_MODE, ...` ... `SET SQL_MODE = @OLD_SQL_MODE`).
    pub(crate) user_vars: HashMap<String, Value>,
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

impl Instance {
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
        let temp = crate::runtime::spill::SessionTemp::new(self.temp.clone());
        temp.set_max(
            self.globals
                .max_tmp_session_space_usage
                .load(Ordering::Relaxed),
        );
        temp.set_sort_buffer(self.globals.sort_buffer_size.load(Ordering::Relaxed));
        temp.set_tmp_table(self.globals.tmp_memory_table_size.load(Ordering::Relaxed));
        process.interrupt.set_temp(Arc::new(temp));
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
            diag_stale: false,
            prepared: HashMap::new(),
            next_stmt_id: 1,
            multi_statements: true,
            limits: self.globals.session_limits(),
            vars: HashMap::new(),
            user_vars: HashMap::new(),
        }
    }
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
    pub(crate) fn begin_command(&self, command: &'static str, info: &str) {
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
    pub(crate) fn end_command(&self) {
        let mut a = self.process.activity.lock();
        a.command = "Sleep";
        a.since = std::time::Instant::now();
    }

    /// KILL [CONNECTION | QUERY] id. No privilege system: any account may kill any
    /// connection, as one with MariaDB's SUPER may.
    pub(crate) fn kill(&mut self, id: u64, connection: bool) -> Result<Outcome, SqlError> {
        let target = self.inst.processes.lock().get(&id).cloned();
        let Some(p) = target else {
            return Err(SqlError::of(
                ErrorKind::NoSuchThread,
                format!("Unknown thread id: {id}"),
            ));
        };
        if connection {
            if Arc::ptr_eq(&p, &self.process) {
                // MariaDB answers a session that kills itself with this error, then closes it:
                // the socket stays open until the server has sent it.
                p.conn_killed.store(true, Ordering::Release);
                return Err(SqlError::of(
                    ErrorKind::ConnectionKilled,
                    "Connection was killed",
                ));
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
        if self.warnings_shown || self.diag_stale {
            return 0;
        }
        (self.warnings.len() as u64 + self.warnings_dropped).min(65535) as u16
    }

    /// Conditions the last statement raised (`@@warning_count`): errors, warnings and notes,
    /// also those beyond the 64 kept for SHOW WARNINGS.
    pub(crate) fn condition_count(&self) -> u64 {
        self.warnings.len() as u64 + self.warnings_dropped
    }

    /// Errors the last statement raised (`@@error_count`): 1 after a failed statement.
    pub(crate) fn error_count(&self) -> u64 {
        self.warnings.iter().filter(|w| w.level == "Error").count() as u64
    }

    /// Makes `e` the diagnostics of the statement it ended, as MySQL does: SHOW WARNINGS and
    /// SHOW ERRORS list it, `@@error_count` is 1. Warnings raised before it are dropped.
    pub(crate) fn note_failure(&mut self, e: &SqlError) {
        self.clear_diag();
        self.warnings.push(Warning {
            level: "Error",
            code: e.code(),
            message: e.message().to_string(),
        });
    }

    /// Starts the running statement's diagnostics afresh.
    pub(crate) fn clear_diag(&mut self) {
        self.warnings.clear();
        self.warnings_dropped = 0;
        self.diag_stale = false;
    }

    /// Called before the running statement adds a condition: an earlier statement's are
    /// dropped first (see `diag_stale`).
    pub(crate) fn fresh_diag(&mut self) {
        if self.diag_stale {
            self.clear_diag();
        }
    }

    /// Moves what the running statement raised so far (expression warnings) into the
    /// session's list; returns how many there were.
    pub(crate) fn take_diag(&mut self) -> u64 {
        let d = crate::types::diag::drain();
        if d.count > 0 {
            self.fresh_diag();
        }
        let room = crate::types::diag::STORED_MAX.saturating_sub(self.warnings.len());
        let kept = d.warnings.len().min(room);
        self.warnings_dropped += d.count - kept as u64;
        self.warnings.extend(d.warnings.into_iter().take(kept));
        d.count
    }

    pub(crate) fn warn(&mut self, kind: crate::error::ErrorKind, message: impl Into<String>) {
        self.fresh_diag();
        self.warnings.push(Warning {
            level: "Warning",
            code: kind.code(),
            message: message.into(),
        });
    }

    pub(crate) fn note(&mut self, kind: crate::error::ErrorKind, message: impl Into<String>) {
        self.fresh_diag();
        self.warnings.push(Warning {
            level: "Note",
            code: kind.code(),
            message: message.into(),
        });
    }

    pub(crate) fn ctx<'a>(&'a self, params: &'a [Value]) -> Ctx<'a> {
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
}

pub(crate) fn now_packed() -> i64 {
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
