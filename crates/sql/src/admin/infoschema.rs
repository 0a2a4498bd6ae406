//! `information_schema`'s rows: what each table of [`crate::catalog::system`] holds when a
//! query reads it, as seen by a session.
//!
//! The counters of the storage core (`GLOBAL_STATUS`) are the same as SHOW STATUS prints; the
//! sizes in `TABLES` are the same as SHOW TABLE STATUS prints (physical bytes from the page
//! store, logical bytes before compression, and their ratio).

use std::sync::Arc;

use crate::catalog::system::{columns, SystemTable, DB};
use crate::catalog::{ColumnDef, Table};
use crate::instance::session::Session;
use crate::types::sqltype::SqlType;
use crate::types::value::Value;
use crate::SqlError;

/// The rows of `kind` now, as seen by `sess`.
pub fn rows(sess: &Session, kind: SystemTable) -> Result<Vec<Vec<Value>>, SqlError> {
    let s = |v: &str| Value::Str(v.to_string());
    Ok(match kind {
        SystemTable::GlobalStatus | SystemTable::SessionStatus => {
            crate::admin::status::status_rows(sess)
                .into_iter()
                .map(|(n, v)| vec![s(&n.to_ascii_uppercase()), s(&v)])
                .collect()
        }
        SystemTable::GlobalVariables | SystemTable::SessionVariables => {
            let mut r = Vec::new();
            for name in crate::instance::vars::variable_names(sess) {
                let v = sess.sysvar(name)?;
                r.push(vec![
                    s(&name.to_ascii_uppercase()),
                    s(&crate::instance::vars::shown_value(name, &v)),
                ]);
            }
            r
        }
        SystemTable::Schemata => {
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
        SystemTable::Tables => {
            let tables: Vec<Arc<Table>> = {
                let cat = sess.inst.catalog.read();
                cat.dbs.values().flat_map(|t| t.values().cloned()).collect()
            };
            let stats = sess.inst.db.stats();
            let mut r = Vec::new();
            for t in tables {
                let z = crate::admin::tables::TableSizes::of(&t, &stats);
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
        SystemTable::Columns => {
            let mut r = Vec::new();
            for t in user_tables(sess) {
                for (i, c) in t.def.columns.iter().enumerate() {
                    r.push(column_row(&t, i, c));
                }
            }
            r
        }
        SystemTable::Statistics => {
            let mut r = Vec::new();
            for t in user_tables(sess) {
                for ix in crate::admin::tables::index_list(&t) {
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
        SystemTable::Processlist => crate::admin::processlist::processlist_rows(sess, true),
        SystemTable::Triggers | SystemTable::Files => Vec::new(),
        SystemTable::Partitions => {
            let stats = sess.inst.db.stats();
            let width = columns(SystemTable::Partitions).len();
            user_tables(sess)
                .iter()
                .map(|t| {
                    let z = crate::admin::tables::TableSizes::of(t, &stats);
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
        SystemTable::ZipdbTableCompression => {
            let stats = sess.inst.db.stats();
            let mut r = Vec::new();
            for t in user_tables(sess) {
                let primary = stats.trees.iter().find(|x| x.name == t.def.primary_tree);
                let Some(rs) = primary.and_then(|x| x.records.as_ref()) else {
                    continue;
                };
                let z = crate::admin::tables::TableSizes::of(&t, &stats);
                let ratio = |num: u64, den: u64| {
                    if den == 0 {
                        Value::Null
                    } else {
                        Value::Double(num as f64 / den as f64)
                    }
                };
                r.push(vec![
                    s(&t.def.db),
                    s(&t.def.name),
                    s(crate::catalog::format_name(t.def.format)),
                    Value::UInt(u64::from(rs.version)),
                    Value::UInt(u64::from(rs.versions)),
                    ratio(
                        u64::from(rs.trained_ratio_per_mille),
                        1000 * u64::from(rs.version != 0),
                    ),
                    Value::UInt(rs.records_encoded),
                    Value::UInt(rs.records_raw),
                    Value::UInt(rs.bytes_in),
                    Value::UInt(rs.bytes_out),
                    ratio(rs.bytes_out, rs.bytes_in),
                    Value::UInt(rs.records_decoded),
                    Value::UInt(rs.decode_ns),
                    Value::UInt(rs.encode_ns),
                    Value::UInt(z.data_logical + z.index_logical),
                    Value::UInt(z.data_physical + z.index_physical),
                    Value::UInt(u64::from(rs.live_versions)),
                    Value::UInt(rs.retrains),
                    Value::UInt(rs.retrains_skipped),
                    Value::UInt(rs.leaves_reencoded),
                    ratio(rs.drift_stored, rs.drift_raw),
                    s(primary.map_or("off", |x| x.cold_dict.0.as_str())),
                    Value::UInt(primary.map_or(0, |x| x.cold_dict.1)),
                ]);
            }
            r
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
        s(&c.type_text()),
        s(crate::admin::tables::column_key(t, i)),
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
