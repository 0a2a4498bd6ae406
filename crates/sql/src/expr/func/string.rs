//! The string functions: building, cutting, searching, padding and comparing text.

use std::cmp::Ordering;

use crate::expr::builtins as bi;
use crate::expr::func::args::count_arg;
use crate::expr::node::{Args, Arity, Expr, ScalarFunction, Typing};
use crate::expr::typing::{INT, TEXT};
use crate::types::collation::{collate_cmp, lower_char, upper_char};
use crate::types::sqltype::SqlType;
use crate::types::value::Value;
use crate::SqlError;

fn text_or_null(o: Option<String>) -> Value {
    o.map_or(Value::Null, Value::Str)
}

/// CONCAT(a, ...): NULL if any argument is.
pub struct Concat;

impl ScalarFunction for Concat {
    fn name(&self) -> &'static str {
        "concat"
    }
    fn arity(&self) -> Arity {
        Arity::at_least(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let mut out = String::new();
        for i in 0..a.len() {
            match a.text(i)? {
                Some(x) => out.push_str(&x),
                None => return Ok(Value::Null),
            }
        }
        Ok(Value::Str(out))
    }
}

/// CONCAT_WS(sep, a, ...): NULL arguments are skipped, a NULL separator is NULL.
pub struct ConcatWs;

impl ScalarFunction for ConcatWs {
    fn name(&self) -> &'static str {
        "concat_ws"
    }
    fn arity(&self) -> Arity {
        Arity::at_least(2)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let Some(sep) = a.text(0)? else {
            return Ok(Value::Null);
        };
        let mut parts = Vec::new();
        for i in 1..a.len() {
            if let Some(x) = a.text(i)? {
                parts.push(x);
            }
        }
        Ok(Value::Str(parts.join(&sep)))
    }
}

/// LENGTH / OCTET_LENGTH: bytes.
pub struct Length;

impl ScalarFunction for Length {
    fn name(&self) -> &'static str {
        "length"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(INT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        // A column is measured where it lies: no copy of the text per row.
        Ok(match a.expr(0) {
            Expr::Col(c) if *c < a.row().len() => byte_length(&a.row()[*c]),
            _ => byte_length(&a.value(0)?),
        })
    }
}

/// LENGTH: the bytes of the value's text form (NULL for NULL).
fn byte_length(v: &Value) -> Value {
    match v {
        Value::Null => Value::Null,
        Value::Str(s) => Value::Int(s.len() as i64),
        Value::Bytes(b) => Value::Int(b.len() as i64),
        v => Value::Int(v.to_text().map_or(0, |b| b.len()) as i64),
    }
}

/// CHAR_LENGTH / CHARACTER_LENGTH: characters.
pub struct CharLength;

impl ScalarFunction for CharLength {
    fn name(&self) -> &'static str {
        "char_length"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(INT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match a.text(0)? {
            None => Value::Null,
            Some(x) => Value::Int(x.chars().count() as i64),
        })
    }
}

/// UPPER / UCASE (`true`) and LOWER / LCASE, with the collation's one-to-one case maps, not
/// Rust's (UPPER('ß') is 'ß' in MariaDB).
pub struct Case {
    pub upper: bool,
}

impl ScalarFunction for Case {
    fn name(&self) -> &'static str {
        if self.upper {
            "upper"
        } else {
            "lower"
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        // Two loops, not one through a function pointer: the maps inline per character.
        Ok(text_or_null(a.text(0)?.map(|x| {
            if self.upper {
                x.chars().map(upper_char).collect()
            } else {
                x.chars().map(lower_char).collect()
            }
        })))
    }
}

/// Which ends TRIM cuts spaces from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Both,
    Leading,
    Trailing,
}

/// TRIM, LTRIM and RTRIM (of spaces).
pub struct Trim(pub Side);

impl ScalarFunction for Trim {
    fn name(&self) -> &'static str {
        match self.0 {
            Side::Both => "trim",
            Side::Leading => "ltrim",
            Side::Trailing => "rtrim",
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(text_or_null(a.text(0)?.map(|x| {
            match self.0 {
                Side::Both => x.trim_matches(' '),
                Side::Leading => x.trim_start_matches(' '),
                Side::Trailing => x.trim_end_matches(' '),
            }
            .to_string()
        })))
    }
}

/// SUBSTRING / SUBSTR / MID(s, pos[, len]): `pos` counts from 1, or from the end if negative.
pub struct Substring;

impl ScalarFunction for Substring {
    fn name(&self) -> &'static str {
        "substring"
    }
    fn arity(&self) -> Arity {
        Arity::between(2, 3)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let Some(x) = a.text(0)? else {
            return Ok(Value::Null);
        };
        let Some(pos) = a.value(1)?.to_i64() else {
            return Ok(Value::Null);
        };
        let chars: Vec<char> = x.chars().collect();
        let n = chars.len() as i64;
        let start = match pos.cmp(&0) {
            Ordering::Greater => pos - 1,
            Ordering::Less => n + pos,
            Ordering::Equal => return Ok(Value::Str(String::new())),
        };
        if start < 0 || start >= n {
            return Ok(Value::Str(String::new()));
        }
        let len = if a.len() > 2 {
            match a.value(2)?.to_i64() {
                None => return Ok(Value::Null),
                Some(l) => l.max(0),
            }
        } else {
            n
        };
        let end = (start + len).min(n);
        Ok(Value::Str(
            chars[start as usize..end as usize].iter().collect(),
        ))
    }
}

/// REPLACE(s, from, to).
pub struct Replace;

impl ScalarFunction for Replace {
    fn name(&self) -> &'static str {
        "replace"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(3)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match (a.text(0)?, a.text(1)?, a.text(2)?) {
            (Some(x), Some(from), Some(to)) if !from.is_empty() => {
                Value::Str(x.replace(&from, &to))
            }
            (Some(x), Some(_), Some(_)) => Value::Str(x),
            _ => Value::Null,
        })
    }
}

/// LEFT(s, n) (`true`) and RIGHT(s, n): the first or last `n` characters.
pub struct Edge {
    pub left: bool,
}

impl ScalarFunction for Edge {
    fn name(&self) -> &'static str {
        if self.left {
            "left"
        } else {
            "right"
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let (Some(x), Some(n)) = (a.text(0)?, a.value(1)?.to_i64()) else {
            return Ok(Value::Null);
        };
        let chars: Vec<char> = x.chars().collect();
        let n = (n.max(0) as usize).min(chars.len());
        Ok(Value::Str(if self.left {
            chars[..n].iter().collect()
        } else {
            chars[chars.len() - n..].iter().collect()
        }))
    }
}

/// REPEAT(s, n): NULL beyond [`bi::MAX_RESULT_BYTES`].
pub struct Repeat;

impl ScalarFunction for Repeat {
    fn name(&self) -> &'static str {
        "repeat"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let (Some(x), Some(n)) = (a.text(0)?, count_arg(&a.value(1)?)) else {
            return Ok(Value::Null);
        };
        if n <= 0 || x.is_empty() {
            return Ok(Value::Str(String::new()));
        }
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        if x.len().saturating_mul(n) > bi::MAX_RESULT_BYTES {
            return Ok(Value::Null);
        }
        Ok(Value::Str(x.repeat(n)))
    }
}

/// REVERSE(s): characters of text, bytes of a binary string.
pub struct Reverse;

impl ScalarFunction for Reverse {
    fn name(&self) -> &'static str {
        "reverse"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match a.value(0)? {
            Value::Null => Value::Null,
            Value::Bytes(mut b) => {
                b.reverse();
                Value::Bytes(b)
            }
            v => Value::Str(
                v.to_string_lossy()
                    .unwrap_or_default()
                    .chars()
                    .rev()
                    .collect(),
            ),
        })
    }
}

/// LPAD (`true`) and RPAD(s, len[, pad]): without a pad string, spaces, as in MariaDB.
pub struct Pad {
    pub left: bool,
}

impl ScalarFunction for Pad {
    fn name(&self) -> &'static str {
        if self.left {
            "lpad"
        } else {
            "rpad"
        }
    }
    fn arity(&self) -> Arity {
        Arity::between(2, 3)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let (x, n) = (a.text(0)?, count_arg(&a.value(1)?));
        let pad = if a.len() > 2 {
            a.text(2)?
        } else {
            Some(" ".to_string())
        };
        let (Some(x), Some(n), Some(p)) = (x, n, pad) else {
            return Ok(Value::Null);
        };
        Ok(text_or_null(bi::pad(&x, n, &p, self.left)))
    }
}

/// LOCATE(needle, hay[, pos]); INSTR and POSITION compile to it.
pub struct Locate;

impl ScalarFunction for Locate {
    fn name(&self) -> &'static str {
        "locate"
    }
    fn arity(&self) -> Arity {
        Arity::between(2, 3)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(INT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let (needle, hay) = (a.value(0)?, a.value(1)?);
        if needle.is_null() || hay.is_null() {
            return Ok(Value::Null);
        }
        let pos = if a.len() > 2 {
            match count_arg(&a.value(2)?) {
                None => return Ok(Value::Null),
                p => p,
            }
        } else {
            None
        };
        let ci = !matches!(needle, Value::Bytes(_)) && !matches!(hay, Value::Bytes(_));
        Ok(Value::Int(bi::locate(
            &needle.to_string_lossy().unwrap_or_default(),
            &hay.to_string_lossy().unwrap_or_default(),
            pos,
            ci,
        )))
    }
}

/// SUBSTRING_INDEX(s, delim, count).
pub struct SubstringIndex;

impl ScalarFunction for SubstringIndex {
    fn name(&self) -> &'static str {
        "substring_index"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(3)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let (Some(x), Some(d), Some(n)) = (a.text(0)?, a.text(1)?, count_arg(&a.value(2)?)) else {
            return Ok(Value::Null);
        };
        // MariaDB keeps the count in 32 bits: 4294967295 counts as -1.
        Ok(Value::Str(bi::substring_index(&x, &d, i64::from(n as i32))))
    }
}

/// SPACE(n).
pub struct Space;

impl ScalarFunction for Space {
    fn name(&self) -> &'static str {
        "space"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match count_arg(&a.value(0)?) {
            None => Value::Null,
            Some(n) if n <= 0 => Value::Str(String::new()),
            Some(n) if n as u64 > bi::MAX_RESULT_BYTES as u64 => Value::Null,
            Some(n) => Value::Str(" ".repeat(n as usize)),
        })
    }
}

/// ASCII(s): the first byte.
pub struct Ascii;

impl ScalarFunction for Ascii {
    fn name(&self) -> &'static str {
        "ascii"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(INT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match a.value(0)?.to_text() {
            None => Value::Null,
            Some(b) => Value::Int(i64::from(b.first().copied().unwrap_or(0))),
        })
    }
}

/// FORMAT(x, places): `#,###,###.##`.
pub struct Format;

impl ScalarFunction for Format {
    fn name(&self) -> &'static str {
        "format"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let (v, d) = (a.value(0)?, count_arg(&a.value(1)?));
        Ok(match d {
            None => Value::Null,
            // The places are kept in 32 bits, as MariaDB does.
            Some(d) => text_or_null(bi::format_number(&v, i64::from(d as i32))),
        })
    }
}

/// STRCMP(a, b): -1, 0 or 1, under the collation (bytes if either is binary).
pub struct Strcmp;

impl ScalarFunction for Strcmp {
    fn name(&self) -> &'static str {
        "strcmp"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(INT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let (x, y) = (a.value(0)?, a.value(1)?);
        if x.is_null() || y.is_null() {
            return Ok(Value::Null);
        }
        let o = if matches!(x, Value::Bytes(_)) || matches!(y, Value::Bytes(_)) {
            x.to_text().cmp(&y.to_text())
        } else {
            collate_cmp(
                &x.to_string_lossy().unwrap_or_default(),
                &y.to_string_lossy().unwrap_or_default(),
            )
        };
        Ok(Value::Int(o as i64))
    }
}

/// HEX(x): a number's digits in base 16, or a string's bytes.
pub struct Hex;

impl ScalarFunction for Hex {
    fn name(&self) -> &'static str {
        "hex"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match a.value(0)? {
            Value::Null => Value::Null,
            Value::Int(i) => Value::Str(format!("{i:X}")),
            Value::UInt(u) => Value::Str(format!("{u:X}")),
            // A DECIMAL or DOUBLE is hexed as the integer it rounds to (halves away from zero),
            // as a 64-bit two's complement; beyond that range, all ones, as MariaDB does.
            v @ (Value::Decimal(_) | Value::Double(_)) => {
                let r = match v {
                    Value::Decimal(d) => d.rescale(0).map(|d| d.mant),
                    other => other
                        .to_f64()
                        .filter(|f| f.is_finite() && f.abs() < 1e20)
                        .map(|f| f.round() as i128),
                };
                let bits = match r {
                    Some(n) if i64::try_from(n).is_ok() => n as i64 as u64,
                    Some(n) if u64::try_from(n).is_ok() => n as u64,
                    _ => u64::MAX,
                };
                Value::Str(format!("{bits:X}"))
            }
            v => Value::Str(
                v.to_text()
                    .unwrap_or_default()
                    .iter()
                    .map(|b| format!("{b:02X}"))
                    .collect(),
            ),
        })
    }
}

/// FIELD(x, a, b, ...): the position of the first argument equal to `x`, 0 if none.
pub struct Field;

impl ScalarFunction for Field {
    fn name(&self) -> &'static str {
        "field"
    }
    fn arity(&self) -> Arity {
        Arity::at_least(2)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(INT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let vals = (0..a.len())
            .map(|i| a.value(i))
            .collect::<Result<Vec<_>, _>>()?;
        if vals[0].is_null() {
            return Ok(Value::Int(0));
        }
        // All strings compare as strings, all numbers as numbers, a mix as doubles.
        let strings = vals
            .iter()
            .all(|v| matches!(v, Value::Str(_) | Value::Bytes(_) | Value::Null));
        let numbers = vals.iter().all(|v| v.is_numeric() || v.is_null());
        for (i, v) in vals.iter().enumerate().skip(1) {
            let eq = if strings || numbers {
                vals[0].sql_cmp(v) == Some(Ordering::Equal)
            } else {
                matches!((vals[0].to_f64(), v.to_f64()), (Some(a), Some(b)) if a == b)
            };
            if eq {
                return Ok(Value::Int(i as i64));
            }
        }
        Ok(Value::Int(0))
    }
}

/// ELT(n, a, b, ...): the n-th of the rest.
pub struct Elt;

impl ScalarFunction for Elt {
    fn name(&self) -> &'static str {
        "elt"
    }
    fn arity(&self) -> Arity {
        Arity::at_least(2)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        // MariaDB keeps the low 32 bits of the index (ELT(-9223372036854775807, 'a') is 'a').
        Ok(match count_arg(&a.value(0)?).map(|n| n as u32 as usize) {
            Some(n) if n >= 1 && n < a.len() => match a.value(n)? {
                Value::Null => Value::Null,
                Value::Bytes(b) => Value::Bytes(b),
                v => Value::Str(v.to_string_lossy().unwrap_or_default()),
            },
            _ => Value::Null,
        })
    }
}
