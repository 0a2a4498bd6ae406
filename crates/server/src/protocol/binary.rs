//! The prepared-statement (binary) protocol: the COM_STMT_PREPARE_OK header, parsing of
//! COM_STMT_EXECUTE (parameter types and values) and COM_STMT_SEND_LONG_DATA, and binary result
//! rows. Pure functions, no I/O: the connection loop frames and sends what they build.
//!
//! What libmariadb (sysbench 1.0.20) does on the wire, and what this module relies on:
//! - only the first COM_STMT_EXECUTE of a statement binds parameter types
//!   (`new_params_bound_flag` = 1); later ones send values only, so the caller keeps the types
//!   per statement ([`ParamTypes`]) and [`parse_execute`] reuses or replaces them;
//! - a parameter sent with COM_STMT_SEND_LONG_DATA has neither a NULL bit nor bytes in the
//!   execute packet;
//! - binary rows are parsed by the column types announced in the metadata, so
//!   [`write_row`] encodes each value as its column's `wire_type` says, converting it if the
//!   value has another type.
//!
//! Everything read from the client is bounds-checked through [`Reader`]: malformed input is a
//! [`ProtoError`], never a panic, and nothing is allocated beyond what the packet holds.

use zipdb_sql::result::{col_flags, wire_type};
use zipdb_sql::value::DateTime;
use zipdb_sql::{ColumnMeta, Decimal, Value};

use super::{put_lenenc_bytes, ProtoError, Reader};

use zipdb_sql::result::wire_type as ty;

/// The unsigned flag in the second byte of a bound parameter type.
const PARAM_UNSIGNED: u8 = 0x80;

const EXECUTE: &str = "COM_STMT_EXECUTE";
const LONG_DATA: &str = "COM_STMT_SEND_LONG_DATA";

fn malformed(what: &'static str, why: impl Into<String>) -> ProtoError {
    ProtoError::Malformed {
        what,
        why: why.into(),
    }
}

/// COM_STMT_PREPARE_OK header packet: `0x00`, statement id (u32), column count (u16), parameter
/// count (u16), a `0x00` filler and the warning count (u16). With classic EOF framing the caller
/// follows it with the parameter definitions and an EOF (if `params` > 0), then the column
/// definitions and an EOF (if `columns` > 0).
pub fn prepare_ok(stmt_id: u32, columns: u16, params: u16, warnings: u16) -> Vec<u8> {
    let mut p = Vec::with_capacity(12);
    p.push(0x00);
    p.extend_from_slice(&stmt_id.to_le_bytes());
    p.extend_from_slice(&columns.to_le_bytes());
    p.extend_from_slice(&params.to_le_bytes());
    p.push(0x00);
    p.extend_from_slice(&warnings.to_le_bytes());
    p
}

/// Remembered parameter types of a statement: (MYSQL_TYPE_* code, unsigned flag) per parameter.
/// Empty until the first execution binds them.
pub type ParamTypes = Vec<(u8, bool)>;

/// A parsed COM_STMT_EXECUTE (payload after the command byte).
#[derive(Debug, Clone)]
pub struct Execute {
    pub stmt_id: u32,
    /// Cursor flags (`CURSOR_TYPE_*`; 0 = no cursor, what sysbench sends).
    pub flags: u8,
    /// One value per parameter, in order.
    pub params: Vec<Value>,
}

/// Reads the statement id only (so the caller can look up param count and types first).
pub fn execute_stmt_id(payload: &[u8]) -> Result<u32, ProtoError> {
    Reader::new(payload, EXECUTE).u32()
}

/// Parses a COM_STMT_EXECUTE payload (after the command byte) given the statement's parameter
/// count, its remembered types and the long data sent earlier with COM_STMT_SEND_LONG_DATA.
///
/// Layout: statement id u32, flags u8, iteration count u32 (ignored: always 1), then, if the
/// statement has parameters, a NULL bitmap of `(param_count + 7) / 8` bytes (bit i = parameter
/// i), `new_params_bound_flag` u8, the types (2 bytes each: `MYSQL_TYPE_*`, then 0x80 for
/// unsigned) when that flag is 1, and the values of the parameters that are neither NULL nor
/// sent as long data. Bytes after the last value are ignored, as MySQL does.
///
/// `types` is replaced when the packet binds new types, and then only if the whole packet
/// parses; a packet with flag 0 uses it as it is and is malformed if no types were ever bound.
/// `long_data[i]` = `Some(bytes)` replaces parameter i's value (its NULL bit is not looked at):
/// `Value::Bytes` for blob-like types, otherwise `Value::Str` when the bytes are UTF-8.
///
/// Values, by bound type (integers that fit an `i64` are always `Value::Int`, unsigned ones
/// included: only an unsigned LONGLONG above `i64::MAX` becomes `Value::UInt`):
/// - TINY 1, SHORT and YEAR 2, LONG and INT24 4, LONGLONG 8 bytes, little-endian: `Int`/`UInt`;
/// - FLOAT (f32) and DOUBLE (f64): `Double`;
/// - DECIMAL, NEWDECIMAL: a length-encoded number: `Decimal` (malformed if it is not one);
/// - VARCHAR, VAR_STRING, STRING, ENUM, SET, JSON: length-encoded: `Str` if UTF-8, else `Bytes`;
/// - TINY/MEDIUM/LONG BLOB, BLOB, BIT, GEOMETRY: length-encoded: `Bytes`;
/// - DATE, DATETIME, TIMESTAMP: length 0/4/7/11, then year u16, month, day, [hour, minute,
///   second, [microseconds u32]]: `Date` (DATE; a time part is dropped) or `DateTime`, packed
///   with [`DateTime::pack`]; out-of-range fields are malformed (zero dates and zero months or
///   days are accepted, as [`DateTime::parse`] accepts them);
/// - TIME: length 0/8/12, then negative u8, days u32, hour, minute, second, [microseconds u32]:
///   `Str` like `"-838:59:59.000000"` (the fraction only with length 12) or `"12:34:56"`;
/// - NULL: `Null`, no bytes.
pub fn parse_execute(
    payload: &[u8],
    param_count: usize,
    types: &mut ParamTypes,
    long_data: &[Option<Vec<u8>>],
) -> Result<Execute, ProtoError> {
    let mut r = Reader::new(payload, EXECUTE);
    let stmt_id = r.u32()?;
    let flags = r.u8()?;
    let _iterations = r.u32()?;
    if param_count == 0 {
        return Ok(Execute {
            stmt_id,
            flags,
            params: Vec::new(),
        });
    }
    let null_bitmap = r.bytes(param_count.div_ceil(8))?;
    let new_types = match r.u8()? {
        0 if types.len() == param_count => None,
        0 if types.is_empty() => {
            return Err(malformed(
                EXECUTE,
                "parameter values without types: the first execution must bind them",
            ))
        }
        0 => {
            return Err(malformed(
                EXECUTE,
                format!(
                    "{} remembered parameter types for {param_count} parameters",
                    types.len()
                ),
            ))
        }
        1 => {
            let n = param_count
                .checked_mul(2)
                .ok_or_else(|| malformed(EXECUTE, "too many parameters"))?;
            let raw = r.bytes(n)?;
            let mut bound = Vec::with_capacity(param_count);
            for t in raw.chunks_exact(2) {
                if !known_param_type(t[0]) {
                    return Err(malformed(
                        EXECUTE,
                        format!("unknown parameter type {:#04x}", t[0]),
                    ));
                }
                bound.push((t[0], t[1] & PARAM_UNSIGNED != 0));
            }
            Some(bound)
        }
        f => return Err(malformed(EXECUTE, format!("new_params_bound_flag is {f}"))),
    };
    let bound: &ParamTypes = new_types.as_ref().unwrap_or(types);
    // Both the bitmap and the types were read from the packet (or are the statement's own), so
    // this allocation is bounded by what the client actually sent.
    let mut params = Vec::with_capacity(param_count);
    for (i, &(code, unsigned)) in bound.iter().enumerate() {
        if let Some(Some(data)) = long_data.get(i) {
            params.push(bytes_value(code, data));
        } else if null_bitmap[i / 8] & (1 << (i % 8)) != 0 {
            params.push(Value::Null);
        } else {
            params.push(read_param(&mut r, code, unsigned)?);
        }
    }
    if let Some(t) = new_types {
        *types = t;
    }
    Ok(Execute {
        stmt_id,
        flags,
        params,
    })
}

/// Parses COM_STMT_SEND_LONG_DATA (payload after the command byte): statement id u32,
/// parameter id u16, then the data (the rest of the packet). Returns (stmt_id, param_id, data).
pub fn parse_send_long_data(payload: &[u8]) -> Result<(u32, u16, &[u8]), ProtoError> {
    let mut r = Reader::new(payload, LONG_DATA);
    let stmt_id = r.u32()?;
    let param_id = r.u16()?;
    Ok((stmt_id, param_id, r.rest()))
}

fn known_param_type(code: u8) -> bool {
    use ty::*;
    matches!(
        code,
        DECIMAL
            | TINY
            | SHORT
            | LONG
            | FLOAT
            | DOUBLE
            | NULL
            | TIMESTAMP
            | LONGLONG
            | INT24
            | DATE
            | TIME
            | DATETIME
            | YEAR
            | VARCHAR
            | BIT
            | JSON
            | NEWDECIMAL
            | ENUM
            | SET
            | TINY_BLOB
            | MEDIUM_BLOB
            | LONG_BLOB
            | BLOB
            | VAR_STRING
            | STRING
            | GEOMETRY
    )
}

/// Types whose bytes are binary data whatever they hold.
fn is_binary_type(code: u8) -> bool {
    use ty::*;
    matches!(
        code,
        TINY_BLOB | MEDIUM_BLOB | LONG_BLOB | BLOB | BIT | GEOMETRY
    )
}

/// A string parameter's bytes as a value: `Bytes` for binary types, `Str` when UTF-8 otherwise.
fn bytes_value(code: u8, b: &[u8]) -> Value {
    if is_binary_type(code) {
        return Value::Bytes(b.to_vec());
    }
    match std::str::from_utf8(b) {
        Ok(s) => Value::Str(s.to_string()),
        Err(_) => Value::Bytes(b.to_vec()),
    }
}

fn read_u64(r: &mut Reader) -> Result<u64, ProtoError> {
    let mut a = [0u8; 8];
    a.copy_from_slice(r.bytes(8)?);
    Ok(u64::from_le_bytes(a))
}

/// An integer parameter: signed values sign-extended, unsigned ones `Int` when they fit.
fn int_value(bits: u64, width: u32, unsigned: bool) -> Value {
    if unsigned {
        match i64::try_from(bits) {
            Ok(i) => Value::Int(i),
            Err(_) => Value::UInt(bits),
        }
    } else {
        let shift = 64 - width;
        Value::Int(((bits << shift) as i64) >> shift)
    }
}

/// One parameter value of the given bound type.
fn read_param(r: &mut Reader, code: u8, unsigned: bool) -> Result<Value, ProtoError> {
    use ty::*;
    Ok(match code {
        NULL => Value::Null,
        TINY => int_value(u64::from(r.u8()?), 8, unsigned),
        SHORT | YEAR => int_value(u64::from(r.u16()?), 16, unsigned),
        LONG | INT24 => int_value(u64::from(r.u32()?), 32, unsigned),
        LONGLONG => int_value(read_u64(r)?, 64, unsigned),
        FLOAT => Value::Double(f64::from(f32::from_bits(r.u32()?))),
        DOUBLE => Value::Double(f64::from_bits(read_u64(r)?)),
        DECIMAL | NEWDECIMAL => {
            let b = r.lenenc_bytes()?;
            match std::str::from_utf8(b).ok().and_then(Decimal::parse) {
                Some(d) => Value::Decimal(d),
                None => {
                    return Err(malformed(
                        EXECUTE,
                        format!(
                            "decimal parameter {:?} is not a number zipdb holds",
                            String::from_utf8_lossy(b)
                        ),
                    ))
                }
            }
        }
        DATE | DATETIME | TIMESTAMP => {
            let dt = read_datetime(r)?;
            if code == DATE {
                Value::Date(
                    DateTime {
                        year: dt.year,
                        month: dt.month,
                        day: dt.day,
                        ..DateTime::default()
                    }
                    .pack(),
                )
            } else {
                Value::DateTime(dt.pack())
            }
        }
        TIME => Value::Str(read_time(r)?),
        VARCHAR | VAR_STRING | STRING | ENUM | SET | JSON | TINY_BLOB | MEDIUM_BLOB | LONG_BLOB
        | BLOB | BIT | GEOMETRY => bytes_value(code, r.lenenc_bytes()?),
        _ => {
            return Err(malformed(
                EXECUTE,
                format!("unknown parameter type {code:#04x}"),
            ))
        }
    })
}

/// Whether the fields are a DATE/DATETIME MySQL holds (zero dates, and zero months or days,
/// included, as [`DateTime::parse`] accepts them).
fn valid_datetime(d: &DateTime) -> bool {
    d.year <= 9999
        && d.month <= 12
        && d.day <= 31
        && (d.month == 0 || d.day == 0 || d.day <= zipdb_sql::value::days_in_month(d.year, d.month))
        && d.hour <= 23
        && d.minute <= 59
        && d.second <= 59
        && d.micro <= 999_999
}

/// A binary DATE/DATETIME/TIMESTAMP: length 0, 4, 7 or 11, then the fields.
fn read_datetime(r: &mut Reader) -> Result<DateTime, ProtoError> {
    let len = r.u8()?;
    let mut d = DateTime::default();
    if !matches!(len, 0 | 4 | 7 | 11) {
        return Err(malformed(
            EXECUTE,
            format!("date/time parameter of length {len}"),
        ));
    }
    if len >= 4 {
        d.year = r.u16()?;
        d.month = r.u8()?;
        d.day = r.u8()?;
    }
    if len >= 7 {
        d.hour = r.u8()?;
        d.minute = r.u8()?;
        d.second = r.u8()?;
    }
    if len == 11 {
        d.micro = r.u32()?;
    }
    if !valid_datetime(&d) {
        return Err(malformed(
            EXECUTE,
            format!("invalid date/time parameter {d:?}"),
        ));
    }
    Ok(d)
}

/// A binary TIME: length 0, 8 or 12, then negative, days, hours, minutes, seconds, [micro].
fn read_time(r: &mut Reader) -> Result<String, ProtoError> {
    let len = r.u8()?;
    if !matches!(len, 0 | 8 | 12) {
        return Err(malformed(
            EXECUTE,
            format!("time parameter of length {len}"),
        ));
    }
    if len == 0 {
        return Ok("00:00:00".to_string());
    }
    let neg = r.u8()?;
    let days = r.u32()?;
    let (h, m, s) = (r.u8()?, r.u8()?, r.u8()?);
    let micro = if len == 12 { r.u32()? } else { 0 };
    if neg > 1 || h > 23 || m > 59 || s > 59 || micro > 999_999 {
        return Err(malformed(
            EXECUTE,
            format!("invalid time parameter: negative {neg}, {days} days {h}:{m}:{s}.{micro}"),
        ));
    }
    let hours = u64::from(days) * 24 + u64::from(h);
    let sign = if neg == 1 { "-" } else { "" };
    Ok(if len == 12 {
        format!("{sign}{hours:02}:{m:02}:{s:02}.{micro:06}")
    } else {
        format!("{sign}{hours:02}:{m:02}:{s:02}")
    })
}

/// Appends one binary-protocol row to `out`: a 0x00 header, the NULL bitmap
/// (`(columns + 7 + 2) / 8` bytes, column i at bit i + 2), then the non-NULL values, each
/// encoded by its column's `wire_type`:
/// - TINY 1, SHORT and YEAR 2, LONG and INT24 4, LONGLONG 8 bytes, little-endian, as unsigned
///   when the column has the UNSIGNED flag; values of other types are converted and saturate
///   at the column type's range;
/// - FLOAT f32, DOUBLE f64;
/// - NEWDECIMAL (and DECIMAL): the number as length-encoded text with the column's `decimals`
///   digits (when that is at most 30);
/// - DATE: length 4 (year u16, month, day), or 0 for a zero date; DATETIME, TIMESTAMP: the
///   shortest of length 0, 4, 7 (+ hour, minute, second) and 11 (+ microseconds u32) that holds
///   the value; strings and numbers (YYYYMMDD[HHMMSS]) are converted, and what is not a date
///   is sent as the zero date;
/// - TIME: length 0, 8 or 12 from text like `-838:59:59.5` (zero if it is not a time);
/// - NULL: always NULL in the bitmap;
/// - anything else (strings, blobs, ...): the value's text form, length-encoded.
///
/// A row shorter than `columns` has NULLs for the missing values (extra values are ignored).
pub fn write_row(out: &mut Vec<u8>, row: &[Value], columns: &[ColumnMeta]) {
    debug_assert_eq!(row.len(), columns.len(), "row and columns differ in length");
    out.push(0x00);
    let bitmap = out.len();
    out.resize(bitmap + (columns.len() + 7 + 2) / 8, 0);
    for (i, col) in columns.iter().enumerate() {
        match row.get(i) {
            Some(v) if !v.is_null() && col.wire_type != wire_type::NULL => write_value(out, v, col),
            _ => out[bitmap + (i + 2) / 8] |= 1 << ((i + 2) % 8),
        }
    }
}

fn write_value(out: &mut Vec<u8>, v: &Value, col: &ColumnMeta) {
    use ty::*;
    let unsigned = col.flags & col_flags::UNSIGNED != 0;
    match col.wire_type {
        TINY => out.push(int_bits(v, 8, unsigned) as u8),
        SHORT | YEAR => out.extend_from_slice(&(int_bits(v, 16, unsigned) as u16).to_le_bytes()),
        LONG | INT24 => out.extend_from_slice(&(int_bits(v, 32, unsigned) as u32).to_le_bytes()),
        LONGLONG => out.extend_from_slice(&int_bits(v, 64, unsigned).to_le_bytes()),
        FLOAT => out.extend_from_slice(&(v.to_f64().unwrap_or(0.0) as f32).to_le_bytes()),
        DOUBLE => out.extend_from_slice(&v.to_f64().unwrap_or(0.0).to_le_bytes()),
        NEWDECIMAL | DECIMAL => put_lenenc_bytes(out, &decimal_text(v, col.decimals)),
        DATE => {
            let d = to_datetime(v);
            if d.year == 0 && d.month == 0 && d.day == 0 {
                out.push(0);
            } else {
                out.push(4);
                put_date(out, &d);
            }
        }
        DATETIME | TIMESTAMP => {
            let d = to_datetime(v);
            let len = if d.micro != 0 {
                11
            } else if d.hour != 0 || d.minute != 0 || d.second != 0 {
                7
            } else if d.year != 0 || d.month != 0 || d.day != 0 {
                4
            } else {
                0
            };
            out.push(len);
            if len >= 4 {
                put_date(out, &d);
            }
            if len >= 7 {
                out.extend_from_slice(&[d.hour, d.minute, d.second]);
            }
            if len == 11 {
                out.extend_from_slice(&d.micro.to_le_bytes());
            }
        }
        TIME => put_time(out, v),
        _ => put_lenenc_bytes(out, &v.to_text().unwrap_or_default()),
    }
}

fn put_date(out: &mut Vec<u8>, d: &DateTime) {
    out.extend_from_slice(&d.year.to_le_bytes());
    out.extend_from_slice(&[d.month, d.day]);
}

/// The value as an integer of `width` bits (two's complement bits in a u64), converted the way
/// MySQL converts implicitly and saturated at the range of the column type.
fn int_bits(v: &Value, width: u32, unsigned: bool) -> u64 {
    if unsigned {
        let max = u64::MAX >> (64 - width);
        let u = match v {
            Value::UInt(u) => *u,
            Value::Int(i) => u64::try_from(*i).unwrap_or(0),
            Value::Decimal(d) => match d.rescale(0) {
                Some(d) => u64::try_from(d.mant.max(0)).unwrap_or(u64::MAX),
                None => 0,
            },
            Value::Str(s) => s
                .trim()
                .parse::<u64>()
                .unwrap_or_else(|_| u64::try_from(v.to_i64().unwrap_or(0)).unwrap_or(0)),
            Value::Double(d) => {
                let d = d.round();
                if d.is_nan() || d <= 0.0 {
                    0
                } else if d >= u64::MAX as f64 {
                    u64::MAX
                } else {
                    d as u64
                }
            }
            other => u64::try_from(other.to_i64().unwrap_or(0)).unwrap_or(0),
        };
        u.min(max)
    } else {
        let max = i64::MAX >> (64 - width);
        let i = v.to_i64().unwrap_or(0).clamp(-max - 1, max);
        i as u64
    }
}

/// A DECIMAL column's text: the value with the column's scale (unless that is the
/// "not fixed" 31), or its plain text if it is no number (a non-finite double).
fn decimal_text(v: &Value, decimals: u8) -> Vec<u8> {
    match v.to_decimal() {
        Some(d) => {
            let d = if decimals <= 30 {
                d.rescale(decimals).unwrap_or(d)
            } else {
                d
            };
            d.to_string().into_bytes()
        }
        None => v.to_text().unwrap_or_default(),
    }
}

/// The value as date and time fields, read as the SQL layer reads dates (one reader for
/// text and numbers); the zero date when it is none.
fn to_datetime(v: &Value) -> DateTime {
    zipdb_sql::value::datetime_of(v).unwrap_or_default()
}

/// A TIME column value: parsed from its text (`[-]H+:MM[:SS[.ffffff]]`), zero if it is none.
fn put_time(out: &mut Vec<u8>, v: &Value) {
    let text = v.to_text().unwrap_or_default();
    let t = std::str::from_utf8(&text).ok().and_then(parse_time);
    match t {
        Some((neg, hours, m, s, micro)) if hours != 0 || m != 0 || s != 0 || micro != 0 => {
            out.push(if micro != 0 { 12 } else { 8 });
            out.push(u8::from(neg));
            out.extend_from_slice(&((hours / 24) as u32).to_le_bytes());
            out.extend_from_slice(&[(hours % 24) as u8, m, s]);
            if micro != 0 {
                out.extend_from_slice(&micro.to_le_bytes());
            }
        }
        _ => out.push(0),
    }
}

/// `[-]H+:MM[:SS[.ffffff]]` → (negative, hours, minutes, seconds, microseconds).
fn parse_time(t: &str) -> Option<(bool, u64, u8, u8, u32)> {
    let t = t.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let (hms, frac) = t.split_once('.').unwrap_or((t, ""));
    let mut p = hms.split(':');
    let hours: u64 = p.next()?.parse().ok()?;
    let m: u8 = p.next()?.parse().ok()?;
    let s: u8 = p.next().unwrap_or("0").parse().ok()?;
    if p.next().is_some() || m > 59 || s > 59 || hours > u64::from(u32::MAX) {
        return None;
    }
    if !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut micro = 0u32;
    for i in 0..6 {
        micro = micro * 10 + frac.as_bytes().get(i).map_or(0, |c| u32::from(c - b'0'));
    }
    Some((neg, hours, m, s, micro))
}

#[cfg(test)]
#[path = "binary_tests.rs"]
mod tests;
