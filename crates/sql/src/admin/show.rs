//! SHOW statements and system variables.
//!
//! SHOW is read by front/show.rs's grammar (the forms are listed on its `Show`) and runs
//! here. `LIKE 'pattern'` filters on the form's name column; `WHERE expr` is evaluated over
//! the result's rows, its names naming the result's columns, as in MySQL (`SHOW VARIABLES
//! WHERE Variable_name = 'x' OR Value = 'ON'`).

use std::sync::Arc;

use sqlparser::ast;

use crate::admin::processlist::processlist_rows;
use crate::admin::s;
use crate::admin::status::status_rows;
use crate::admin::tables::{column_key, create_table_text, default_text, index_list, TableSizes};
use crate::bind::compile::{Compiler, Scope};
use crate::expr::{like, Expr};
use crate::front::show::{Filter, Show, TableRef};
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

/// The LIKE pattern of a filter; a WHERE is applied to the result by [`show`].
fn pattern(f: &Filter) -> Result<Option<String>, SqlError> {
    match f {
        Filter::None | Filter::Where(_) => Ok(None),
        Filter::Like(p) => Ok(Some(p.clone())),
    }
}

/// The one row of a list of one named `name`, unless a LIKE leaves it out.
fn listed(name: &str, f: &Filter, r: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    match f {
        Filter::Like(p) if !like(name, p, '\\', true) => Vec::new(),
        _ => r,
    }
}

fn matches(name: &str, pat: &Option<String>) -> bool {
    pat.as_ref().is_none_or(|p| like(name, p, '\\', true))
}

/// Runs a SHOW statement (front/show.rs read it).
pub(crate) fn show(sess: &mut Session, stmt: &Show) -> Result<Outcome, SqlError> {
    let out = rows_of(sess, stmt)?;
    let filter = match stmt {
        Show::Databases(f)
        | Show::Variables(f)
        | Show::Status(f)
        | Show::Collation(f)
        | Show::Charset(f)
        | Show::Tables { filter: f, .. }
        | Show::Columns { filter: f, .. }
        | Show::TableStatus { filter: f, .. }
        | Show::Index(_, f) => f,
        _ => &Filter::None,
    };
    match (filter, out) {
        (Filter::Where(e), Outcome::Rows { columns, rows }) => {
            let rows = where_rows(sess, e, &columns, rows)?;
            Ok(Outcome::Rows { columns, rows })
        }
        (_, out) => Ok(out),
    }
}

/// Names in a SHOW's WHERE: the result's columns, by label, in any letter case.
struct ResultScope<'a> {
    columns: &'a [ColumnMeta],
    vars: &'a dyn Fn(&str) -> Result<Value, SqlError>,
}

impl Scope for ResultScope<'_> {
    fn column(&mut self, q: Option<&str>, name: &str) -> Result<Expr, SqlError> {
        let found = q
            .is_none()
            .then(|| {
                self.columns
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(name))
            })
            .flatten();
        match found {
            Some(i) => Ok(Expr::Col(i)),
            None => {
                let n = q.map_or_else(|| name.to_string(), |q| format!("{q}.{name}"));
                Err(SqlError::unknown_column(&n, "where clause"))
            }
        }
    }
    fn sysvar(&mut self, name: &str) -> Result<Value, SqlError> {
        (self.vars)(name)
    }
}

/// The rows for which `e` is true. The lists are small (one row per variable, table, column
/// or index), and evaluation is charged and interruptible like any expression's.
fn where_rows(
    sess: &Session,
    e: &ast::Expr,
    columns: &[ColumnMeta],
    rows: Vec<Vec<Value>>,
) -> Result<Vec<Vec<Value>>, SqlError> {
    let vars = |n: &str| sess.sysvar(n);
    let mut scope = ResultScope {
        columns,
        vars: &vars,
    };
    let mut c = Compiler::new();
    let pred = c.compile(e, &mut scope)?;
    // A subquery is refused by the scope; a `?` would have no value here.
    if c.param_count() > 0 {
        return Err(SqlError::unsupported("placeholders in SHOW ... WHERE"));
    }
    let ctx = sess.ctx(&[]);
    let mut kept = Vec::with_capacity(rows.len());
    for row in rows {
        if pred.eval(&row, &ctx)?.truth() == Some(true) {
            kept.push(row);
        }
    }
    Ok(kept)
}

/// The result of a SHOW before its WHERE.
fn rows_of(sess: &mut Session, stmt: &Show) -> Result<Outcome, SqlError> {
    let inst = sess.inst.clone();
    match stmt {
        Show::Databases(filter) => {
            let pat = pattern(filter)?;
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
        &Show::Tables {
            full,
            ref db,
            ref filter,
        } => {
            let db = match db {
                Some(d) => d.clone(),
                None => sess.db.clone().ok_or_else(SqlError::no_db)?,
            };
            let pat = pattern(filter)?;
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
        &Show::Columns {
            full,
            ref table,
            ref filter,
        } => {
            let pat = pattern(filter)?;
            let t = resolve(sess, table)?;
            let mut r = Vec::new();
            for (ci, c) in t.def.columns.iter().enumerate() {
                if !matches(&c.name, &pat) {
                    continue;
                }
                let key = column_key(&t, ci);
                let mut row = vec![s(c.name.clone()), s(c.type_text())];
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
        Show::Index(table, _) => {
            let t = resolve(sess, table)?;
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
                        s("NO"),
                    ]);
                }
            }
            // Typed as MariaDB types them: drivers that read SHOW INDEX (Connector/J's
            // getIndexInfo) take Non_unique and Seq_in_index as numbers.
            let int = |name: &str, bytes: u8| {
                ColumnMeta::computed(
                    name,
                    SqlType::Int {
                        bytes,
                        unsigned: false,
                    },
                    true,
                )
            };
            let text = ColumnMeta::text;
            Ok(Outcome::Rows {
                columns: Arc::new(vec![
                    text("Table"),
                    int("Non_unique", 8),
                    text("Key_name"),
                    int("Seq_in_index", 4),
                    text("Column_name"),
                    text("Collation"),
                    int("Cardinality", 8),
                    int("Sub_part", 8),
                    text("Packed"),
                    text("Null"),
                    text("Index_type"),
                    text("Comment"),
                    text("Index_comment"),
                    text("Ignored"),
                ]),
                rows: r,
            })
        }
        Show::CreateTable(table) => {
            let name = table.table.clone();
            let t = resolve(sess, table)?;
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
        Show::CreateDatabase(name) => {
            if !inst.database_exists(name) {
                return Err(SqlError::unknown_db(name));
            }
            Ok(rows(
                &["Database", "Create Database"],
                vec![vec![
                    s(name.clone()),
                    s(format!(
                        "CREATE DATABASE `{name}` /*!40100 DEFAULT CHARACTER SET utf8mb4 */"
                    )),
                ]],
            ))
        }
        Show::Variables(filter) => {
            let pat = pattern(filter)?;
            let mut r = Vec::new();
            for name in crate::instance::vars::variable_names(sess) {
                if matches(name, &pat) {
                    let v = sess.sysvar(name)?;
                    r.push(vec![
                        s(name),
                        s(crate::instance::vars::shown_value(name, &v)),
                    ]);
                }
            }
            Ok(rows(&["Variable_name", "Value"], r))
        }
        Show::Status(filter) => {
            let pat = pattern(filter)?;
            let r = status_rows(sess)
                .into_iter()
                .filter(|(n, _)| matches(n, &pat))
                .map(|(n, v)| vec![s(n), s(v)])
                .collect();
            Ok(rows(&["Variable_name", "Value"], r))
        }
        &Show::Warnings {
            errors_only,
            offset,
            count,
        } => {
            sess.warnings_shown = true;
            // MariaDB lists max_error_count (64) conditions; the counts still include the rest.
            let first = usize::try_from(offset).unwrap_or(usize::MAX);
            let count = count.map_or(64, |c| usize::try_from(c).unwrap_or(64).min(64));
            let r = sess
                .warnings
                .iter()
                .filter(|w| !errors_only || w.level == "Error")
                .take(64)
                .skip(first)
                .take(count)
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
        &Show::WarningCount { errors_only } => {
            sess.warnings_shown = true;
            let (label, n) = match errors_only {
                false => ("@@session.warning_count", sess.condition_count()),
                true => ("@@session.error_count", sess.error_count()),
            };
            Ok(Outcome::Rows {
                columns: Arc::new(vec![ColumnMeta::bigint(label)]),
                rows: vec![vec![Value::Int(n as i64)]],
            })
        }
        Show::TableStatus { db, filter } => table_status(sess, db.as_ref(), filter),
        // zipdb has no stored routines, triggers or events: their lists are empty, so that
        // tools that ask (mysqldump --routines, --triggers, --events) go on.
        Show::RoutineStatus => Ok(rows(
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
        Show::Triggers => Ok(rows(
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
        Show::Events => Ok(rows(
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
        &Show::Processlist { full } => Ok(Outcome::Rows {
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
        }),
        Show::Engines => Ok(rows(
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
        Show::Collation(filter) => {
            let r = vec![vec![
                s("utf8mb4_general_ci"),
                s("utf8mb4"),
                s("45"),
                s("Yes"),
                s("Yes"),
                s("1"),
            ]];
            Ok(rows(
                &[
                    "Collation",
                    "Charset",
                    "Id",
                    "Default",
                    "Compiled",
                    "Sortlen",
                ],
                listed("utf8mb4_general_ci", filter, r),
            ))
        }
        Show::Charset(filter) => {
            let r = vec![vec![
                s("utf8mb4"),
                s("UTF-8 Unicode"),
                s("utf8mb4_general_ci"),
                s("4"),
            ]];
            Ok(rows(
                &["Charset", "Description", "Default collation", "Maxlen"],
                listed("utf8mb4", filter, r),
            ))
        }
    }
}

/// The table a SHOW names, in the current database unless it names one.
fn resolve(sess: &Session, t: &TableRef) -> Result<Arc<crate::catalog::Table>, SqlError> {
    let db =
        t.db.clone()
            .or_else(|| sess.db.clone())
            .ok_or_else(SqlError::no_db)?;
    sess.inst.table(&db, &t.table)
}

/// SHOW TABLE STATUS: true physical sizes from the page store, plus logical size and ratio.
fn table_status(
    sess: &mut Session,
    db: Option<&String>,
    filter: &Filter,
) -> Result<Outcome, SqlError> {
    let db = match db {
        Some(d) => d.clone(),
        None => sess.db.clone().ok_or_else(SqlError::no_db)?,
    };
    let pat = pattern(filter)?;
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
