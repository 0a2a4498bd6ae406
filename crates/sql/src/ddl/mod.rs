//! DDL: databases, tables, indexes.
//!
//! Table options and compression: `COMPRESSION='none'|'lz4'|'zstd'|'zlib'` compresses whole
//! page images with that codec; `COMPRESSION='fsst'` stores the table in the record format of
//! issue 19 (compact leaves, each row FSST-encoded with a per-table symbol table, `Trim` page
//! images; its index trees compact leaves only); `COMPRESSION='fsst+zstd'` is that plus a zstd
//! cold layer (pages written as they leave the buffer pool are zstd images): see
//! `zipdb_engine::TableFormat`, the one place
//! that maps a table's format to its trees' formats. `ROW_FORMAT=COMPRESSED` (with or without
//! `KEY_BLOCK_SIZE`) means the server's default format, or `TableFormat::COMPRESSED_DEFAULT`
//! when that default is uncompressed; `ROW_FORMAT=DYNAMIC|COMPACT|REDUNDANT` means
//! uncompressed unless `COMPRESSION` says otherwise. `KEY_BLOCK_SIZE` is accepted and recorded
//! but does not change the page size: zipdb compresses whole pages into variable-size images,
//! so there is no fixed compressed block to size (see docs/ARCHITECTURE.md).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use sqlparser::ast;
use zipdb_engine::{Codec, Database, TableFormat, Tree};

use crate::bind::compile::Compiler;
use crate::bind::env::writable_name;
use crate::catalog::{self, ColumnDef, IndexDef, TableDef, TableOptions};
use crate::error::{ErrorKind, SqlError};
use crate::instance::session::Session;
use crate::types::result::Outcome;
use crate::types::sqltype::SqlType;
use crate::types::value::Value;

/// Largest key a table accepts is the engine's; column counts are bounded like MySQL's.
const COLUMNS_MAX: usize = 4096;

pub fn execute(s: &mut Session, stmt: &ast::Statement) -> Result<Outcome, SqlError> {
    use ast::Statement as S;
    match stmt {
        S::CreateDatabase {
            db_name,
            if_not_exists,
            ..
        } => create_database(s, &ident_of(db_name), *if_not_exists),
        S::CreateSchema {
            schema_name,
            if_not_exists,
            ..
        } => create_database(s, &schema_name.to_string().replace('`', ""), *if_not_exists),
        S::Drop {
            object_type,
            if_exists,
            names,
            table,
            ..
        } => match object_type {
            ast::ObjectType::Database | ast::ObjectType::Schema => {
                let mut n = 0;
                for name in names {
                    n += drop_database(s, &ident_of(name), *if_exists)?;
                }
                Ok(Outcome::done(n))
            }
            ast::ObjectType::Table => {
                for name in names {
                    drop_table(s, name, *if_exists)?;
                }
                Ok(Outcome::done(0))
            }
            ast::ObjectType::Index => {
                let Some(t) = table else {
                    return Err(SqlError::syntax("DROP INDEX without ON table", 1));
                };
                for name in names {
                    drop_index(s, t, &ident_of(name))?;
                }
                Ok(Outcome::done(0))
            }
            other => Err(SqlError::unsupported(&format!("DROP {other}"))),
        },
        S::CreateTable(ct) => create_table(s, ct),
        S::CreateIndex(ci) => {
            let name = ci
                .name
                .as_ref()
                .map(ident_of)
                .ok_or_else(|| SqlError::syntax("CREATE INDEX without a name", 1))?;
            let cols: Vec<String> = ci
                .columns
                .iter()
                .map(|c| index_column_name(&c.column.expr))
                .collect::<Result<_, _>>()?;
            create_index(s, &ci.table_name, &name, &cols, ci.unique)
        }
        S::Truncate(t) => {
            for target in &t.table_names {
                truncate(s, &target.name)?;
            }
            Ok(Outcome::done(0))
        }
        other => {
            let text = other.to_string();
            let kind = crate::front::parse::kind_of(&text);
            Err(SqlError::unsupported(&kind))
        }
    }
}

fn ident_of(n: &ast::ObjectName) -> String {
    n.0.last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_else(|| n.to_string())
}

fn index_column_name(e: &ast::Expr) -> Result<String, SqlError> {
    match e {
        ast::Expr::Identifier(i) => Ok(i.value.clone()),
        // `c(10)`: a prefix index; zipdb indexes the whole value.
        ast::Expr::Function(f) => Ok(ident_of(&f.name)),
        other => Err(SqlError::unsupported(&format!(
            "index on expression {other}"
        ))),
    }
}

/// Takes the DDL gate exclusively (waits for open transactions to end).
fn ddl_gate(s: &Session) -> Result<parking_lot::RwLockWriteGuard<'_, ()>, SqlError> {
    s.inst
        .gate
        .try_write_for(s.inst.options.lock_wait_timeout)
        .ok_or_else(|| {
            SqlError::of(
                ErrorKind::LockWaitTimeout,
                "Lock wait timeout exceeded waiting for open transactions to end before DDL",
            )
        })
}

pub(crate) fn write_catalog(
    s: &Session,
    puts: &[(Vec<u8>, Option<Vec<u8>>)],
) -> Result<(), SqlError> {
    let mut txn = s.inst.db.begin();
    txn.set_flush_policy(zipdb_engine::FlushPolicy::Sync);
    for (k, v) in puts {
        match v {
            Some(v) => txn.put(&s.inst.sys, k, v),
            None => txn.delete(&s.inst.sys, k),
        }
        .map_err(SqlError::engine)?;
    }
    txn.commit().map_err(SqlError::engine)?;
    s.inst.schema_version.fetch_add(1, Ordering::AcqRel);
    Ok(())
}

fn valid_name(n: &str, what: &str) -> Result<(), SqlError> {
    if n.is_empty() || n.len() > 64 || n.contains('\0') {
        return Err(SqlError::of(
            ErrorKind::WrongTableName,
            format!("Incorrect {what} name '{n}'"),
        ));
    }
    Ok(())
}

fn create_database(s: &mut Session, name: &str, if_not_exists: bool) -> Result<Outcome, SqlError> {
    valid_name(name, "database")?;
    let inst = s.inst.clone();
    let _ddl = inst.ddl.lock();
    if s.inst.database_exists(name) {
        if if_not_exists {
            s.note(
                ErrorKind::DbCreateExists,
                format!("Can't create database '{name}'; database exists"),
            );
            return Ok(Outcome::done(0));
        }
        return Err(SqlError::of(
            ErrorKind::DbCreateExists,
            format!("Can't create database '{name}'; database exists"),
        ));
    }
    write_catalog(s, &[(catalog::db_key(name), Some(Vec::new()))])?;
    s.inst
        .catalog
        .write()
        .dbs
        .insert(name.to_string(), Default::default());
    Ok(Outcome::done(1))
}

fn drop_database(s: &mut Session, name: &str, if_exists: bool) -> Result<u64, SqlError> {
    let inst = s.inst.clone();
    let _ddl = inst.ddl.lock();
    let listed: Option<Vec<String>> = inst
        .catalog
        .read()
        .dbs
        .get(name)
        .map(|t| t.keys().cloned().collect());
    let tables: Vec<String> = match listed {
        None if if_exists => {
            s.note(
                ErrorKind::DbDropExists,
                format!("Can't drop database '{name}'; database doesn't exist"),
            );
            return Ok(0);
        }
        None => {
            return Err(SqlError::of(
                ErrorKind::DbDropExists,
                format!("Can't drop database '{name}'; database doesn't exist"),
            ))
        }
        Some(t) => t,
    };
    let n = tables.len() as u64;
    drop(_ddl);
    for t in &tables {
        let on = ast::ObjectName::from(vec![ast::Ident::new(name), ast::Ident::new(t.clone())]);
        drop_table(s, &on, true)?;
    }
    let inst = s.inst.clone();
    let _ddl = inst.ddl.lock();
    write_catalog(s, &[(catalog::db_key(name), None)])?;
    s.inst.catalog.write().dbs.remove(name);
    if s.db.as_deref() == Some(name) {
        s.db = None;
    }
    Ok(n)
}

fn next_object_id(s: &Session) -> u64 {
    let mut cat = s.inst.catalog.write();
    let id = cat.next_object_id;
    cat.next_object_id += 1;
    id
}

/// The display width an integer column is declared with, when it is not its type's default
/// (`BOOLEAN` is `tinyint(1)`). Past 255, MariaDB's 1439.
fn display_width(dt: &ast::DataType, ty: SqlType, column: &str) -> Result<Option<u8>, SqlError> {
    use ast::DataType as D;
    let declared = match dt {
        D::Bool | D::Boolean => Some(1),
        D::TinyInt(w)
        | D::TinyIntUnsigned(w)
        | D::SmallInt(w)
        | D::SmallIntUnsigned(w)
        | D::MediumInt(w)
        | D::MediumIntUnsigned(w)
        | D::Int(w)
        | D::Integer(w)
        | D::IntUnsigned(w)
        | D::IntegerUnsigned(w)
        | D::BigInt(w)
        | D::BigIntUnsigned(w) => *w,
        _ => None,
    };
    let (Some(w), SqlType::Int { bytes, unsigned }) = (declared, ty) else {
        return Ok(None);
    };
    let w = u8::try_from(w).map_err(|_| {
        SqlError::of(
            ErrorKind::TooBigDisplaywidth,
            format!("Display width out of range for '{column}' (max = 255)"),
        )
    })?;
    // MariaDB keeps INT(0) as the default width.
    Ok((w != 0 && w != crate::types::sqltype::int_display_width(bytes, unsigned)).then_some(w))
}

fn sql_type(dt: &ast::DataType) -> Result<SqlType, SqlError> {
    use ast::DataType as D;
    let int = |bytes: u8, unsigned: bool| SqlType::Int { bytes, unsigned };
    let len_of = |l: &Option<ast::CharacterLength>, default: u32| -> u32 {
        match l {
            Some(ast::CharacterLength::IntegerLength { length, .. }) => {
                u32::try_from(*length).unwrap_or(u32::MAX)
            }
            Some(ast::CharacterLength::Max) => 65_535,
            None => default,
        }
    };
    Ok(match dt {
        D::TinyInt(_) | D::Bool | D::Boolean => int(1, false),
        D::TinyIntUnsigned(_) => int(1, true),
        D::SmallInt(_) => int(2, false),
        D::SmallIntUnsigned(_) => int(2, true),
        D::MediumInt(_) => int(3, false),
        D::MediumIntUnsigned(_) => int(3, true),
        D::Int(_) | D::Integer(_) => int(4, false),
        D::IntUnsigned(_) | D::IntegerUnsigned(_) => int(4, true),
        D::BigInt(_) => int(8, false),
        D::BigIntUnsigned(_) => int(8, true),
        D::Float(_) | D::Real => SqlType::Float,
        D::Double(_) | D::DoublePrecision => SqlType::Double,
        D::Decimal(info) | D::Numeric(info) | D::Dec(info) => {
            let (p, sc) = match info {
                ast::ExactNumberInfo::None => (10, 0),
                ast::ExactNumberInfo::Precision(p) => (*p, 0),
                ast::ExactNumberInfo::PrecisionAndScale(p, s) => (*p, (*s).max(0) as u64),
            };
            if p > 65 || sc > 30 || sc > p {
                return Err(SqlError::of(
                    ErrorKind::TooBigPrecision,
                    format!("Too-big precision {p} specified. Maximum is 65."),
                ));
            }
            if p > 38 {
                return Err(SqlError::unsupported("DECIMAL precision above 38"));
            }
            SqlType::Decimal {
                precision: p as u8,
                scale: sc as u8,
            }
        }
        D::Char(l) | D::Character(l) => SqlType::Char {
            len: len_of(l, 1),
            binary: false,
        },
        D::Varchar(l) | D::CharVarying(l) | D::CharacterVarying(l) | D::Nvarchar(l) => {
            if l.is_none() {
                return Err(SqlError::syntax("VARCHAR without a length", 1));
            }
            SqlType::Varchar {
                len: len_of(l, 0),
                binary: false,
            }
        }
        D::Binary(l) => SqlType::Char {
            len: l.map_or(1, |x| x as u32),
            binary: true,
        },
        D::Varbinary(l) => SqlType::Varchar {
            len: match l {
                Some(ast::BinaryLength::IntegerLength { length }) => *length as u32,
                _ => 65_535,
            },
            binary: true,
        },
        D::TinyText => SqlType::Text {
            max: 255,
            binary: false,
        },
        D::Text => SqlType::Text {
            max: 65_535,
            binary: false,
        },
        D::MediumText => SqlType::Text {
            max: 16_777_215,
            binary: false,
        },
        D::LongText => SqlType::Text {
            max: u32::MAX,
            binary: false,
        },
        D::TinyBlob => SqlType::Text {
            max: 255,
            binary: true,
        },
        D::Blob(_) => SqlType::Text {
            max: 65_535,
            binary: true,
        },
        D::MediumBlob => SqlType::Text {
            max: 16_777_215,
            binary: true,
        },
        D::LongBlob => SqlType::Text {
            max: u32::MAX,
            binary: true,
        },
        D::Date => SqlType::Date,
        D::Datetime(fsp) => SqlType::DateTime {
            fsp: fsp.unwrap_or(0).min(6) as u8,
        },
        D::Timestamp(fsp, _) => SqlType::Timestamp {
            fsp: fsp.unwrap_or(0).min(6) as u8,
        },
        other => return Err(SqlError::unsupported(&format!("column type {other}"))),
    })
}

fn table_options(ct: &ast::CreateTable) -> TableOptions {
    let mut o = TableOptions::default();
    let opts: Vec<ast::SqlOption> = match &ct.table_options {
        ast::CreateTableOptions::Plain(v)
        | ast::CreateTableOptions::With(v)
        | ast::CreateTableOptions::Options(v)
        | ast::CreateTableOptions::TableProperties(v) => v.clone(),
        ast::CreateTableOptions::None => Vec::new(),
    };
    let unquote = |s: String| {
        s.trim_matches(|c| c == '\'' || c == '"' || c == '`')
            .to_string()
    };
    for opt in opts {
        match opt {
            ast::SqlOption::KeyValue { key, value } => {
                let v = unquote(value.to_string());
                match key.value.to_ascii_uppercase().as_str() {
                    "ENGINE" => o.engine = Some(v),
                    "ROW_FORMAT" => o.row_format = Some(v.to_ascii_uppercase()),
                    "KEY_BLOCK_SIZE" => o.key_block_size = v.parse().ok(),
                    "COMPRESSION" => o.compression = Some(v.to_ascii_lowercase()),
                    "COMMENT" => o.comment = Some(v),
                    _ => {}
                }
            }
            ast::SqlOption::NamedParenthesizedList(l) => {
                if l.key.value.eq_ignore_ascii_case("ENGINE") {
                    o.engine = l.name.as_ref().map(|n| n.value.clone());
                }
            }
            ast::SqlOption::Comment(c) => {
                o.comment = Some(match c {
                    ast::CommentDef::WithEq(s) | ast::CommentDef::WithoutEq(s) => s,
                });
            }
            _ => {}
        }
    }
    o
}

/// The format a table's options ask for, given the server's default for new tables.
fn format_of(o: &TableOptions, default: TableFormat) -> Result<TableFormat, SqlError> {
    if let Some(c) = &o.compression {
        return match c.as_str() {
            "none" | "" => Ok(TableFormat::Codec(Codec::None)),
            "lz4" => Ok(TableFormat::Codec(Codec::Lz4)),
            "zstd" => Ok(TableFormat::Codec(Codec::Zstd(1))),
            "zlib" => Ok(TableFormat::Codec(Codec::Zlib(6))),
            "fsst" => Ok(TableFormat::Fsst),
            "fsst+zstd" => Ok(TableFormat::FsstZstd),
            other => Err(SqlError::of(
                ErrorKind::WrongValueForVar,
                format!(
                    "Invalid compression '{other}': use 'none', 'lz4', 'zstd', 'zlib', 'fsst' or 'fsst+zstd'"
                ),
            )),
        };
    }
    // A table that asks to be compressed is, even when the server's default is not.
    let compressed = if default == TableFormat::Codec(Codec::None) {
        TableFormat::COMPRESSED_DEFAULT
    } else {
        default
    };
    Ok(match o.row_format.as_deref() {
        Some("COMPRESSED") => compressed,
        Some(_) => TableFormat::Codec(Codec::None),
        None if o.key_block_size.is_some() => compressed,
        None => default,
    })
}

/// Creates a tree for the rows (`index` false) or for one index of a table stored as `table`:
/// every tree made for a table comes from here, so all of them follow its definition.
fn create_table_tree(
    db: &Database,
    table: TableFormat,
    name: &str,
    index: bool,
) -> Result<Tree, SqlError> {
    let format = if index {
        table.index()
    } else {
        table.primary()
    };
    db.create_tree_with(name, format).map_err(SqlError::engine)
}

fn create_table(s: &mut Session, ct: &ast::CreateTable) -> Result<Outcome, SqlError> {
    if let Some(like) = &ct.like {
        let (ast::CreateTableLikeKind::Plain(l) | ast::CreateTableLikeKind::Parenthesized(l)) =
            like;
        if ct.query.is_some() || !ct.columns.is_empty() || !ct.constraints.is_empty() {
            return Err(SqlError::unsupported(
                "CREATE TABLE ... LIKE with other clauses",
            ));
        }
        return create_table_like(s, ct, &l.name);
    }
    if ct.query.is_some() || ct.clone.is_some() {
        // Run by the session (`create_as`), which compiles the query first.
        return Err(SqlError::internal("CREATE TABLE ... SELECT reached DDL"));
    }
    let (db, name) = writable_name(&ct.name, s.db.as_deref())?;
    valid_name(&name, "table")?;
    if !s.inst.database_exists(&db) {
        return Err(SqlError::unknown_db(&db));
    }
    if ct.columns.is_empty() {
        return Err(SqlError::of(
            ErrorKind::TableMustHaveColumns,
            "A table must have at least 1 column",
        ));
    }
    if ct.columns.len() > COLUMNS_MAX {
        return Err(SqlError::of(ErrorKind::TooManyFields, "Too many columns"));
    }
    let vars = |n: &str| s.sysvar(n);
    let mut default_notes: Vec<String> = Vec::new();
    let mut columns: Vec<ColumnDef> = Vec::new();
    let mut pk: Vec<String> = Vec::new();
    let mut indexes: Vec<(String, Vec<String>, bool)> = Vec::new();
    for cd in &ct.columns {
        let cname = cd.name.value.clone();
        valid_name(&cname, "column")?;
        if columns.iter().any(|c| c.name.eq_ignore_ascii_case(&cname)) {
            return Err(SqlError::of(
                ErrorKind::DupFieldname,
                format!("Duplicate column name '{cname}'"),
            ));
        }
        let ty = sql_type(&cd.data_type)?;
        let display_width = display_width(&cd.data_type, ty, &cname)?;
        let mut col = ColumnDef {
            name: cname.clone(),
            ty,
            nullable: true,
            default: None,
            default_now: false,
            auto_increment: false,
            display_width,
        };
        let mut explicit_null = false;
        for o in &cd.options {
            match &o.option {
                ast::ColumnOption::Null => explicit_null = true,
                ast::ColumnOption::NotNull => col.nullable = false,
                ast::ColumnOption::Default(e) => {
                    let txt = e.to_string().to_ascii_uppercase();
                    if txt.starts_with("CURRENT_TIMESTAMP") || txt.starts_with("NOW") {
                        col.default_now = true;
                    } else {
                        let mut c = Compiler::new();
                        let v = c
                            .compile(
                                e,
                                &mut crate::bind::scope::NoScope {
                                    vars: &vars,
                                    clause: "default",
                                },
                            )?
                            .eval(&[], &crate::expr::Ctx::detached())?;
                        col.default = Some(v);
                    }
                }
                ast::ColumnOption::PrimaryKey(_) => pk = vec![cname.clone()],
                ast::ColumnOption::Unique(_) => {
                    indexes.push((cname.clone(), vec![cname.clone()], true));
                }
                ast::ColumnOption::DialectSpecific(toks) => {
                    let t: String = toks
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(" ");
                    if t.eq_ignore_ascii_case("AUTO_INCREMENT") {
                        col.auto_increment = true;
                    }
                }
                ast::ColumnOption::Comment(_)
                | ast::ColumnOption::CharacterSet(_)
                | ast::ColumnOption::Collation(_) => {}
                ast::ColumnOption::OnUpdate(_) => {}
                other => {
                    return Err(SqlError::unsupported(&format!("column option {other}")));
                }
            }
        }
        let _ = explicit_null;
        if col.auto_increment && !col.ty.is_integer() {
            return Err(SqlError::of(
                ErrorKind::WrongFieldSpec,
                format!("Incorrect column specifier for column '{cname}'"),
            ));
        }
        if let Some(d) = col.default.take() {
            // The default must fit the column.
            col.default = Some(if d.is_null() {
                if !col.nullable {
                    return Err(SqlError::invalid_default(&cname));
                }
                Value::Null
            } else {
                let (v, rounded) = crate::exec::dml::coerce_default(d, &col)
                    .map_err(|_| SqlError::invalid_default(&cname))?;
                if rounded {
                    // Rounded (1.55 into DECIMAL(5,1)): MariaDB notes it and goes on.
                    default_notes.push(format!("Data truncated for column '{cname}' at row 0"));
                }
                v
            });
        }
        columns.push(col);
    }
    for note in default_notes {
        s.note(ErrorKind::WarnDataTruncated, note);
    }
    for c in &ct.constraints {
        match c {
            ast::TableConstraint::PrimaryKey(p) => {
                if !pk.is_empty() {
                    return Err(SqlError::of(
                        ErrorKind::MultiplePriKey,
                        "Multiple primary key defined",
                    ));
                }
                pk = p
                    .columns
                    .iter()
                    .map(|ic| index_column_name(&ic.column.expr))
                    .collect::<Result<_, _>>()?;
            }
            ast::TableConstraint::Unique(u) => {
                let cols: Vec<String> = u
                    .columns
                    .iter()
                    .map(|ic| index_column_name(&ic.column.expr))
                    .collect::<Result<_, _>>()?;
                let n = u
                    .index_name
                    .as_ref()
                    .or(u.name.as_ref())
                    .map(|i| i.value.clone())
                    .unwrap_or_else(|| cols[0].clone());
                indexes.push((n, cols, true));
            }
            ast::TableConstraint::Index(i) => {
                let cols: Vec<String> = i
                    .columns
                    .iter()
                    .map(|ic| index_column_name(&ic.column.expr))
                    .collect::<Result<_, _>>()?;
                let n = i
                    .name
                    .as_ref()
                    .map(|i| i.value.clone())
                    .unwrap_or_else(|| cols[0].clone());
                indexes.push((n, cols, false));
            }
            ast::TableConstraint::ForeignKey(_) | ast::TableConstraint::Check(_) => {
                s.warn(
                    ErrorKind::NotSupportedYet,
                    "FOREIGN KEY and CHECK constraints are parsed and ignored",
                );
            }
            other => return Err(SqlError::unsupported(&format!("constraint {other}"))),
        }
    }
    let find = |columns: &[ColumnDef], n: &str| -> Result<usize, SqlError> {
        columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(n))
            .ok_or_else(|| SqlError::key_column_missing(n))
    };
    let pk: Vec<usize> = pk
        .iter()
        .map(|n| find(&columns, n))
        .collect::<Result<_, _>>()?;
    for &c in &pk {
        columns[c].nullable = false;
    }
    if columns.iter().filter(|c| c.auto_increment).count() > 1 {
        return Err(SqlError::of(
            ErrorKind::WrongAutoKey,
            "Incorrect table definition; there can be only one auto column and it must be \
             defined as a key",
        ));
    }
    let options = table_options(ct);
    if let Some(e) = &options.engine {
        if !e.eq_ignore_ascii_case("zipdb") {
            s.warn(
                ErrorKind::WarnUsingOtherHandler,
                format!("Using storage engine zipdb for table '{name}' (ENGINE={e} requested)"),
            );
        }
    }
    let format = format_of(&options, s.inst.options.default_format)?;
    let indexes = indexes
        .into_iter()
        .map(|(iname, cols, unique)| {
            let columns = cols
                .iter()
                .map(|n| find(&columns, n))
                .collect::<Result<Vec<usize>, _>>()?;
            Ok((iname, columns, unique))
        })
        .collect::<Result<Vec<_>, SqlError>>()?;
    install_table(
        s,
        Shape {
            db,
            name,
            if_not_exists: ct.if_not_exists,
            columns,
            pk,
            indexes,
            format,
            options,
        },
    )
}

/// The columns of a table made by `CREATE TABLE ... SELECT`: the query's result columns,
/// each with its name, type and whether it can be NULL. Keys may be declared beside the query
/// (`CREATE TABLE t (PRIMARY KEY (id)) SELECT ...`); column definitions may not (MariaDB
/// merges them with the query's columns: not done). Returns the table's database and name,
/// or `None` when IF NOT EXISTS found it there (a note; MariaDB then inserts nothing).
pub(crate) fn create_table_as(
    s: &mut Session,
    ct: &ast::CreateTable,
    result: &[(String, SqlType, bool)],
) -> Result<Option<(String, String)>, SqlError> {
    if !ct.columns.is_empty() {
        return Err(SqlError::unsupported(
            "CREATE TABLE ... SELECT with column definitions",
        ));
    }
    let (db, name) = writable_name(&ct.name, s.db.as_deref())?;
    valid_name(&name, "table")?;
    if !s.inst.database_exists(&db) {
        return Err(SqlError::unknown_db(&db));
    }
    if result.len() > COLUMNS_MAX {
        return Err(SqlError::of(ErrorKind::TooManyFields, "Too many columns"));
    }
    let mut columns: Vec<ColumnDef> = Vec::with_capacity(result.len());
    for (cname, ty, nullable) in result {
        valid_name(cname, "column")?;
        if columns.iter().any(|c| c.name.eq_ignore_ascii_case(cname)) {
            return Err(SqlError::of(
                ErrorKind::DupFieldname,
                format!("Duplicate column name '{cname}'"),
            ));
        }
        columns.push(ColumnDef {
            name: cname.clone(),
            ty: *ty,
            nullable: *nullable,
            default: None,
            default_now: false,
            auto_increment: false,
            display_width: None,
        });
    }
    let find = |n: &str| -> Result<usize, SqlError> {
        columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(n))
            .ok_or_else(|| SqlError::key_column_missing(n))
    };
    let names = |cols: &[ast::IndexColumn]| -> Result<Vec<usize>, SqlError> {
        cols.iter()
            .map(|ic| find(&index_column_name(&ic.column.expr)?))
            .collect()
    };
    let mut pk = Vec::new();
    let mut indexes = Vec::new();
    for c in &ct.constraints {
        match c {
            ast::TableConstraint::PrimaryKey(p) if pk.is_empty() => pk = names(&p.columns)?,
            ast::TableConstraint::PrimaryKey(_) => {
                return Err(SqlError::of(
                    ErrorKind::MultiplePriKey,
                    "Multiple primary key defined",
                ))
            }
            ast::TableConstraint::Unique(u) => {
                let cols = names(&u.columns)?;
                let n = u
                    .index_name
                    .as_ref()
                    .or(u.name.as_ref())
                    .map_or_else(|| columns[cols[0]].name.clone(), |i| i.value.clone());
                indexes.push((n, cols, true));
            }
            ast::TableConstraint::Index(i) => {
                let cols = names(&i.columns)?;
                let n = i
                    .name
                    .as_ref()
                    .map_or_else(|| columns[cols[0]].name.clone(), |n| n.value.clone());
                indexes.push((n, cols, false));
            }
            other => return Err(SqlError::unsupported(&format!("constraint {other}"))),
        }
    }
    for &c in &pk {
        columns[c].nullable = false;
    }
    let options = table_options(ct);
    let format = format_of(&options, s.inst.options.default_format)?;
    let exists = s.inst.catalog.read().table(&db, &name).is_some();
    install_table(
        s,
        Shape {
            db: db.clone(),
            name: name.clone(),
            if_not_exists: ct.if_not_exists,
            columns,
            pk,
            indexes,
            format,
            options,
        },
    )?;
    Ok((!exists).then_some((db, name)))
}

/// A table's definition before it has ids and trees.
struct Shape {
    db: String,
    name: String,
    if_not_exists: bool,
    columns: Vec<ColumnDef>,
    pk: Vec<usize>,
    /// Name, columns, unique.
    indexes: Vec<(String, Vec<usize>, bool)>,
    format: TableFormat,
    options: TableOptions,
}

/// `CREATE TABLE new LIKE old`: an empty table with `old`'s columns, keys and table options,
/// as MariaDB makes it (the AUTO_INCREMENT counter starts again; no rows are copied).
fn create_table_like(
    s: &mut Session,
    ct: &ast::CreateTable,
    source: &ast::ObjectName,
) -> Result<Outcome, SqlError> {
    let (db, name) = writable_name(&ct.name, s.db.as_deref())?;
    valid_name(&name, "table")?;
    if !s.inst.database_exists(&db) {
        return Err(SqlError::unknown_db(&db));
    }
    let (sdb, sname) = writable_name(source, s.db.as_deref())?;
    if sdb.eq_ignore_ascii_case(&db) && sname == name {
        return Err(SqlError::of(
            ErrorKind::NonuniqTable,
            format!("Not unique table/alias: '{name}'"),
        ));
    }
    let Some(src) = s.inst.catalog.read().table(&sdb, &sname).cloned() else {
        return Err(SqlError::no_table(&sdb, &sname));
    };
    let d = &src.def;
    install_table(
        s,
        Shape {
            db,
            name,
            if_not_exists: ct.if_not_exists,
            columns: d.columns.clone(),
            pk: d.pk.clone(),
            indexes: d
                .indexes
                .iter()
                .map(|i| (i.name.clone(), i.columns.clone(), i.unique))
                .collect(),
            format: d.format,
            options: d.options.clone(),
        },
    )
}

/// Gives a new table its ids and trees and puts it in the catalog, under the DDL lock.
fn install_table(s: &mut Session, shape: Shape) -> Result<Outcome, SqlError> {
    let Shape {
        db,
        name,
        if_not_exists,
        columns,
        pk,
        indexes,
        format,
        options,
    } = shape;
    let inst = s.inst.clone();
    let _ddl = inst.ddl.lock();
    if s.inst.catalog.read().table(&db, &name).is_some() {
        if if_not_exists {
            s.note(
                ErrorKind::TableExistsError,
                format!("Table '{name}' already exists"),
            );
            return Ok(Outcome::done(0));
        }
        return Err(SqlError::of(
            ErrorKind::TableExistsError,
            format!("Table '{name}' already exists"),
        ));
    }
    let id = next_object_id(s);
    let primary_tree = format!("z{id}");
    let mut idx_defs = Vec::new();
    for (iname, columns, unique) in indexes {
        if idx_defs
            .iter()
            .any(|d: &IndexDef| d.name.eq_ignore_ascii_case(&iname))
        {
            return Err(SqlError::dup_key_name(&iname));
        }
        let oid = next_object_id(s);
        idx_defs.push(IndexDef {
            name: iname,
            columns,
            unique,
            tree: format!("z{oid}"),
        });
    }
    let def = TableDef {
        id,
        db: db.clone(),
        name: name.clone(),
        columns,
        pk,
        indexes: idx_defs,
        format,
        options,
        primary_tree,
    };
    let db_handle = &s.inst.db;
    create_table_tree(db_handle, def.format, &def.primary_tree, false)?;
    for i in &def.indexes {
        create_table_tree(db_handle, def.format, &i.tree, true)?;
    }
    let next = s.inst.catalog.read().next_object_id;
    write_catalog(
        s,
        &[
            (catalog::table_key(&db, &name), Some(def.encode())),
            (
                catalog::NEXT_ID_KEY.to_vec(),
                Some(next.to_le_bytes().to_vec()),
            ),
        ],
    )?;
    let t = catalog::open_table(db_handle, def)?;
    s.inst
        .catalog
        .write()
        .dbs
        .entry(db)
        .or_default()
        .insert(name, Arc::new(t));
    Ok(Outcome::done(0))
}

/// Drops `db`.`name` (a CREATE TABLE ... SELECT whose rows failed: MariaDB leaves no table).
pub(crate) fn drop_created(s: &mut Session, db: &str, name: &str) -> Result<(), SqlError> {
    let n = ast::ObjectName::from(vec![ast::Ident::new(db), ast::Ident::new(name)]);
    drop_table(s, &n, true)
}

fn drop_table(s: &mut Session, name: &ast::ObjectName, if_exists: bool) -> Result<(), SqlError> {
    let (db, tname) = writable_name(name, s.db.as_deref())?;
    let inst = s.inst.clone();
    let _ddl = inst.ddl.lock();
    let Some(t) = s.inst.catalog.read().table(&db, &tname).cloned() else {
        if if_exists {
            s.note(
                ErrorKind::BadTableError,
                format!("Unknown table '{db}.{tname}'"),
            );
            return Ok(());
        }
        return Err(SqlError::of(
            ErrorKind::BadTableError,
            format!("Unknown table '{db}.{tname}'"),
        ));
    };
    let _gate = ddl_gate(s)?;
    write_catalog(s, &[(catalog::table_key(&db, &tname), None)])?;
    if let Some(tables) = s.inst.catalog.write().dbs.get_mut(&db) {
        tables.remove(&tname);
    }
    s.inst
        .db
        .drop_tree(&t.def.primary_tree)
        .map_err(SqlError::engine)?;
    for i in &t.def.indexes {
        s.inst.db.drop_tree(&i.tree).map_err(SqlError::engine)?;
    }
    Ok(())
}

fn truncate(s: &mut Session, name: &ast::ObjectName) -> Result<(), SqlError> {
    let (db, tname) = writable_name(name, s.db.as_deref())?;
    let t = s.inst.table(&db, &tname)?;
    // Same definition, new trees.
    let mut def = t.def.clone();
    drop_table(s, name, false)?;
    let inst = s.inst.clone();
    let _ddl = inst.ddl.lock();
    def.primary_tree = format!("z{}", next_object_id(s));
    create_table_tree(&s.inst.db, def.format, &def.primary_tree, false)?;
    for i in &mut def.indexes {
        i.tree = format!("z{}", next_object_id(s));
        create_table_tree(&s.inst.db, def.format, &i.tree, true)?;
    }
    let next = s.inst.catalog.read().next_object_id;
    write_catalog(
        s,
        &[
            (catalog::table_key(&db, &tname), Some(def.encode())),
            (
                catalog::NEXT_ID_KEY.to_vec(),
                Some(next.to_le_bytes().to_vec()),
            ),
        ],
    )?;
    let t = catalog::open_table(&s.inst.db, def)?;
    s.inst
        .catalog
        .write()
        .dbs
        .entry(db)
        .or_default()
        .insert(tname, Arc::new(t));
    Ok(())
}

fn create_index(
    s: &mut Session,
    table: &ast::ObjectName,
    iname: &str,
    cols: &[String],
    unique: bool,
) -> Result<Outcome, SqlError> {
    let (db, tname) = writable_name(table, s.db.as_deref())?;
    let inst = s.inst.clone();
    let _ddl = inst.ddl.lock();
    let t = s.inst.table(&db, &tname)?;
    if t.def
        .indexes
        .iter()
        .any(|i| i.name.eq_ignore_ascii_case(iname))
    {
        return Err(SqlError::dup_key_name(iname));
    }
    let columns: Vec<usize> = cols
        .iter()
        .map(|n| t.column(n).ok_or_else(|| SqlError::key_column_missing(n)))
        .collect::<Result<_, _>>()?;
    let _gate = ddl_gate(s)?;
    let mut def = t.def.clone();
    let tree_name = format!("z{}", next_object_id(s));
    def.indexes.push(IndexDef {
        name: iname.to_string(),
        columns,
        unique,
        tree: tree_name.clone(),
    });
    let tree = create_table_tree(&s.inst.db, def.format, &tree_name, true)?;
    // Build the index from the table's rows (no writer runs: the gate is held).
    let mut indexes = t.indexes.clone();
    indexes.push(tree.clone());
    let new_t = t.with_indexes(def.clone(), indexes);
    let i = def.indexes.len() - 1;
    let build = || -> Result<(), SqlError> {
        let icols = &new_t.def.indexes[i].columns;
        let mut wanted = vec![false; new_t.types.len()];
        for &c in icols {
            wanted[c] = true;
        }
        // Keys only (with the primary key's length, and whether a column is NULL, for the
        // unique check): the rows are decoded again only for a duplicate's message.
        let mut keys: Vec<(Vec<u8>, usize, bool)> = Vec::new();
        let mut cursor = t
            .primary
            .range::<std::ops::RangeFull>(..)
            .map_err(SqlError::engine)?;
        while let Some(kv) = cursor.next_ref() {
            let (pk, v) = kv.map_err(SqlError::engine)?;
            let row = t.decode_some(v, &wanted)?;
            let has_null = icols.iter().any(|&c| row[c].is_null());
            keys.push((new_t.index_key(i, &row, pk), pk.len(), has_null));
        }
        drop(cursor);
        keys.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if unique {
            fn prefix((k, pk_len, _): &(Vec<u8>, usize, bool)) -> &[u8] {
                &k[..k.len() - pk_len]
            }
            for w in keys.windows(2) {
                if !w[1].2 && prefix(&w[0]) == prefix(&w[1]) {
                    let (k, pk_len, _) = &w[1];
                    let pk = &k[k.len() - pk_len..];
                    let v = t
                        .primary
                        .get(pk)
                        .map_err(SqlError::engine)?
                        .ok_or_else(|| SqlError::corrupt("an indexed row vanished".into()))?;
                    let row = t.decode_some(&v, &wanted)?;
                    let text = icols
                        .iter()
                        .map(|&c| row[c].to_string_lossy().unwrap_or_default())
                        .collect::<Vec<_>>()
                        .join("-");
                    return Err(SqlError::duplicate(&text, iname));
                }
            }
        }
        // The tree is not in the catalog yet and no writer runs (the gate is held), so the
        // sorted keys go in without row locks or before-images, a leaf at a time; in batches
        // of one WAL record each, so that no record grows with the table.
        let mut batch: Vec<(&[u8], &[u8])> = Vec::with_capacity(10_000);
        for chunk in keys.chunks(10_000) {
            batch.clear();
            batch.extend(chunk.iter().map(|(k, _, _)| (k.as_slice(), &b""[..])));
            tree.load_unpublished(&batch).map_err(SqlError::engine)?;
        }
        Ok(())
    };
    if let Err(e) = build() {
        let _ = s.inst.db.drop_tree(&tree_name);
        return Err(e);
    }
    let next = s.inst.catalog.read().next_object_id;
    write_catalog(
        s,
        &[
            (catalog::table_key(&db, &tname), Some(def.encode())),
            (
                catalog::NEXT_ID_KEY.to_vec(),
                Some(next.to_le_bytes().to_vec()),
            ),
        ],
    )?;
    s.inst
        .catalog
        .write()
        .dbs
        .entry(db)
        .or_default()
        .insert(tname, Arc::new(new_t));
    Ok(Outcome::done(0))
}

fn drop_index(s: &mut Session, table: &ast::ObjectName, iname: &str) -> Result<(), SqlError> {
    let (db, tname) = writable_name(table, s.db.as_deref())?;
    let inst = s.inst.clone();
    let _ddl = inst.ddl.lock();
    let t = s.inst.table(&db, &tname)?;
    let Some(i) = t
        .def
        .indexes
        .iter()
        .position(|x| x.name.eq_ignore_ascii_case(iname))
    else {
        return Err(SqlError::of(
            ErrorKind::CantDropFieldOrKey,
            format!("Can't DROP '{iname}'; check that column/key exists"),
        ));
    };
    let _gate = ddl_gate(s)?;
    let mut def = t.def.clone();
    let removed = def.indexes.remove(i);
    write_catalog(s, &[(catalog::table_key(&db, &tname), Some(def.encode()))])?;
    let mut indexes = t.indexes.clone();
    indexes.remove(i);
    let new_t = t.with_indexes(def, indexes);
    s.inst
        .catalog
        .write()
        .dbs
        .entry(db)
        .or_default()
        .insert(tname, Arc::new(new_t));
    s.inst
        .db
        .drop_tree(&removed.tree)
        .map_err(SqlError::engine)?;
    Ok(())
}
