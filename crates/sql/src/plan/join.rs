//! How a hash join's keys compare ([`KeyClass`]). The join steps themselves are in
//! [`crate::plan::select`]: a step may hold a derived table's `SelectPlan`, and a
//! `SelectPlan` holds its steps.

use crate::types::sqltype::SqlType;

/// How the values of a hash-join key compare, decided from both sides' types: values equal
/// under SQL comparison must hash equal within a class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyClass {
    /// Integers, decimals and doubles compare numerically: hashed as doubles (1 = 1.0).
    Num,
    /// Strings under the default collation: hashed folded and without trailing spaces.
    Text,
    /// Binary strings (or a binary string against a text one): hashed as bytes.
    Bytes,
    /// DATE, DATETIME, TIMESTAMP: hashed as the packed value.
    Time,
}

impl KeyClass {
    /// The class two sides of `=` share, if their values can be hashed consistently with SQL
    /// comparison. `None` for mixed comparisons (a number against a string compares as
    /// doubles, a date against a string parses the string), which are left to the loop.
    pub fn of(a: SqlType, b: SqlType) -> Option<KeyClass> {
        let num = |t: SqlType| {
            matches!(
                t,
                SqlType::Int { .. } | SqlType::Decimal { .. } | SqlType::Double | SqlType::Float
            )
        };
        let time = |t: SqlType| {
            matches!(
                t,
                SqlType::Date | SqlType::DateTime { .. } | SqlType::Timestamp { .. }
            )
        };
        if num(a) && num(b) {
            Some(KeyClass::Num)
        } else if a.is_text() && b.is_text() {
            Some(KeyClass::Text)
        } else if a.is_string() && b.is_string() {
            Some(KeyClass::Bytes)
        } else if time(a) && time(b) {
            Some(KeyClass::Time)
        } else {
            None
        }
    }
}
