//! Transactions: BEGIN, COMMIT, ROLLBACK, savepoints.

use std::sync::atomic::Ordering;

use sqlparser::ast;
use zipdb_engine::IsolationLevel;

use crate::error::{ErrorKind, SqlError};
use crate::instance::session::{OpenTxn, Session};
use crate::types::result::Outcome;

impl Session {
    /// SAVEPOINT name. Outside a transaction it does nothing, as in MySQL with autocommit on.
    pub(crate) fn savepoint(&mut self, name: &str) -> Result<Outcome, SqlError> {
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
    pub(crate) fn savepoint_end(&mut self, name: &str, undo: bool) -> Result<Outcome, SqlError> {
        let missing = || {
            SqlError::of(
                ErrorKind::SpDoesNotExist,
                format!("SAVEPOINT {name} does not exist"),
            )
        };
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

    pub(crate) fn begin(&mut self, iso: IsolationLevel) {
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
}

pub(crate) fn isolation_of(l: &ast::TransactionIsolationLevel) -> IsolationLevel {
    match l {
        ast::TransactionIsolationLevel::ReadCommitted
        | ast::TransactionIsolationLevel::ReadUncommitted => IsolationLevel::ReadCommitted,
        _ => IsolationLevel::RepeatableRead,
    }
}
