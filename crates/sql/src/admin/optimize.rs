//! `OPTIMIZE [NO_WRITE_TO_BINLOG | LOCAL] TABLE t [, t2 ...]` (issue 19 step 7): FSST tables
//! are rewritten onto a freshly trained symbol table (`zipdb_engine::Tree::optimize`); other
//! formats have nothing to rebuild. The result set is MySQL's (Table, Op, Msg_type,
//! Msg_text), one `status OK` row per table, or an `Error` row and `Operation failed` for a
//! missing one, as MySQL reports per table instead of failing the statement.
//!
//! front/optimize.rs parses the statement. As in MariaDB, a table named twice fails the whole
//! statement (1066) before any table is touched, so a list can make at most one rewrite per
//! table. The list and the rows are charged to the statement's memory budget
//! (`max_session_mem_used`), and KILL QUERY or `max_statement_time` stops the statement
//! between tables (a table's rewrite runs to its end).

use std::collections::HashSet;

use crate::admin::s;
use crate::admin::show::rows;
use crate::error::ErrorKind;
use crate::front::optimize::TableName;
use crate::instance::session::Session;
use crate::runtime::limits::row_bytes;
use crate::types::result::Outcome;
use crate::SqlError;

/// Runs OPTIMIZE on `names`, within the statement's limits (session/ armed them).
pub(crate) fn optimize(sess: &mut Session, names: &[TableName]) -> Result<Outcome, SqlError> {
    let interrupt = sess.process.interrupt.clone();
    let mut tables: Vec<(String, &str)> = Vec::with_capacity(names.len());
    for n in names {
        let db = match &n.db {
            Some(d) => d.clone(),
            None => sess.db.clone().ok_or_else(SqlError::no_db)?,
        };
        interrupt.charge((db.len() + n.table.len() + std::mem::size_of::<TableName>()) as u64)?;
        tables.push((db, &n.table));
    }
    let mut seen = HashSet::with_capacity(tables.len());
    for (db, table) in &tables {
        if !seen.insert((db.as_str(), *table)) {
            return Err(SqlError::of(
                ErrorKind::NonuniqTable,
                format!("Not unique table/alias: '{table}'"),
            ));
        }
    }
    drop(seen);
    // Like other maintenance statements, it commits an open transaction first.
    sess.commit()?;
    let mut out = Vec::new();
    for (db, table) in tables {
        if interrupt.is_set() {
            return Err(interrupt.error());
        }
        let full = format!("{db}.{table}");
        let mut push = |kind: &str, text: String| -> Result<(), SqlError> {
            let row = vec![s(full.clone()), s("optimize"), s(kind), s(text)];
            interrupt.charge(row_bytes(&row))?;
            out.push(row);
            Ok(())
        };
        let t = match sess.inst.table(&db, table) {
            Ok(t) if t.virt.is_none() => t,
            Ok(_) => {
                // information_schema: nothing stored to rebuild.
                push(
                    "note",
                    "The storage engine for the table doesn't support optimize".into(),
                )?;
                continue;
            }
            Err(e) => {
                push("Error", e.into_message())?;
                push("status", "Operation failed".into())?;
                continue;
            }
        };
        let r = std::iter::once(&t.primary)
            .chain(&t.indexes)
            .try_for_each(|tree| tree.optimize().map(drop));
        match r {
            Ok(()) => push("status", "OK".into())?,
            Err(e) => {
                let e = SqlError::engine(e);
                push("Error", e.into_message())?;
                push("status", "Operation failed".into())?;
            }
        }
    }
    // A stop during the last rewrite fails the statement too, as it does a DML statement's.
    if interrupt.is_set() {
        return Err(interrupt.error());
    }
    Ok(rows(&["Table", "Op", "Msg_type", "Msg_text"], out))
}
