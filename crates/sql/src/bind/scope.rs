//! Scopes that resolve column names while compiling: one table's row ([`TableScope`]), the
//! joined row of a FROM clause ([`FromScope`]), no row ([`NoScope`]).

use sqlparser::ast;

use crate::bind::compile::{Compiler, Scope};
use crate::bind::env::{Env, FromItem, OuterRef};
use crate::catalog::Table;
use crate::error::ErrorKind;
use crate::expr::{Expr, SubqueryRef};
use crate::types::result::{col_flags, describe, ColumnMeta};
use crate::types::sqltype::SqlType;
use crate::types::value::Value;
use crate::SqlError;

/// Resolves column names to positions in a table's row.
pub struct TableScope<'a> {
    pub table: &'a Table,
    pub alias: Option<&'a str>,
    pub clause: &'static str,
    pub vars: &'a dyn Fn(&str) -> Result<Value, SqlError>,
}

impl Scope for TableScope<'_> {
    fn column(&mut self, q: Option<&str>, name: &str) -> Result<Expr, SqlError> {
        if let Some(q) = q {
            let ok = q == self.table.def.name || Some(q) == self.alias;
            if !ok {
                return Err(SqlError::unknown_column(
                    &format!("{q}.{name}"),
                    self.clause,
                ));
            }
        }
        match self.table.column(name) {
            Some(i) => Ok(Expr::Col(i)),
            None => Err(SqlError::unknown_column(name, self.clause)),
        }
    }
    fn sysvar(&mut self, name: &str) -> Result<Value, SqlError> {
        (self.vars)(name)
    }
    fn col_type(&self, i: usize) -> Option<SqlType> {
        self.table.types.get(i).copied()
    }
}

/// Resolves column names over the tables of a FROM clause (the first `visible` of them: an
/// ON clause sees only the tables joined so far) to positions in the joined row; names found
/// only in the enclosing query's tables (in a subquery) become outer references.
pub struct FromScope<'a> {
    pub items: &'a [FromItem<'a>],
    pub visible: usize,
    pub clause: &'static str,
    pub vars: &'a dyn Fn(&str) -> Result<Value, SqlError>,
    /// For compiling subqueries (`None`: subqueries are refused).
    pub env: Option<&'a Env<'a>>,
}

/// Column `q.name` or `name` among `items`: `Ok(None)` when no table has it.
fn resolve(
    items: &[FromItem],
    q: Option<&str>,
    name: &str,
    clause: &str,
) -> Result<Option<usize>, SqlError> {
    if let Some(q) = q {
        return Ok(items
            .iter()
            .find(|it| it.named(q))
            .and_then(|it| it.table.column(name).map(|i| it.offset + i)));
    }
    let mut found = None;
    for it in items {
        if it.merged.iter().any(|m| m.eq_ignore_ascii_case(name)) {
            continue;
        }
        if let Some(i) = it.table.column(name) {
            if found.is_some() {
                return Err(SqlError::of(
                    ErrorKind::NonUniqError,
                    format!("Column '{name}' in {clause} is ambiguous"),
                ));
            }
            found = Some(it.offset + i);
        }
    }
    Ok(found)
}

impl Scope for FromScope<'_> {
    fn column(&mut self, q: Option<&str>, name: &str) -> Result<Expr, SqlError> {
        let items = &self.items[..self.visible.min(self.items.len())];
        if let Some(i) = resolve(items, q, name, self.clause)? {
            return Ok(Expr::Col(i));
        }
        if let Some(o) = self.env.and_then(|e| e.outer) {
            let outer = &o.items[..o.visible.min(o.items.len())];
            if let Some(i) = resolve(outer, q, name, self.clause)? {
                o.used.borrow_mut().push(i);
                return Ok(Expr::Outer(i));
            }
        }
        let shown = match q {
            Some(q) => format!("{q}.{name}"),
            None => name.to_string(),
        };
        Err(SqlError::unknown_column(&shown, self.clause))
    }
    fn sysvar(&mut self, name: &str) -> Result<Value, SqlError> {
        (self.vars)(name)
    }
    fn col_type(&self, i: usize) -> Option<SqlType> {
        joined_type(self.items, i)
    }
    fn subquery(&mut self, c: &mut Compiler, q: &ast::Query) -> Result<SubqueryRef, SqlError> {
        let Some(env) = self.env else {
            return Err(SqlError::unsupported("subqueries here"));
        };
        let used = std::cell::RefCell::new(Vec::new());
        let outer = OuterRef {
            items: self.items,
            visible: self.visible,
            used: &used,
        };
        let inner = Env {
            db: env.db,
            lookup: env.lookup,
            vars: env.vars,
            outer: Some(&outer),
            sql: env.sql,
            ctes: env.ctes,
            compile_query: env.compile_query,
        };
        let plan = (env.compile_query)(q, &inner, c)?;
        let mut outer_cols = used.into_inner();
        outer_cols.sort_unstable();
        outer_cols.dedup();
        Ok(c.add_subquery(plan, outer_cols))
    }
}

/// The types of the joined row.
pub fn joined_types(items: &[FromItem]) -> Vec<SqlType> {
    items
        .iter()
        .flat_map(|it| it.table.types.iter().copied())
        .collect()
}

/// The type of joined-row column `i`.
pub fn joined_type(items: &[FromItem], i: usize) -> Option<SqlType> {
    let it = items
        .iter()
        .rev()
        .find(|it| it.offset <= i && i < it.offset + it.table.types.len())?;
    it.table.types.get(i - it.offset).copied()
}

/// Metadata of joined-row column `i` in a result.
pub fn joined_column_meta(items: &[FromItem], i: usize, label: &str) -> Option<ColumnMeta> {
    let it = items
        .iter()
        .rev()
        .find(|it| it.offset <= i && i < it.offset + it.table.types.len())?;
    let mut m = table_column_meta(it.table, i - it.offset, label);
    if let Some(a) = it.alias {
        m.table = a.to_string();
    }
    Some(m)
}

/// A scope without columns (SELECT without FROM).
pub struct NoScope<'a> {
    pub vars: &'a dyn Fn(&str) -> Result<Value, SqlError>,
    pub clause: &'static str,
}

impl Scope for NoScope<'_> {
    fn column(&mut self, q: Option<&str>, name: &str) -> Result<Expr, SqlError> {
        let n = match q {
            Some(q) => format!("{q}.{name}"),
            None => name.to_string(),
        };
        Err(SqlError::unknown_column(&n, self.clause))
    }
    fn sysvar(&mut self, name: &str) -> Result<Value, SqlError> {
        (self.vars)(name)
    }
}

/// Metadata of a table column in a result.
pub fn table_column_meta(t: &Table, i: usize, label: &str) -> ColumnMeta {
    let c = &t.def.columns[i];
    let (wire_type, mut length, decimals, charset, mut flags) = describe(c.ty);
    if let SqlType::Int { bytes, unsigned } = c.ty {
        // An integer column's length is its display width (Connector/J reads `tinyint(1)`
        // as a boolean by it).
        length = u32::from(
            c.display_width
                .unwrap_or_else(|| crate::types::sqltype::int_display_width(bytes, unsigned)),
        );
    }
    if !c.nullable {
        flags |= col_flags::NOT_NULL;
    }
    if t.def.pk.contains(&i) {
        flags |= col_flags::PRI_KEY;
    }
    if c.auto_increment {
        flags |= col_flags::AUTO_INCREMENT;
    }
    for idx in &t.def.indexes {
        if idx.columns.first() == Some(&i) {
            flags |= if idx.unique && idx.columns.len() == 1 {
                col_flags::UNIQUE_KEY
            } else {
                col_flags::MULTIPLE_KEY
            };
        }
    }
    ColumnMeta {
        schema: t.def.db.clone(),
        table: t.def.name.clone(),
        org_table: t.def.name.clone(),
        name: label.to_string(),
        org_name: c.name.clone(),
        charset,
        length,
        wire_type,
        flags,
        decimals,
    }
}
