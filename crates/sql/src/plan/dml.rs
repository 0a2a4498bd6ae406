//! The plans of DML statements (and the enum of all compiled statements).

use std::sync::Arc;

use crate::catalog::Table;
use crate::expr::Expr;
use crate::plan::access::Access;
use crate::plan::select::{SelectPlan, Subquery};

/// A compiled statement and the subqueries its expressions refer to by id.
#[derive(Debug, Clone)]
pub struct PlanRoot {
    pub plan: Plan,
    /// Indexed by [`SubqueryId`](crate::expr::SubqueryId), nested subqueries included.
    pub subqueries: Vec<Subquery>,
}

/// A compiled DML statement or query.
#[derive(Debug, Clone)]
pub enum Plan {
    Select(Box<SelectPlan>),
    Insert(InsertPlan),
    Update(UpdatePlan),
    Delete(DeletePlan),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsertMode {
    Insert,
    Ignore,
    Replace,
}

#[derive(Debug, Clone)]
pub struct InsertPlan {
    pub table: Arc<Table>,
    pub columns: Vec<usize>,
    pub rows: Vec<Vec<Expr>>,
    /// INSERT ... SELECT: the query whose rows are inserted (then `rows` is empty).
    pub select: Option<Box<SelectPlan>>,
    pub mode: InsertMode,
    /// ON DUPLICATE KEY UPDATE: (column, expression over `[old row..., new row...]`).
    pub on_dup: Vec<(usize, Expr)>,
}

#[derive(Debug, Clone)]
pub struct UpdatePlan {
    pub table: Arc<Table>,
    pub access: Access,
    pub filter: Option<Expr>,
    pub assignments: Vec<(usize, Expr)>,
    pub order: Vec<(Expr, bool)>,
    pub limit: Option<Expr>,
    /// UPDATE IGNORE: rows that would collide stay as they are, values that do not fit are
    /// clipped with a warning.
    pub ignore: bool,
}

#[derive(Debug, Clone)]
pub struct DeletePlan {
    pub table: Arc<Table>,
    pub access: Access,
    pub filter: Option<Expr>,
    pub order: Vec<(Expr, bool)>,
    pub limit: Option<Expr>,
}
