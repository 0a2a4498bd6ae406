//! Where a statement's result goes as the session produces it (docs/design/issue20-sql-engine.md
//! §4.3): the server's wire, or [`Collect`] for the callers that want whole [`Outcome`]s
//! (`Session::query`/`execute`: tests, fuzzing, embedding).
//!
//! For each statement the session calls either `columns`, `row`… and then `end`, or only
//! `end`; `end` comes exactly once per statement. Rows are pushed while the statement is
//! still open (inside its transaction or savepoint), so a sink that fails
//! ([`SinkClosed`]) stops the statement and its changes are undone, as after KILL.

use std::sync::Arc;

use crate::error::SqlError;
use crate::types::result::{ColumnMeta, Outcome};
use crate::types::value::Value;

/// The sink can take no more: its client went away or stopped reading. The statement stops
/// and is undone; nothing more reaches the sink but the `end` that every statement gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SinkClosed;

/// The session's state that a result is announced and ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// Server status flags (`SERVER_STATUS_AUTOCOMMIT`, `SERVER_STATUS_IN_TRANS`), without
    /// the more-results flag: that is `more`.
    pub flags: u16,
    /// The session's warning count at that moment (final only at `end`).
    pub warnings: u16,
    /// Another statement of the same command follows (multi-statements).
    pub more: bool,
}

/// How a statement ended.
#[derive(Debug, Clone, Copy)]
pub enum StatementEnd<'a> {
    /// The result set announced by `columns` is complete.
    Rows(Status),
    /// A statement without a result set.
    Done {
        affected_rows: u64,
        last_insert_id: u64,
        info: &'a str,
        status: Status,
    },
    /// The statement failed: after its `columns` and some rows, or before any. Nothing
    /// follows it within the command.
    Error(&'a SqlError),
}

/// Takes a command's results as they are produced.
pub trait ResultSink {
    /// A result set begins: its columns. Each row that follows has one value per column, of
    /// the column's type (the binary protocol encodes by [`ColumnMeta::wire_type`]).
    fn columns(&mut self, columns: &Arc<Vec<ColumnMeta>>, status: Status)
        -> Result<(), SinkClosed>;
    /// One row of the result set; the slice is only lent (the session may reuse it).
    fn row(&mut self, row: &[Value]) -> Result<(), SinkClosed>;
    /// The statement is over.
    fn end(&mut self, end: StatementEnd<'_>);
    /// LOAD DATA LOCAL: asks the client for the file `name` and lends a reader of its
    /// contents, which ends where the client's file does; dropping it must leave the
    /// connection in step even when the load stopped early. `None` when the client may not
    /// send files (it did not offer to, or the server refuses), which fails the statement
    /// with 1148.
    fn local_infile(&mut self, _name: &str) -> Option<Box<dyn std::io::Read + '_>> {
        None
    }
}

/// A sink that keeps every statement's result whole, as `Session::query` returns them.
#[derive(Default)]
pub(crate) struct Collect {
    pub(crate) results: Vec<Result<Outcome, SqlError>>,
    open: Option<(Arc<Vec<ColumnMeta>>, Vec<Vec<Value>>)>,
}

impl ResultSink for Collect {
    fn columns(&mut self, columns: &Arc<Vec<ColumnMeta>>, _: Status) -> Result<(), SinkClosed> {
        self.open = Some((columns.clone(), Vec::new()));
        Ok(())
    }

    fn row(&mut self, row: &[Value]) -> Result<(), SinkClosed> {
        if let Some((_, rows)) = &mut self.open {
            rows.push(row.to_vec());
        }
        Ok(())
    }

    fn end(&mut self, end: StatementEnd<'_>) {
        let open = self.open.take();
        self.results.push(match end {
            StatementEnd::Rows(_) => {
                let (columns, rows) = open.unwrap_or_default();
                Ok(Outcome::Rows { columns, rows })
            }
            StatementEnd::Done {
                affected_rows,
                last_insert_id,
                info,
                ..
            } => Ok(Outcome::Done {
                affected_rows,
                last_insert_id,
                info: info.to_string(),
            }),
            StatementEnd::Error(e) => Err(e.clone()),
        });
    }
}
