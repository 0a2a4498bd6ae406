//! The FROM clause: tables, derived tables and common table expressions, and their joins.

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::compile::Compiler;
use crate::bind::env::{Env, FromItem};
use crate::catalog::Table;
use crate::error::ErrorKind;
use crate::plan::logical::node::{BlockMeta, LogicalPlan};
use crate::plan::select::SelectPlan;
use crate::types::result::ColumnMeta;
use crate::types::sqltype::SqlType;
use crate::SqlError;

/// A table of the FROM clause, with how it joins the ones before it.
pub(super) struct FromTable {
    pub(super) table: Arc<Table>,
    pub(super) alias: Option<String>,
    pub(super) left: bool,
    pub(super) on: Option<ast::Expr>,
    /// A derived table (`(SELECT ...) AS x`): the query whose rows it holds; `table` then
    /// only describes its columns.
    pub(super) derived: Option<Query>,
    /// Columns joined `USING` to an earlier table's.
    pub(super) merged: Vec<String>,
    /// Position in the FROM clause as written (`SELECT *` order).
    pub(super) declared: usize,
}

/// A derived table's or CTE's query, bound.
pub(super) enum Query {
    /// A set operation or a parenthesized query, lowered on its own (held as a Compiled
    /// node under the Derived).
    Lowered(Box<SelectPlan>),
    /// A block bound to a LogicalPlan, with what lowering needs beside it.
    New(LogicalPlan, BlockMeta),
}

impl Query {
    /// The query's result columns: how many, their metadata and their types.
    fn columns(&self) -> (usize, &[ColumnMeta], Vec<SqlType>) {
        let (visible, metas, types) = match self {
            Query::Lowered(p) => (p.visible, &p.columns, p.types.clone()),
            Query::New(p, m) => {
                let fields = p.visible_fields();
                (
                    fields.len(),
                    &m.columns,
                    fields.iter().map(|f| f.ty).collect(),
                )
            }
        };
        (visible, &metas[..visible.min(metas.len())], types)
    }
}

/// How a FROM clause's derived tables and CTE uses are bound: `(query, its env, compiler)`.
pub(super) type BindQuery<'a> =
    &'a dyn Fn(&ast::Query, &Env, &mut Compiler) -> Result<Query, SqlError>;

/// The innermost common table expression named `name` (a one-part name), if any.
fn cte_index(env: &Env, name: &ast::ObjectName) -> Option<usize> {
    let n = name.0.first()?.as_ident()?.value.as_str();
    env.ctes.iter().rposition(|c| c.alias.name.value == n)
}

/// The table a derived table's rows are read as: its columns are the query's result columns.
/// It has no trees (`primary` is a placeholder handle that is never used).
fn derived_table(
    p: &Query,
    name: &str,
    renames: &[String],
    env: &Env,
) -> Result<Arc<Table>, SqlError> {
    use crate::catalog::{ColumnDef, TableDef, TableOptions};
    let (visible, metas, types) = p.columns();
    if !renames.is_empty() && renames.len() != visible {
        return Err(SqlError::of(
            ErrorKind::WithColWrongList,
            "WITH column list and SELECT field list have different column counts",
        ));
    }
    let mut columns: Vec<ColumnDef> = Vec::with_capacity(visible);
    for (i, m) in metas.iter().enumerate() {
        let col = renames.get(i).unwrap_or(&m.name);
        if columns.iter().any(|c| c.name.eq_ignore_ascii_case(col)) {
            return Err(SqlError::of(
                ErrorKind::DupFieldname,
                format!("Duplicate column name '{col}'"),
            ));
        }
        columns.push(ColumnDef {
            name: col.clone(),
            ty: types.get(i).copied().unwrap_or(SqlType::Varchar {
                len: 255,
                binary: false,
            }),
            nullable: true,
            default: None,
            default_now: false,
            auto_increment: false,
            display_width: None,
        });
    }
    let placeholder = (env.lookup)(crate::catalog::system::DB, "TABLES")?
        .primary
        .clone();
    let types = columns.iter().map(|c| c.ty).collect();
    Ok(Arc::new(Table {
        def: TableDef {
            id: 0,
            db: String::new(),
            name: name.to_string(),
            columns,
            pk: Vec::new(),
            indexes: Vec::new(),
            format: zipdb_engine::TableFormat::Codec(zipdb_engine::Codec::None),
            options: TableOptions::default(),
            primary_tree: String::new(),
        },
        types,
        primary: placeholder,
        indexes: Vec::new(),
        next_id: std::sync::atomic::AtomicU64::new(0),
        auto_inc: None,
        virt: None,
    }))
}

/// The FROM clause's tables in order (none for no FROM or `FROM DUAL`). Comma-separated
/// tables are inner joins without ON.
pub(super) fn from_tables(
    sel: &ast::Select,
    env: &Env,
    c: &mut Compiler,
    bind: BindQuery,
) -> Result<Vec<FromTable>, SqlError> {
    // Binding and planning cost grows with the square of the tables in a block: without
    // MariaDB's limit one packet of `FROM t a1, t a2, ...` keeps a thread busy for minutes.
    let named: usize = sel.from.iter().map(|f| 1 + f.joins.len()).sum();
    if named > JOIN_TABLES_MAX {
        return Err(too_many_tables());
    }
    let mut out: Vec<FromTable> = Vec::new();
    let mut add = |rel: &ast::TableFactor,
                   left: bool,
                   on: Option<ast::Expr>,
                   out: &mut Vec<FromTable>|
     -> Result<(), SqlError> {
        let unique = |out: &[FromTable], shown: &str| -> Result<(), SqlError> {
            if out.iter().any(|f| {
                f.alias
                    .as_deref()
                    .unwrap_or(&f.table.def.name)
                    .eq_ignore_ascii_case(shown)
            }) {
                return Err(SqlError::of(
                    ErrorKind::NonuniqTable,
                    format!("Not unique table/alias: '{shown}'"),
                ));
            }
            Ok(())
        };
        match rel {
            ast::TableFactor::Derived {
                lateral: false,
                subquery,
                alias,
                ..
            } => {
                // MariaDB's grammar requires the alias: a missing one is a syntax error there
                // (MySQL says 1248).
                let Some(alias) = alias.as_ref().map(|a| a.name.value.clone()) else {
                    return Err(SqlError::syntax("", 1));
                };
                unique(out, &alias)?;
                // A derived table does not see the tables beside it (no LATERAL).
                let inner = Env {
                    db: env.db,
                    lookup: env.lookup,
                    vars: env.vars,
                    outer: None,
                    sql: env.sql,
                    ctes: env.ctes,
                    compile_query: env.compile_query,
                };
                let p = bind(subquery, &inner, c)?;
                let table = derived_table(&p, &alias, &[], env)?;
                out.push(FromTable {
                    table,
                    alias: Some(alias),
                    left,
                    on,
                    derived: Some(p),
                    merged: Vec::new(),
                    declared: out.len(),
                });
                Ok(())
            }
            ast::TableFactor::Table { name, alias, .. }
                if name.0.len() == 1 && cte_index(env, name).is_some() =>
            {
                let i = cte_index(env, name).unwrap_or_default();
                let cte = env.ctes[i];
                let shown = alias
                    .as_ref()
                    .map_or(cte.alias.name.value.clone(), |a| a.name.value.clone());
                unique(out, &shown)?;
                // The CTE's query sees only the CTEs defined before it.
                let inner = Env {
                    outer: None,
                    ctes: &env.ctes[..i],
                    ..*env
                };
                let p = bind(&cte.query, &inner, c)?;
                let renames: Vec<String> = cte
                    .alias
                    .columns
                    .iter()
                    .map(|c| c.name.value.clone())
                    .collect();
                let table = derived_table(&p, &shown, &renames, env)?;
                out.push(FromTable {
                    table,
                    alias: Some(shown),
                    left,
                    on,
                    derived: Some(p),
                    merged: Vec::new(),
                    declared: out.len(),
                });
                Ok(())
            }
            ast::TableFactor::Table { name, alias, .. } => {
                if name.to_string().eq_ignore_ascii_case("dual") && out.is_empty() {
                    return Ok(());
                }
                let table = env.table_for_select(name)?;
                let alias = alias.as_ref().map(|a| a.name.value.clone());
                let shown = alias.clone().unwrap_or_else(|| table.def.name.clone());
                unique(out, &shown)?;
                out.push(FromTable {
                    table,
                    alias,
                    left,
                    on,
                    derived: None,
                    merged: Vec::new(),
                    declared: out.len(),
                });
                Ok(())
            }
            ast::TableFactor::Derived { .. } => Err(SqlError::unsupported("LATERAL")),
            other => Err(SqlError::unsupported(&format!(
                "FROM {}",
                other.to_string().chars().take(30).collect::<String>()
            ))),
        }
    };
    // Refuse unsupported joins before looking any table up, so that the error names the
    // construct rather than a missing table.
    for j in sel.from.iter().flat_map(|t| &t.joins) {
        join_kind(&j.join_operator)?;
    }
    for twj in &sel.from {
        add(&twj.relation, false, None, &mut out)?;
        for j in &twj.joins {
            let (kind, on, using) = join_kind(&j.join_operator)?;
            if out.is_empty() {
                return Err(SqlError::unsupported("a join with DUAL"));
            }
            let right = kind == JoinKind::Right;
            if right && out.len() > 1 {
                return Err(SqlError::unsupported(
                    "RIGHT JOIN after other joins (write it as a LEFT JOIN)",
                ));
            }
            add(&j.relation, kind == JoinKind::Left, on, &mut out)?;
            let new = out.len() - 1;
            if let Some(cols) = using {
                // USING (c, ...): ON earlier.c = new.c for each, with the earlier table the
                // first one that has the column.
                let name_of = |f: &FromTable| f.alias.clone().unwrap_or(f.table.def.name.clone());
                let mut terms = Vec::new();
                for c in &cols {
                    let earlier = out[..new].iter().find(|f| f.table.column(c).is_some());
                    let (Some(e), true) = (earlier, out[new].table.column(c).is_some()) else {
                        return Err(SqlError::unknown_column(c, "from clause"));
                    };
                    let id = |t: String| {
                        ast::Expr::CompoundIdentifier(vec![ast::Ident::new(t), ast::Ident::new(c)])
                    };
                    terms.push(ast::Expr::BinaryOp {
                        left: Box::new(id(name_of(e))),
                        op: ast::BinaryOperator::Eq,
                        right: Box::new(id(name_of(&out[new]))),
                    });
                }
                out[new].on = terms.into_iter().reduce(|a, b| ast::Expr::BinaryOp {
                    left: Box::new(a),
                    op: ast::BinaryOperator::And,
                    right: Box::new(b),
                });
                out[new].merged = cols;
            }
            if right {
                // a RIGHT JOIN b ON c runs as b LEFT JOIN a ON c; SELECT * keeps a's columns
                // first (`declared`), and USING columns are b's.
                out.swap(0, 1);
                let (first, second) = out.split_at_mut(1);
                let (b, a) = (&mut first[0], &mut second[0]);
                a.on = b.on.take();
                a.left = true;
                b.left = false;
                a.merged = std::mem::take(&mut b.merged);
                if !a.merged.is_empty() {
                    // With USING, MariaDB lists the right table's columns first.
                    std::mem::swap(&mut a.declared, &mut b.declared);
                }
            }
        }
    }
    // Whatever `add` expanded (parenthesized joins, when they are supported) counts too.
    if out.len() > JOIN_TABLES_MAX {
        return Err(too_many_tables());
    }
    Ok(out)
}

/// MariaDB's `MAX_TABLES` for one query block's join (the bits of its table map, less the
/// ones it keeps for itself).
pub(crate) const JOIN_TABLES_MAX: usize = 61;

fn too_many_tables() -> SqlError {
    SqlError::of(
        ErrorKind::TooManyTables,
        format!("Too many tables; zipdb can only use {JOIN_TABLES_MAX} tables in a join"),
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JoinKind {
    Inner,
    Left,
    Right,
}

/// A join's kind, its ON condition and its USING columns; unsupported kinds are refused.
fn join_kind(
    op: &ast::JoinOperator,
) -> Result<(JoinKind, Option<ast::Expr>, Option<Vec<String>>), SqlError> {
    use ast::JoinOperator as J;
    let (kind, c) = match op {
        J::Join(c) | J::Inner(c) | J::CrossJoin(c) | J::StraightJoin(c) => (JoinKind::Inner, c),
        J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, c),
        J::Right(c) | J::RightOuter(c) => (JoinKind::Right, c),
        other => {
            return Err(SqlError::unsupported(&format!(
                "join {}",
                format!("{other:?}").chars().take(20).collect::<String>()
            )))
        }
    };
    Ok(match c {
        ast::JoinConstraint::On(e) => (kind, Some(e.clone()), None),
        ast::JoinConstraint::None => (kind, None, None),
        ast::JoinConstraint::Using(cols) => {
            let names = cols
                .iter()
                .map(|n| {
                    n.0.last()
                        .and_then(|p| p.as_ident())
                        .map(|i| i.value.clone())
                        .unwrap_or_default()
                })
                .collect();
            (kind, None, Some(names))
        }
        ast::JoinConstraint::Natural => return Err(SqlError::unsupported("NATURAL JOIN")),
    })
}

/// `SELECT *` (or `t.*`) columns of one table.
pub(super) fn expand_star(it: &FromItem, outs: &mut Vec<(String, ast::Expr, Option<usize>)>) {
    for (i, col) in it.table.def.columns.iter().enumerate() {
        if outs.iter().any(|o| o.2 == Some(it.offset + i))
            || it.merged.iter().any(|m| m.eq_ignore_ascii_case(&col.name))
        {
            continue;
        }
        outs.push((
            col.name.clone(),
            ast::Expr::Identifier(ast::Ident::new(col.name.clone())),
            Some(it.offset + i),
        ));
    }
}
