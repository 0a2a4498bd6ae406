//! What a statement returns: rows with their column metadata, or a count of changed rows.

use std::sync::Arc;

use crate::types::sqltype::SqlType;
use crate::types::value::Value;

/// `MYSQL_TYPE_*` codes: those used in column metadata, and the others a client may bind
/// prepared-statement parameters as.
pub mod wire_type {
    pub const DECIMAL: u8 = 0x00;
    pub const TINY: u8 = 0x01;
    pub const SHORT: u8 = 0x02;
    pub const LONG: u8 = 0x03;
    pub const FLOAT: u8 = 0x04;
    pub const DOUBLE: u8 = 0x05;
    pub const NULL: u8 = 0x06;
    pub const TIMESTAMP: u8 = 0x07;
    pub const LONGLONG: u8 = 0x08;
    pub const INT24: u8 = 0x09;
    pub const DATE: u8 = 0x0a;
    pub const TIME: u8 = 0x0b;
    pub const DATETIME: u8 = 0x0c;
    pub const YEAR: u8 = 0x0d;
    pub const VARCHAR: u8 = 0x0f;
    pub const BIT: u8 = 0x10;
    pub const JSON: u8 = 0xf5;
    pub const NEWDECIMAL: u8 = 0xf6;
    pub const ENUM: u8 = 0xf7;
    pub const SET: u8 = 0xf8;
    pub const TINY_BLOB: u8 = 0xf9;
    pub const MEDIUM_BLOB: u8 = 0xfa;
    pub const LONG_BLOB: u8 = 0xfb;
    pub const BLOB: u8 = 0xfc;
    pub const VAR_STRING: u8 = 0xfd;
    pub const STRING: u8 = 0xfe;
    pub const GEOMETRY: u8 = 0xff;
}

/// Column flags (`*_FLAG`).
pub mod col_flags {
    pub const NOT_NULL: u16 = 1;
    pub const PRI_KEY: u16 = 2;
    pub const UNIQUE_KEY: u16 = 4;
    pub const MULTIPLE_KEY: u16 = 8;
    pub const BLOB: u16 = 16;
    pub const UNSIGNED: u16 = 32;
    pub const BINARY: u16 = 128;
    pub const AUTO_INCREMENT: u16 = 512;
    pub const NUM: u16 = 32768;
}

/// Charset ids reported in metadata.
pub const CHARSET_UTF8MB4_GENERAL_CI: u16 = 45;
pub const CHARSET_BINARY: u16 = 63;

/// Metadata of one result column, in MySQL's terms (a ColumnDefinition41 packet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnMeta {
    pub schema: String,
    pub table: String,
    pub org_table: String,
    pub name: String,
    pub org_name: String,
    pub charset: u16,
    /// Maximum display length.
    pub length: u32,
    /// `MYSQL_TYPE_*` ([`wire_type`]). Binary-protocol rows are encoded by this type, so every
    /// value sent in the column must be convertible to it.
    pub wire_type: u8,
    pub flags: u16,
    pub decimals: u8,
}

impl ColumnMeta {
    /// A computed column of the given type.
    pub fn computed(name: &str, ty: SqlType, nullable: bool) -> ColumnMeta {
        let (wire_type, length, decimals, charset, mut flags) = describe(ty);
        if !nullable {
            flags |= col_flags::NOT_NULL;
        }
        ColumnMeta {
            schema: String::new(),
            table: String::new(),
            org_table: String::new(),
            name: name.to_string(),
            org_name: String::new(),
            charset,
            length,
            wire_type,
            flags,
            decimals,
        }
    }

    /// A column of MariaDB's NULL type: a NULL literal, or an expression of nothing else
    /// (`COALESCE(NULL)`).
    pub fn null_type(name: &str) -> ColumnMeta {
        let mut m = ColumnMeta::computed(
            name,
            SqlType::Char {
                len: 0,
                binary: true,
            },
            true,
        );
        m.wire_type = wire_type::NULL;
        m.flags |= col_flags::NUM;
        m
    }

    /// A text column (SHOW output and the like).
    pub fn text(name: &str) -> ColumnMeta {
        ColumnMeta::computed(
            name,
            SqlType::Varchar {
                len: 256,
                binary: false,
            },
            true,
        )
    }

    /// A BIGINT column.
    pub fn bigint(name: &str) -> ColumnMeta {
        ColumnMeta::computed(
            name,
            SqlType::Int {
                bytes: 8,
                unsigned: false,
            },
            true,
        )
    }
}

/// (wire type, display length, decimals, charset, flags) of a declared type.
pub fn describe(ty: SqlType) -> (u8, u32, u8, u16, u16) {
    use wire_type as w;
    let num = col_flags::NUM;
    let bin = col_flags::BINARY;
    let utf8 = CHARSET_UTF8MB4_GENERAL_CI;
    match ty {
        SqlType::Int { bytes, unsigned } => {
            let (t, len) = match bytes {
                1 => (w::TINY, 4),
                2 => (w::SHORT, 6),
                3 => (w::INT24, 9),
                4 => (w::LONG, 11),
                _ => (w::LONGLONG, 20),
            };
            let f = if unsigned { col_flags::UNSIGNED } else { 0 };
            (t, len, 0, CHARSET_BINARY, num | bin | f)
        }
        SqlType::Float => (w::FLOAT, 12, 31, CHARSET_BINARY, num | bin),
        SqlType::Double => (w::DOUBLE, 22, 31, CHARSET_BINARY, num | bin),
        SqlType::Decimal { precision, scale } => (
            w::NEWDECIMAL,
            u32::from(precision) + 2,
            scale,
            CHARSET_BINARY,
            num | bin,
        ),
        // Lengths are in bytes: 4 per character in utf8mb4.
        SqlType::Char { len, binary } => {
            if binary {
                (w::STRING, len, 0, CHARSET_BINARY, bin)
            } else {
                (w::STRING, len.saturating_mul(4), 0, utf8, 0)
            }
        }
        SqlType::Varchar { len, binary } => {
            if binary {
                (w::VAR_STRING, len, 0, CHARSET_BINARY, bin)
            } else {
                (w::VAR_STRING, len.saturating_mul(4), 0, utf8, 0)
            }
        }
        SqlType::Text { max, binary } => {
            if binary {
                (w::BLOB, max, 0, CHARSET_BINARY, bin | col_flags::BLOB)
            } else {
                (w::BLOB, max, 0, utf8, col_flags::BLOB)
            }
        }
        SqlType::Date => (w::DATE, 10, 0, CHARSET_BINARY, bin),
        SqlType::DateTime { fsp } => (
            w::DATETIME,
            19 + u32::from(fsp) + u32::from(fsp > 0),
            fsp,
            CHARSET_BINARY,
            bin,
        ),
        SqlType::Timestamp { fsp } => (
            w::TIMESTAMP,
            19 + u32::from(fsp) + u32::from(fsp > 0),
            fsp,
            CHARSET_BINARY,
            bin,
        ),
    }
}

/// What one statement produced.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// A result set. Each row has one value per column; values already have the column's
    /// type (so the binary protocol can encode them by [`ColumnMeta::wire_type`]).
    Rows {
        columns: Arc<Vec<ColumnMeta>>,
        rows: Vec<Vec<Value>>,
    },
    /// A statement without a result set.
    Done {
        affected_rows: u64,
        last_insert_id: u64,
        /// Human-readable summary (e.g. "Records: 3  Duplicates: 0  Warnings: 0").
        info: String,
    },
}

impl Outcome {
    pub fn done(affected_rows: u64) -> Outcome {
        Outcome::Done {
            affected_rows,
            last_insert_id: 0,
            info: String::new(),
        }
    }
}
