//! What a conversion lost ([`Issue`]), and where the value was going ([`Dest`]), for the
//! messages.

use crate::error::{ErrorKind, SqlError};

/// Something a conversion lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Issue {
    /// NULL into a NOT NULL column: the implicit default is stored (1048 either way).
    Null,
    /// Outside the type's range: clipped to the nearer end (1264 either way).
    OutOfRange,
    /// Text after a number (`'12abc'`): 1265 either way.
    Truncated,
    /// A string longer than the column: error 1406, or the cut string and warning 1265.
    TooLong,
    /// No number at all (`'abc'`, `''`): 1366 either way; zero is stored.
    BadValue { kind: &'static str, text: String },
    /// Not a date (`'2023-02-30'`), or a date with text after it: error 1292, or warning 1265
    /// with a zero date (or the date read before the text).
    BadTemporal { kind: &'static str, text: String },
    /// A TIMESTAMP outside 1970-01-01 00:00:01 .. 2038-01-19 03:14:07 (UTC): error 1292, or
    /// the zero timestamp and warning 1264.
    TimestampRange { text: String },
    /// A note 1265, never an error: digits past the scale rounded away, trailing spaces cut,
    /// the time of day dropped from a DATE.
    Note,
}

/// Where a value is stored, for the messages.
#[derive(Debug, Clone, Copy)]
pub struct Dest<'a> {
    pub db: &'a str,
    pub table: &'a str,
    pub column: &'a str,
    /// The statement's row (1-based), as "at row N" counts it.
    pub row: u64,
}

impl Issue {
    pub fn is_note(&self) -> bool {
        matches!(self, Issue::Note)
    }

    fn truncated(d: &Dest) -> String {
        format!("Data truncated for column '{}' at row {}", d.column, d.row)
    }

    fn full_name(d: &Dest) -> String {
        format!("`{}`.`{}`.`{}`", d.db, d.table, d.column)
    }

    /// The error of a strict statement.
    pub fn error(&self, d: &Dest) -> SqlError {
        match self {
            Issue::Null => SqlError::not_null(d.column),
            Issue::OutOfRange => SqlError::out_of_range(d.column, d.row),
            Issue::Truncated | Issue::Note => {
                SqlError::of(ErrorKind::WarnDataTruncated, Issue::truncated(d))
            }
            Issue::TooLong => SqlError::too_long(d.column, d.row),
            Issue::BadValue { kind, text } => SqlError::of(
                ErrorKind::TruncatedWrongValueForField,
                format!(
                    "Incorrect {kind} value: '{text}' for column {} at row {}",
                    Issue::full_name(d),
                    d.row
                ),
            ),
            Issue::TimestampRange { text } => SqlError::of(
                ErrorKind::TruncatedWrongValue,
                format!(
                    "Incorrect datetime value: '{text}' for column {} at row {}",
                    Issue::full_name(d),
                    d.row
                ),
            ),
            Issue::BadTemporal { kind, text } => SqlError::of(
                ErrorKind::TruncatedWrongValue,
                format!(
                    "Incorrect {kind} value: '{text}' for column {} at row {}",
                    Issue::full_name(d),
                    d.row
                ),
            ),
        }
    }

    /// The condition of an `IGNORE` statement (or the note of any statement): level, code,
    /// message.
    pub fn warning(&self, d: &Dest) -> (&'static str, ErrorKind, String) {
        match self {
            Issue::Note => ("Note", ErrorKind::WarnDataTruncated, Issue::truncated(d)),
            Issue::TooLong | Issue::BadTemporal { .. } | Issue::Truncated => {
                ("Warning", ErrorKind::WarnDataTruncated, Issue::truncated(d))
            }
            Issue::TimestampRange { .. } => {
                let e = SqlError::out_of_range(d.column, d.row);
                ("Warning", e.kind(), e.into_message())
            }
            other => {
                let e = other.error(d);
                ("Warning", e.kind(), e.into_message())
            }
        }
    }
}
