//! What compiling a statement needs from the session ([`Env`]), the tables of a FROM clause
//! ([`FromItem`]) as a subquery sees its enclosing query's ([`OuterRef`]), and `[db.]name`
//! resolution.

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::compile::Compiler;
use crate::bind::labels::ItemLabels;
use crate::catalog::Table;
use crate::error::ErrorKind;
use crate::plan::select::SelectPlan;
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
    pub sql: Option<&'a dyn ItemLabels>,
    /// Common table expressions in scope (`WITH name AS (...)`), innermost last.
    pub ctes: &'a [&'a ast::Cte],
    /// Compiles a subquery or derived table (`bind::select::compile_select`, handed down by
    /// the session): the scopes call it, and bind/select/mod.rs imports the scopes; so do
    /// bind/select/from.rs (derived tables, CTEs) and union.rs (set operands), which
    /// select/mod.rs imports.
    pub compile_query: CompileQuery<'a>,
}

/// How a scope compiles the query of a subquery, under the environment it builds for it.
pub type CompileQuery<'a> =
    &'a dyn Fn(&ast::Query, &Env, &mut Compiler) -> Result<SelectPlan, SqlError>;

/// The enclosing query's FROM tables, seen from a subquery: a column found only there
/// compiles to [`Expr::Outer`] and is recorded in `used`.
pub struct OuterRef<'a> {
    pub items: &'a [FromItem<'a>],
    pub visible: usize,
    pub used: &'a std::cell::RefCell<Vec<usize>>,
}

impl Env<'_> {
    /// `[db.]table` to an open table, for a statement that may write it.
    pub fn table(&self, name: &ast::ObjectName) -> Result<Arc<Table>, SqlError> {
        let (db, t) = split_name(name, self.db)?;
        if crate::catalog::system::is_db(&db) {
            return Err(SqlError::of(
                ErrorKind::DbAccessDenied,
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

/// `[db.]name` of a table DDL may change: never one in `information_schema`.
pub fn writable_name(
    name: &ast::ObjectName,
    db: Option<&str>,
) -> Result<(String, String), SqlError> {
    let (d, t) = split_name(name, db)?;
    if crate::catalog::system::is_db(&d) {
        return Err(SqlError::of(
            ErrorKind::DbAccessDenied,
            format!("Access denied to database '{}'", crate::catalog::system::DB),
        ));
    }
    Ok((d, t))
}

/// One table of a FROM clause: its columns occupy `offset..offset + columns` of the joined row.
#[derive(Clone, Copy)]
pub struct FromItem<'a> {
    pub table: &'a Table,
    pub alias: Option<&'a str>,
    pub offset: usize,
    /// Columns joined `USING` to an earlier table's: an unqualified name means the earlier
    /// one's (MySQL's coalesced column), so it is not ambiguous.
    pub merged: &'a [String],
}

impl FromItem<'_> {
    /// Whether `q` names this table: its alias when it has one (MySQL then refuses the table's
    /// own name), else its name.
    pub fn named(&self, q: &str) -> bool {
        // Table names and aliases are case-sensitive, as in MariaDB with
        // lower_case_table_names=0 (its default on Linux).
        match self.alias {
            Some(a) => a == q,
            None => self.table.def.name == q,
        }
    }
}
