//! `information_schema`: read-only tables computed when a query reads them.
//!
//! Each table is a [`Kind`] with a fixed column list. Compiling a SELECT over one gives an
//! ordinary [`Table`] whose `virt` names the kind, so WHERE, GROUP BY, ORDER BY, LIMIT and
//! aggregates work unchanged; the executor asks the session for the rows instead of scanning a
//! tree. Only SELECT can name these tables ([`crate::exec::dml::Env::table`] refuses them for every
//! other statement), so nothing ever writes through the placeholder tree handle they carry.
//!
//! The counters of the storage core (`GLOBAL_STATUS`) are the same as SHOW STATUS prints; the
//! sizes in `TABLES` are the same as SHOW TABLE STATUS prints (physical bytes from the page
//! store, logical bytes before compression, and their ratio).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::catalog::{ColumnDef, Table, TableDef, TableOptions};
use crate::session::Session;
use crate::types::sqltype::SqlType;
use crate::types::value::Value;
use crate::SqlError;

/// The database name, as clients spell it (matched case-insensitively).
pub const DB: &str = "information_schema";

/// One `information_schema` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    GlobalStatus,
    SessionStatus,
    GlobalVariables,
    SessionVariables,
    Schemata,
    Tables,
    Columns,
    Statistics,
    Processlist,
    /// Always empty (zipdb has no triggers); mysqldump asks for each table's.
    Triggers,
    /// Always empty (no tablespace files to list); mysqldump asks for them unless given
    /// `--no-tablespaces`.
    Files,
    /// One row per table, unpartitioned (NULL partition), as MariaDB lists them.
    Partitions,
}

const KINDS: &[(&str, Kind)] = &[
    ("GLOBAL_STATUS", Kind::GlobalStatus),
    ("SESSION_STATUS", Kind::SessionStatus),
    ("GLOBAL_VARIABLES", Kind::GlobalVariables),
    ("SESSION_VARIABLES", Kind::SessionVariables),
    ("SCHEMATA", Kind::Schemata),
    ("TABLES", Kind::Tables),
    ("COLUMNS", Kind::Columns),
    ("STATISTICS", Kind::Statistics),
    ("PROCESSLIST", Kind::Processlist),
    ("TRIGGERS", Kind::Triggers),
    ("FILES", Kind::Files),
    ("PARTITIONS", Kind::Partitions),
];

/// Whether `db` is `information_schema`.
pub fn is_db(db: &str) -> bool {
    db.eq_ignore_ascii_case(DB)
}

/// The names of the tables, for SHOW TABLES.
pub fn table_names() -> impl Iterator<Item = &'static str> {
    KINDS.iter().map(|(n, _)| *n)
}

fn text(len: u32) -> SqlType {
    SqlType::Varchar { len, binary: false }
}

const BIGINT_UNSIGNED: SqlType = SqlType::Int {
    bytes: 8,
    unsigned: true,
};

const BIGINT: SqlType = SqlType::Int {
    bytes: 8,
    unsigned: false,
};

/// MariaDB's LONGTEXT columns (COLUMN_DEFAULT, COLUMN_TYPE, INFO).
const LONGTEXT: SqlType = SqlType::Text {
    max: u32::MAX,
    binary: false,
};

fn columns(kind: Kind) -> Vec<(&'static str, SqlType)> {
    match kind {
        Kind::GlobalStatus
        | Kind::SessionStatus
        | Kind::GlobalVariables
        | Kind::SessionVariables => {
            vec![("VARIABLE_NAME", text(64)), ("VARIABLE_VALUE", text(2048))]
        }
        Kind::Schemata => vec![
            ("CATALOG_NAME", text(512)),
            ("SCHEMA_NAME", text(64)),
            ("DEFAULT_CHARACTER_SET_NAME", text(32)),
            ("DEFAULT_COLLATION_NAME", text(64)),
            ("SQL_PATH", text(512)),
        ],
        Kind::Tables => vec![
            ("TABLE_CATALOG", text(512)),
            ("TABLE_SCHEMA", text(64)),
            ("TABLE_NAME", text(64)),
            ("TABLE_TYPE", text(64)),
            ("ENGINE", text(64)),
            ("VERSION", BIGINT_UNSIGNED),
            ("ROW_FORMAT", text(10)),
            ("TABLE_ROWS", BIGINT_UNSIGNED),
            ("AVG_ROW_LENGTH", BIGINT_UNSIGNED),
            ("DATA_LENGTH", BIGINT_UNSIGNED),
            ("MAX_DATA_LENGTH", BIGINT_UNSIGNED),
            ("INDEX_LENGTH", BIGINT_UNSIGNED),
            ("DATA_FREE", BIGINT_UNSIGNED),
            ("AUTO_INCREMENT", BIGINT_UNSIGNED),
            ("CREATE_TIME", SqlType::DateTime { fsp: 0 }),
            ("UPDATE_TIME", SqlType::DateTime { fsp: 0 }),
            ("CHECK_TIME", SqlType::DateTime { fsp: 0 }),
            ("TABLE_COLLATION", text(64)),
            ("CHECKSUM", BIGINT_UNSIGNED),
            ("CREATE_OPTIONS", text(2048)),
            ("TABLE_COMMENT", text(2048)),
            // zipdb's own: bytes before compression, and logical / physical.
            ("LOGICAL_DATA_LENGTH", BIGINT_UNSIGNED),
            ("LOGICAL_INDEX_LENGTH", BIGINT_UNSIGNED),
            ("COMPRESSION_RATIO", SqlType::Double),
        ],
        // MariaDB 10.11's column lists, in its order, so that `SELECT *` and positional
        // reads by tools see the same shape.
        Kind::Columns => vec![
            ("TABLE_CATALOG", text(512)),
            ("TABLE_SCHEMA", text(64)),
            ("TABLE_NAME", text(64)),
            ("COLUMN_NAME", text(64)),
            ("ORDINAL_POSITION", BIGINT_UNSIGNED),
            ("COLUMN_DEFAULT", LONGTEXT),
            ("IS_NULLABLE", text(3)),
            ("DATA_TYPE", text(64)),
            ("CHARACTER_MAXIMUM_LENGTH", BIGINT_UNSIGNED),
            ("CHARACTER_OCTET_LENGTH", BIGINT_UNSIGNED),
            ("NUMERIC_PRECISION", BIGINT_UNSIGNED),
            ("NUMERIC_SCALE", BIGINT_UNSIGNED),
            ("DATETIME_PRECISION", BIGINT_UNSIGNED),
            ("CHARACTER_SET_NAME", text(32)),
            ("COLLATION_NAME", text(64)),
            ("COLUMN_TYPE", LONGTEXT),
            ("COLUMN_KEY", text(3)),
            ("EXTRA", text(80)),
            ("PRIVILEGES", text(80)),
            ("COLUMN_COMMENT", text(1024)),
            ("IS_GENERATED", text(6)),
            ("GENERATION_EXPRESSION", LONGTEXT),
        ],
        Kind::Statistics => vec![
            ("TABLE_CATALOG", text(512)),
            ("TABLE_SCHEMA", text(64)),
            ("TABLE_NAME", text(64)),
            ("NON_UNIQUE", BIGINT),
            ("INDEX_SCHEMA", text(64)),
            ("INDEX_NAME", text(64)),
            ("SEQ_IN_INDEX", BIGINT_UNSIGNED),
            ("COLUMN_NAME", text(64)),
            ("COLLATION", text(1)),
            ("CARDINALITY", BIGINT),
            ("SUB_PART", BIGINT),
            ("PACKED", text(10)),
            ("NULLABLE", text(3)),
            ("INDEX_TYPE", text(16)),
            ("COMMENT", text(16)),
            ("INDEX_COMMENT", text(1024)),
            ("IGNORED", text(3)),
        ],
        Kind::Processlist => vec![
            ("ID", BIGINT),
            ("USER", text(128)),
            ("HOST", text(64)),
            ("DB", text(64)),
            ("COMMAND", text(16)),
            (
                "TIME",
                SqlType::Int {
                    bytes: 4,
                    unsigned: false,
                },
            ),
            ("STATE", text(64)),
            ("INFO", LONGTEXT),
        ],
        Kind::Files => {
            let mut v = vec![
                ("FILE_ID", BIGINT),
                ("FILE_NAME", text(512)),
                ("FILE_TYPE", text(20)),
                ("TABLESPACE_NAME", text(64)),
                ("TABLE_CATALOG", text(64)),
                ("TABLE_SCHEMA", text(64)),
                ("TABLE_NAME", text(64)),
                ("LOGFILE_GROUP_NAME", text(64)),
                ("LOGFILE_GROUP_NUMBER", BIGINT),
                ("ENGINE", text(64)),
                ("FULLTEXT_KEYS", text(64)),
            ];
            for n in [
                "DELETED_ROWS",
                "UPDATE_COUNT",
                "FREE_EXTENTS",
                "TOTAL_EXTENTS",
                "EXTENT_SIZE",
                "INITIAL_SIZE",
                "MAXIMUM_SIZE",
                "AUTOEXTEND_SIZE",
            ] {
                v.push((n, BIGINT));
            }
            for n in [
                "CREATION_TIME",
                "LAST_UPDATE_TIME",
                "LAST_ACCESS_TIME",
                "RECOVER_TIME",
            ] {
                v.push((n, SqlType::DateTime { fsp: 0 }));
            }
            v.extend([
                ("TRANSACTION_COUNTER", BIGINT),
                ("VERSION", BIGINT_UNSIGNED),
                ("ROW_FORMAT", text(10)),
                ("TABLE_ROWS", BIGINT_UNSIGNED),
                ("AVG_ROW_LENGTH", BIGINT_UNSIGNED),
                ("DATA_LENGTH", BIGINT_UNSIGNED),
                ("MAX_DATA_LENGTH", BIGINT_UNSIGNED),
                ("INDEX_LENGTH", BIGINT_UNSIGNED),
                ("DATA_FREE", BIGINT_UNSIGNED),
                ("CREATE_TIME", SqlType::DateTime { fsp: 0 }),
                ("UPDATE_TIME", SqlType::DateTime { fsp: 0 }),
                ("CHECK_TIME", SqlType::DateTime { fsp: 0 }),
                ("CHECKSUM", BIGINT_UNSIGNED),
                ("STATUS", text(20)),
                ("EXTRA", text(255)),
            ]);
            v
        }
        Kind::Partitions => vec![
            ("TABLE_CATALOG", text(512)),
            ("TABLE_SCHEMA", text(64)),
            ("TABLE_NAME", text(64)),
            ("PARTITION_NAME", text(64)),
            ("SUBPARTITION_NAME", text(64)),
            ("PARTITION_ORDINAL_POSITION", BIGINT_UNSIGNED),
            ("SUBPARTITION_ORDINAL_POSITION", BIGINT_UNSIGNED),
            ("PARTITION_METHOD", text(18)),
            ("SUBPARTITION_METHOD", text(12)),
            ("PARTITION_EXPRESSION", LONGTEXT),
            ("SUBPARTITION_EXPRESSION", LONGTEXT),
            ("PARTITION_DESCRIPTION", LONGTEXT),
            ("TABLE_ROWS", BIGINT_UNSIGNED),
            ("AVG_ROW_LENGTH", BIGINT_UNSIGNED),
            ("DATA_LENGTH", BIGINT_UNSIGNED),
            ("MAX_DATA_LENGTH", BIGINT_UNSIGNED),
            ("INDEX_LENGTH", BIGINT_UNSIGNED),
            ("DATA_FREE", BIGINT_UNSIGNED),
            ("CREATE_TIME", SqlType::DateTime { fsp: 0 }),
            ("UPDATE_TIME", SqlType::DateTime { fsp: 0 }),
            ("CHECK_TIME", SqlType::DateTime { fsp: 0 }),
            ("CHECKSUM", BIGINT_UNSIGNED),
            ("PARTITION_COMMENT", text(80)),
            ("NODEGROUP", text(12)),
            ("TABLESPACE_NAME", text(64)),
        ],
        Kind::Triggers => vec![
            ("TRIGGER_CATALOG", text(512)),
            ("TRIGGER_SCHEMA", text(64)),
            ("TRIGGER_NAME", text(64)),
            ("EVENT_MANIPULATION", text(6)),
            ("EVENT_OBJECT_CATALOG", text(512)),
            ("EVENT_OBJECT_SCHEMA", text(64)),
            ("EVENT_OBJECT_TABLE", text(64)),
            ("ACTION_ORDER", BIGINT),
            ("ACTION_CONDITION", LONGTEXT),
            ("ACTION_STATEMENT", LONGTEXT),
            ("ACTION_ORIENTATION", text(9)),
            ("ACTION_TIMING", text(6)),
            ("ACTION_REFERENCE_OLD_TABLE", text(64)),
            ("ACTION_REFERENCE_NEW_TABLE", text(64)),
            ("ACTION_REFERENCE_OLD_ROW", text(3)),
            ("ACTION_REFERENCE_NEW_ROW", text(3)),
            ("CREATED", SqlType::DateTime { fsp: 2 }),
            ("SQL_MODE", text(8192)),
            ("DEFINER", text(384)),
            ("CHARACTER_SET_CLIENT", text(32)),
            ("COLLATION_CONNECTION", text(64)),
            ("DATABASE_COLLATION", text(64)),
        ],
    }
}

/// The table `name` of `information_schema` as a [`Table`] to compile a SELECT against.
/// `placeholder` is any open tree: the table needs a handle, and the executor never uses it
/// for a virtual table.
pub fn table(name: &str, placeholder: zipdb_engine::Tree) -> Result<Arc<Table>, SqlError> {
    let Some(&(canonical, kind)) = KINDS.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) else {
        return Err(SqlError::no_table(DB, name));
    };
    let cols = columns(kind);
    let def = TableDef {
        id: 0,
        db: DB.to_string(),
        name: canonical.to_string(),
        columns: cols
            .iter()
            .map(|(n, ty)| ColumnDef {
                name: n.to_string(),
                ty: *ty,
                nullable: true,
                default: None,
                default_now: false,
                auto_increment: false,
            })
            .collect(),
        pk: Vec::new(),
        indexes: Vec::new(),
        codec: zipdb_engine::Codec::None,
        options: TableOptions::default(),
        primary_tree: String::new(),
    };
    Ok(Arc::new(Table {
        types: cols.iter().map(|(_, t)| *t).collect(),
        def,
        primary: placeholder,
        indexes: Vec::new(),
        next_id: AtomicU64::new(0),
        auto_inc: None,
        virt: Some(kind),
    }))
}

/// The rows of `kind` now, as seen by `sess`.
pub fn rows(sess: &Session, kind: Kind) -> Result<Vec<Vec<Value>>, SqlError> {
    let s = |v: &str| Value::Str(v.to_string());
    Ok(match kind {
        Kind::GlobalStatus | Kind::SessionStatus => crate::admin::show::status_rows(sess)
            .into_iter()
            .map(|(n, v)| vec![s(&n.to_ascii_uppercase()), s(&v)])
            .collect(),
        Kind::GlobalVariables | Kind::SessionVariables => {
            let mut r = Vec::new();
            for name in crate::admin::show::variable_names(sess) {
                let v = sess.sysvar(name)?;
                r.push(vec![
                    s(&name.to_ascii_uppercase()),
                    s(&v.to_string_lossy().unwrap_or_default()),
                ]);
            }
            r
        }
        Kind::Schemata => {
            let mut names: Vec<String> = sess.inst.catalog.read().dbs.keys().cloned().collect();
            names.push(DB.to_string());
            names.sort();
            names
                .into_iter()
                .map(|n| {
                    vec![
                        s("def"),
                        Value::Str(n),
                        s("utf8mb4"),
                        s("utf8mb4_general_ci"),
                        Value::Null,
                    ]
                })
                .collect()
        }
        Kind::Tables => {
            let tables: Vec<Arc<Table>> = {
                let cat = sess.inst.catalog.read();
                cat.dbs.values().flat_map(|t| t.values().cloned()).collect()
            };
            let stats = sess.inst.db.stats();
            let mut r = Vec::new();
            for t in tables {
                let z = crate::admin::show::TableSizes::of(&t, &stats);
                r.push(vec![
                    s("def"),
                    s(&t.def.db),
                    s(&t.def.name),
                    s("BASE TABLE"),
                    s("zipdb"),
                    Value::UInt(10),
                    s(z.row_format(&t)),
                    Value::Null,
                    Value::Null,
                    Value::UInt(z.data_physical),
                    Value::UInt(0),
                    Value::UInt(z.index_physical),
                    Value::UInt(0),
                    z.auto_increment(&t),
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    s("utf8mb4_general_ci"),
                    Value::Null,
                    s(&z.create_options(&t)),
                    s(t.def.options.comment.as_deref().unwrap_or_default()),
                    Value::UInt(z.data_logical),
                    Value::UInt(z.index_logical),
                    Value::Double(z.ratio()),
                ]);
            }
            r
        }
        Kind::Columns => {
            let mut r = Vec::new();
            for t in user_tables(sess) {
                for (i, c) in t.def.columns.iter().enumerate() {
                    r.push(column_row(&t, i, c));
                }
            }
            r
        }
        Kind::Statistics => {
            let mut r = Vec::new();
            for t in user_tables(sess) {
                for ix in crate::admin::show::index_list(&t) {
                    for (seq, &c) in ix.columns.iter().enumerate() {
                        r.push(vec![
                            s("def"),
                            s(&t.def.db),
                            s(&t.def.name),
                            Value::Int(i64::from(!ix.unique)),
                            s(&t.def.db),
                            s(ix.name),
                            Value::UInt(seq as u64 + 1),
                            s(&t.def.columns[c].name),
                            s("A"),
                            Value::Null,
                            Value::Null,
                            Value::Null,
                            s(if t.def.columns[c].nullable { "YES" } else { "" }),
                            s("BTREE"),
                            s(""),
                            s(""),
                            s("NO"),
                        ]);
                    }
                }
            }
            r
        }
        Kind::Processlist => crate::admin::show::processlist_rows(sess, true),
        Kind::Triggers | Kind::Files => Vec::new(),
        Kind::Partitions => {
            let stats = sess.inst.db.stats();
            let width = columns(Kind::Partitions).len();
            user_tables(sess)
                .iter()
                .map(|t| {
                    let z = crate::admin::show::TableSizes::of(t, &stats);
                    let mut r = vec![Value::Null; width];
                    r[0] = s("def");
                    r[1] = s(&t.def.db);
                    r[2] = s(&t.def.name);
                    r[14] = Value::UInt(z.data_physical);
                    r[16] = Value::UInt(z.index_physical);
                    r
                })
                .collect()
        }
    })
}

/// Every table of every database, ordered by database and name (the catalog's maps are
/// ordered), as MariaDB lists them.
fn user_tables(sess: &Session) -> Vec<Arc<Table>> {
    let cat = sess.inst.catalog.read();
    cat.dbs.values().flat_map(|t| t.values().cloned()).collect()
}

/// One row of `COLUMNS`, worded as MariaDB 10.11 words it: DATA_TYPE is the bare type name,
/// COLUMN_DEFAULT an SQL expression (strings quoted, `NULL` for a nullable column without a
/// default, SQL NULL for a NOT NULL one), lengths in characters and in bytes (utf8mb4: 4 per
/// character).
fn column_row(t: &Table, i: usize, c: &ColumnDef) -> Vec<Value> {
    let s = |v: &str| Value::Str(v.to_string());
    let ty = c.ty;
    let (data_type, char_len, octet_len, precision, scale, dt_precision) = match ty {
        SqlType::Int { bytes, unsigned } => {
            let (name, digits) = match bytes {
                1 => ("tinyint", 3),
                2 => ("smallint", 5),
                3 => ("mediumint", 7),
                4 => ("int", 10),
                // BIGINT UNSIGNED holds one digit more (18446744073709551615).
                _ => ("bigint", if unsigned { 20 } else { 19 }),
            };
            (name, None, None, Some(digits), Some(0), None)
        }
        SqlType::Float => ("float", None, None, Some(12), None, None),
        SqlType::Double => ("double", None, None, Some(22), None, None),
        SqlType::Decimal { precision, scale } => (
            "decimal",
            None,
            None,
            Some(u64::from(precision)),
            Some(u64::from(scale)),
            None,
        ),
        SqlType::Char { len, binary } => {
            let octets = if binary { len } else { len.saturating_mul(4) };
            (
                if binary { "binary" } else { "char" },
                Some(u64::from(len)),
                Some(u64::from(octets)),
                None,
                None,
                None,
            )
        }
        SqlType::Varchar { len, binary } => {
            let octets = if binary { len } else { len.saturating_mul(4) };
            (
                if binary { "varbinary" } else { "varchar" },
                Some(u64::from(len)),
                Some(u64::from(octets)),
                None,
                None,
                None,
            )
        }
        SqlType::Text { max, binary } => {
            // "tinytext", "mediumblob", ...: the declared name, which has no arguments.
            let name: &'static str = match (max, binary) {
                (0..=255, false) => "tinytext",
                (256..=65535, false) => "text",
                (65536..=16_777_215, false) => "mediumtext",
                (_, false) => "longtext",
                (0..=255, true) => "tinyblob",
                (256..=65535, true) => "blob",
                (65536..=16_777_215, true) => "mediumblob",
                (_, true) => "longblob",
            };
            (
                name,
                Some(u64::from(max)),
                Some(u64::from(max)),
                None,
                None,
                None,
            )
        }
        SqlType::Date => ("date", None, None, None, None, None),
        SqlType::DateTime { fsp } => ("datetime", None, None, None, None, Some(u64::from(fsp))),
        SqlType::Timestamp { fsp } => ("timestamp", None, None, None, None, Some(u64::from(fsp))),
    };
    let num = |v: Option<u64>| v.map_or(Value::Null, Value::UInt);
    let default = if c.default_now {
        s("current_timestamp()")
    } else {
        match &c.default {
            None | Some(Value::Null) if c.nullable && !c.auto_increment => s("NULL"),
            None | Some(Value::Null) => Value::Null,
            Some(v) if ty.is_string() || matches!(v, Value::Str(_) | Value::Bytes(_)) => {
                let text = v.to_string_lossy().unwrap_or_default();
                Value::Str(format!("'{}'", text.replace('\'', "''")))
            }
            Some(v) => Value::Str(v.to_string_lossy().unwrap_or_default()),
        }
    };
    let (charset, collation) = if ty.is_text() {
        (s("utf8mb4"), s("utf8mb4_general_ci"))
    } else {
        (Value::Null, Value::Null)
    };
    vec![
        s("def"),
        s(&t.def.db),
        s(&t.def.name),
        s(&c.name),
        Value::UInt(i as u64 + 1),
        default,
        s(if c.nullable { "YES" } else { "NO" }),
        s(data_type),
        num(char_len),
        num(octet_len),
        num(precision),
        num(scale),
        num(dt_precision),
        charset,
        collation,
        s(&ty.sql_name()),
        s(crate::admin::show::column_key(t, i)),
        s(if c.auto_increment {
            "auto_increment"
        } else {
            ""
        }),
        s("select,insert,update,references"),
        s(""),
        s("NEVER"),
        Value::Null,
    ]
}
