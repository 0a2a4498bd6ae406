//! INSERT/REPLACE, UPDATE and DELETE: from the parser's AST to their plans
//! ([`crate::plan::dml`]).

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::compile::{Compiler, Scope};
use crate::bind::env::Env;
use crate::bind::env::FromItem;
use crate::bind::scope::{FromScope, NoScope, TableScope};
use crate::catalog::{needs_value, no_default, Table};
use crate::error::ErrorKind;
use crate::expr::Expr;
use crate::plan::dml::{DeletePlan, InsertMode, InsertPlan, UpdatePlan};
use crate::plan::logical::node::{Field, LogicalPlan, SortKey};
use crate::plan::lower::{lower_delete, lower_insert, lower_update};
use crate::types::value::Value;
use crate::SqlError;

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
    lower_insert(bind_insert(ins, env, c)?)
}

/// INSERT/REPLACE as a [`LogicalPlan::Insert`] over its source, before the optimizer's
/// passes: a Values node of the compiled rows (VALUES, or SET's one row), or INSERT … SELECT's
/// query (`bind::select::bind_insert_source`).
pub(crate) fn bind_insert(
    ins: &ast::Insert,
    env: &Env,
    c: &mut Compiler,
) -> Result<LogicalPlan, SqlError> {
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
    let (source, source_meta) = if !ins.assignments.is_empty() {
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
        (values_node(&t, &columns, vec![r])?, None)
    } else {
        let Some(src) = &ins.source else {
            return Err(SqlError::unsupported("INSERT without VALUES"));
        };
        match &*src.body {
            ast::SetExpr::Values(values) => (
                values_node(&t, &columns, compile_rows(values, &columns, vars, c)?)?,
                None,
            ),
            // INSERT ... SELECT: the rows come from a query, read whole before the first insert
            // when it reads the target (so it sees the table as it was, as in MySQL).
            _ => {
                let (p, meta) = crate::bind::select::bind_insert_source(src, env, c)?;
                if p.visible_fields().len() != columns.len() {
                    return Err(SqlError::of(
                        ErrorKind::WrongValueCountOnRow,
                        "Column count doesn't match value count at row 1",
                    ));
                }
                (p, meta)
            }
        }
    };
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
    LogicalPlan::insert(t, columns, source, source_meta, mode, on_dup)
}

/// VALUES rows compiled, one expression per named column (`DEFAULT` as an argument-less
/// COALESCE, which the executor reads as the column's default).
fn compile_rows(
    values: &ast::Values,
    columns: &[usize],
    vars: &dyn Fn(&str) -> Result<Value, SqlError>,
    c: &mut Compiler,
) -> Result<Vec<Vec<Expr>>, SqlError> {
    let mut rows = Vec::with_capacity(values.rows.len());
    for (n, row) in values.rows.iter().enumerate() {
        if row.content.len() != columns.len() {
            return Err(SqlError::of(
                ErrorKind::WrongValueCountOnRow,
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
                    Expr::column_default()
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
    Ok(rows)
}

/// The Values node of `rows` (moved in): its fields are the target columns'.
fn values_node(
    t: &Table,
    columns: &[usize],
    rows: Vec<Vec<Expr>>,
) -> Result<LogicalPlan, SqlError> {
    let fields = columns
        .iter()
        .map(|&i| {
            let cd = &t.def.columns[i];
            Field::new(None, &cd.name, cd.ty, cd.nullable)
        })
        .collect();
    LogicalPlan::values(rows, fields)
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
/// [`crate::exec::subquery::prefill`]); correlated ones are refused.
fn dml_compile(
    e: &ast::Expr,
    t: &Table,
    alias: Option<&str>,
    clause: &'static str,
    env: &Env,
    c: &mut Compiler,
) -> Result<Expr, SqlError> {
    let items = [FromItem {
        table: t,
        alias,
        offset: 0,
        merged: &[],
    }];
    let x = c.compile(
        e,
        &mut FromScope {
            items: &items,
            visible: 1,
            clause,
            vars: env.vars,
            env: Some(env),
        },
    )?;
    let mut correlated = false;
    x.visit(&mut |n| {
        if let Expr::Subquery(sub, _) = n {
            correlated |= !sub.outer_cols.is_empty();
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
    t: &Arc<Table>,
    alias: Option<&str>,
    selection: &Option<ast::Expr>,
    order_by: &[ast::OrderByExpr],
    limit: &Option<ast::Expr>,
    env: &Env,
    c: &mut Compiler,
) -> Result<LogicalPlan, SqlError> {
    let vars = env.vars;
    let filter = match selection {
        None => None,
        Some(w) => Some(dml_compile(w, t, alias, "where clause", env, c)?),
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
    source(t, alias, filter, order, limit)
}

/// The rows an UPDATE or DELETE changes, as the plan the optimizer's passes read
/// (`plan::lower::lower_update`): Limit? → Sort? → Filter (WHERE)? → Scan of the target.
fn source(
    t: &Arc<Table>,
    alias: Option<&str>,
    filter: Option<Expr>,
    order: Vec<(Expr, bool)>,
    limit: Option<Expr>,
) -> Result<LogicalPlan, SqlError> {
    let mut p = LogicalPlan::scan(t.clone(), alias, (0..t.def.columns.len()).collect())?;
    if let Some(f) = filter {
        p = LogicalPlan::filter(p, f)?;
    }
    if !order.is_empty() {
        let keys = order
            .into_iter()
            .map(|(expr, desc)| SortKey { expr, desc })
            .collect();
        p = LogicalPlan::sort(p, keys)?;
    }
    if limit.is_some() {
        p = LogicalPlan::limit(p, None, limit)?;
    }
    Ok(p)
}

pub fn compile_update(
    u: &ast::Update,
    env: &Env,
    c: &mut Compiler,
) -> Result<UpdatePlan, SqlError> {
    lower_update(bind_update(u, env, c)?)
}

/// UPDATE as a [`LogicalPlan::Update`] over its source, before the optimizer's passes (EXPLAIN
/// FORMAT=TREE prints it after them).
pub(crate) fn bind_update(
    u: &ast::Update,
    env: &Env,
    c: &mut Compiler,
) -> Result<LogicalPlan, SqlError> {
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
                    Expr::Func(crate::expr::Func::new(crate::expr::Now), Vec::new())
                } else {
                    Expr::Const(cd.default.clone().unwrap_or(Value::Null))
                }
            }
            _ => dml_compile(&a.value, &t, alias.as_deref(), "field list", env, c)?,
        };
        assignments.push((col, x));
    }
    let source = compile_where_order_limit(
        &t,
        alias.as_deref(),
        &u.selection,
        &u.order_by,
        &u.limit,
        env,
        c,
    )?;
    // `UPDATE IGNORE` reaches the parser as `UPDATE OR IGNORE` (see `crate::front::parse`).
    let ignore = matches!(u.or, Some(ast::SqliteOnConflict::Ignore));
    LogicalPlan::update(t, source, assignments, ignore)
}

pub fn compile_delete(
    d: &ast::Delete,
    env: &Env,
    c: &mut Compiler,
) -> Result<DeletePlan, SqlError> {
    lower_delete(bind_delete(d, env, c)?)
}

/// DELETE as a [`LogicalPlan::Delete`] over its source, before the optimizer's passes.
pub(crate) fn bind_delete(
    d: &ast::Delete,
    env: &Env,
    c: &mut Compiler,
) -> Result<LogicalPlan, SqlError> {
    let tables = match &d.from {
        ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => v,
    };
    if tables.len() != 1 || !d.tables.is_empty() || d.using.is_some() {
        return Err(SqlError::unsupported("multi-table DELETE"));
    }
    let (name, alias) = single_table(&tables[0], "DELETE")?;
    let t = env.table(&name)?;
    let source = compile_where_order_limit(
        &t,
        alias.as_deref(),
        &d.selection,
        &d.order_by,
        &d.limit,
        env,
        c,
    )?;
    LogicalPlan::delete(t, source)
}
