//! Runs `LOAD DATA LOCAL INFILE`: the client's file, lent by the sink as a `Read`, cut into
//! rows by exec/load.rs and inserted in batches through multi-row INSERT, so that conversions,
//! defaults, duplicates and their warnings are INSERT's.
//!
//! As in MariaDB, a LOCAL load treats duplicates and bad values as INSERT IGNORE does (the
//! server cannot stop the client's stream), unless REPLACE is named; the whole load is one
//! transaction, so a load that fails (the client goes away mid-file) leaves nothing behind.
//! Memory: one batch of rows, at most [`BATCH_ROWS`] rows or [`BATCH_BYTES`] bytes of text.

use crate::error::ErrorKind;
use crate::exec::load::{Reader, Spec};
use crate::front::load::{Load, OnDuplicate, Target};
use crate::instance::session::Session;
use crate::session::sink::Collect;
use crate::session::{Out, Reply};
use crate::types::diag::{Warning, STORED_MAX};
use crate::types::result::Outcome;
use crate::SqlError;

/// Rows per INSERT.
const BATCH_ROWS: usize = 1000;
/// Bytes of INSERT text per batch, past which a batch ends early.
const BATCH_BYTES: usize = 1 << 20;
/// A row's bound when `max_allowed_packet` cannot be read.
const LINE_MAX_DEFAULT: u64 = 16 << 20;

/// What the load did, for the OK packet.
#[derive(Default)]
struct Counts {
    records: u64,
    deleted: u64,
    skipped: u64,
    affected: u64,
}

impl Session {
    pub(super) fn load(&mut self, load: &Load, out: &mut Out<'_>) -> Result<Outcome, SqlError> {
        let spec = Spec::new(&load.format)?;
        if !load.local {
            return Err(crate::exec::load::server_file_refused());
        }
        if !self
            .inst
            .local_infile
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return Err(local_disabled());
        }
        if !load.set.is_empty() || load.targets.iter().any(|t| matches!(t, Target::Var(_))) {
            return Err(SqlError::unsupported("LOAD DATA with @variables or SET"));
        }
        let db = match (&load.table.db, &self.db) {
            (Some(d), _) | (None, Some(d)) => d.clone(),
            (None, None) => {
                return Err(SqlError::of(ErrorKind::NoDbError, "No database selected"));
            }
        };
        let table = (self.env_lookup())(&db, &load.table.table)?;
        let columns: Vec<String> = if load.targets.is_empty() {
            table.def.columns.iter().map(|c| c.name.clone()).collect()
        } else {
            load.targets
                .iter()
                .filter_map(|t| match t {
                    Target::Column(c) => Some(c.clone()),
                    Target::Var(_) => None,
                })
                .collect()
        };
        let head = insert_head(load.duplicates, &db, &load.table.table, &columns);
        let line_max = self
            .sysvar_u64("max_allowed_packet")
            .unwrap_or(LINE_MAX_DEFAULT)
            .min(usize::MAX as u64) as usize;
        // A client that did not offer CLIENT_LOCAL_FILES: MariaDB answers it as it answers
        // `local_infile` OFF.
        let Some(src) = out.sink.local_infile(&load.file) else {
            return Err(local_disabled());
        };
        let mut reader = Reader::new(src, spec, line_max)?;
        // Autocommit: the load is its own transaction. Otherwise it joins the open one (or
        // opens it, as any statement under autocommit=0 does) behind a savepoint, so that a
        // load that fails takes back its earlier batches and nothing else: statement
        // atomicity, as for any failed statement in a transaction.
        let own_txn = self.txn.is_none() && self.autocommit;
        if self.txn.is_none() {
            self.begin(self.isolation);
            if own_txn {
                if let Some(open) = self.txn.as_mut() {
                    // Not an explicit transaction: no IN_TRANS flag while it runs.
                    open.explicit = false;
                }
            }
        }
        let sp = match (own_txn, self.txn.as_mut()) {
            (false, Some(open)) => Some(open.txn.savepoint()),
            _ => None,
        };
        let r = self.load_rows(&mut reader, load, &head, columns.len());
        // The rest of the client's file is read (and dropped) here, before the answer.
        drop(reader);
        match r {
            Ok(n) => {
                match (own_txn, sp) {
                    (true, _) => {
                        if let Some(t) = self.txn.take() {
                            t.txn.commit().map_err(SqlError::engine)?;
                        }
                    }
                    (false, Some(sp)) => {
                        if let Some(open) = self.txn.as_mut() {
                            open.txn.release(sp);
                        }
                    }
                    (false, None) => {}
                }
                let warnings = self.condition_count();
                Ok(Outcome::Done {
                    affected_rows: n.affected,
                    last_insert_id: 0,
                    info: format!(
                        "Records: {}  Deleted: {}  Skipped: {}  Warnings: {}",
                        n.records, n.deleted, n.skipped, warnings
                    ),
                })
            }
            Err(e) => {
                if own_txn {
                    if let Some(t) = self.txn.take() {
                        t.txn.rollback();
                    }
                } else if let (Some(sp), Some(open)) = (sp, self.txn.as_mut()) {
                    // (A conflict error rolled the whole transaction back already: no
                    // transaction is left to undo the statement in.)
                    open.txn.rollback_to(sp);
                }
                Err(e)
            }
        }
    }

    fn load_rows(
        &mut self,
        reader: &mut Reader<Box<dyn std::io::Read + '_>>,
        load: &Load,
        head: &str,
        width: usize,
    ) -> Result<Counts, SqlError> {
        reader.skip_rows(load.ignore_lines)?;
        let mut n = Counts::default();
        let mut row = Vec::new();
        let mut text = String::new();
        let mut more = true;
        while more {
            text.clear();
            text.push_str(head);
            let mut rows = 0u64;
            while rows < BATCH_ROWS as u64 && text.len() < BATCH_BYTES {
                if !reader.next_row(&mut row)? {
                    more = false;
                    break;
                }
                n.records += 1;
                rows += 1;
                self.width_warning(row.len(), width, n.records);
                text.push_str(if rows == 1 { "(" } else { ",(" });
                for i in 0..width {
                    if i > 0 {
                        text.push(',');
                    }
                    match row.get(i) {
                        Some(Some(bytes)) => quote(&mut text, bytes),
                        Some(None) => text.push_str("NULL"),
                        None => text.push_str("DEFAULT"),
                    }
                }
                text.push(')');
            }
            if rows == 0 {
                break;
            }
            // KILL QUERY or the deadline while the rows were read (the batch's own run checks
            // again after it).
            if self.process.interrupt.is_set() {
                return Err(self.process.interrupt.error());
            }
            let affected = self.insert_batch(&text)?;
            n.affected += affected;
            match load.duplicates {
                OnDuplicate::Replace => n.deleted += affected.saturating_sub(rows),
                _ => n.skipped += rows.saturating_sub(affected),
            }
        }
        Ok(n)
    }

    /// 1261 or 1262 for a row of `got` fields where `width` were expected; kept within the
    /// stored warnings' bound, counted beyond it.
    fn width_warning(&mut self, got: usize, width: usize, row: u64) {
        let (kind, message) = if got < width {
            (
                ErrorKind::WarnTooFewRecords,
                format!("Row {row} doesn't contain data for all columns"),
            )
        } else if got > width {
            (
                ErrorKind::WarnTooManyRecords,
                format!(
                    "Row {row} was truncated; it contained more data than there were input \
                     columns"
                ),
            )
        } else {
            return;
        };
        self.fresh_diag();
        if self.warnings.len() < STORED_MAX {
            self.warnings.push(Warning {
                level: "Warning",
                code: kind.code(),
                message,
            });
        } else {
            self.warnings_dropped += 1;
        }
    }

    /// Runs one INSERT of the load's; the rows it changed.
    fn insert_batch(&mut self, text: &str) -> Result<u64, SqlError> {
        let mut stmts = crate::front::parse::parse_ast(text)?;
        let (Some(stmt), None) = (stmts.pop(), stmts.pop()) else {
            return Err(SqlError::internal(
                "LOAD DATA's INSERT is not one statement",
            ));
        };
        let mut c = crate::bind::compile::Compiler::new();
        let root = self.compile(&stmt, &mut c)?;
        let mut sink = Collect::default();
        let mut out = Out {
            sink: &mut sink,
            more: false,
        };
        match self.execute_plan(&root, &[], &mut out)? {
            Reply::Whole(Outcome::Done { affected_rows, .. }) => Ok(affected_rows),
            _ => Err(SqlError::internal("LOAD DATA's INSERT returned rows")),
        }
    }
}

fn local_disabled() -> SqlError {
    SqlError::of(
        ErrorKind::LoadInfileCapabilityDisabled,
        "The used command is not allowed because the zipdb server or client has disabled the \
         local infile capability",
    )
}

/// `INSERT IGNORE|REPLACE INTO `db`.`t` (`a`, ...) VALUES `.
fn insert_head(dup: OnDuplicate, db: &str, table: &str, columns: &[String]) -> String {
    let verb = match dup {
        OnDuplicate::Replace => "REPLACE",
        // LOCAL: errors on rows become warnings, as in MariaDB.
        OnDuplicate::Ignore | OnDuplicate::Error => "INSERT IGNORE",
    };
    let mut s = format!("{verb} INTO {}.{} (", ident(db), ident(table));
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&ident(c));
    }
    s.push_str(") VALUES ");
    s
}

fn ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// A field as a string literal. Bytes that are not UTF-8 are replaced (U+FFFD): the text
/// protocol's strings are UTF-8 here.
fn quote(out: &mut String, bytes: &[u8]) {
    out.push('\'');
    for ch in String::from_utf8_lossy(bytes).chars() {
        match ch {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    out.push('\'');
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
