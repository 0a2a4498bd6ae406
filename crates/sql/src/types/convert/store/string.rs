//! Values into string columns (CHAR, VARCHAR, TEXT).

use super::dtoa::gcvt;
use super::issue::Issue;
use crate::types::convert::number::is_space;
use crate::types::value::Value;

// ---- strings -----------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StrKind {
    Char,
    Varchar,
    Text,
}

pub(super) fn to_string(v: Value, len: u32, binary: bool, kind: StrKind) -> (Value, Vec<Issue>) {
    let len = len as usize;
    if binary {
        let mut b = match v {
            Value::Bytes(b) => b,
            Value::Str(s) => s.into_bytes(),
            other => other.to_text().unwrap_or_default(),
        };
        let mut issues = Vec::new();
        if b.len() > len {
            b.truncate(len);
            issues.push(Issue::TooLong);
        }
        if kind == StrKind::Char {
            while b.last() == Some(&0) {
                b.pop();
            }
        }
        return (Value::Bytes(b), issues);
    }
    let mut issues = Vec::new();
    let s = match v {
        Value::Str(s) => s,
        Value::Bytes(b) => match String::from_utf8(b) {
            Ok(s) => s,
            Err(e) => {
                let b = e.into_bytes();
                let valid = b.utf8_chunks().next().map_or("", |c| c.valid()).to_string();
                let bad: String = b[valid.len()..]
                    .iter()
                    .take(4)
                    .map(|x| format!("\\x{x:02X}"))
                    .collect();
                issues.push(Issue::BadValue {
                    kind: "string",
                    text: bad,
                });
                valid
            }
        },
        Value::Double(f) => {
            // Field_str::store(double): printed to fit the column, fewer digits first.
            let chars = if kind == StrKind::Text { len / 4 } else { len };
            let (text, cut) = gcvt(f, chars.max(1));
            if cut || chars == 0 {
                issues.push(Issue::TooLong);
            }
            text
        }
        other => other.to_string_lossy().unwrap_or_default(),
    };
    // Where the column's length ends (in characters; TEXT in bytes, at a character boundary).
    let cut = if kind == StrKind::Text {
        if s.len() <= len {
            None
        } else {
            let mut c = len;
            while !s.is_char_boundary(c) {
                c -= 1;
            }
            Some(c)
        }
    } else {
        s.char_indices().nth(len).map(|(i, _)| i)
    };
    let mut s = s;
    if let Some(c) = cut {
        let rest = &s.as_bytes()[c..];
        if rest.iter().all(|&x| is_space(x)) {
            // Only spaces lost: a note (none for CHAR, which pads with spaces anyway).
            if kind != StrKind::Char && issues.is_empty() {
                issues.push(Issue::Note);
            }
        } else {
            issues.push(Issue::TooLong);
        }
        s.truncate(c);
    }
    if kind == StrKind::Char {
        let n = s.trim_end_matches(' ').len();
        s.truncate(n);
    }
    (Value::Str(s), issues)
}
