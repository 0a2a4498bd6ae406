//! From the parser's AST to executable plans, and DML execution.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use sqlparser::ast;
use zipdb_engine::Transaction;

use crate::catalog::Table;
use crate::exec::scan::scan_rows;
use crate::exec::{NoScope, TableScope};
use crate::expr::{Compiler, Ctx, Expr, Scope};
use crate::plan::access::Access;
use crate::plan::dml::{DeletePlan, InsertMode, InsertPlan, UpdatePlan};
use crate::plan::rules::access_path::choose_access;
use crate::types::value::Value;
use crate::SqlError;

/// What compiling needs from the session.
pub struct Env<'a> {
    pub db: Option<&'a str>,
    pub lookup: &'a dyn Fn(&str, &str) -> Result<Arc<Table>, SqlError>,
    pub vars: &'a dyn Fn(&str) -> Result<Value, SqlError>,
    /// Compiling a subquery: the enclosing query's tables, for outer references.
    pub outer: Option<&'a OuterRef<'a>>,
    /// The statement's text (for labelling result columns as written), when known.
    pub sql: Option<&'a str>,
    /// Common table expressions in scope (`WITH name AS (...)`), innermost last.
    pub ctes: &'a [&'a ast::Cte],
}

/// The enclosing query's FROM tables, seen from a subquery: a column found only there
/// compiles to [`Expr::Outer`] and is recorded in `used`.
pub struct OuterRef<'a> {
    pub items: &'a [crate::exec::FromItem<'a>],
    pub visible: usize,
    pub used: &'a std::cell::RefCell<Vec<usize>>,
}

impl Env<'_> {
    /// `[db.]table` to an open table, for a statement that may write it.
    pub fn table(&self, name: &ast::ObjectName) -> Result<Arc<Table>, SqlError> {
        let (db, t) = split_name(name, self.db)?;
        if crate::catalog::system::is_db(&db) {
            return Err(SqlError::new(
                1044,
                "42000",
                format!("Access denied to database '{}'", crate::catalog::system::DB),
            ));
        }
        (self.lookup)(&db, &t)
    }

    /// `[db.]table` to an open table or an `information_schema` table, for a SELECT.
    pub fn table_for_select(&self, name: &ast::ObjectName) -> Result<Arc<Table>, SqlError> {
        let (db, t) = split_name(name, self.db)?;
        (self.lookup)(&db, &t)
    }
}

/// Splits `[db.]name`, defaulting the database.
pub fn split_name(name: &ast::ObjectName, db: Option<&str>) -> Result<(String, String), SqlError> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p.as_ident() {
            Some(i) => i.value.clone(),
            None => p.to_string(),
        })
        .collect();
    match parts.as_slice() {
        [t] => Ok((db.ok_or_else(SqlError::no_db)?.to_string(), t.clone())),
        [d, t] => Ok((d.clone(), t.clone())),
        _ => Err(SqlError::unsupported(&format!("name {name}"))),
    }
}

// ---- Storing values --------------------------------------------------------------------------

/// Stores `v` in column `c` of `t` for the statement's row `row` (MariaDB's `Field::store`, see
/// [`crate::types::store`]): notes always go to `n`; any other loss fails the statement when `strict`,
/// and is a warning beside the clipped value when not (`IGNORE`).
pub fn coerce(
    v: Value,
    t: &Table,
    c: usize,
    row: u64,
    strict: bool,
    n: &mut DmlCount,
) -> Result<Value, SqlError> {
    let col = &t.def.columns[c];
    let (v, issues) = crate::types::store::convert(v, col.ty, col.nullable);
    if issues.is_empty() {
        return Ok(v);
    }
    let dest = crate::types::store::Dest {
        db: &t.def.db,
        table: &t.def.name,
        column: &col.name,
        row,
    };
    if strict {
        if let Some(i) = issues.iter().find(|i| !i.is_note()) {
            return Err(i.error(&dest));
        }
    }
    for i in &issues {
        let (level, code, message) = i.warning(&dest);
        n.warn(level, code, message);
    }
    Ok(v)
}

/// Converts a column's DEFAULT for storage: any loss is an error, except the rounding notes
/// MariaDB accepts for numbers and dates (a string cut to the length, even of spaces, is not);
/// `true` with the value when such a note is due.
pub fn coerce_default(
    v: Value,
    col: &crate::catalog::ColumnDef,
) -> Result<(Value, bool), SqlError> {
    let (v, issues) = crate::types::store::convert(v, col.ty, col.nullable);
    let dest = crate::types::store::Dest {
        db: "",
        table: "",
        column: &col.name,
        row: 1,
    };
    match issues.iter().find(|i| !i.is_note() || col.ty.is_string()) {
        Some(i) => Err(i.error(&dest)),
        None => Ok((v, !issues.is_empty())),
    }
}

/// The unique secondary indexes in the order MariaDB keeps keys (after PRIMARY): those over
/// NOT NULL columns first, then the others, each in the order defined. Duplicates are found,
/// and REPLACE's "last unique key" is decided, in this order.
fn unique_order(t: &Table) -> Vec<usize> {
    let nullable = |i: usize| {
        t.def.indexes[i]
            .columns
            .iter()
            .any(|&c| t.def.columns[c].nullable)
    };
    let (mut a, b): (Vec<usize>, Vec<usize>) = (0..t.indexes.len())
        .filter(|&i| t.def.indexes[i].unique)
        .partition(|&i| !nullable(i));
    a.extend(b);
    a
}

/// A DEFAULT whose bytes in MariaDB's record are not those of an emptied field (zero, '',
/// the zero date): see the unchanged case of ON DUPLICATE KEY UPDATE.
fn default_is_not_zero(col: &crate::catalog::ColumnDef) -> bool {
    match &col.default {
        None | Some(Value::Null) => false,
        Some(Value::Str(s)) => !s.trim_end_matches(' ').is_empty(),
        Some(Value::Bytes(b)) => !b.is_empty(),
        Some(Value::Date(p) | Value::DateTime(p)) => *p != 0,
        Some(v) => v.truth() != Some(false),
    }
}

/// ER_NO_DEFAULT_FOR_FIELD (1364).
fn no_default(col: &crate::catalog::ColumnDef) -> SqlError {
    SqlError::new(
        1364,
        "HY000",
        format!("Field '{}' doesn't have a default value", col.name),
    )
}

/// A NOT NULL column a statement must give a value: no DEFAULT, not filled by the server.
fn needs_value(col: &crate::catalog::ColumnDef) -> bool {
    !col.nullable && col.default.is_none() && !col.auto_increment && !col.default_now
}

/// Exact equality of stored values (for "rows changed" counts).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits(),
        _ => {
            a.sql_cmp(b) == Some(Ordering::Equal)
                && std::mem::discriminant(a) == std::mem::discriminant(b)
        }
    }
}

/// Text of a key for a duplicate-key message.
fn key_text(row: &[Value], cols: &[usize]) -> String {
    cols.iter()
        .map(|&c| row[c].to_string_lossy().unwrap_or_else(|| "NULL".into()))
        .collect::<Vec<_>>()
        .join("-")
}

// ---- Row writes (shared by INSERT, UPDATE, DELETE) ---------------------------------------

fn eng(e: zipdb_engine::Error) -> SqlError {
    SqlError::engine(e)
}

/// Finds a row other than those at `own` (primary keys) holding the same values in unique
/// index `i`, as the newest committed state plus this transaction's writes show it. Locks the
/// index prefix so that concurrent inserters of the same value serialise.
fn unique_conflict(
    txn: &mut Transaction,
    t: &Table,
    i: usize,
    row: &[Value],
    own: &[&[u8]],
) -> Result<Option<Vec<u8>>, SqlError> {
    let idx = &t.def.indexes[i];
    if idx.columns.iter().any(|&c| row[c].is_null()) {
        return Ok(None);
    }
    let mut prefix = Vec::new();
    for &c in &idx.columns {
        crate::catalog::codec::encode_key(&mut prefix, &row[c], t.types[c]);
    }
    let tree = &t.indexes[i];
    // A lock on the prefix itself (no entry has that exact key).
    txn.get_for_update(tree, &prefix).map_err(eng)?;
    let mut end = prefix.clone();
    end.push(0xff);
    let mut hi = prefix.clone();
    let hi_b = match prefix_successor(&mut hi) {
        true => Bound::Excluded(hi.as_slice()),
        false => Bound::Unbounded,
    };
    let lo_b = Bound::Excluded(prefix.as_slice());
    for (k, v) in txn.written_range(tree, lo_b, hi_b) {
        if v.is_some() && !own.contains(&&k[prefix.len()..]) {
            return Ok(Some(k[prefix.len()..].to_vec()));
        }
    }
    for kv in tree
        .range::<(Bound<&[u8]>, Bound<&[u8]>)>((lo_b, hi_b))
        .map_err(eng)?
    {
        let (k, _) = kv.map_err(eng)?;
        if own.contains(&&k[prefix.len()..]) {
            continue;
        }
        if txn.written(tree, &k) == Some(None) {
            continue;
        }
        return Ok(Some(k[prefix.len()..].to_vec()));
    }
    Ok(None)
}

fn prefix_successor(v: &mut Vec<u8>) -> bool {
    while let Some(last) = v.pop() {
        if last < 0xff {
            v.push(last + 1);
            return true;
        }
    }
    false
}

fn encode_row(t: &Table, row: &[Value]) -> Vec<u8> {
    let mut b = Vec::with_capacity(64);
    crate::catalog::codec::encode_row(&mut b, row, &t.types);
    b
}

/// Deletes a row and its index entries.
fn delete_row(txn: &mut Transaction, t: &Table, pk: &[u8], row: &[Value]) -> Result<(), SqlError> {
    txn.delete(&t.primary, pk).map_err(eng)?;
    for i in 0..t.indexes.len() {
        let k = t.index_key(i, row, pk);
        txn.delete(&t.indexes[i], &k).map_err(eng)?;
    }
    Ok(())
}

// ---- INSERT ------------------------------------------------------------------------------

/// Scope of ON DUPLICATE KEY UPDATE: columns read the existing row, `VALUES(c)` the new one.
struct DupScope<'a> {
    t: &'a Table,
    vars: &'a dyn Fn(&str) -> Result<Value, SqlError>,
}

impl Scope for DupScope<'_> {
    fn column(&mut self, _q: Option<&str>, name: &str) -> Result<Expr, SqlError> {
        self.t
            .column(name)
            .map(Expr::Col)
            .ok_or_else(|| SqlError::unknown_column(name, "field list"))
    }
    fn intercept(&mut self, _c: &mut Compiler, e: &ast::Expr) -> Result<Option<Expr>, SqlError> {
        if let ast::Expr::Function(f) = e {
            if f.name.to_string().eq_ignore_ascii_case("VALUES") {
                if let ast::FunctionArguments::List(l) = &f.args {
                    if let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(
                        ast::Expr::Identifier(id),
                    ))] = l.args.as_slice()
                    {
                        let i = self
                            .t
                            .column(&id.value)
                            .ok_or_else(|| SqlError::unknown_column(&id.value, "field list"))?;
                        return Ok(Some(Expr::Col(self.t.types.len() + i)));
                    }
                }
            }
        }
        Ok(None)
    }
    fn sysvar(&mut self, name: &str) -> Result<Value, SqlError> {
        (self.vars)(name)
    }
    /// `[old row..., new row...]`: the table's types twice.
    fn col_type(&self, i: usize) -> Option<crate::types::sqltype::SqlType> {
        let n = self.t.types.len();
        self.t.types.get(if i < n { i } else { i - n }).copied()
    }
}

fn column_index(t: &Table, name: &str) -> Result<usize, SqlError> {
    t.column(name)
        .ok_or_else(|| SqlError::unknown_column(name, "field list"))
}

fn assignment_column(t: &Table, a: &ast::Assignment) -> Result<usize, SqlError> {
    match &a.target {
        ast::AssignmentTarget::ColumnName(n) => {
            let last =
                n.0.last()
                    .and_then(|p| p.as_ident())
                    .map(|i| i.value.clone())
                    .unwrap_or_default();
            column_index(t, &last)
        }
        ast::AssignmentTarget::Tuple(_) => Err(SqlError::unsupported("tuple assignment")),
    }
}

pub fn compile_insert(
    ins: &ast::Insert,
    env: &Env,
    c: &mut Compiler,
) -> Result<InsertPlan, SqlError> {
    let ast::TableObject::TableName(name) = &ins.table else {
        return Err(SqlError::unsupported("INSERT INTO TABLE FUNCTION"));
    };
    let t = env.table(name)?;
    let columns: Vec<usize> = if ins.columns.is_empty() && ins.assignments.is_empty() {
        (0..t.def.columns.len()).collect()
    } else if !ins.assignments.is_empty() {
        ins.assignments
            .iter()
            .map(|a| assignment_column(&t, a))
            .collect::<Result<_, _>>()?
    } else {
        ins.columns
            .iter()
            .map(|n| {
                let last =
                    n.0.last()
                        .and_then(|p| p.as_ident())
                        .map(|i| i.value.clone())
                        .unwrap_or_default();
                column_index(&t, &last)
            })
            .collect::<Result<_, _>>()?
    };
    let vars = env.vars;
    let mut rows = Vec::new();
    let mut select = None;
    if !ins.assignments.is_empty() {
        let mut r = Vec::new();
        for a in &ins.assignments {
            r.push(c.compile(
                &a.value,
                &mut NoScope {
                    vars,
                    clause: "field list",
                },
            )?);
        }
        rows.push(r);
    } else {
        let Some(src) = &ins.source else {
            return Err(SqlError::unsupported("INSERT without VALUES"));
        };
        let values = match &*src.body {
            ast::SetExpr::Values(values) => values,
            // INSERT ... SELECT: the rows come from a query, read whole before the first insert
            // (so a query over the target table sees it as it was, as in MySQL).
            _ => {
                let p = crate::bind::select::compile_select(src, env, c)?;
                if p.visible != columns.len() {
                    return Err(SqlError::new(
                        1136,
                        "21S01",
                        "Column count doesn't match value count at row 1",
                    ));
                }
                select = Some(Box::new(p));
                &EMPTY_VALUES
            }
        };
        for (n, row) in values.rows.iter().enumerate() {
            if row.content.len() != columns.len() {
                return Err(SqlError::new(
                    1136,
                    "21S01",
                    format!("Column count doesn't match value count at row {}", n + 1),
                ));
            }
            let mut r = Vec::with_capacity(row.content.len());
            for e in &row.content {
                r.push(match e {
                    // DEFAULT in VALUES.
                    ast::Expr::Identifier(id)
                        if id.value.eq_ignore_ascii_case("DEFAULT") && id.quote_style.is_none() =>
                    {
                        Expr::Func(crate::expr::Func::Coalesce, Vec::new())
                    }
                    _ => c.compile(
                        e,
                        &mut NoScope {
                            vars,
                            clause: "field list",
                        },
                    )?,
                });
            }
            rows.push(r);
        }
    }
    let mut on_dup = Vec::new();
    if let Some(ast::OnInsert::DuplicateKeyUpdate(assigns)) = &ins.on {
        for a in assigns {
            let col = assignment_column(&t, a)?;
            let x = c.compile(&a.value, &mut DupScope { t: &t, vars })?;
            on_dup.push((col, x));
        }
    } else if ins.on.is_some() {
        return Err(SqlError::unsupported("ON CONFLICT"));
    }
    let mode = if ins.replace_into {
        InsertMode::Replace
    } else if ins.ignore {
        InsertMode::Ignore
    } else {
        InsertMode::Insert
    };
    Ok(InsertPlan {
        table: t,
        columns,
        rows,
        select,
        mode,
        on_dup,
    })
}

/// No VALUES rows (INSERT ... SELECT).
static EMPTY_VALUES: ast::Values = ast::Values {
    explicit_row: false,
    value_keyword: false,
    rows: Vec::new(),
};

/// Outcome counters of a DML statement.
#[derive(Debug, Default, Clone)]
pub struct DmlCount {
    pub affected: u64,
    pub matched: u64,
    pub changed: u64,
    /// The info string's "Duplicates": rows INSERT IGNORE skipped, rows REPLACE deleted,
    /// rows ON DUPLICATE KEY UPDATE changed.
    pub duplicates: u64,
    pub records: u64,
    pub warnings: u64,
    /// The warnings themselves (level, code, message), for SHOW WARNINGS.
    pub warns: Vec<(&'static str, u16, String)>,
    /// First AUTO_INCREMENT value generated (LAST_INSERT_ID()).
    pub first_id: Option<u64>,
    /// INSERT ... SELECT: MySQL reports its Records/Duplicates info even for one row.
    pub from_select: bool,
}

impl DmlCount {
    pub fn warn(&mut self, level: &'static str, code: u16, message: String) {
        self.warnings += 1;
        self.warns.push((level, code, message));
    }
}

impl InsertPlan {
    pub fn execute(&self, txn: &mut Transaction, ctx: &Ctx) -> Result<DmlCount, SqlError> {
        let t = &*self.table;
        let strict = self.mode != InsertMode::Ignore;
        let mut n = DmlCount {
            from_select: self.select.is_some(),
            ..DmlCount::default()
        };
        // Columns that must have a value and get none: MariaDB checks once per statement, and
        // counts a column ON DUPLICATE KEY UPDATE assigns as given (it then takes the implicit
        // default, silently). Strict: the first one fails the statement; IGNORE: one warning
        // each, and the implicit default.
        let mut named = vec![false; t.types.len()];
        for &c in self
            .columns
            .iter()
            .chain(self.on_dup.iter().map(|(c, _)| c))
        {
            named[c] = true;
        }
        for (i, col) in t.def.columns.iter().enumerate() {
            if !named[i] && needs_value(col) {
                if strict {
                    return Err(no_default(col));
                }
                let e = no_default(col);
                n.warn("Warning", e.code, e.message);
            }
        }
        let selected = match &self.select {
            Some(p) => p.execute(Some(&mut *txn), ctx)?,
            None => Vec::new(),
        };
        let count = if self.select.is_some() {
            selected.len()
        } else {
            self.rows.len()
        };
        // Rows stored or changed (MariaDB's "copied"): IGNORE's Duplicates are the rest.
        let mut copied = 0u64;
        for ri in 0..count {
            let rowno = ri as u64 + 1;
            let mut row: Vec<Value> = Vec::with_capacity(t.types.len());
            for col in &t.def.columns {
                row.push(if col.default_now {
                    Value::DateTime(ctx.now - ctx.now.rem_euclid(1_000_000))
                } else if needs_value(col) {
                    crate::types::store::implicit_default(col.ty)
                } else {
                    col.default.clone().unwrap_or(Value::Null)
                });
            }
            if let Some(vals) = selected.get(ri) {
                for (v, &c) in vals.iter().zip(&self.columns) {
                    row[c] = v.clone();
                }
            } else {
                for (e, &c) in self.rows[ri].iter().zip(&self.columns) {
                    // `DEFAULT` compiles to an argument-less COALESCE: keep the default. A
                    // column without one: 1364 (strict), or a warning for this row.
                    if matches!(e, Expr::Func(crate::expr::Func::Coalesce, a) if a.is_empty()) {
                        let col = &t.def.columns[c];
                        if needs_value(col) {
                            if strict {
                                return Err(no_default(col));
                            }
                            let e = no_default(col);
                            n.warn("Warning", e.code, e.message);
                        }
                        continue;
                    }
                    row[c] = e.eval(&[], ctx)?;
                }
            }
            // Strict mode: a warning the row's expressions raised fails the statement here,
            // before the row is stored (and before a later row's error could come first).
            crate::types::diag::check()?;
            // AUTO_INCREMENT: NULL or 0 takes the next value.
            if let Some(ai) = t.auto_inc {
                let v = &row[ai];
                let next = match v {
                    Value::Null => true,
                    v => v.to_i64() == Some(0),
                };
                if next {
                    let id = t.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    row[ai] = Value::UInt(id);
                    n.first_id.get_or_insert(id);
                } else if let Some(v) = v.to_i64().filter(|v| *v > 0) {
                    t.next_id
                        .fetch_max(v as u64 + 1, std::sync::atomic::Ordering::Relaxed);
                }
            }
            // Stored in the order the statement names the columns (the order of MariaDB's
            // warnings), then the rest (defaults, which fit).
            let mut done = vec![false; t.types.len()];
            for i in self.columns.iter().copied().chain(0..t.types.len()) {
                if std::mem::replace(&mut done[i], true) {
                    continue;
                }
                let v = std::mem::replace(&mut row[i], Value::Null);
                row[i] = coerce(v, t, i, rowno, strict, &mut n)?;
            }
            let hidden = if t.def.pk.is_empty() {
                Some(t.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
            } else {
                None
            };
            let pk = t.pk_key(&row, hidden);
            n.records += 1;
            copied += self.insert_one(txn, t, pk, row, rowno, ctx, &mut n)?;
        }
        if self.mode == InsertMode::Ignore {
            n.duplicates = n.records - copied;
        }
        Ok(n)
    }

    /// Inserts one row, or resolves its duplicate by the statement's mode; returns how many
    /// rows it stored or changed (0 or 1).
    #[allow(clippy::too_many_arguments)]
    fn insert_one(
        &self,
        txn: &mut Transaction,
        t: &Table,
        pk: Vec<u8>,
        row: Vec<Value>,
        rowno: u64,
        ctx: &Ctx,
        n: &mut DmlCount,
    ) -> Result<u64, SqlError> {
        let strict = self.mode != InsertMode::Ignore;
        // Which existing row, if any, the new one collides with.
        let mut conflict: Option<(Vec<u8>, Vec<Value>, String)> = None;
        if let Some(old) = txn.get_for_update(&t.primary, &pk).map_err(eng)? {
            conflict = Some((pk.clone(), t.decode_row(&old)?, "PRIMARY".into()));
        }
        let uniques = unique_order(t);
        if conflict.is_none() {
            for &i in &uniques {
                if let Some(other) = unique_conflict(txn, t, i, &row, &[&pk])? {
                    if let Some(old) = txn.get_for_update(&t.primary, &other).map_err(eng)? {
                        conflict =
                            Some((other, t.decode_row(&old)?, t.def.indexes[i].name.clone()));
                        break;
                    }
                }
            }
        }
        let Some((old_pk, old_row, key_name)) = conflict else {
            txn.put(&t.primary, &pk, &encode_row(t, &row))
                .map_err(eng)?;
            for i in 0..t.indexes.len() {
                txn.put(&t.indexes[i], &t.index_key(i, &row, &pk), b"")
                    .map_err(eng)?;
            }
            n.affected += 1;
            return Ok(1);
        };
        let cols = if key_name == "PRIMARY" {
            t.def.pk.clone()
        } else {
            t.def
                .indexes
                .iter()
                .find(|i| i.name == key_name)
                .map(|i| i.columns.clone())
                .unwrap_or_default()
        };
        if !self.on_dup.is_empty() {
            let mut both = old_row.clone();
            both.extend(row.iter().cloned());
            let mut new = old_row.clone();
            for (c, e) in &self.on_dup {
                let v = e.eval(&both, ctx)?;
                crate::types::diag::check()?;
                new[*c] = coerce(v, t, *c, rowno, strict, n)?;
                both[*c] = new[*c].clone();
            }
            if new.iter().zip(&old_row).all(|(a, b)| same(a, b)) {
                // MariaDB compares the records as bytes, and a NULL it read back holds the
                // column's DEFAULT where NULL assigned anew holds zeros: the row looks changed,
                // the engine finds it the same, and it counts once (not as updated).
                let touched = self
                    .on_dup
                    .iter()
                    .any(|&(c, _)| new[c].is_null() && default_is_not_zero(&t.def.columns[c]));
                if touched {
                    n.affected += 1;
                    return Ok(1);
                }
                return Ok(0);
            }
            match update_row(txn, t, &old_pk, &old_row, new) {
                Ok(()) => {}
                // INSERT IGNORE ... ON DUPLICATE KEY UPDATE: an update that collides in turn
                // is skipped with a warning.
                Err(e) if e.code == 1062 && !strict => {
                    n.warn("Warning", e.code, e.message);
                    return Ok(0);
                }
                Err(e) => return Err(e),
            }
            n.affected += 2;
            n.duplicates += 1;
            return Ok(1);
        }
        match self.mode {
            InsertMode::Insert => Err(SqlError::duplicate(&key_text(&row, &cols), &key_name)),
            InsertMode::Ignore => {
                n.warn(
                    "Warning",
                    1062,
                    format!(
                        "Duplicate entry '{}' for key '{key_name}'",
                        key_text(&row, &cols)
                    ),
                );
                Ok(0)
            }
            InsertMode::Replace => {
                // On the last unique key MariaDB overwrites the row in place, and the same row
                // again (say, twice in one statement) counts once, as a plain insert; on an
                // earlier one it deletes and inserts.
                let last = match uniques.last() {
                    Some(&i) => t.def.indexes[i].name == key_name,
                    None => key_name == "PRIMARY",
                };
                if last
                    && old_row.len() == row.len()
                    && old_row.iter().zip(&row).all(|(a, b)| same(a, b))
                {
                    n.affected += 1;
                    return Ok(1);
                }
                delete_row(txn, t, &old_pk, &old_row)?;
                n.affected += 1;
                n.duplicates += 1;
                // Another unique index may still collide: go again.
                self.insert_one(txn, t, pk, row, rowno, ctx, n)
            }
        }
    }
}

/// Replaces `old` (at `pk`) by `new`, moving the row if its primary key changed and keeping
/// the secondary indexes in step.
fn update_row(
    txn: &mut Transaction,
    t: &Table,
    pk: &[u8],
    old: &[Value],
    new: Vec<Value>,
) -> Result<(), SqlError> {
    let new_pk = if t.def.pk.is_empty() {
        pk.to_vec()
    } else {
        t.pk_key(&new, None)
    };
    let moved = new_pk != pk;
    if moved
        && txn
            .get_for_update(&t.primary, &new_pk)
            .map_err(eng)?
            .is_some()
    {
        return Err(SqlError::duplicate(&key_text(&new, &t.def.pk), "PRIMARY"));
    }
    // Every unique index is checked before anything is written, so that a duplicate leaves
    // the row as it was (UPDATE IGNORE and INSERT IGNORE ... ON DUPLICATE KEY UPDATE go on).
    for i in unique_order(t) {
        let idx = &t.def.indexes[i];
        if (moved || idx.columns.iter().any(|&c| !same(&old[c], &new[c])))
            && unique_conflict(txn, t, i, &new, &[&new_pk, pk])?.is_some()
        {
            return Err(SqlError::duplicate(
                &key_text(&new, &idx.columns),
                &idx.name,
            ));
        }
    }
    if moved {
        txn.delete(&t.primary, pk).map_err(eng)?;
    }
    for i in 0..t.indexes.len() {
        let changed = moved
            || t.def.indexes[i]
                .columns
                .iter()
                .any(|&c| !same(&old[c], &new[c]));
        if !changed {
            continue;
        }
        // The row's own entry goes first: when only the primary key changed, the unique
        // check would otherwise find it (under the old key) and report a duplicate.
        txn.delete(&t.indexes[i], &t.index_key(i, old, pk))
            .map_err(eng)?;
        if t.def.indexes[i].unique {
            if let Some(_other) = unique_conflict(txn, t, i, &new, &[&new_pk])? {
                return Err(SqlError::duplicate(
                    &key_text(&new, &t.def.indexes[i].columns),
                    &t.def.indexes[i].name,
                ));
            }
        }
        txn.put(&t.indexes[i], &t.index_key(i, &new, &new_pk), b"")
            .map_err(eng)?;
    }
    txn.put(&t.primary, &new_pk, &encode_row(t, &new))
        .map_err(eng)?;
    Ok(())
}

// ---- UPDATE / DELETE ---------------------------------------------------------------------

fn single_table(
    t: &ast::TableWithJoins,
    what: &str,
) -> Result<(ast::ObjectName, Option<String>), SqlError> {
    if !t.joins.is_empty() {
        return Err(SqlError::unsupported(&format!("multi-table {what}")));
    }
    match &t.relation {
        ast::TableFactor::Table { name, alias, .. } => {
            Ok((name.clone(), alias.as_ref().map(|a| a.name.value.clone())))
        }
        _ => Err(SqlError::unsupported(&format!("{what} of this table form"))),
    }
}

/// An expression of UPDATE/DELETE over the target table's row. Subqueries may appear if they
/// do not read the row (they are run once, before any row changes: see
/// [`crate::exec::prefill_subqueries`]); correlated ones are refused.
fn dml_compile(
    e: &ast::Expr,
    t: &Table,
    alias: Option<&str>,
    clause: &'static str,
    env: &Env,
    c: &mut Compiler,
) -> Result<Expr, SqlError> {
    let items = [crate::exec::FromItem {
        table: t,
        alias,
        offset: 0,
        merged: &[],
    }];
    let x = c.compile(
        e,
        &mut crate::exec::FromScope {
            items: &items,
            visible: 1,
            clause,
            vars: env.vars,
            env: Some(env),
        },
    )?;
    let mut correlated = false;
    x.visit(&mut |n| {
        if let Expr::Subquery(p, _) = n {
            correlated |= !p.outer_cols.is_empty();
        }
    });
    if correlated {
        return Err(SqlError::unsupported(
            "subqueries that read the row being updated or deleted",
        ));
    }
    Ok(x)
}

fn compile_where_order_limit(
    t: &Table,
    alias: Option<&str>,
    selection: &Option<ast::Expr>,
    order_by: &[ast::OrderByExpr],
    limit: &Option<ast::Expr>,
    env: &Env,
    c: &mut Compiler,
) -> Result<(Option<Expr>, Vec<(Expr, bool)>, Option<Expr>), SqlError> {
    let vars = env.vars;
    let filter = match selection {
        None => None,
        Some(w) => {
            let mut f = dml_compile(w, t, alias, "where clause", env, c)?;
            crate::plan::rules::zero_dates::zero_dates_are_null(&mut f, &t.def.columns);
            Some(f)
        }
    };
    let mut order = Vec::new();
    for o in order_by {
        let x = c.compile(
            &o.expr,
            &mut TableScope {
                table: t,
                alias,
                clause: "order clause",
                vars,
            },
        )?;
        order.push((x, matches!(o.options.sort, Some(ast::OrderBySort::Desc))));
    }
    let limit = limit
        .as_ref()
        .map(|e| {
            c.compile(
                e,
                &mut NoScope {
                    vars,
                    clause: "limit",
                },
            )
        })
        .transpose()?;
    Ok((filter, order, limit))
}

pub fn compile_update(
    u: &ast::Update,
    env: &Env,
    c: &mut Compiler,
) -> Result<UpdatePlan, SqlError> {
    if u.from.is_some() {
        return Err(SqlError::unsupported("UPDATE ... FROM"));
    }
    let (name, alias) = single_table(&u.table, "UPDATE")?;
    let t = env.table(&name)?;
    let mut assignments = Vec::new();
    for a in &u.assignments {
        let col = assignment_column(&t, a)?;
        let x = match &a.value {
            // SET col = DEFAULT: the column's default; one without is 1364, IGNORE or not.
            ast::Expr::Identifier(id)
                if id.value.eq_ignore_ascii_case("DEFAULT") && id.quote_style.is_none() =>
            {
                let cd = &t.def.columns[col];
                if needs_value(cd) {
                    return Err(no_default(cd));
                }
                if cd.default_now {
                    Expr::Func(crate::expr::Func::Now, Vec::new())
                } else {
                    Expr::Const(cd.default.clone().unwrap_or(Value::Null))
                }
            }
            _ => dml_compile(&a.value, &t, alias.as_deref(), "field list", env, c)?,
        };
        assignments.push((col, x));
    }
    let (filter, order, limit) = compile_where_order_limit(
        &t,
        alias.as_deref(),
        &u.selection,
        &u.order_by,
        &u.limit,
        env,
        c,
    )?;
    let access = choose_access(&t, filter.as_ref());
    Ok(UpdatePlan {
        table: t,
        access,
        filter,
        assignments,
        order,
        limit,
        // `UPDATE IGNORE` reaches the parser as `UPDATE OR IGNORE` (see `crate::front::parse`).
        ignore: matches!(u.or, Some(ast::SqliteOnConflict::Ignore)),
    })
}

pub fn compile_delete(
    d: &ast::Delete,
    env: &Env,
    c: &mut Compiler,
) -> Result<DeletePlan, SqlError> {
    let tables = match &d.from {
        ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => v,
    };
    if tables.len() != 1 || !d.tables.is_empty() || d.using.is_some() {
        return Err(SqlError::unsupported("multi-table DELETE"));
    }
    let (name, alias) = single_table(&tables[0], "DELETE")?;
    let t = env.table(&name)?;
    let (filter, order, limit) = compile_where_order_limit(
        &t,
        alias.as_deref(),
        &d.selection,
        &d.order_by,
        &d.limit,
        env,
        c,
    )?;
    let access = choose_access(&t, filter.as_ref());
    Ok(DeletePlan {
        table: t,
        access,
        filter,
        order,
        limit,
    })
}

/// The rows a searched UPDATE/DELETE targets, found in the transaction's snapshot: (primary
/// key, row, how many rows the scan had read when it found it), in ORDER BY order and cut at
/// LIMIT.
fn targets(
    txn: &Transaction,
    t: &Table,
    access: &Access,
    filter: &Option<Expr>,
    order: &[(Expr, bool)],
    limit: &Option<Expr>,
    ctx: &Ctx,
) -> Result<Vec<(Vec<u8>, Vec<Value>, u64)>, SqlError> {
    let all = vec![true; t.types.len()];
    let limit = match limit {
        None => None,
        Some(e) => match e.eval(&[], ctx)?.to_i64() {
            Some(l) if l >= 0 => Some(l as usize),
            _ => return Err(SqlError::new(1210, "HY000", "Incorrect arguments to LIMIT")),
        },
    };
    let mut out: Vec<(Vec<u8>, Vec<Value>, u64)> = Vec::new();
    let mut scanned = 0u64;
    scan_rows(txn, t, access, &all, false, ctx, &mut |k, row| {
        scanned += 1;
        if scanned.is_multiple_of(512) {
            ctx.check_killed()?;
        }
        if let Some(f) = filter {
            if !f.test(&row, ctx)? {
                return Ok(true);
            }
        }
        // Held until the statement has changed them all: charged against its memory budget.
        ctx.charge(crate::runtime::limits::row_bytes(&row) + k.len() as u64)?;
        out.push((k.to_vec(), row, scanned));
        // With ORDER BY every match is needed before the sort; without, LIMIT stops the scan.
        Ok(!order.is_empty() || limit.is_none_or(|l| out.len() < l))
    })?;
    if !order.is_empty() {
        let mut keyed: Vec<(Vec<Value>, (Vec<u8>, Vec<Value>, u64))> =
            Vec::with_capacity(out.len());
        for (k, r, _) in out {
            let ks = order
                .iter()
                .map(|(e, _)| e.eval(&r, ctx))
                .collect::<Result<Vec<_>, _>>()?;
            keyed.push((ks, (k, r, 0)));
        }
        keyed.sort_by(|a, b| {
            for (i, (_, desc)) in order.iter().enumerate() {
                let c = a.0[i].order_cmp(&b.0[i]);
                if c != Ordering::Equal {
                    return if *desc { c.reverse() } else { c };
                }
            }
            Ordering::Equal
        });
        // Sorted first, then read: MariaDB counts rows in the sorted order.
        out = keyed
            .into_iter()
            .enumerate()
            .map(|(i, (_, (k, r, _)))| (k, r, i as u64 + 1))
            .collect();
    }
    if let Some(l) = limit {
        out.truncate(l);
    }
    Ok(out)
}

/// Locks a target row and reads its newest version; `None` if it is gone or no longer matches.
fn lock_target(
    txn: &mut Transaction,
    t: &Table,
    pk: &[u8],
    filter: &Option<Expr>,
    ctx: &Ctx,
) -> Result<Option<Vec<Value>>, SqlError> {
    let Some(v) = txn.get_for_update(&t.primary, pk).map_err(eng)? else {
        return Ok(None);
    };
    let row = t.decode_row(&v)?;
    if let Some(f) = filter {
        if !f.test(&row, ctx)? {
            return Ok(None);
        }
    }
    Ok(Some(row))
}

impl UpdatePlan {
    pub fn execute(&self, txn: &mut Transaction, ctx: &Ctx) -> Result<DmlCount, SqlError> {
        let exprs: Vec<&Expr> = self
            .filter
            .iter()
            .chain(self.assignments.iter().map(|(_, e)| e))
            .collect();
        let sc = crate::exec::prefill_subqueries(&exprs, txn, ctx)?;
        let ctx = &Ctx {
            sub: sc.as_ref(),
            ..*ctx
        };
        let t = &*self.table;
        let strict = !self.ignore;
        // With an ORDER BY, or when it changes the primary key, MySQL reads every row to
        // change before changing one, and warnings its WHERE raises then are not errors even
        // in strict mode; those of the SET expressions still are. (Otherwise it filters and
        // changes row by row, strictly.)
        let buffered =
            !self.order.is_empty() || self.assignments.iter().any(|(c, _)| t.def.pk.contains(c));
        let lenient_where = strict && buffered;
        if lenient_where {
            crate::types::diag::set_strict(false);
        }
        let mut n = DmlCount::default();
        for (pk, _, rowno) in targets(
            txn,
            t,
            &self.access,
            &self.filter,
            &self.order,
            &self.limit,
            ctx,
        )? {
            let Some(old) = lock_target(txn, t, &pk, &self.filter, ctx)? else {
                continue;
            };
            n.matched += 1;
            let mut new = old.clone();
            if lenient_where {
                crate::types::diag::set_strict(true);
            }
            for (c, e) in &self.assignments {
                let v = e.eval(&new, ctx)?;
                crate::types::diag::check()?;
                new[*c] = coerce(v, t, *c, rowno, strict, &mut n)?;
            }
            if lenient_where {
                crate::types::diag::set_strict(false);
            }
            if new.iter().zip(&old).all(|(a, b)| same(a, b)) {
                continue;
            }
            match update_row(txn, t, &pk, &old, new.clone()) {
                Ok(()) => {}
                // UPDATE IGNORE: the row stays as it was; MariaDB 10.11 says nothing.
                Err(e) if e.code == 1062 && self.ignore => continue,
                Err(e) => return Err(e),
            }
            if let Some(ai) = t.auto_inc {
                if let Some(v) = new[ai].to_i64().filter(|v| *v > 0) {
                    t.next_id
                        .fetch_max(v as u64 + 1, std::sync::atomic::Ordering::Relaxed);
                }
            }
            n.changed += 1;
            n.affected += 1;
        }
        Ok(n)
    }
}

impl DeletePlan {
    pub fn execute(&self, txn: &mut Transaction, ctx: &Ctx) -> Result<DmlCount, SqlError> {
        let sc =
            crate::exec::prefill_subqueries(&self.filter.iter().collect::<Vec<_>>(), txn, ctx)?;
        let ctx = &Ctx {
            sub: sc.as_ref(),
            ..*ctx
        };
        let t = &*self.table;
        let mut n = DmlCount::default();
        for (pk, _, _) in targets(
            txn,
            t,
            &self.access,
            &self.filter,
            &self.order,
            &self.limit,
            ctx,
        )? {
            let Some(old) = lock_target(txn, t, &pk, &self.filter, ctx)? else {
                continue;
            };
            delete_row(txn, t, &pk, &old)?;
            n.affected += 1;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod dml_tests {
    use crate::SqlError;
    use crate::{Outcome, Session};

    fn run(s: &mut Session, sql: &str) -> Result<Outcome, SqlError> {
        s.query(sql).pop().expect("one result")
    }

    fn done(s: &mut Session, sql: &str) -> (u64, String, Vec<u16>) {
        match run(s, sql) {
            Ok(Outcome::Done {
                affected_rows,
                info,
                ..
            }) => (
                affected_rows,
                info,
                s.warnings.iter().map(|w| w.code).collect(),
            ),
            other => panic!("{sql}: {other:?}"),
        }
    }

    fn with_session(name: &str, f: impl FnOnce(&mut Session)) {
        let dir = std::env::temp_dir().join(format!("zipdb-dml-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        {
            let db = zipdb_engine::Database::open(
                &dir,
                zipdb_engine::Options {
                    pool_bytes: 8 << 20,
                    wal_bytes: 8 << 20,
                    recovery_progress: false,
                    ..Default::default()
                },
            )
            .expect("open the test database");
            let inst = crate::Instance::open(db, Default::default()).expect("open catalog");
            let mut s = inst.session("root", 1);
            run(&mut s, "CREATE DATABASE d").unwrap();
            run(&mut s, "USE d").unwrap();
            f(&mut s);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn duplicates_in_info_count_replaced_updated_and_skipped_rows() {
        with_session("dups", |s| {
            run(
                s,
                "CREATE TABLE t (a INT PRIMARY KEY, b INT, UNIQUE KEY ub (b))",
            )
            .unwrap();
            run(s, "INSERT INTO t VALUES (1,1),(2,2),(3,3)").unwrap();
            // (1,2) replaces two rows: (1,1) by key and (2,2) by ub.
            let (n, info, _) = done(s, "REPLACE INTO t VALUES (1,2),(5,5)");
            assert_eq!(
                (n, info.as_str()),
                (4, "Records: 2  Duplicates: 2  Warnings: 0")
            );
            let (n, info, _) = done(
                s,
                "INSERT INTO t VALUES (5,9),(6,6) ON DUPLICATE KEY UPDATE b = VALUES(b)",
            );
            assert_eq!(
                (n, info.as_str()),
                (3, "Records: 2  Duplicates: 1  Warnings: 0")
            );
            // A row identical to the one it replaces counts once when the key is the last
            // unique one; here PRIMARY is followed by ub: delete and insert.
            let (n, info, _) = done(s, "REPLACE INTO t VALUES (20,20),(20,20)");
            assert_eq!(
                (n, info.as_str()),
                (3, "Records: 2  Duplicates: 1  Warnings: 0")
            );
            let (n, info, w) = done(s, "INSERT IGNORE INTO t VALUES (5,1),(8,8)");
            assert_eq!(
                (n, info.as_str()),
                (1, "Records: 2  Duplicates: 1  Warnings: 1")
            );
            assert_eq!(w, vec![1062]);
            assert_eq!(
                s.warnings[0].message,
                "Duplicate entry '5' for key 'PRIMARY'"
            );
        });
    }

    #[test]
    fn ignore_clips_values_with_warnings_where_strict_statements_fail() {
        with_session("ignore", |s| {
            run(
                s,
                "CREATE TABLE t (k INT PRIMARY KEY, i INT, d DECIMAL(5,1), c VARCHAR(3), \
                 dt DATE, ti TINYINT NOT NULL DEFAULT 0, u INT UNSIGNED)",
            )
            .unwrap();
            let (n, _, w) = done(
                s,
                "INSERT IGNORE INTO t (k, i, d, c, dt, ti, u) \
                 VALUES (1, 'abc', 123456, 'abcdef', 'xyz', NULL, -5)",
            );
            assert_eq!((n, w), (1, vec![1366, 1264, 1265, 1265, 1048, 1264]));
            assert_eq!(
                s.warnings[0].message,
                "Incorrect integer value: 'abc' for column `d`.`t`.`i` at row 1"
            );
            // Strict: the first loss is the error, with its own code.
            let err = |s: &mut Session, sql: &str| run(s, sql).unwrap_err().code;
            assert_eq!(err(s, "INSERT INTO t (k, i) VALUES (2, '12abc')"), 1265);
            assert_eq!(err(s, "INSERT INTO t (k, c) VALUES (2, 'abcdef')"), 1406);
            assert_eq!(
                err(s, "INSERT INTO t (k, dt) VALUES (2, '2020-02-30')"),
                1292
            );
            assert_eq!(
                err(s, "INSERT INTO t (k, ti) VALUES (2, 1), (3, NULL)"),
                1048
            );
            // Notes do not fail a strict statement.
            let (_, info, w) = done(
                s,
                "INSERT INTO t (k, d, c) VALUES (2, 1.55, 'ab  '), (3, 1, 'a')",
            );
            assert_eq!(
                (info.as_str(), w),
                ("Records: 2  Duplicates: 0  Warnings: 2", vec![1265, 1265])
            );
            assert_eq!(s.warnings[0].level, "Note");
            // A column without a default: once per statement under IGNORE.
            run(s, "CREATE TABLE m (a INT PRIMARY KEY, b INT NOT NULL)").unwrap();
            assert_eq!(err(s, "INSERT INTO m (a) VALUES (1)"), 1364);
            let (_, info, w) = done(s, "INSERT IGNORE INTO m (a) VALUES (1), (2)");
            assert_eq!(
                (info.as_str(), w),
                ("Records: 2  Duplicates: 0  Warnings: 1", vec![1364])
            );
            // UPDATE IGNORE: clipped values, implicit defaults, colliding rows left alone.
            let (n, info, w) = done(s, "UPDATE IGNORE t SET ti = NULL, c = 'wxyz'");
            assert_eq!(
                (n, info.as_str(), w),
                (
                    3,
                    "Rows matched: 3  Changed: 3  Warnings: 6",
                    vec![1048, 1265, 1048, 1265, 1048, 1265]
                )
            );
            let (n, info, w) = done(s, "UPDATE IGNORE t SET k = 3 WHERE k = 1");
            assert_eq!(
                (n, info.as_str(), w),
                (0, "Rows matched: 1  Changed: 0  Warnings: 0", vec![])
            );
            assert_eq!(err(s, "UPDATE t SET k = 3 WHERE k = 1"), 1062);
            assert_eq!(err(s, "UPDATE t SET ti = NULL"), 1048);
        });
    }

    #[test]
    fn moving_a_row_keeps_its_own_unique_entry_out_of_the_duplicate_check() {
        with_session("moved", |s| {
            run(
                s,
                "CREATE TABLE t (a INT, b INT, PRIMARY KEY (a, b), UNIQUE KEY ua (a))",
            )
            .unwrap();
            run(s, "INSERT INTO t VALUES (1, 100), (2, 7)").unwrap();
            // The primary key changes, ua's column does not: no conflict with itself.
            let (n, _, _) = done(s, "UPDATE t SET b = 5 WHERE a = 1");
            assert_eq!(n, 1);
            // A real conflict on ua is still one.
            assert_eq!(
                run(s, "UPDATE t SET a = 2 WHERE a = 1").unwrap_err().code,
                1062
            );
        });
    }
}
