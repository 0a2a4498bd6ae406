//! The statement's diagnostics area: warnings and notes raised while expressions are
//! evaluated (`'abc' + 1`, `1/0`, `DATE('x')`, a date compared with a string that is not one).
//!
//! MySQL raises these from deep inside value conversion, far from anything that holds the
//! statement's state, and so does zipdb: the area is thread-local, installed by the session for
//! the duration of one statement ([`Scope`]), and written through [`warn`] / [`note`] from any
//! conversion. A statement runs on one thread from start to end, so the area cannot see another
//! statement's warnings. Without a scope (unit tests, the embedded API evaluating a default) the
//! calls do nothing.
//!
//! Strict mode: in INSERT and UPDATE (not IGNORE), MySQL turns a warning raised while the
//! statement computes its rows into an error, and the statement fails with it. A strict scope
//! keeps the first such warning as that error ([`Scope::finish`] returns it); notes stay notes.

use std::cell::RefCell;

use crate::error::{ErrorKind, SqlError};

/// A warning or note (SHOW WARNINGS).
#[derive(Debug, Clone)]
pub struct Warning {
    pub level: &'static str,
    pub code: u16,
    pub message: String,
}

/// How many warnings a statement keeps for SHOW WARNINGS (MySQL's default `max_error_count`);
/// the count goes on past it.
pub const STORED_MAX: usize = 64;

struct Area {
    warnings: Vec<Warning>,
    count: u64,
    strict: bool,
    escalated: Option<SqlError>,
}

thread_local! {
    static AREA: RefCell<Option<Area>> = const { RefCell::new(None) };
}

/// What a statement raised.
#[derive(Debug, Default)]
pub struct Diag {
    /// The first [`STORED_MAX`] warnings and notes, in the order raised.
    pub warnings: Vec<Warning>,
    /// All of them, also those past [`STORED_MAX`].
    pub count: u64,
    /// Strict mode: the first warning, as the error that fails the statement.
    pub escalated: Option<SqlError>,
}

/// The diagnostics area of one statement, installed on this thread until [`Scope::finish`] or
/// drop (which restores the area it replaced, so scopes nest).
pub struct Scope {
    prev: Option<Option<Area>>,
}

impl Scope {
    pub fn begin(strict: bool) -> Scope {
        let area = Area {
            warnings: Vec::new(),
            count: 0,
            strict,
            escalated: None,
        };
        Scope {
            prev: Some(AREA.with(|a| a.replace(Some(area)))),
        }
    }

    /// Ends the scope and returns what the statement raised.
    pub fn finish(mut self) -> Diag {
        let area = self.restore();
        area.map_or_else(Diag::default, |a| Diag {
            warnings: a.warnings,
            count: a.count,
            escalated: a.escalated,
        })
    }

    fn restore(&mut self) -> Option<Area> {
        let prev = self.prev.take()?;
        AREA.with(|a| a.replace(prev))
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        self.restore();
    }
}

/// Raises a warning of `kind` (its code from the table of kinds, error/codes.rs); `message`
/// is only formatted when a scope listens.
pub fn warn(kind: ErrorKind, message: impl FnOnce() -> String) {
    raise("Warning", kind, message);
}

/// Raises a note (never escalated to an error).
pub fn note(kind: ErrorKind, message: impl FnOnce() -> String) {
    raise("Note", kind, message);
}

fn raise(level: &'static str, kind: ErrorKind, message: impl FnOnce() -> String) {
    AREA.with(|a| {
        let mut a = a.borrow_mut();
        let Some(area) = a.as_mut() else {
            return;
        };
        if area.strict && level == "Warning" {
            if area.escalated.is_none() {
                // MariaDB sends the code's own SQLSTATE with an escalated warning (1265 keeps
                // 01000, 1441 is 22008): the kind's, from the same table.
                area.escalated = Some(SqlError::of(kind, message()));
            }
            return;
        }
        area.count += 1;
        if area.warnings.len() < STORED_MAX {
            area.warnings.push(Warning {
                level,
                code: kind.code(),
                message: message(),
            });
        }
    });
}

/// Turns strict mode of the installed scope on or off from here on: UPDATE reads the rows to
/// change before changing any when its ORDER BY or a changed key forces that, and MySQL does
/// not fail on warnings raised while reading them then (only on those of the SET expressions).
pub fn set_strict(strict: bool) {
    AREA.with(|a| {
        if let Some(area) = a.borrow_mut().as_mut() {
            area.strict = strict;
        }
    });
}

/// What the scope raised so far, taken out of it (the scope stays installed): the session
/// moves a DML statement's warnings into its count before it formats the info string.
pub fn drain() -> Diag {
    AREA.with(|a| {
        let mut a = a.borrow_mut();
        match a.as_mut() {
            Some(area) => Diag {
                warnings: std::mem::take(&mut area.warnings),
                count: std::mem::take(&mut area.count),
                escalated: None,
            },
            None => Diag::default(),
        }
    })
}

/// The first warning a strict scope turned into an error so far, taken out of the area: DML
/// checks it per row, so the statement fails where MySQL's does, before later rows run into
/// other errors.
pub fn take_escalated() -> Option<SqlError> {
    AREA.with(|a| a.borrow_mut().as_mut().and_then(|a| a.escalated.take()))
}

/// `Err` with the escalated warning, if any (see [`take_escalated`]).
pub fn check() -> Result<(), SqlError> {
    match take_escalated() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `'…'` as MySQL quotes a value in a warning: the text as is, bytes that are not UTF-8 as
/// `\xNN`.
pub fn quoted(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_string(),
        Err(_) => b
            .iter()
            .map(|&c| {
                if c.is_ascii() && !c.is_ascii_control() {
                    (c as char).to_string()
                } else {
                    format!("\\x{c:02X}")
                }
            })
            .collect(),
    }
}

/// 1292 for a string read as a number that was not all number: a note when only spaces
/// followed the number (MySQL's rule), else a warning. `kind` is DOUBLE, DECIMAL or INTEGER.
pub fn truncated_number(kind: &str, text: &[u8], only_spaces: bool) {
    let msg = || format!("Truncated incorrect {kind} value: '{}'", quoted(text));
    if only_spaces {
        note(ErrorKind::TruncatedWrongValue, msg);
    } else {
        warn(ErrorKind::TruncatedWrongValue, msg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_collects_and_nests() {
        warn(ErrorKind::UnknownError, || {
            unreachable!("no scope: the message is not formatted")
        });
        let s = Scope::begin(false);
        warn(ErrorKind::TruncatedWrongValue, || "a".into());
        note(ErrorKind::TruncatedWrongValue, || "b".into());
        {
            let inner = Scope::begin(true);
            warn(ErrorKind::DivisionByZero, || "Division by 0".into());
            let d = inner.finish();
            assert_eq!(d.count, 0);
            let e = d.escalated.expect("strict scope escalates warnings");
            assert_eq!((e.code(), e.sqlstate()), (1365, "22012"));
        }
        warn(ErrorKind::TruncatedWrongValue, || "c".into());
        let d = s.finish();
        assert_eq!(d.count, 3);
        let got: Vec<_> = d.warnings.iter().map(|w| (w.level, &*w.message)).collect();
        assert_eq!(got, [("Warning", "a"), ("Note", "b"), ("Warning", "c")]);
        assert!(AREA.with(|a| a.borrow().is_none()));
    }

    #[test]
    fn strict_scope_keeps_notes_and_the_first_error() {
        let s = Scope::begin(true);
        note(ErrorKind::TruncatedWrongValue, || "n".into());
        warn(ErrorKind::TruncatedWrongValue, || "first".into());
        warn(ErrorKind::DivisionByZero, || "second".into());
        let d = s.finish();
        assert_eq!(d.count, 1);
        assert_eq!(
            d.escalated.map(|e| e.into_message()),
            Some("first".to_string())
        );
    }

    /// What MariaDB 10.11 sends for these warnings escalated in strict mode (an INSERT with
    /// `'1x'` into an INT column, DATE_ADD past 9999-12-31, `1/0`, a bad date in CAST).
    #[test]
    fn an_escalated_warning_keeps_its_codes_sqlstate() {
        for (kind, code, state) in [
            (ErrorKind::WarnDataTruncated, 1265, "01000"),
            (ErrorKind::DatetimeFunctionOverflow, 1441, "22008"),
            (ErrorKind::DivisionByZero, 1365, "22012"),
            (ErrorKind::TruncatedWrongValue, 1292, "22007"),
        ] {
            let s = Scope::begin(true);
            warn(kind, || "m".into());
            let e = s
                .finish()
                .escalated
                .expect("strict scope escalates warnings");
            assert_eq!((e.code(), e.sqlstate()), (code, state));
        }
    }

    #[test]
    fn stored_warnings_are_capped_but_counted() {
        let s = Scope::begin(false);
        for _ in 0..100 {
            warn(ErrorKind::TruncatedWrongValue, || "x".into());
        }
        let d = s.finish();
        assert_eq!((d.count, d.warnings.len()), (100, STORED_MAX));
    }

    #[test]
    fn truncation_levels() {
        let s = Scope::begin(false);
        truncated_number("DOUBLE", b"1 ", true);
        truncated_number("INTEGER", b"1x", false);
        let d = s.finish();
        let got: Vec<_> = d.warnings.iter().map(|w| (w.level, &*w.message)).collect();
        assert_eq!(
            got,
            [
                ("Note", "Truncated incorrect DOUBLE value: '1 '"),
                ("Warning", "Truncated incorrect INTEGER value: '1x'")
            ]
        );
    }
}
