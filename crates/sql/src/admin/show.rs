//! SHOW statements and system variables.
//!
//! SHOW is read as words by front/show.rs rather than by the parser, which reads most MySQL
//! SHOW forms as one opaque name; it runs here. Supported: DATABASES/SCHEMAS, [FULL] TABLES, [FULL] COLUMNS/FIELDS, CREATE
//! TABLE, CREATE DATABASE, INDEX/INDEXES/KEYS, [GLOBAL|SESSION] VARIABLES, [GLOBAL|SESSION]
//! STATUS, WARNINGS/ERRORS, TABLE STATUS, [FULL] PROCESSLIST, ENGINES, COLLATION, CHARACTER
//! SET, and the empty FUNCTION/PROCEDURE STATUS, TRIGGERS, EVENTS; each with
//! `LIKE 'pattern'` where MySQL has it.

use std::sync::Arc;

use crate::admin::processlist::processlist_rows;
use crate::admin::s;
use crate::admin::status::status_rows;
use crate::admin::tables::{column_key, create_table_text, default_text, index_list, TableSizes};
use crate::expr::like;
use crate::instance::session::Session;
use crate::types::result::{ColumnMeta, Outcome};
use crate::types::sqltype::SqlType;
use crate::types::value::Value;
use crate::SqlError;

fn text_cols(names: &[&str]) -> Arc<Vec<ColumnMeta>> {
    Arc::new(names.iter().map(|n| ColumnMeta::text(n)).collect())
}

pub(crate) fn rows(names: &[&str], rows: Vec<Vec<Value>>) -> Outcome {
    Outcome::Rows {
        columns: text_cols(names),
        rows,
    }
}

fn upper(w: &[(String, bool)], i: usize) -> String {
    w.get(i)
        .filter(|x| !x.1)
        .map(|x| x.0.to_ascii_uppercase())
        .unwrap_or_default()
}

/// `LIKE 'pattern'` at `i`, if present.
fn like_at(w: &[(String, bool)], i: usize) -> Result<Option<String>, SqlError> {
    match upper(w, i).as_str() {
        "" => Ok(None),
        "LIKE" => match w.get(i + 1) {
            Some((p, true)) => Ok(Some(p.clone())),
            _ => Err(SqlError::syntax("LIKE", 1)),
        },
        "WHERE" => Err(SqlError::unsupported("SHOW ... WHERE")),
        other => Err(SqlError::syntax(other, 1)),
    }
}

fn matches(name: &str, pat: &Option<String>) -> bool {
    pat.as_ref().is_none_or(|p| like(name, p, '\\', true))
}

/// `FROM|IN name [FROM|IN db]` at `i`: (name, db, next index).
fn from_at(w: &[(String, bool)], i: usize) -> Option<(String, Option<String>, usize)> {
    if !matches!(upper(w, i).as_str(), "FROM" | "IN") {
        return None;
    }
    let mut name = w.get(i + 1)?.0.clone();
    let mut j = i + 2;
    let mut db = None;
    if w.get(j).map(|x| x.0.as_str()) == Some(".") {
        db = Some(name);
        name = w.get(j + 1)?.0.clone();
        j += 2;
    }
    if matches!(upper(w, j).as_str(), "FROM" | "IN") {
        db = Some(w.get(j + 1)?.0.clone());
        j += 2;
    }
    Some((name, db, j))
}

/// Runs a SHOW statement: `w` are its words after `SHOW` (front/show.rs).
pub(crate) fn show(sess: &mut Session, w: &[(String, bool)]) -> Result<Outcome, SqlError> {
    let mut i = 0;
    let mut full = false;
    let mut scope_global = false;
    loop {
        match upper(w, i).as_str() {
            "FULL" => full = true,
            "GLOBAL" => scope_global = true,
            "SESSION" | "LOCAL" => {}
            _ => break,
        }
        i += 1;
    }
    let _ = scope_global;
    let what = upper(w, i);
    let inst = sess.inst.clone();
    match what.as_str() {
        "DATABASES" | "SCHEMAS" => {
            let pat = like_at(w, i + 1)?;
            let mut names: Vec<String> = inst.catalog.read().dbs.keys().cloned().collect();
            names.push(crate::catalog::system::DB.into());
            names.sort();
            let r = names
                .into_iter()
                .filter(|n| matches(n, &pat))
                .map(|n| vec![s(n)])
                .collect();
            Ok(rows(&["Database"], r))
        }
        "TABLES" => {
            let (db, next) = match from_at(w, i + 1) {
                Some((d, _, n)) => (d, n),
                None => (sess.db.clone().ok_or_else(SqlError::no_db)?, i + 1),
            };
            let pat = like_at(w, next)?;
            let (names, kind): (Vec<String>, &str) = if crate::catalog::system::is_db(&db) {
                let n = crate::catalog::system::table_names().map(String::from);
                (n.collect(), "SYSTEM VIEW")
            } else {
                let cat = inst.catalog.read();
                let tables = cat.dbs.get(&db).ok_or_else(|| SqlError::unknown_db(&db))?;
                (tables.keys().cloned().collect(), "BASE TABLE")
            };
            let label = format!("Tables_in_{db}");
            let r: Vec<Vec<Value>> = names
                .iter()
                .filter(|n| matches(n, &pat))
                .map(|n| {
                    if full {
                        vec![s(n.clone()), s(kind)]
                    } else {
                        vec![s(n.clone())]
                    }
                })
                .collect();
            if full {
                Ok(rows(&[&label, "Table_type"], r))
            } else {
                Ok(rows(&[&label], r))
            }
        }
        "COLUMNS" | "FIELDS" => {
            let (t, db, next) =
                from_at(w, i + 1).ok_or_else(|| SqlError::syntax("SHOW COLUMNS", 1))?;
            let pat = like_at(w, next)?;
            let db = db.or_else(|| sess.db.clone()).ok_or_else(SqlError::no_db)?;
            let t = inst.table(&db, &t)?;
            let mut r = Vec::new();
            for (ci, c) in t.def.columns.iter().enumerate() {
                if !matches(&c.name, &pat) {
                    continue;
                }
                let key = column_key(&t, ci);
                let mut row = vec![s(c.name.clone()), s(c.ty.sql_name())];
                if full {
                    row.push(if c.ty.is_text() {
                        s("utf8mb4_general_ci")
                    } else {
                        Value::Null
                    });
                }
                row.push(s(if c.nullable { "YES" } else { "NO" }));
                row.push(s(key));
                row.push(default_text(c));
                row.push(s(if c.auto_increment {
                    "auto_increment"
                } else {
                    ""
                }));
                if full {
                    row.push(s("select,insert,update,references"));
                    row.push(s(""));
                }
                r.push(row);
            }
            if full {
                Ok(rows(
                    &[
                        "Field",
                        "Type",
                        "Collation",
                        "Null",
                        "Key",
                        "Default",
                        "Extra",
                        "Privileges",
                        "Comment",
                    ],
                    r,
                ))
            } else {
                Ok(rows(
                    &["Field", "Type", "Null", "Key", "Default", "Extra"],
                    r,
                ))
            }
        }
        "INDEX" | "INDEXES" | "KEYS" => {
            let (t, db, _) = from_at(w, i + 1).ok_or_else(|| SqlError::syntax("SHOW INDEX", 1))?;
            let db = db.or_else(|| sess.db.clone()).ok_or_else(SqlError::no_db)?;
            let t = inst.table(&db, &t)?;
            let mut r = Vec::new();
            for ix in index_list(&t) {
                for (seq, &c) in ix.columns.iter().enumerate() {
                    r.push(vec![
                        s(t.def.name.clone()),
                        Value::Int(i64::from(!ix.unique)),
                        s(ix.name),
                        Value::Int(seq as i64 + 1),
                        s(t.def.columns[c].name.clone()),
                        s("A"),
                        Value::Null,
                        Value::Null,
                        Value::Null,
                        s(if t.def.columns[c].nullable { "YES" } else { "" }),
                        s("BTREE"),
                        s(""),
                        s(""),
                    ]);
                }
            }
            Ok(rows(
                &[
                    "Table",
                    "Non_unique",
                    "Key_name",
                    "Seq_in_index",
                    "Column_name",
                    "Collation",
                    "Cardinality",
                    "Sub_part",
                    "Packed",
                    "Null",
                    "Index_type",
                    "Comment",
                    "Index_comment",
                ],
                r,
            ))
        }
        "CREATE" => {
            match upper(w, i + 1).as_str() {
                "TABLE" => {
                    let mut name = w
                        .get(i + 2)
                        .map(|x| x.0.clone())
                        .ok_or_else(|| SqlError::syntax("SHOW CREATE TABLE", 1))?;
                    let mut db = sess.db.clone();
                    if w.get(i + 3).map(|x| x.0.as_str()) == Some(".") {
                        db = Some(name);
                        name = w.get(i + 4).map(|x| x.0.clone()).unwrap_or_default();
                    }
                    let db = db.ok_or_else(SqlError::no_db)?;
                    let t = inst.table(&db, &name)?;
                    // sql_mode NO_TABLE_OPTIONS (mysqldump --compatible=no_table_options) leaves
                    // out ENGINE, COMPRESSION and the rest, for a dump another server reads.
                    let mode = sess
                        .sysvar("sql_mode")?
                        .to_string_lossy()
                        .unwrap_or_default();
                    let mut text = create_table_text(&t);
                    if mode
                        .split(',')
                        .any(|m| m.trim().eq_ignore_ascii_case("NO_TABLE_OPTIONS"))
                    {
                        if let Some(end) = text.rfind(')') {
                            text.truncate(end + 1);
                        }
                    }
                    Ok(rows(
                        &["Table", "Create Table"],
                        vec![vec![s(name), s(text)]],
                    ))
                }
                "DATABASE" | "SCHEMA" => {
                    let name = w.get(i + 2).map(|x| x.0.clone()).unwrap_or_default();
                    if !inst.database_exists(&name) {
                        return Err(SqlError::unknown_db(&name));
                    }
                    Ok(rows(
                    &["Database", "Create Database"],
                    vec![vec![
                        s(name.clone()),
                        s(format!("CREATE DATABASE `{name}` /*!40100 DEFAULT CHARACTER SET utf8mb4 */")),
                    ]],
                ))
                }
                other => Err(SqlError::unsupported(&format!("SHOW CREATE {other}"))),
            }
        }
        "VARIABLES" => {
            let pat = like_at(w, i + 1)?;
            let mut r = Vec::new();
            for name in crate::instance::vars::variable_names(sess) {
                if matches(name, &pat) {
                    let v = sess.sysvar(name)?;
                    r.push(vec![s(name), s(v.to_string_lossy().unwrap_or_default())]);
                }
            }
            Ok(rows(&["Variable_name", "Value"], r))
        }
        "STATUS" => {
            let pat = like_at(w, i + 1)?;
            let r = status_rows(sess)
                .into_iter()
                .filter(|(n, _)| matches(n, &pat))
                .map(|(n, v)| vec![s(n), s(v)])
                .collect();
            Ok(rows(&["Variable_name", "Value"], r))
        }
        "WARNINGS" | "ERRORS" => {
            sess.warnings_shown = true;
            // MariaDB lists max_error_count (64) conditions; the counts still include the rest.
            let r = sess
                .warnings
                .iter()
                .take(64)
                .map(|x| {
                    vec![
                        s(x.level),
                        Value::Int(i64::from(x.code)),
                        s(x.message.clone()),
                    ]
                })
                .collect();
            Ok(Outcome::Rows {
                columns: Arc::new(vec![
                    ColumnMeta::text("Level"),
                    ColumnMeta::computed(
                        "Code",
                        SqlType::Int {
                            bytes: 4,
                            unsigned: true,
                        },
                        false,
                    ),
                    ColumnMeta::text("Message"),
                ]),
                rows: r,
            })
        }
        "COUNT" => {
            // SHOW COUNT(*) WARNINGS
            Ok(Outcome::Rows {
                columns: Arc::new(vec![ColumnMeta::bigint("@@session.warning_count")]),
                rows: vec![vec![Value::Int(sess.warnings.len() as i64)]],
            })
        }
        "TABLE" if upper(w, i + 1) == "STATUS" => table_status(sess, w, i + 2),
        // zipdb has no stored routines, triggers or events: their lists are empty, so that
        // tools that ask (mysqldump --routines, --triggers, --events) go on.
        "FUNCTION" | "PROCEDURE" if upper(w, i + 1) == "STATUS" => Ok(rows(
            &[
                "Db",
                "Name",
                "Type",
                "Definer",
                "Modified",
                "Created",
                "Security_type",
                "Comment",
                "character_set_client",
                "collation_connection",
                "Database Collation",
            ],
            Vec::new(),
        )),
        "TRIGGERS" => Ok(rows(
            &[
                "Trigger",
                "Event",
                "Table",
                "Statement",
                "Timing",
                "Created",
                "sql_mode",
                "Definer",
                "character_set_client",
                "collation_connection",
                "Database Collation",
            ],
            Vec::new(),
        )),
        "EVENTS" => Ok(rows(
            &[
                "Db",
                "Name",
                "Definer",
                "Time zone",
                "Type",
                "Execute at",
                "Interval value",
                "Interval field",
                "Starts",
                "Ends",
                "Status",
                "Originator",
                "character_set_client",
                "collation_connection",
                "Database Collation",
            ],
            Vec::new(),
        )),
        "PROCESSLIST" => {
            if !upper(w, i + 1).is_empty() {
                return Err(SqlError::syntax(&w[i + 1].0, 1));
            }
            Ok(Outcome::Rows {
                columns: Arc::new(vec![
                    ColumnMeta::bigint("Id"),
                    ColumnMeta::text("User"),
                    ColumnMeta::text("Host"),
                    ColumnMeta::text("db"),
                    ColumnMeta::text("Command"),
                    ColumnMeta::computed(
                        "Time",
                        SqlType::Int {
                            bytes: 4,
                            unsigned: false,
                        },
                        false,
                    ),
                    ColumnMeta::text("State"),
                    ColumnMeta::text("Info"),
                ]),
                rows: processlist_rows(sess, full),
            })
        }
        "ENGINES" => Ok(rows(
            &[
                "Engine",
                "Support",
                "Comment",
                "Transactions",
                "XA",
                "Savepoints",
            ],
            vec![vec![
                s("zipdb"),
                s("DEFAULT"),
                s("Compressed transactional B-tree storage"),
                s("YES"),
                s("NO"),
                s("NO"),
            ]],
        )),
        "COLLATION" => Ok(rows(
            &[
                "Collation",
                "Charset",
                "Id",
                "Default",
                "Compiled",
                "Sortlen",
            ],
            vec![vec![
                s("utf8mb4_general_ci"),
                s("utf8mb4"),
                s("45"),
                s("Yes"),
                s("Yes"),
                s("1"),
            ]],
        )),
        "CHARACTER" | "CHARSET" => Ok(rows(
            &["Charset", "Description", "Default collation", "Maxlen"],
            vec![vec![
                s("utf8mb4"),
                s("UTF-8 Unicode"),
                s("utf8mb4_general_ci"),
                s("4"),
            ]],
        )),
        "" => Err(SqlError::syntax("SHOW", 1)),
        other => Err(SqlError::unsupported(&format!("SHOW {other}"))),
    }
}

/// SHOW TABLE STATUS: true physical sizes from the page store, plus logical size and ratio.
fn table_status(sess: &mut Session, w: &[(String, bool)], i: usize) -> Result<Outcome, SqlError> {
    let (db, next) = match upper(w, i).as_str() {
        "FROM" | "IN" => (w.get(i + 1).map(|x| x.0.clone()).unwrap_or_default(), i + 2),
        _ => (sess.db.clone().ok_or_else(SqlError::no_db)?, i),
    };
    let pat = like_at(w, next)?;
    let inst = sess.inst.clone();
    let tables: Vec<Arc<crate::catalog::Table>> = {
        let cat = inst.catalog.read();
        let t = cat.dbs.get(&db).ok_or_else(|| SqlError::unknown_db(&db))?;
        t.values()
            .filter(|t| matches(&t.def.name, &pat))
            .cloned()
            .collect()
    };
    let stats = inst.db.stats();
    let mut r = Vec::new();
    for t in tables {
        let z = TableSizes::of(&t, &stats);
        r.push(vec![
            s(t.def.name.clone()),
            s("zipdb"),
            Value::Int(10),
            s(z.row_format(&t)),
            Value::Null,
            Value::Null,
            Value::UInt(z.data_physical),
            Value::Int(0),
            Value::UInt(z.index_physical),
            Value::Int(0),
            z.auto_increment(&t),
            Value::Null,
            Value::Null,
            Value::Null,
            s("utf8mb4_general_ci"),
            Value::Null,
            s(z.create_options(&t)),
            s(t.def.options.comment.clone().unwrap_or_default()),
            Value::UInt(z.data_logical),
            Value::UInt(z.index_logical),
            s(format!("{:.2}", z.ratio())),
        ]);
    }
    Ok(rows(
        &[
            "Name",
            "Engine",
            "Version",
            "Row_format",
            "Rows",
            "Avg_row_length",
            "Data_length",
            "Max_data_length",
            "Index_length",
            "Data_free",
            "Auto_increment",
            "Create_time",
            "Update_time",
            "Check_time",
            "Collation",
            "Checksum",
            "Create_options",
            "Comment",
            "Logical_data_length",
            "Logical_index_length",
            "Compression_ratio",
        ],
        r,
    ))
}
