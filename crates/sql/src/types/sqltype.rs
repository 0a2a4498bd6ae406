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

    /// The type as `SHOW CREATE TABLE` prints it.
    pub fn sql_name(&self) -> String {
        match *self {
            SqlType::Int { bytes, unsigned } => {
                let n = match bytes {
                    1 => "tinyint",
                    2 => "smallint",
                    3 => "mediumint",
                    4 => "int",
                    _ => "bigint",
                };
                if unsigned {
                    format!("{n} unsigned")
                } else {
                    n.to_string()
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
