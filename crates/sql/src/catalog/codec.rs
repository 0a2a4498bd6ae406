//! On-disk encodings of SQL keys and rows, for the byte-ordered B-tree.
//!
//! # Keys
//!
//! Keys compare with memcmp, so each column's encoding sorts as [`Value::sql_cmp`] does, with
//! NULL first, and is self-delimiting, so a composite key (the concatenation) sorts column by
//! column. Each column is a tag byte, `0x00` NULL (nothing follows) or `0x01`, then:
//!
//! | type                        | bytes                                                    |
//! |-----------------------------|----------------------------------------------------------|
//! | signed INT                  | i64 with the sign bit flipped, 8 bytes big-endian        |
//! | unsigned INT                | u64, 8 bytes big-endian                                  |
//! | FLOAT, DOUBLE               | f64 order transform (below), 8 bytes big-endian          |
//! | DECIMAL(p, s)               | i128 mantissa at scale `s`, sign flipped, 16 bytes BE    |
//! | CHAR, VARCHAR, TEXT         | collation weights, PAD SPACE marks, end `0x20 0x02`      |
//! | BINARY, VARBINARY, BLOB     | raw bytes, escaped                                       |
//! | DATE, DATETIME, TIMESTAMP   | packed i64 ([`DateTime::pack`]) sign flipped, 8 bytes BE |
//!
//! Escaped strings turn each `0x00` into `0x00 0xFF` and end with `0x00 0x00`, so a string
//! sorts before any longer string it prefixes.
//!
//! Text keys hold the collation weights, not the text (`'abc'`, `'ABC '` and `'Àbç'` have the
//! same key), so keys are never decoded: rows hold values. The weight of a character is
//! [`fold_char`]'s (utf8mb4_general_ci: upper case, accents of Latin, Greek and Cyrillic letters
//! folded, every character outside the BMP U+FFFD), written as that character's UTF-8, whose
//! byte order is code point order (U+0000 is a plain `0x00`). The collation is PAD SPACE: a
//! string compares as if padded with spaces, so `'a'` sorts after `'a\t'` (a tab weighs below a
//! space) and before `'a!'`. To make memcmp agree, trailing spaces are trimmed, the end of the
//! string is `0x20 0x02`, and each run of spaces is its first space, then `0x01` if the
//! character after the run weighs below a space or `0x03` if above, then its other spaces. The
//! end then sorts after a run that a control character follows and before one that anything
//! else follows, and two runs differ at the mark exactly when PAD SPACE orders them by what
//! follows them. The spaces after a run's mark are skipped when reading, so a `0x02` character
//! after a run is not taken for the end.
//!
//! Table definitions of version 2 (see `catalog.rs`) have these keys. Version 1 (zipdb before
//! accent folding) folded case only, escaped text like binary and ended it with `0x00 0x00`: its
//! keys order and deduplicate non-ASCII text differently (`'É'` and `'E'` were distinct) and
//! this build cannot read them, so a version 1 table with a text column in a key is refused
//! when the catalog loads (the keys of every other type are unchanged).
//!
//! # Rows
//!
//! `0x01` (format version), the column count as a LEB128 varint, a NULL bitmap of
//! `ceil(count / 8)` bytes (bit `i % 8` of byte `i / 8` set: column `i` is NULL), then each
//! non-NULL value, stored exactly:
//!
//! | type                        | bytes                                                    |
//! |-----------------------------|----------------------------------------------------------|
//! | signed INT                  | zigzag varint                                            |
//! | unsigned INT                | varint                                                   |
//! | FLOAT                       | f32, 4 bytes little-endian                               |
//! | DOUBLE                      | f64, 8 bytes little-endian                               |
//! | DECIMAL(p, s)               | zigzag varint of the i128 mantissa at scale `s`          |
//! | strings (text and binary)   | varint byte length, then the bytes                       |
//! | DATE, DATETIME, TIMESTAMP   | zigzag varint of the packed i64                          |
//!
//! A row may hold fewer columns than the table (it was written before an ADD COLUMN): the
//! missing trailing columns decode as NULL for the caller to fill with their defaults.

use std::borrow::Cow;

use crate::types::collation::fold_char;
use crate::types::datetext::read as read_text;
use crate::types::decimal::Decimal;
use crate::types::sqltype::SqlType;
use crate::types::value::Value;

/// Error decoding a stored row or key: the bytes are corrupt (caller adds table/page context).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CodecError(pub String);

const KEY_NULL: u8 = 0x00;
const KEY_VALUE: u8 = 0x01;
const ROW_VERSION: u8 = 1;
const SIGN64: u64 = 1 << 63;
const SIGN128: u128 = 1 << 127;
/// A DECIMAL mantissa holds at most 38 digits.
const DECIMAL_MANT_MAX: i128 = 10i128.pow(crate::types::decimal::DECIMAL_DIGITS_MAX) - 1;

// Coercions. Callers convert values to the column's type first; these accept the near misses
// the API allows (Int/UInt either way, Str/Bytes either way) and degrade anything else to a
// best-effort conversion rather than panicking in the write path.

fn as_i64(v: &Value) -> i64 {
    match *v {
        Value::Int(i) => i,
        Value::UInt(u) => i64::try_from(u).unwrap_or(i64::MAX),
        _ => v.to_i64().unwrap_or(0),
    }
}

fn as_u64(v: &Value) -> u64 {
    match *v {
        Value::UInt(u) => u,
        Value::Int(i) => u64::try_from(i).unwrap_or(0),
        Value::Decimal(d) => d
            .rescale(0)
            .map_or(0, |d| d.mant.clamp(0, i128::from(u64::MAX)) as u64),
        // `as` saturates (and maps NaN to 0).
        _ => v.to_f64().map_or(0, |f| f.round() as u64),
    }
}

/// The double a FLOAT/DOUBLE column holds: a FLOAT key is rounded to f32 as its row is, so a
/// key rebuilt from a stored row matches the key written with it.
fn as_f64(v: &Value, ty: SqlType) -> f64 {
    let f = v.to_f64().unwrap_or(0.0);
    if ty == SqlType::Float {
        f64::from(f as f32)
    } else {
        f
    }
}

/// The mantissa at the column's scale; on overflow (the caller range-checks first) the
/// extreme of the same sign, which still sorts correctly.
fn as_mant(v: &Value, scale: u8) -> i128 {
    let d = v.to_decimal().unwrap_or(Decimal { mant: 0, scale });
    match d.rescale(scale) {
        Some(d) => d.mant,
        None if d.mant < 0 => -DECIMAL_MANT_MAX,
        None => DECIMAL_MANT_MAX,
    }
}

fn as_packed(v: &Value) -> i64 {
    match v {
        Value::Date(p) | Value::DateTime(p) => *p,
        // As comparison reads text (`Value::sql_cmp`), so a key bound and a filter agree.
        Value::Str(s) => read_text(s.as_bytes()).map_or(0, |t| t.dt.pack()),
        Value::Bytes(b) => read_text(b).map_or(0, |t| t.dt.pack()),
        _ => 0,
    }
}

/// The bytes a string column holds. A text column must hold UTF-8 (rows are validated when
/// read), so invalid bytes given for one are stored with replacement characters.
fn as_bytes(v: &Value, text: bool) -> Cow<'_, [u8]> {
    match v {
        Value::Str(s) => Cow::Borrowed(s.as_bytes()),
        Value::Bytes(b) if !text => Cow::Borrowed(b),
        Value::Bytes(b) => match String::from_utf8_lossy(b) {
            Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
            Cow::Owned(s) => Cow::Owned(s.into_bytes()),
        },
        _ => Cow::Owned(v.to_text().unwrap_or_default()),
    }
}

fn zigzag(i: i64) -> u64 {
    ((i << 1) ^ (i >> 63)) as u64
}

fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

fn zigzag128(i: i128) -> u128 {
    ((i << 1) ^ (i >> 127)) as u128
}

fn unzigzag128(u: u128) -> i128 {
    ((u >> 1) as i128) ^ -((u & 1) as i128)
}

/// Maps a double to bits whose unsigned order is its numeric order: negatives have all bits
/// inverted (larger magnitude sorts lower), positives only the sign bit set.
fn f64_order_bits(f: f64) -> u64 {
    // -0.0 == 0.0 in SQL, so they must share a key.
    let f = if f == 0.0 { 0.0 } else { f };
    let bits = f.to_bits();
    if bits & SIGN64 != 0 {
        !bits
    } else {
        bits | SIGN64
    }
}

/// Appends `bytes` (each run between NULs passed through `map`) with its NULs escaped, then
/// the terminator.
fn put_escaped(out: &mut Vec<u8>, bytes: &[u8], map: impl Fn(&[u8], &mut Vec<u8>)) {
    let mut parts = bytes.split(|&b| b == 0);
    if let Some(first) = parts.next() {
        map(first, out);
    }
    for part in parts {
        out.extend_from_slice(&[0x00, 0xFF]);
        map(part, out);
    }
    out.extend_from_slice(&[0x00, 0x00]);
}

/// The end of a text key: sorts between a run of spaces that a control character follows and
/// one that anything else follows, as PAD SPACE compares the end of a string.
const TEXT_END: [u8; 2] = [b' ', 0x02];
/// The byte after the first space of a run: what follows the run weighs below a space.
const RUN_THEN_LOW: u8 = 0x01;
/// The byte after the first space of a run: what follows the run weighs above a space.
const RUN_THEN_HIGH: u8 = 0x03;

/// The collation weights of `s`, so that keys compare as [`crate::types::collation::collate_cmp`] does
/// (the format is in the module documentation).
fn put_text_key(out: &mut Vec<u8>, s: &str) {
    let s = s.trim_end_matches(' ');
    out.reserve(s.len() + 3);
    // A run of spaces is written as its first space, a byte saying whether the character after
    // the run (there is one: trailing spaces are trimmed) weighs below a space, then the rest of
    // its spaces. Only ' ' weighs as a space.
    let run = |out: &mut Vec<u8>, len: usize, next: char| {
        out.push(b' ');
        out.push(if next < ' ' {
            RUN_THEN_LOW
        } else {
            RUN_THEN_HIGH
        });
        out.extend(std::iter::repeat_n(b' ', len - 1));
    };
    if s.is_ascii() {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b' ' {
                let len = b[i..].iter().take_while(|&&c| c == b' ').count();
                run(out, len, char::from(b[i + len]));
                i += len;
            } else {
                out.push(b[i].to_ascii_uppercase());
                i += 1;
            }
        }
    } else {
        let mut buf = [0u8; 4];
        let mut weights = s.chars().map(fold_char).peekable();
        while let Some(w) = weights.next() {
            if w == ' ' {
                let mut len = 1;
                while weights.next_if_eq(&' ').is_some() {
                    len += 1;
                }
                run(
                    out,
                    len,
                    *weights.peek().expect("trailing spaces are trimmed"),
                );
            } else {
                // UTF-8 byte order is code point order.
                out.extend_from_slice(w.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.extend_from_slice(&TEXT_END);
}

/// Length of the text key that `buf` starts with (after its tag byte).
fn skip_text_key(buf: &[u8]) -> Result<usize, CodecError> {
    let mut i = 0;
    while let Some(sp) = buf[i..].iter().position(|&b| b == b' ') {
        let sp = i + sp;
        match buf.get(sp + 1) {
            Some(&b) if b == TEXT_END[1] => return Ok(sp + 2),
            Some(&(RUN_THEN_LOW | RUN_THEN_HIGH)) => {
                // Past the rest of the run: its spaces are not the start of a run or the end.
                i = sp + 2 + buf[sp + 2..].iter().take_while(|&&b| b == b' ').count();
            }
            Some(&b) => {
                return Err(CodecError(format!(
                    "bad byte {b:#04x} after a space in key"
                )))
            }
            None => break,
        }
    }
    Err(CodecError("unterminated text key column".into()))
}

fn put_binary_key(out: &mut Vec<u8>, b: &[u8]) {
    out.reserve(b.len() + 2);
    put_escaped(out, b, |p, out| out.extend_from_slice(p));
}

/// Appends the order-preserving (memcmp) encoding of `v`, a value of a column of type `ty`, to `out`.
/// Every column starts with a byte: 0x00 for NULL (sorts first, as MySQL sorts NULL first), 0x01 otherwise.
/// `v` has already been converted to the column's type by the caller: Int/UInt for SqlType::Int
/// (signed columns get Int, unsigned get UInt — but accept either and convert), Double for Float/Double,
/// Decimal for Decimal (rescale to the column's scale), Str for text types, Bytes for binary types
/// (accept Str for binary and Bytes for text too, using the raw bytes), Date/DateTime for temporal types.
pub fn encode_key(out: &mut Vec<u8>, v: &Value, ty: SqlType) {
    if v.is_null() {
        out.push(KEY_NULL);
        return;
    }
    out.push(KEY_VALUE);
    match ty {
        SqlType::Int {
            unsigned: false, ..
        } => out.extend_from_slice(&((as_i64(v) as u64) ^ SIGN64).to_be_bytes()),
        SqlType::Int { unsigned: true, .. } => out.extend_from_slice(&as_u64(v).to_be_bytes()),
        SqlType::Float | SqlType::Double => {
            out.extend_from_slice(&f64_order_bits(as_f64(v, ty)).to_be_bytes());
        }
        SqlType::Decimal { scale, .. } => {
            out.extend_from_slice(&((as_mant(v, scale) as u128) ^ SIGN128).to_be_bytes());
        }
        SqlType::Char { binary, .. }
        | SqlType::Varchar { binary, .. }
        | SqlType::Text { binary, .. } => match v {
            _ if binary => put_binary_key(out, &as_bytes(v, false)),
            Value::Str(s) => put_text_key(out, s),
            // Bytes for a text column: the text they spell (as the row will store it), so that
            // 'abc' sent as bytes and 'ABC' sent as a string collide in a unique index.
            Value::Bytes(b) => put_text_key(out, &String::from_utf8_lossy(b)),
            _ => put_text_key(out, &v.to_string_lossy().unwrap_or_default()),
        },
        SqlType::Date | SqlType::DateTime { .. } | SqlType::Timestamp { .. } => {
            out.extend_from_slice(&((as_packed(v) as u64) ^ SIGN64).to_be_bytes());
        }
    }
}

/// Length in bytes of the one encoded key column at the start of `buf`, or an error if malformed.
pub fn skip_key(buf: &[u8], ty: SqlType) -> Result<usize, CodecError> {
    let fixed = match ty {
        SqlType::Decimal { .. } => 16,
        SqlType::Char { .. } | SqlType::Varchar { .. } | SqlType::Text { .. } => 0,
        _ => 8,
    };
    match buf.first() {
        Some(&KEY_NULL) => return Ok(1),
        Some(&KEY_VALUE) => {}
        Some(&b) => return Err(CodecError(format!("bad key column tag {b:#04x}"))),
        None => return Err(CodecError("empty key column".into())),
    }
    if fixed > 0 {
        return if buf.len() > fixed {
            Ok(1 + fixed)
        } else {
            Err(CodecError(format!("truncated {}-byte key column", fixed)))
        };
    }
    if ty.is_text() {
        return Ok(1 + skip_text_key(&buf[1..])?);
    }
    let mut i = 1;
    while let Some(z) = buf[i..].iter().position(|&b| b == 0) {
        let z = i + z;
        match buf.get(z + 1) {
            Some(0x00) => return Ok(z + 2),
            Some(0xFF) => i = z + 2,
            Some(&b) => return Err(CodecError(format!("bad escape 0x00 {b:#04x} in key"))),
            None => break,
        }
    }
    Err(CodecError("unterminated string key column".into()))
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_varint128(out: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends the row encoding of `values` (one per column of `types`) to `out`.
pub fn encode_row(out: &mut Vec<u8>, values: &[Value], types: &[SqlType]) {
    debug_assert_eq!(values.len(), types.len(), "one value per column");
    let n = values.len().min(types.len());
    out.push(ROW_VERSION);
    put_varint(out, n as u64);
    let bitmap = out.len();
    out.resize(bitmap + n.div_ceil(8), 0);
    for (i, (v, &ty)) in values.iter().zip(types).enumerate() {
        if v.is_null() {
            out[bitmap + i / 8] |= 1 << (i % 8);
            continue;
        }
        match ty {
            SqlType::Int {
                unsigned: false, ..
            } => put_varint(out, zigzag(as_i64(v))),
            SqlType::Int { unsigned: true, .. } => put_varint(out, as_u64(v)),
            SqlType::Float => out.extend_from_slice(&(as_f64(v, ty) as f32).to_le_bytes()),
            SqlType::Double => out.extend_from_slice(&as_f64(v, ty).to_le_bytes()),
            SqlType::Decimal { scale, .. } => put_varint128(out, zigzag128(as_mant(v, scale))),
            SqlType::Char { binary, .. }
            | SqlType::Varchar { binary, .. }
            | SqlType::Text { binary, .. } => {
                let b = as_bytes(v, !binary);
                put_varint(out, b.len() as u64);
                out.extend_from_slice(&b);
            }
            SqlType::Date | SqlType::DateTime { .. } | SqlType::Timestamp { .. } => {
                put_varint(out, zigzag(as_packed(v)));
            }
        }
    }
}

const TRUNCATED: &str = "truncated value";

/// A cursor over a stored row. Errors are static strings; the caller adds the column index.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, &'static str> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = *self.buf.get(self.pos).ok_or(TRUNCATED)?;
            self.pos += 1;
            if shift == 63 && b > 1 {
                return Err("varint overflows 64 bits");
            }
            v |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    fn varint128(&mut self) -> Result<u128, &'static str> {
        let mut v = 0u128;
        let mut shift = 0;
        loop {
            let b = *self.buf.get(self.pos).ok_or(TRUNCATED)?;
            self.pos += 1;
            if shift == 126 && b > 3 {
                return Err("varint overflows 128 bits");
            }
            v |= u128::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    /// The next `n` bytes, checked against what is left before anything is allocated.
    fn take(&mut self, n: u64) -> Result<&'a [u8], &'static str> {
        let rest = &self.buf[self.pos..];
        if n > rest.len() as u64 {
            return Err("length runs past the end of the row");
        }
        let n = n as usize;
        self.pos += n;
        Ok(&rest[..n])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], &'static str> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N as u64).map_err(|_| TRUNCATED)?);
        Ok(a)
    }

    fn value(&mut self, ty: SqlType) -> Result<Value, &'static str> {
        Ok(match ty {
            SqlType::Int {
                unsigned: false, ..
            } => Value::Int(unzigzag(self.varint()?)),
            SqlType::Int { unsigned: true, .. } => Value::UInt(self.varint()?),
            SqlType::Float => Value::Double(f64::from(f32::from_le_bytes(self.array()?))),
            SqlType::Double => Value::Double(f64::from_le_bytes(self.array()?)),
            SqlType::Decimal { scale, .. } => Value::Decimal(Decimal {
                mant: self.decimal()?,
                scale,
            }),
            SqlType::Char { binary, .. }
            | SqlType::Varchar { binary, .. }
            | SqlType::Text { binary, .. } => {
                let n = self.varint()?;
                let b = self.take(n)?;
                if binary {
                    Value::Bytes(b.to_vec())
                } else {
                    let s = std::str::from_utf8(b).map_err(|_| "invalid UTF-8 in a text column")?;
                    Value::Str(s.to_owned())
                }
            }
            SqlType::Date => Value::Date(unzigzag(self.varint()?)),
            SqlType::DateTime { .. } | SqlType::Timestamp { .. } => {
                Value::DateTime(unzigzag(self.varint()?))
            }
        })
    }

    /// [`Reader::value`] into `slot`, reusing the buffer of the text or bytes it holds.
    fn value_into(&mut self, ty: SqlType, slot: &mut Value) -> Result<(), &'static str> {
        match ty {
            SqlType::Char { binary, .. }
            | SqlType::Varchar { binary, .. }
            | SqlType::Text { binary, .. } => {
                let n = self.varint()?;
                let b = self.take(n)?;
                match (binary, slot) {
                    (true, Value::Bytes(old)) => {
                        old.clear();
                        old.extend_from_slice(b);
                    }
                    (true, slot) => *slot = Value::Bytes(b.to_vec()),
                    (false, slot) => {
                        let s =
                            std::str::from_utf8(b).map_err(|_| "invalid UTF-8 in a text column")?;
                        match slot {
                            Value::Str(old) => {
                                old.clear();
                                old.push_str(s);
                            }
                            slot => *slot = Value::Str(s.to_owned()),
                        }
                    }
                }
            }
            other => *slot = self.value(other)?,
        }
        Ok(())
    }

    fn decimal(&mut self) -> Result<i128, &'static str> {
        let m = unzigzag128(self.varint128()?);
        // Out-of-range mantissas would make later arithmetic overflow: refuse them here.
        if m.unsigned_abs() > DECIMAL_MANT_MAX as u128 {
            return Err("decimal mantissa has more than 38 digits");
        }
        Ok(m)
    }

    /// Moves past a value without building it (text is not checked for UTF-8).
    fn skip(&mut self, ty: SqlType) -> Result<(), &'static str> {
        match ty {
            SqlType::Float => self.array::<4>().map(drop),
            SqlType::Double => self.array::<8>().map(drop),
            SqlType::Decimal { .. } => self.decimal().map(drop),
            SqlType::Char { .. } | SqlType::Varchar { .. } | SqlType::Text { .. } => {
                let n = self.varint()?;
                self.take(n).map(drop)
            }
            _ => self.varint().map(drop),
        }
    }
}

fn decode(
    buf: &[u8],
    types: &[SqlType],
    wanted: Option<&[bool]>,
) -> Result<Vec<Value>, CodecError> {
    let mut row = Vec::with_capacity(types.len());
    decode_into(buf, types, wanted, &mut row)?;
    Ok(row)
}

/// Decodes into `row`, reusing its vector and the buffers of the text values it holds (a
/// scan decodes every row into the same `row`: no allocation per row for fixed-size text).
fn decode_into(
    buf: &[u8],
    types: &[SqlType],
    wanted: Option<&[bool]>,
    row: &mut Vec<Value>,
) -> Result<(), CodecError> {
    let mut r = Reader { buf, pos: 0 };
    match buf.first() {
        Some(&ROW_VERSION) => r.pos = 1,
        Some(v) => return Err(CodecError(format!("unknown row format version {v}"))),
        None => return Err(CodecError("empty row".into())),
    }
    let n = r
        .varint()
        .map_err(|e| CodecError(format!("column count: {e}")))?;
    if n > types.len() as u64 {
        return Err(CodecError(format!(
            "row has {n} columns, the table {}",
            types.len()
        )));
    }
    let n = n as usize;
    let bitmap = r
        .take(n.div_ceil(8) as u64)
        .map_err(|_| CodecError("truncated NULL bitmap".into()))?;
    if !n.is_multiple_of(8) && bitmap[n / 8] >> (n % 8) != 0 {
        return Err(CodecError("NULL bitmap marks columns past the last".into()));
    }
    row.resize(types.len(), Value::Null);
    for (i, &ty) in types[..n].iter().enumerate() {
        let slot = &mut row[i];
        if bitmap[i / 8] & (1 << (i % 8)) != 0 {
            *slot = Value::Null;
            continue;
        }
        let read = match wanted {
            Some(w) if !w.get(i).copied().unwrap_or(false) => {
                r.skip(ty).map(|()| *slot = Value::Null)
            }
            _ => r.value_into(ty, slot),
        };
        read.map_err(|e| CodecError(format!("column {i}: {e}")))?;
    }
    if r.pos != buf.len() {
        return Err(CodecError(format!(
            "{} bytes of garbage after the last of {n} columns",
            buf.len() - r.pos
        )));
    }
    for slot in &mut row[n..] {
        *slot = Value::Null;
    }
    Ok(())
}

/// Decodes a whole row. A row with fewer stored columns than `types` gets Value::Null for the
/// missing trailing ones (so a later ADD COLUMN can fill defaults). More columns, bad lengths,
/// bad UTF-8 in a text column, trailing garbage: CodecError naming the column index and what was wrong.
pub fn decode_row(buf: &[u8], types: &[SqlType]) -> Result<Vec<Value>, CodecError> {
    decode(buf, types, None)
}

/// Decodes only the columns whose `wanted[i]` is true (others are Value::Null), skipping the rest cheaply.
///
/// The whole row's structure is still checked (the same errors as [`decode_row`]), except that
/// skipped text is not checked for UTF-8. Columns past the end of `wanted` are not wanted.
pub fn decode_row_some(
    buf: &[u8],
    types: &[SqlType],
    wanted: &[bool],
) -> Result<Vec<Value>, CodecError> {
    decode(buf, types, Some(wanted))
}

/// [`decode_row_some`] into `row`, reusing its allocations.
pub fn decode_row_some_into(
    buf: &[u8],
    types: &[SqlType],
    wanted: &[bool],
    row: &mut Vec<Value>,
) -> Result<(), CodecError> {
    decode_into(buf, types, Some(wanted), row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::temporal::DateTime;
    use proptest::prelude::*;
    use proptest::sample::Index;
    use std::cmp::Ordering;

    const TYPES: &[SqlType] = &[
        SqlType::Int {
            bytes: 8,
            unsigned: false,
        },
        SqlType::Int {
            bytes: 4,
            unsigned: true,
        },
        SqlType::Float,
        SqlType::Double,
        SqlType::Decimal {
            precision: 12,
            scale: 3,
        },
        SqlType::Decimal {
            precision: 38,
            scale: 10,
        },
        SqlType::Varchar {
            len: 16,
            binary: false,
        },
        SqlType::Char {
            len: 8,
            binary: false,
        },
        SqlType::Text {
            max: 65535,
            binary: false,
        },
        SqlType::Varchar {
            len: 16,
            binary: true,
        },
        SqlType::Text {
            max: 255,
            binary: true,
        },
        SqlType::Date,
        SqlType::DateTime { fsp: 6 },
        SqlType::Timestamp { fsp: 0 },
    ];
    const INT: SqlType = SqlType::Int {
        bytes: 4,
        unsigned: false,
    };
    const UINT: SqlType = SqlType::Int {
        bytes: 8,
        unsigned: true,
    };
    const VARCHAR: SqlType = SqlType::Varchar {
        len: 10,
        binary: false,
    };
    const VARBINARY: SqlType = SqlType::Varchar {
        len: 10,
        binary: true,
    };

    fn any_type() -> impl Strategy<Value = SqlType> {
        proptest::sample::select(TYPES)
    }

    fn non_null(ty: SqlType) -> BoxedStrategy<Value> {
        match ty {
            SqlType::Int {
                unsigned: false, ..
            } => prop_oneof![any::<i64>(), Just(i64::MIN), Just(i64::MAX), -3i64..3]
                .prop_map(Value::Int)
                .boxed(),
            SqlType::Int { unsigned: true, .. } => {
                prop_oneof![any::<u64>(), Just(u64::MAX), Just(1 << 63), 0u64..3]
                    .prop_map(Value::UInt)
                    .boxed()
            }
            SqlType::Float => prop_oneof![
                any::<f32>().prop_filter("not NaN", |f| !f.is_nan()),
                -2.0f32..2.0,
                Just(0.0),
                Just(-0.0),
            ]
            .prop_map(|f| Value::Double(f64::from(f)))
            .boxed(),
            SqlType::Double => prop_oneof![
                any::<f64>().prop_filter("not NaN", |f| !f.is_nan()),
                -2.0f64..2.0,
                Just(0.0),
                Just(-0.0),
                Just(f64::NEG_INFINITY),
            ]
            .prop_map(Value::Double)
            .boxed(),
            SqlType::Decimal { precision, scale } => {
                let max = 10i128.pow(u32::from(precision)) - 1;
                // A mantissa at the column's scale, sometimes given at a smaller scale (as
                // a literal would be), which rescales exactly.
                (
                    prop_oneof![-max..=max, Just(max), Just(-max), -1000i128..1000],
                    0..=scale,
                )
                    .prop_map(move |(m, s)| {
                        Value::Decimal(Decimal {
                            mant: m / 10i128.pow(u32::from(scale - s)),
                            scale: s,
                        })
                    })
                    .boxed()
            }
            t if t.is_text() => {
                "[aAbBeEsSzZ \\x00\\x01\\x02\\t\\x1f!éÉèıIßЙ😀\u{FFFD}\u{FFFF}]{0,5} {0,2}"
                    .prop_map(Value::Str)
                    .boxed()
            }
            SqlType::Char { .. } | SqlType::Varchar { .. } | SqlType::Text { .. } => {
                let byte = prop_oneof![Just(0u8), Just(0xFF), Just(b'a'), Just(b'A'), any::<u8>()];
                proptest::collection::vec(byte, 0..6)
                    .prop_map(Value::Bytes)
                    .boxed()
            }
            SqlType::Date => (0u16..=9999, 0u8..=12, 0u8..=31)
                .prop_map(|(year, month, day)| {
                    let d = DateTime {
                        year,
                        month,
                        day,
                        ..DateTime::default()
                    };
                    Value::Date(d.pack())
                })
                .boxed(),
            SqlType::DateTime { .. } | SqlType::Timestamp { .. } => (
                (0u16..=9999, 0u8..=12, 0u8..=31),
                (
                    0u8..24,
                    0u8..60,
                    0u8..60,
                    prop_oneof![Just(0u32), 0u32..1_000_000],
                ),
            )
                .prop_map(|((year, month, day), (hour, minute, second, micro))| {
                    let d = DateTime {
                        year,
                        month,
                        day,
                        hour,
                        minute,
                        second,
                        micro,
                    };
                    Value::DateTime(d.pack())
                })
                .boxed(),
        }
    }

    fn value(ty: SqlType) -> BoxedStrategy<Value> {
        prop_oneof![1 => Just(Value::Null), 6 => non_null(ty)].boxed()
    }

    /// Column types and a row of values for them.
    fn row(len: std::ops::Range<usize>) -> impl Strategy<Value = (Vec<SqlType>, Vec<Value>)> {
        proptest::collection::vec(any_type(), len).prop_flat_map(|tys| {
            let vals: Vec<_> = tys.iter().map(|&t| value(t)).collect();
            (Just(tys), vals)
        })
    }

    fn key(v: &Value, ty: SqlType) -> Vec<u8> {
        let mut k = Vec::new();
        encode_key(&mut k, v, ty);
        k
    }

    fn composite(vals: &[Value], tys: &[SqlType]) -> Vec<u8> {
        let mut k = Vec::new();
        for (v, &t) in vals.iter().zip(tys) {
            encode_key(&mut k, v, t);
        }
        k
    }

    fn encoded(vals: &[Value], tys: &[SqlType]) -> Vec<u8> {
        let mut buf = Vec::new();
        encode_row(&mut buf, vals, tys);
        buf
    }

    /// What a column of type `ty` gives back for `v`: FLOAT through f32, decimals at the
    /// column's scale.
    fn stored(v: &Value, ty: SqlType) -> Value {
        match (v, ty) {
            (Value::Double(d), SqlType::Float) => Value::Double(f64::from(*d as f32)),
            (Value::Decimal(d), SqlType::Decimal { scale, .. }) => {
                Value::Decimal(d.rescale(scale).expect("in range"))
            }
            _ => v.clone(),
        }
    }

    /// Equal by variant and payload (doubles bit for bit).
    fn same(a: &Value, b: &Value) -> bool {
        use Value::*;
        match (a, b) {
            (Null, Null) => true,
            (Int(x), Int(y)) | (Date(x), Date(y)) | (DateTime(x), DateTime(y)) => x == y,
            (UInt(x), UInt(y)) => x == y,
            (Double(x), Double(y)) => x.to_bits() == y.to_bits(),
            (Decimal(x), Decimal(y)) => x.mant == y.mant && x.scale == y.scale,
            (Str(x), Str(y)) => x == y,
            (Bytes(x), Bytes(y)) => x == y,
            _ => false,
        }
    }

    proptest! {
        /// Rows decoded one after another into one buffer (as a scan does) equal rows
        /// decoded fresh, whatever the buffer held before: text buffers reused, NULLs,
        /// unwanted columns and missing trailing columns cleared.
        #[test]
        fn decoding_into_a_reused_row_equals_decoding_fresh(
            (tys, rows) in proptest::collection::vec(any_type(), 1..=5).prop_flat_map(|tys| {
                let row: Vec<_> = tys
                    .iter()
                    .map(|&t| prop_oneof![1 => Just(Value::Null), 4 => value(t)])
                    .collect();
                let rows = proptest::collection::vec(
                    (row, proptest::collection::vec(any::<bool>(), tys.len()), 0..=tys.len()),
                    1..6,
                );
                (Just(tys), rows)
            })
        ) {
            let mut reused = vec![Value::Str("left over".into()); 2];
            for (values, wanted, stored) in rows {
                let mut buf = Vec::new();
                encode_row(&mut buf, &values[..stored], &tys[..stored]);
                let fresh = decode_row_some(&buf, &tys, &wanted);
                let into = decode_row_some_into(&buf, &tys, &wanted, &mut reused);
                prop_assert_eq!(into.is_ok(), fresh.is_ok());
                if let Ok(fresh) = fresh {
                    prop_assert_eq!(format!("{:?}", reused), format!("{:?}", fresh));
                }
            }
        }

        #[test]
        fn key_order_matches_sql_order(
            (ty, a, b) in any_type().prop_flat_map(|t| (Just(t), value(t), value(t)))
        ) {
            let (ka, kb) = (key(&a, ty), key(&b, ty));
            prop_assert_eq!(ka.cmp(&kb), a.order_cmp(&b), "{:?}: {:?} vs {:?}", ty, a, b);
            prop_assert_eq!(skip_key(&ka, ty), Ok(ka.len()));
            prop_assert_eq!(skip_key(&kb, ty), Ok(kb.len()));
        }

        #[test]
        fn composite_keys_order_column_by_column_and_skip_exactly(
            (tys, a, b) in proptest::collection::vec(any_type(), 2..=3).prop_flat_map(|tys| {
                let a: Vec<_> = tys.iter().map(|&t| value(t)).collect();
                let b: Vec<_> = tys.iter().map(|&t| value(t)).collect();
                (Just(tys), a, b)
            })
        ) {
            let expected = a
                .iter()
                .zip(&b)
                .map(|(x, y)| x.order_cmp(y))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal);
            let (ka, kb) = (composite(&a, &tys), composite(&b, &tys));
            prop_assert_eq!(ka.cmp(&kb), expected);
            for (k, vals) in [(&ka, &a), (&kb, &b)] {
                let mut pos = 0;
                for (v, &t) in vals.iter().zip(&tys) {
                    let n = skip_key(&k[pos..], t).map_err(|e| TestCaseError::fail(e.0))?;
                    prop_assert_eq!(n, key(v, t).len());
                    pos += n;
                }
                prop_assert_eq!(pos, k.len());
            }
        }

        #[test]
        fn rows_round_trip(
            (tys, vals) in row(0..12),
            wanted in proptest::collection::vec(any::<bool>(), 12),
        ) {
            let buf = encoded(&vals, &tys);
            let back = decode_row(&buf, &tys).map_err(|e| TestCaseError::fail(e.0))?;
            prop_assert_eq!(back.len(), vals.len());
            for ((v, b), &t) in vals.iter().zip(&back).zip(&tys) {
                prop_assert!(same(&stored(v, t), b), "{:?}: {:?} came back as {:?}", t, v, b);
            }
            let wanted = &wanted[..tys.len()];
            let some = decode_row_some(&buf, &tys, wanted).map_err(|e| TestCaseError::fail(e.0))?;
            for (i, (b, s)) in back.iter().zip(&some).enumerate() {
                let expected = if wanted[i] { b.clone() } else { Value::Null };
                prop_assert!(same(&expected, s), "column {}: {:?} vs {:?}", i, expected, s);
            }
        }

        #[test]
        fn random_bytes_never_panic(
            tys in proptest::collection::vec(any_type(), 0..6),
            bytes in prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..48),
                // Mostly past the header, to reach the values.
                (0u8..7, 0u8..4, proptest::collection::vec(any::<u8>(), 0..48))
                    .prop_map(|(n, nulls, rest)| [vec![1, n, nulls], rest].concat()),
            ],
        ) {
            let _ = decode_row(&bytes, &tys);
            let _ = decode_row_some(&bytes, &tys, &[true, false, true]);
            for &t in &tys {
                if let Ok(n) = skip_key(&bytes, t) {
                    prop_assert!(n <= bytes.len());
                }
            }
        }

        #[test]
        fn damaged_rows_never_panic((tys, vals) in row(0..8), at in any::<Index>(), bit in 0u8..8) {
            let buf = encoded(&vals, &tys);
            // Every value is needed to reach the end, so every strict prefix is short.
            for cut in 0..buf.len() {
                prop_assert!(decode_row(&buf[..cut], &tys).is_err(), "prefix {} accepted", cut);
                prop_assert!(decode_row_some(&buf[..cut], &tys, &[]).is_err());
            }
            let mut flipped = buf.clone();
            flipped[at.index(buf.len())] ^= 1 << bit;
            let _ = decode_row(&flipped, &tys);
            let _ = decode_row_some(&flipped, &tys, &[false, true]);
            let k = composite(&vals, &tys);
            if !k.is_empty() {
                let mut k = k;
                let i = at.index(k.len());
                k[i] ^= 1 << bit;
                let mut pos = 0;
                for &t in &tys {
                    match skip_key(&k[pos..], t) {
                        Ok(n) => pos += n,
                        Err(_) => break,
                    }
                    prop_assert!(pos <= k.len());
                }
            }
        }
    }

    #[test]
    fn formats_are_as_documented() {
        assert_eq!(key(&Value::Null, INT), [0x00]);
        assert_eq!(key(&Value::Int(1), INT), [1, 0x80, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(
            key(&Value::Int(-1), INT),
            [1, 0x7F, 255, 255, 255, 255, 255, 255, 255]
        );
        assert_eq!(
            key(&Value::Str("a\0b  ".into()), VARCHAR),
            [1, b'A', 0x00, b'B', b' ', 0x02]
        );
        assert_eq!(
            key(&Value::Str("é ß   \t".into()), VARCHAR),
            [1, b'E', b' ', 0x03, b'S', b' ', 0x01, b' ', b' ', b'\t', b' ', 0x02]
        );
        assert_eq!(key(&Value::Str("".into()), VARCHAR), [1, b' ', 0x02]);
        assert_eq!(
            key(&Value::Str("😀".into()), VARCHAR),
            [1, 0xEF, 0xBF, 0xBD, b' ', 0x02]
        );
        assert_eq!(
            key(&Value::Str("abc".into()), VARCHAR),
            key(&Value::Str("ABC  ".into()), VARCHAR)
        );
        assert_eq!(
            key(&Value::Double(-0.0), SqlType::Double),
            key(&Value::Double(0.0), SqlType::Double)
        );
        let row = [
            Value::Int(-1),
            Value::Null,
            Value::Str("hé".into()),
            Value::UInt(300),
        ];
        let tys = [INT, INT, VARCHAR, UINT];
        assert_eq!(
            encoded(&row, &tys),
            [1, 4, 0b0010, 0x01, 3, b'h', 0xC3, 0xA9, 0xAC, 0x02]
        );
    }

    #[test]
    fn near_miss_values_are_converted() {
        assert_eq!(key(&Value::Int(5), UINT), key(&Value::UInt(5), UINT));
        assert_eq!(key(&Value::Int(-5), UINT), key(&Value::UInt(0), UINT));
        assert_eq!(key(&Value::UInt(5), INT), key(&Value::Int(5), INT));
        assert_eq!(
            key(&Value::UInt(u64::MAX), INT),
            key(&Value::Int(i64::MAX), INT)
        );
        assert_eq!(
            key(&Value::Str("aB".into()), VARBINARY),
            key(&Value::Bytes(b"aB".to_vec()), VARBINARY)
        );
        assert_eq!(
            key(&Value::Bytes(b"aB ".to_vec()), VARCHAR),
            key(&Value::Str("Ab".into()), VARCHAR)
        );
        // Invalid UTF-8 for a text column is stored (and keyed) as text with replacements,
        // so the row stays readable.
        let bad = [Value::Bytes(vec![b'x', 0xFF])];
        let back = decode_row(&encoded(&bad, &[VARCHAR]), &[VARCHAR]).unwrap();
        assert!(same(&back[0], &Value::Str("x\u{FFFD}".into())));
        assert_eq!(key(&bad[0], VARCHAR), key(&back[0], VARCHAR));
        let f = [Value::Double(0.1)];
        let back = decode_row(&encoded(&f, &[SqlType::Float]), &[SqlType::Float]).unwrap();
        assert_eq!(key(&f[0], SqlType::Float), key(&back[0], SqlType::Float));
    }

    #[test]
    fn missing_trailing_columns_decode_as_null() {
        let buf = encoded(&[Value::Int(7), Value::Str("x".into())], &[INT, VARCHAR]);
        let back = decode_row(&buf, &[INT, VARCHAR, UINT, SqlType::Date]).unwrap();
        assert_eq!(back.len(), 4);
        assert!(same(&back[0], &Value::Int(7)));
        assert!(same(&back[1], &Value::Str("x".into())));
        assert!(back[2].is_null() && back[3].is_null());
    }

    #[test]
    fn extra_columns_are_an_error() {
        let buf = encoded(&[Value::Int(1), Value::Int(2), Value::Int(3)], &[INT; 3]);
        let e = decode_row(&buf, &[INT; 2]).unwrap_err();
        assert!(e.0.contains("3 columns"), "{e}");
        assert!(decode_row_some(&buf, &[INT; 2], &[true; 2]).is_err());
    }

    #[test]
    fn invalid_utf8_is_an_error_naming_the_column() {
        let buf = encoded(
            &[Value::Int(1), Value::Bytes(vec![0xC3, 0x28])],
            &[INT, VARBINARY],
        );
        let e = decode_row(&buf, &[INT, VARCHAR]).unwrap_err();
        assert!(e.0.starts_with("column 1:") && e.0.contains("UTF-8"), "{e}");
        // Skipped, it is not looked at.
        assert!(decode_row_some(&buf, &[INT, VARCHAR], &[true, false]).is_ok());
    }

    #[test]
    fn corrupt_headers_and_tails_are_errors() {
        let buf = encoded(&[Value::Int(1)], &[INT]);
        let mut garbage = buf.clone();
        garbage.push(0);
        assert!(decode_row(&garbage, &[INT])
            .unwrap_err()
            .0
            .contains("garbage"));
        let mut version = buf.clone();
        version[0] = 2;
        assert!(decode_row(&version, &[INT])
            .unwrap_err()
            .0
            .contains("version"));
        assert!(decode_row(&[], &[INT]).is_err());
        // An 11-byte varint for column 0.
        let long = [&[1u8, 1, 0][..], &[0xFF; 10], &[0x01]].concat();
        let e = decode_row(&long, &[INT]).unwrap_err();
        assert!(e.0.starts_with("column 0:"), "{e}");
        // A huge string length must fail before allocating.
        let huge = [&[1u8, 1, 0][..], &[0xFF, 0xFF, 0xFF, 0xFF, 0x0F], b"ab"].concat();
        assert!(decode_row(&huge, &[VARBINARY]).is_err());
        assert!(skip_key(&[2], INT).is_err());
        assert!(skip_key(&[1, 0, 0], INT).is_err());
        assert!(skip_key(&[1, b'a', 0, 1], VARCHAR).is_err());
        assert!(skip_key(&[1, b'a', 0], VARCHAR).is_err());
        assert!(skip_key(&[1, b'a', b' '], VARCHAR).is_err());
        assert!(skip_key(&[1, b'a', b' ', 0x07, b'b', b' ', 0x02], VARCHAR).is_err());
        // A run of spaces before a 0x02 character is not the end.
        assert_eq!(
            skip_key(&[1, b' ', 0x01, b' ', 0x02, b' ', 0x02, 9], VARCHAR),
            Ok(7)
        );
        assert_eq!(skip_key(&[1, b'a', 0, 0, 9], VARBINARY), Ok(4));
    }
}
