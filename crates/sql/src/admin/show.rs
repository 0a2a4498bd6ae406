//! SHOW statements and system variables.
//!
//! SHOW is recognised here rather than by the parser, which reads most MySQL SHOW forms as
//! one opaque name. Supported: DATABASES/SCHEMAS, [FULL] TABLES, [FULL] COLUMNS/FIELDS, CREATE
//! TABLE, CREATE DATABASE, INDEX/INDEXES/KEYS, [GLOBAL|SESSION] VARIABLES, [GLOBAL|SESSION]
//! STATUS, WARNINGS/ERRORS, TABLE STATUS, [FULL] PROCESSLIST, ENGINES, COLLATION, CHARACTER
//! SET, and the empty FUNCTION/PROCEDURE STATUS, TRIGGERS, EVENTS; each with
//! `LIKE 'pattern'` where MySQL has it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::expr::like;
use crate::result::{ColumnMeta, Outcome};
use crate::session::Session;
use crate::value::{SqlType, Value};
use crate::SqlError;

/// Words of a SHOW statement: identifiers unquoted, string literals kept with a marker.
fn words(sql: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut it = sql.trim().trim_end_matches(';').chars().peekable();
    while let Some(&c) = it.peek() {
        if c.is_whitespace() {
            it.next();
        } else if c == '\'' || c == '"' || c == '`' {
            it.next();
            let mut w = String::new();
            while let Some(ch) = it.next() {
                if ch == c {
                    if it.peek() == Some(&c) {
                        it.next();
                        w.push(c);
                        continue;
                    }
                    break;
                }
                if ch == '\\' && c != '`' {
                    if let Some(n) = it.next() {
                        w.push(n);
                    }
                    continue;
                }
                w.push(ch);
            }
            out.push((w, c != '`'));
        } else if c == '.' || c == ',' || c == '(' || c == ')' || c == '*' || c == '=' {
            out.push((c.to_string(), false));
            it.next();
        } else {
            let mut w = String::new();
            while let Some(&ch) = it.peek() {
                if ch.is_whitespace()
                    || matches!(ch, '.' | ',' | '(' | ')' | '\'' | '"' | '`' | '=' | ';')
                {
                    break;
                }
                w.push(ch);
                it.next();
            }
            if w.is_empty() {
                // A `;` (the only character that stops a word before it starts): a word of its
                // own, so that the scan always moves on.
                w.push(c);
                it.next();
            }
            out.push((w, false));
        }
    }
    out
}

fn text_cols(names: &[&str]) -> Arc<Vec<ColumnMeta>> {
    Arc::new(names.iter().map(|n| ColumnMeta::text(n)).collect())
}

fn s(v: impl Into<String>) -> Value {
    Value::Str(v.into())
}

fn rows(names: &[&str], rows: Vec<Vec<Value>>) -> Outcome {
    Outcome::Rows {
        columns: text_cols(names),
        rows,
    }
}

pub fn try_show(sess: &mut Session, sql: &str) -> Option<Result<Outcome, SqlError>> {
    // Most statements are not SHOW: decided on the first word, without splitting the rest.
    let head = sql.trim_start().get(..4)?;
    if !head.eq_ignore_ascii_case("SHOW") {
        return None;
    }
    let sql = &*crate::split::without_comments(sql);
    let w = words(sql);
    let first = w.first()?;
    if first.1 || !first.0.eq_ignore_ascii_case("SHOW") {
        return None;
    }
    // One statement only: a `;` followed by more text goes to the parser's error path.
    let trimmed = sql.trim().trim_end_matches(';');
    if trimmed.contains(';') {
        return None;
    }
    Some(show(sess, &w[1..]))
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

fn show(sess: &mut Session, w: &[(String, bool)]) -> Result<Outcome, SqlError> {
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
            names.push(crate::infoschema::DB.into());
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
            let (names, kind): (Vec<String>, &str) = if crate::infoschema::is_db(&db) {
                let n = crate::infoschema::table_names().map(String::from);
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
            for name in variable_names(sess) {
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

/// SHOW PROCESSLIST's rows (also `information_schema.PROCESSLIST`'s), by connection id;
/// without `full` the statement text is cut to 100 characters, as MySQL cuts it.
pub(crate) fn processlist_rows(sess: &Session, full: bool) -> Vec<Vec<Value>> {
    let procs: Vec<_> = sess.inst.processes.lock().values().cloned().collect();
    procs
        .iter()
        .map(|p| {
            let a = p.activity.lock().clone();
            let info = if a.command == "Sleep" {
                Value::Null
            } else if full {
                Value::Str(a.info)
            } else {
                Value::Str(a.info.chars().take(100).collect())
            };
            let state = if a.command == "Sleep" {
                ""
            } else {
                "executing"
            };
            vec![
                Value::Int(p.id as i64),
                s(p.user.clone()),
                s(p.host.lock().clone()),
                a.db.map_or(Value::Null, Value::Str),
                s(a.command),
                Value::Int(a.since.elapsed().as_secs().min(i32::MAX as u64) as i64),
                s(state),
                info,
            ]
        })
        .collect()
}

/// An index as SHOW INDEX and `information_schema.STATISTICS` list it.
pub(crate) struct IndexInfo<'a> {
    pub name: &'a str,
    pub unique: bool,
    pub columns: &'a [usize],
}

/// The primary key (if the table declares one) and then the secondary indexes.
pub(crate) fn index_list(t: &crate::catalog::Table) -> Vec<IndexInfo<'_>> {
    let mut v = Vec::with_capacity(t.def.indexes.len() + 1);
    if !t.def.pk.is_empty() {
        v.push(IndexInfo {
            name: "PRIMARY",
            unique: true,
            columns: &t.def.pk,
        });
    }
    for x in &t.def.indexes {
        v.push(IndexInfo {
            name: &x.name,
            unique: x.unique,
            columns: &x.columns,
        });
    }
    v
}

/// The `Key` of SHOW COLUMNS (and COLUMN_KEY): PRI for primary key columns, UNI for the column
/// of a one-column unique index, MUL for the first column of any other index.
pub(crate) fn column_key(t: &crate::catalog::Table, ci: usize) -> &'static str {
    if t.def.pk.contains(&ci) {
        "PRI"
    } else if t.def.indexes.iter().any(|x| x.unique && x.columns == [ci]) {
        "UNI"
    } else if t.def.indexes.iter().any(|x| x.columns.first() == Some(&ci)) {
        "MUL"
    } else {
        ""
    }
}

fn default_text(c: &crate::catalog::ColumnDef) -> Value {
    if c.default_now {
        return s("current_timestamp()");
    }
    match &c.default {
        None | Some(Value::Null) => Value::Null,
        Some(v) => s(v.to_string_lossy().unwrap_or_default()),
    }
}

fn quote(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        v => format!(
            "'{}'",
            v.to_string_lossy().unwrap_or_default().replace('\'', "''")
        ),
    }
}

pub fn create_table_text(t: &crate::catalog::Table) -> String {
    let mut lines = Vec::new();
    for c in &t.def.columns {
        let mut l = format!("  `{}` {}", c.name, c.ty.sql_name());
        if !c.nullable {
            l.push_str(" NOT NULL");
        }
        if c.auto_increment {
            l.push_str(" AUTO_INCREMENT");
        } else if c.default_now {
            l.push_str(" DEFAULT current_timestamp()");
        } else if let Some(d) = &c.default {
            l.push_str(&format!(" DEFAULT {}", quote(d)));
        } else if c.nullable {
            l.push_str(" DEFAULT NULL");
        }
        lines.push(l);
    }
    let names = |cols: &[usize]| {
        cols.iter()
            .map(|&c| format!("`{}`", t.def.columns[c].name))
            .collect::<Vec<_>>()
            .join(",")
    };
    if !t.def.pk.is_empty() {
        lines.push(format!("  PRIMARY KEY ({})", names(&t.def.pk)));
    }
    for x in &t.def.indexes {
        lines.push(format!(
            "  {}KEY `{}` ({})",
            if x.unique { "UNIQUE " } else { "" },
            x.name,
            names(&x.columns)
        ));
    }
    let mut opts = String::from(" ENGINE=zipdb");
    if let Some(ai) = t.auto_inc {
        let _ = ai;
        let n = t.next_id.load(Ordering::Relaxed);
        if n > 1 {
            opts.push_str(&format!(" AUTO_INCREMENT={n}"));
        }
    }
    opts.push_str(" DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci");
    if let Some(r) = &t.def.options.row_format {
        opts.push_str(&format!(" ROW_FORMAT={r}"));
    }
    if let Some(k) = t.def.options.key_block_size {
        opts.push_str(&format!(" KEY_BLOCK_SIZE={k}"));
    }
    opts.push_str(&format!(" COMPRESSION='{}'", codec_name(t.def.codec)));
    format!(
        "CREATE TABLE `{}` (\n{}\n){}",
        t.def.name,
        lines.join(",\n"),
        opts
    )
}

pub fn codec_name(c: zipdb_engine::Codec) -> &'static str {
    match c {
        zipdb_engine::Codec::None => "none",
        zipdb_engine::Codec::Lz4 => "lz4",
        zipdb_engine::Codec::Zstd(_) => "zstd",
        zipdb_engine::Codec::Zlib(_) => "zlib",
        zipdb_engine::Codec::Trim => "trim",
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

/// A table's sizes: physical (page images in the store) and logical (before compression),
/// for its rows and for its secondary indexes.
pub(crate) struct TableSizes {
    pub data_physical: u64,
    pub data_logical: u64,
    pub index_physical: u64,
    pub index_logical: u64,
}

impl TableSizes {
    pub fn of(t: &crate::catalog::Table, stats: &zipdb_engine::Stats) -> TableSizes {
        let tree = |name: &str| stats.trees.iter().find(|x| x.name == name);
        let (data_physical, data_logical) =
            tree(&t.def.primary_tree).map_or((0, 0), |s| (s.physical_bytes, s.logical_bytes));
        let (mut index_physical, mut index_logical) = (0, 0);
        for x in &t.def.indexes {
            if let Some(s) = tree(&x.tree) {
                index_physical += s.physical_bytes;
                index_logical += s.logical_bytes;
            }
        }
        TableSizes {
            data_physical,
            data_logical,
            index_physical,
            index_logical,
        }
    }

    /// Logical bytes per physical byte (1 for an empty table).
    pub fn ratio(&self) -> f64 {
        let p = self.data_physical + self.index_physical;
        if p == 0 {
            1.0
        } else {
            (self.data_logical + self.index_logical) as f64 / p as f64
        }
    }

    pub fn row_format(&self, t: &crate::catalog::Table) -> &'static str {
        match t.def.codec {
            zipdb_engine::Codec::None => "Dynamic",
            _ => "Compressed",
        }
    }

    pub fn create_options(&self, t: &crate::catalog::Table) -> String {
        format!("compression='{}'", codec_name(t.def.codec))
    }

    pub fn auto_increment(&self, t: &crate::catalog::Table) -> Value {
        t.auto_inc.map_or(Value::Null, |_| {
            Value::UInt(t.next_id.load(Ordering::Relaxed))
        })
    }
}

/// SHOW STATUS: server counters and every pool/store/codec counter of the storage core.
pub(crate) fn status_rows(sess: &Session) -> Vec<(String, String)> {
    let inst = &sess.inst;
    let c = &inst.counters;
    let ld = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed).to_string();
    let mut v: Vec<(String, String)> = vec![
        (
            "Uptime".into(),
            inst.started.elapsed().as_secs().to_string(),
        ),
        ("Questions".into(), ld(&c.questions)),
        ("Com_select".into(), ld(&c.com_select)),
        ("Com_insert".into(), ld(&c.com_insert)),
        ("Com_update".into(), ld(&c.com_update)),
        ("Com_delete".into(), ld(&c.com_delete)),
        ("Com_commit".into(), ld(&c.com_commit)),
        ("Com_rollback".into(), ld(&c.com_rollback)),
        ("Connections".into(), ld(&c.connections)),
        ("Threads_connected".into(), ld(&c.threads_connected)),
        ("Prepared_stmt_count".into(), ld(&c.prepared_count)),
        (
            "Zipdb_transactions_rolled_back_on_conflict".into(),
            ld(&c.rolled_back_on_conflict),
        ),
    ];
    let st = inst.db.stats();
    // The storage core's counters, by their Debug field names (every one of them, so a new
    // counter shows up without touching this list).
    let mut push_debug = |prefix: &str, dbg: String| {
        for part in dbg.split([',', '{', '}']) {
            if let Some((k, val)) = part.split_once(':') {
                let k = k.trim();
                let val = val.trim();
                if !k.is_empty()
                    && val.chars().all(|ch| ch.is_ascii_digit() || ch == '.')
                    && !val.is_empty()
                {
                    v.push((format!("Zipdb_{prefix}_{k}"), val.to_string()));
                }
            }
        }
    };
    push_debug("pool", format!("{:?}", st.pool));
    push_debug("store", format!("{:?}", st.store));
    push_debug("wal", format!("{:?}", st.wal));
    push_debug("mvcc", format!("{:?}", st.mvcc));
    push_debug("locks", format!("{:?}", st.locks));
    v.push(("Zipdb_file_bytes".into(), st.file_bytes.to_string()));
    v.push(("Zipdb_free_bytes".into(), st.free_bytes.to_string()));
    v.push(("Zipdb_page_size".into(), st.page_size.to_string()));
    v
}

/// Names listed by SHOW VARIABLES and information_schema's *_VARIABLES, in order: ours and
/// the embedding server's.
pub(crate) fn variable_names(sess: &Session) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = VARIABLES.to_vec();
    names.extend(sess.inst.options.server_variables.iter().map(|(k, _)| *k));
    names.sort_unstable();
    names.dedup();
    names
}

/// Names of the variables zipdb's SQL layer itself has.
const VARIABLES: &[&str] = &[
    "auto_increment_increment",
    "auto_increment_offset",
    "autocommit",
    "character_set_client",
    "character_set_connection",
    "character_set_database",
    "character_set_results",
    "character_set_server",
    "character_set_system",
    "collation_connection",
    "collation_database",
    "collation_server",
    "connect_timeout",
    "default_storage_engine",
    "extra_max_connections",
    "have_ssl",
    "init_connect",
    "innodb_flush_log_at_trx_commit",
    "innodb_lock_wait_timeout",
    "innodb_snapshot_isolation",
    "interactive_timeout",
    "license",
    "lower_case_table_names",
    "max_allowed_packet",
    "max_connections",
    "max_execution_time",
    "max_prepared_stmt_count",
    "max_session_mem_used",
    "max_statement_time",
    "net_buffer_length",
    "net_read_timeout",
    "net_write_timeout",
    "performance_schema",
    "query_cache_size",
    "query_cache_type",
    "sql_mode",
    "system_time_zone",
    "time_zone",
    "transaction_isolation",
    "transaction_read_only",
    "tx_isolation",
    "tx_read_only",
    "version",
    "version_comment",
    "version_compile_machine",
    "version_compile_os",
    "wait_timeout",
    "zipdb_default_codec",
];

/// Default value of a system variable, `None` if unknown.
pub fn sysvar_default(sess: &Session, n: &str) -> Option<Value> {
    let inst = &sess.inst;
    if let Some((_, v)) = inst.options.server_variables.iter().find(|(k, _)| *k == n) {
        return Some(v.clone());
    }
    let int = |i: i64| Some(Value::Int(i));
    let st = |x: &str| Some(Value::Str(x.to_string()));
    match n {
        "autocommit" => int(i64::from(sess.autocommit)),
        "tx_isolation" | "transaction_isolation" => st(match sess.isolation {
            zipdb_engine::IsolationLevel::RepeatableRead => "REPEATABLE-READ",
            zipdb_engine::IsolationLevel::ReadCommitted => "READ-COMMITTED",
        }),
        "tx_read_only" | "transaction_read_only" | "read_only" | "super_read_only" => int(0),
        "version" => st(&inst.options.server_version),
        "version_comment" => st("zipdb"),
        "version_compile_os" => st("Linux"),
        "version_compile_machine" => st(std::env::consts::ARCH),
        "max_allowed_packet" => int(inst.options.max_allowed_packet as i64),
        "max_connections" => int(inst.options.max_connections as i64),
        "max_prepared_stmt_count" => {
            int(inst.globals.max_prepared_stmt_count.load(Ordering::Relaxed) as i64)
        }
        "sql_mode" => st("STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"),
        "character_set_client"
        | "character_set_connection"
        | "character_set_database"
        | "character_set_results"
        | "character_set_server"
        | "character_set_system" => st("utf8mb4"),
        "collation_connection" | "collation_database" | "collation_server" => {
            st("utf8mb4_general_ci")
        }
        "time_zone" => st("SYSTEM"),
        "system_time_zone" => st("UTC"),
        "connect_timeout" => int(inst.options.connect_timeout.as_secs() as i64),
        "wait_timeout" => int(inst.options.wait_timeout.as_secs() as i64),
        "interactive_timeout" => int(inst.options.interactive_timeout.as_secs() as i64),
        "net_read_timeout" => int(inst.options.net_read_timeout.as_secs() as i64),
        "net_write_timeout" => int(inst.options.net_write_timeout.as_secs() as i64),
        "extra_max_connections" => int(inst.options.extra_max_connections as i64),
        "net_buffer_length" => int(16384),
        "lower_case_table_names" => int(0),
        "auto_increment_increment" | "auto_increment_offset" => int(1),
        "license" => st("Apache-2.0"),
        "performance_schema" => int(0),
        "have_ssl" | "have_openssl" => st("DISABLED"),
        "init_connect" => st(""),
        "query_cache_size" => int(0),
        "query_cache_type" => st("OFF"),
        "default_storage_engine" | "storage_engine" | "default_tmp_storage_engine" => st("zipdb"),
        "innodb_lock_wait_timeout" | "lock_wait_timeout" => {
            int(inst.options.lock_wait_timeout.as_secs() as i64)
        }
        "innodb_snapshot_isolation" => int(sess.snapshot_isolation as i64),
        // The server's --flush-policy, in InnoDB's numbers (read-only: it is chosen at start).
        "innodb_flush_log_at_trx_commit" => int(match inst.db.options().flush_policy {
            zipdb_engine::FlushPolicy::Sync => 1,
            zipdb_engine::FlushPolicy::Write => 2,
            zipdb_engine::FlushPolicy::None => 0,
        }),
        "sql_select_limit" => Some(Value::UInt(u64::MAX)),
        // Set by mysqldump; SHOW CREATE TABLE always quotes names.
        "sql_quote_show_create" => int(1),
        // MariaDB's statement timeout, in seconds (mariadb-dump sets it to 0).
        "max_statement_time" => Some(Value::Double(
            sess.limits.max_statement_time_ms as f64 / 1000.0,
        )),
        "max_session_mem_used" => Some(Value::UInt(sess.limits.max_session_mem_used)),
        "information_schema_stats_expiry" => int(0),
        "max_execution_time" => int(sess.limits.max_execution_time_ms as i64),
        "last_insert_id" | "identity" => Some(Value::UInt(sess.last_insert_id)),
        "warning_count" => int(sess.warnings.len() as i64),
        "error_count" => int(0),
        "sql_auto_is_null" | "sql_safe_updates" | "unique_checks" | "foreign_key_checks"
        | "sql_notes" | "sql_warnings" | "big_tables" | "sql_big_selects" | "profiling"
        | "sql_log_bin" => int(1),
        "port" => int(3307),
        "hostname" => st("localhost"),
        "socket" => st(""),
        "datadir" => st(""),
        "zipdb_default_codec" => st(codec_name(inst.options.default_codec)),
        "session_track_schema" | "session_track_state_change" => st("OFF"),
        "div_precision_increment" => int(4),
        "group_concat_max_len" => int(1024),
        "max_sort_length" => int(1024),
        "long_query_time" => int(10),
        "transaction_isolation_level" => None,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::words;

    #[test]
    fn words_move_past_every_character() {
        // A `;` inside the text once made the scan push empty words forever.
        for sql in [
            "SHOW TABLES; SHOW DATABASES",
            "SHOW x /* a;b */",
            "SHOW ;;;",
            ";",
        ] {
            let w = words(sql);
            assert!(w.len() <= sql.len(), "{sql}: {w:?}");
        }
        let w = words("SHOW TABLES; x");
        let texts: Vec<&str> = w.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(texts, ["SHOW", "TABLES", ";", "x"]);
    }
}
