//! Hashing values for hash joins and IN over a subquery's values: equal under SQL comparison
//! means equal hash keys within a [`KeyClass`].

use crate::expr::{Ctx, Expr};
use crate::plan::join::KeyClass;
use crate::types::collation::fold_char;
use crate::types::value::Value;
use crate::SqlError;

/// The class a value hashes in by its own type (for IN over a subquery's values).
pub(crate) fn value_class(v: &Value) -> Option<KeyClass> {
    Some(match v {
        Value::Null => return None,
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) => KeyClass::Num,
        Value::Str(_) => KeyClass::Text,
        Value::Bytes(_) => KeyClass::Bytes,
        Value::Date(_) | Value::DateTime(_) => KeyClass::Time,
    })
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HashPart {
    Num(u64),
    Text(String),
    Bytes(Vec<u8>),
    Time(i64),
}

/// A value's hash-key part: `Ok(None)` for NULL (matches nothing under `=`), `Err(())` for a
/// value the class cannot hash (the row then goes to every probe).
pub(crate) fn hash_part(v: &Value, class: KeyClass) -> Result<Option<HashPart>, ()> {
    if v.is_null() {
        return Ok(None);
    }
    Ok(Some(match (class, v) {
        (KeyClass::Num, Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_)) => {
            let d = v.to_f64().ok_or(())?;
            // -0.0 = 0.0 in SQL; their bits differ.
            HashPart::Num(if d == 0.0 { 0 } else { d.to_bits() })
        }
        (KeyClass::Text, Value::Str(s)) => {
            HashPart::Text(s.trim_end_matches(' ').chars().map(fold_char).collect())
        }
        (KeyClass::Bytes, Value::Str(s)) => HashPart::Bytes(s.as_bytes().to_vec()),
        (KeyClass::Bytes, Value::Bytes(b)) => HashPart::Bytes(b.clone()),
        (KeyClass::Time, Value::Date(p) | Value::DateTime(p)) => HashPart::Time(*p),
        _ => return Err(()),
    }))
}

/// A key's parts: `Ok(None)` when any part is NULL.
pub(crate) fn hash_key(
    keys: &[Expr],
    classes: &[KeyClass],
    row: &[Value],
    ctx: &Ctx,
) -> Result<Result<Option<Vec<HashPart>>, ()>, SqlError> {
    let mut out = Vec::with_capacity(keys.len());
    for (k, c) in keys.iter().zip(classes) {
        match hash_part(&k.eval(row, ctx)?, *c) {
            Ok(Some(p)) => out.push(p),
            Ok(None) => return Ok(Ok(None)),
            Err(()) => return Ok(Err(())),
        }
    }
    Ok(Ok(Some(out)))
}
