//! `information_schema`: read-only tables computed when a query reads them.
//!
//! Each table is a [`Kind`] with a fixed column list. Compiling a SELECT over one gives an
//! ordinary [`Table`] whose `virt` names the kind, so WHERE, GROUP BY, ORDER BY, LIMIT and
//! aggregates work unchanged; the executor asks the session for the rows instead of scanning a
//! tree. Only SELECT can name these tables ([`crate::plan::Env::table`] refuses them for every
//! other statement), so nothing ever writes through the placeholder tree handle they carry.
//!
//! The counters of the storage core (`GLOBAL_STATUS`) are the same as SHOW STATUS prints; the
//! sizes in `TABLES` are the same as SHOW TABLE STATUS prints (physical bytes from the page
//! store, logical bytes before compression, and their ratio).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::catalog::{ColumnDef, Table, TableDef, TableOptions};
use crate::session::Session;
use crate::value::{SqlType, Value};
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
}

const KINDS: &[(&str, Kind)] = &[
    ("GLOBAL_STATUS", Kind::GlobalStatus),
    ("SESSION_STATUS", Kind::SessionStatus),
    ("GLOBAL_VARIABLES", Kind::GlobalVariables),
    ("SESSION_VARIABLES", Kind::SessionVariables),
    ("SCHEMATA", Kind::Schemata),
    ("TABLES", Kind::Tables),
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
        Kind::GlobalStatus | Kind::SessionStatus => crate::show::status_rows(sess)
            .into_iter()
            .map(|(n, v)| vec![s(&n.to_ascii_uppercase()), s(&v)])
            .collect(),
        Kind::GlobalVariables | Kind::SessionVariables => {
            let mut r = Vec::new();
            for name in crate::show::VARIABLES {
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
                let z = crate::show::TableSizes::of(&t, &stats);
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
    })
}
