//! LOAD DATA's reader: a file's bytes, streamed from any `Read` (a server file, or the packets
//! of a LOCAL load), cut into rows of fields by MariaDB's rules (its `READ_INFO`):
//!
//! - a field ends at the field terminator, a row at the line terminator (both strings);
//! - with an enclosure character, a field that starts with it runs to the enclosure followed
//!   by a terminator (or the end of the file); a doubled enclosure inside stands for one;
//! - the escape character makes the next byte literal, except `0 b n r t Z` (NUL, backspace,
//!   newline, return, tab, Ctrl-Z), and `\N` alone is NULL; so is the unenclosed word `NULL`
//!   when fields may be enclosed;
//! - with `LINES STARTING BY`, everything up to the prefix is skipped, and a line without it
//!   is skipped whole.
//!
//! What bounds it: the reader holds one chunk of input and one row; a row longer than
//! `line_max` bytes (the server passes `max_allowed_packet`, as MariaDB bounds a row) is an
//! error, and a terminator longer than that is refused up front, so no allocation grows with
//! what the file holds beyond that limit.

use std::io::Read;

use crate::error::ErrorKind;
use crate::front::load::Format;
use crate::SqlError;

/// Bytes read from the source at a time.
const CHUNK: usize = 64 * 1024;

/// A field: `None` is SQL NULL.
pub(crate) type Field = Option<Vec<u8>>;

/// The format as bytes, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spec {
    field_term: Vec<u8>,
    enclosed: Option<u8>,
    escaped: Option<u8>,
    line_start: Vec<u8>,
    line_term: Vec<u8>,
}

impl Spec {
    /// The statement's format; the enclosure and escape must be one byte (MariaDB reads only
    /// a character's first byte; zipdb refuses rather than guess).
    pub(crate) fn new(f: &Format) -> Result<Spec, SqlError> {
        let one = |s: &str, what: &str| -> Result<Option<u8>, SqlError> {
            match s.as_bytes() {
                [] => Ok(None),
                [b] => Ok(Some(*b)),
                _ => Err(SqlError::unsupported(&format!(
                    "a multi-byte {what} character in LOAD DATA"
                ))),
            }
        };
        Ok(Spec {
            field_term: f.fields_terminated.as_bytes().to_vec(),
            enclosed: one(&f.enclosed, "ENCLOSED BY")?,
            escaped: one(&f.escaped, "ESCAPED BY")?,
            line_start: f.lines_starting.as_bytes().to_vec(),
            line_term: f.lines_terminated.as_bytes().to_vec(),
        })
    }
}

#[derive(Clone, Copy)]
enum Term {
    Field,
    Line,
    Start,
}

/// A load of a server file: refused as MariaDB refuses it when `secure_file_priv` names
/// another directory (zipdb has no such directory: it reads no server file).
pub(crate) fn server_file_refused() -> SqlError {
    SqlError::of(
        ErrorKind::OptionPreventsStatement,
        "The zipdb server is running with the --secure-file-priv option so it cannot execute \
         this statement",
    )
}

/// Rows of fields from `R`.
pub(crate) struct Reader<R> {
    src: R,
    spec: Spec,
    line_max: usize,
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
    /// Bytes taken into the current row, for `line_max`.
    row_bytes: usize,
}

impl<R: Read> Reader<R> {
    pub(crate) fn new(src: R, spec: Spec, line_max: usize) -> Result<Self, SqlError> {
        let longest = spec
            .field_term
            .len()
            .max(spec.line_term.len())
            .max(spec.line_start.len());
        if longest > line_max {
            return Err(too_long(line_max));
        }
        Ok(Reader {
            src,
            spec,
            line_max,
            buf: Vec::with_capacity(CHUNK),
            pos: 0,
            eof: false,
            row_bytes: 0,
        })
    }

    /// The next row's fields into `row` (cleared first); `false` at the end of the file.
    pub(crate) fn next_row(&mut self, row: &mut Vec<Field>) -> Result<bool, SqlError> {
        row.clear();
        self.row_bytes = 0;
        if !self.spec.line_start.is_empty() && !self.skip_to_line_start()? {
            return Ok(false);
        }
        if self.at_end()? {
            return Ok(false);
        }
        loop {
            let (field, end) = self.field()?;
            self.row_bytes += 1;
            if self.row_bytes > self.line_max {
                return Err(too_long(self.line_max));
            }
            row.push(field);
            if end {
                return Ok(true);
            }
        }
    }

    /// Skips `n` rows (IGNORE n LINES), read by the same rules, so that an enclosed line
    /// terminator does not end a skipped line; how many there were.
    pub(crate) fn skip_rows(&mut self, n: u64) -> Result<u64, SqlError> {
        let mut row = Vec::new();
        let mut done = 0;
        while done < n && self.next_row(&mut row)? {
            done += 1;
        }
        Ok(done)
    }

    /// Reads up to and past the line prefix; `false` when the file ends first. A line
    /// terminator met on the way starts the search again on the next line, as MariaDB does.
    fn skip_to_line_start(&mut self) -> Result<bool, SqlError> {
        loop {
            if self.take(Term::Start)? {
                return Ok(true);
            }
            if self.next_byte()?.is_none() {
                return Ok(false);
            }
        }
    }

    /// One field; whether it ended the row.
    fn field(&mut self) -> Result<(Field, bool), SqlError> {
        let mut out = Vec::new();
        if let Some(q) = self.spec.enclosed {
            if self.peek()? == Some(q) {
                self.pos += 1;
                return self.enclosed(q, out);
            }
        }
        loop {
            if let Some(end) = self.terminator()? {
                return Ok((self.unenclosed_value(out), end));
            }
            let Some(b) = self.next_byte()? else {
                return Ok((self.unenclosed_value(out), true));
            };
            if Some(b) == self.spec.escaped {
                match self.next_byte()? {
                    // `\N` alone is NULL; kept as bytes until the field ends.
                    Some(b'N') if out.is_empty() && self.terminator_or_end()? => {
                        let end = self.terminator()?.unwrap_or(true);
                        return Ok((None, end));
                    }
                    Some(c) => self.push(&mut out, unescape(c))?,
                    // An escape at the very end stands for itself.
                    None => self.push(&mut out, b)?,
                }
            } else {
                self.push(&mut out, b)?;
            }
        }
    }

    /// The unenclosed word `NULL` is NULL when fields may be enclosed (SELECT ... INTO OUTFILE
    /// writes NULL so when it has no escape character).
    fn unenclosed_value(&self, out: Vec<u8>) -> Field {
        if self.spec.enclosed.is_some() && out == b"NULL" {
            None
        } else {
            Some(out)
        }
    }

    /// The rest of a field opened by the enclosure `q`.
    fn enclosed(&mut self, q: u8, mut out: Vec<u8>) -> Result<(Field, bool), SqlError> {
        loop {
            let Some(b) = self.next_byte()? else {
                // Left open at the end of the file: what was read is the field.
                return Ok((Some(out), true));
            };
            if b == q {
                if self.peek()? == Some(q) {
                    self.pos += 1;
                    self.push(&mut out, q)?;
                    continue;
                }
                if let Some(end) = self.terminator()? {
                    return Ok((Some(out), end));
                }
                if self.at_end()? {
                    return Ok((Some(out), true));
                }
                // An enclosure inside the field, not before a terminator: a plain byte.
                self.push(&mut out, b)?;
            } else if Some(b) == self.spec.escaped {
                match self.next_byte()? {
                    Some(c) => self.push(&mut out, unescape(c))?,
                    None => self.push(&mut out, b)?,
                }
            } else {
                self.push(&mut out, b)?;
            }
        }
    }

    /// Consumes a terminator at the cursor: `Some(true)` a line's, `Some(false)` a field's.
    /// The field terminator is tried first, as MariaDB does.
    fn terminator(&mut self) -> Result<Option<bool>, SqlError> {
        let Some(b) = self.peek()? else {
            return Ok(None);
        };
        if self.spec.field_term.first() == Some(&b) && self.take(Term::Field)? {
            return Ok(Some(false));
        }
        if self.spec.line_term.first() == Some(&b) && self.take(Term::Line)? {
            return Ok(Some(true));
        }
        Ok(None)
    }

    /// Whether a terminator or the end of the file is next (nothing consumed).
    fn terminator_or_end(&mut self) -> Result<bool, SqlError> {
        if !self.fill(1)? {
            return Ok(true);
        }
        Ok(self.starts_with(Term::Field)? || self.starts_with(Term::Line)?)
    }

    fn push(&mut self, out: &mut Vec<u8>, b: u8) -> Result<(), SqlError> {
        self.row_bytes += 1;
        if self.row_bytes > self.line_max {
            return Err(too_long(self.line_max));
        }
        out.push(b);
        Ok(())
    }

    fn at_end(&mut self) -> Result<bool, SqlError> {
        Ok(!self.fill(1)?)
    }

    fn peek(&mut self) -> Result<Option<u8>, SqlError> {
        Ok(if self.fill(1)? {
            Some(self.buf[self.pos])
        } else {
            None
        })
    }

    fn next_byte(&mut self) -> Result<Option<u8>, SqlError> {
        let b = self.peek()?;
        if b.is_some() {
            self.pos += 1;
        }
        Ok(b)
    }

    fn term(&self, t: Term) -> &[u8] {
        match t {
            Term::Field => &self.spec.field_term,
            Term::Line => &self.spec.line_term,
            Term::Start => &self.spec.line_start,
        }
    }

    /// Whether the input continues with `t` (nothing consumed; an empty one never matches).
    fn starts_with(&mut self, t: Term) -> Result<bool, SqlError> {
        let n = self.term(t).len();
        Ok(n > 0 && self.fill(n)? && self.buf[self.pos..].starts_with(self.term(t)))
    }

    /// Consumes `t` when the input continues with it.
    fn take(&mut self, t: Term) -> Result<bool, SqlError> {
        let hit = self.starts_with(t)?;
        if hit {
            self.pos += self.term(t).len();
        }
        Ok(hit)
    }

    /// Makes at least `n` bytes available past the cursor, unless the input ends first;
    /// whether it could. `n` is at most a terminator's length, checked against `line_max`.
    fn fill(&mut self, n: usize) -> Result<bool, SqlError> {
        while self.buf.len() - self.pos < n {
            if self.eof {
                return Ok(false);
            }
            if self.pos > 0 {
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
            let have = self.buf.len();
            self.buf.resize(have + CHUNK, 0);
            let got = loop {
                match self.src.read(&mut self.buf[have..]) {
                    Ok(k) => break k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.buf.truncate(have);
                        return Err(read_error(&e));
                    }
                }
            };
            self.buf.truncate(have + got);
            if got == 0 {
                self.eof = true;
            }
        }
        Ok(true)
    }
}

fn unescape(c: u8) -> u8 {
    match c {
        b'0' => 0,
        b'b' => 8,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'Z' => 26,
        c => c,
    }
}

fn too_long(max: usize) -> SqlError {
    SqlError::of(
        ErrorKind::UnknownError,
        format!("LOAD DATA: a row is longer than max_allowed_packet ({max} bytes)"),
    )
}

fn read_error(e: &std::io::Error) -> SqlError {
    SqlError::of(
        ErrorKind::UnknownError,
        format!("LOAD DATA: error reading the file: {e}"),
    )
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
