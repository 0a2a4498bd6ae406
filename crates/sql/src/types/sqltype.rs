//! Column types as declared (`SqlType`).

/// The type of a column, as declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlType {
    /// TINYINT (1), SMALLINT (2), MEDIUMINT (3), INT (4), BIGINT (8).
    Int {
        bytes: u8,
        unsigned: bool,
    },
    Float,
    Double,
    /// DECIMAL(precision, scale); zipdb holds up to 38 digits.
    Decimal {
        precision: u8,
        scale: u8,
    },
    /// CHAR(len) / BINARY(len) (`binary`): stored without trailing spaces, which MySQL strips
    /// from CHAR on read anyway.
    Char {
        len: u32,
        binary: bool,
    },
    /// VARCHAR(len) / VARBINARY(len).
    Varchar {
        len: u32,
        binary: bool,
    },
    /// TINYTEXT..LONGTEXT / TINYBLOB..LONGBLOB (`binary`), by the maximum byte length.
    Text {
        max: u32,
        binary: bool,
    },
    Date,
    DateTime {
        fsp: u8,
    },
    Timestamp {
        fsp: u8,
    },
}

impl SqlType {
    /// Strings compared under the default collation (case-insensitive, trailing spaces
    /// ignored), as opposed to binary strings and non-strings.
    pub fn is_text(&self) -> bool {
        matches!(
            self,
            SqlType::Char { binary: false, .. }
                | SqlType::Varchar { binary: false, .. }
                | SqlType::Text { binary: false, .. }
        )
    }

    pub fn is_string(&self) -> bool {
        matches!(
            self,
            SqlType::Char { .. } | SqlType::Varchar { .. } | SqlType::Text { .. }
        )
    }

    pub fn is_integer(&self) -> bool {
        matches!(self, SqlType::Int { .. })
    }

    /// Maximum length in characters (strings) or bytes, for `CHAR_LENGTH` checks.
    pub fn max_len(&self) -> Option<u32> {
        match *self {
            SqlType::Char { len, .. } | SqlType::Varchar { len, .. } => Some(len),
            SqlType::Text { max, .. } => Some(max),
            _ => None,
        }
    }

    /// The type's name and parameters (`int unsigned`, `varchar(10)`), without an integer's
    /// display width, which belongs to a column: [`SqlType::column_type`].
    pub fn sql_name(&self) -> String {
        match *self {
            SqlType::Int { bytes, unsigned } => {
                let n = int_name(bytes);
                if unsigned {
                    format!("{n} unsigned")
                } else {
                    n.to_string()
                }
            }
            _ => self.column_type(None),
        }
    }

    /// The type as `SHOW CREATE TABLE` prints a column of it declared with `width` (the
    /// display width of `INT(5)` or `BOOLEAN`'s `tinyint(1)`; `None`: the type's default,
    /// `int(11)`), as MariaDB prints it. Only integer types have one; it changes nothing
    /// but how the column is shown.
    pub fn column_type(&self, width: Option<u8>) -> String {
        match *self {
            SqlType::Int { bytes, unsigned } => {
                let n = int_name(bytes);
                let w = width.unwrap_or_else(|| int_display_width(bytes, unsigned));
                if unsigned {
                    format!("{n}({w}) unsigned")
                } else {
                    format!("{n}({w})")
                }
            }
            SqlType::Float => "float".into(),
            SqlType::Double => "double".into(),
            SqlType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
            SqlType::Char { len, binary } => {
                format!("{}({len})", if binary { "binary" } else { "char" })
            }
            SqlType::Varchar { len, binary } => {
                format!("{}({len})", if binary { "varbinary" } else { "varchar" })
            }
            SqlType::Text { max, binary } => {
                let size = match max {
                    0..=255 => "tiny",
                    256..=65535 => "",
                    65536..=16_777_215 => "medium",
                    _ => "long",
                };
                format!("{size}{}", if binary { "blob" } else { "text" })
            }
            SqlType::Date => "date".into(),
            SqlType::DateTime { fsp: 0 } => "datetime".into(),
            SqlType::DateTime { fsp } => format!("datetime({fsp})"),
            SqlType::Timestamp { fsp: 0 } => "timestamp".into(),
            SqlType::Timestamp { fsp } => format!("timestamp({fsp})"),
        }
    }
}

fn int_name(bytes: u8) -> &'static str {
    match bytes {
        1 => "tinyint",
        2 => "smallint",
        3 => "mediumint",
        4 => "int",
        _ => "bigint",
    }
}

/// MariaDB's display width of an integer type declared without one: the characters of its
/// widest value, sign included (`int(11)`, `int(10) unsigned`, `bigint(20)` both ways).
pub fn int_display_width(bytes: u8, unsigned: bool) -> u8 {
    match (bytes, unsigned) {
        (1, false) => 4,
        (1, true) => 3,
        (2, false) => 6,
        (2, true) => 5,
        (3, false) => 9,
        (3, true) => 8,
        (4, false) => 11,
        (4, true) => 10,
        _ => 20,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_columns_show_their_display_width_and_types_do_not() {
        let int = SqlType::Int {
            bytes: 4,
            unsigned: false,
        };
        let ubig = SqlType::Int {
            bytes: 8,
            unsigned: true,
        };
        let tiny = SqlType::Int {
            bytes: 1,
            unsigned: false,
        };
        assert_eq!(int.sql_name(), "int");
        assert_eq!(int.column_type(None), "int(11)");
        assert_eq!(int.column_type(Some(5)), "int(5)");
        assert_eq!(ubig.sql_name(), "bigint unsigned");
        assert_eq!(ubig.column_type(None), "bigint(20) unsigned");
        assert_eq!(tiny.column_type(Some(1)), "tinyint(1)");
        assert_eq!(SqlType::Double.column_type(Some(3)), "double");
        let widths: Vec<u8> = [1, 2, 3, 4, 8]
            .iter()
            .flat_map(|&b| [int_display_width(b, false), int_display_width(b, true)])
            .collect();
        assert_eq!(widths, [4, 3, 6, 5, 9, 8, 11, 10, 20, 20]);
    }
}
