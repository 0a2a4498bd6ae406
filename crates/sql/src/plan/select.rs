//! The plan of a SELECT (interim, until the LogicalPlan of Phase D): aggregates, set
//! operations, the steps of a join (a step may read a derived table, whose plan is a
//! `SelectPlan`). Executed by `exec` (`impl SelectPlan`).

use std::sync::Arc;

use crate::catalog::Table;
use crate::expr::Expr;
use crate::plan::access::Access;
use crate::plan::join::KeyClass;
use crate::types::result::ColumnMeta;
use crate::types::sqltype::SqlType;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFn {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    /// A column outside GROUP BY: any value of the group (MySQL without ONLY_FULL_GROUP_BY).
    Any,
}

#[derive(Debug, Clone)]
pub struct AggSpec {
    pub func: AggFn,
    pub arg: Option<Expr>,
    pub distinct: bool,
    pub ty: SqlType,
}

#[derive(Debug, Clone)]
pub struct SelectPlan {
    pub table: Option<Arc<Table>>,
    pub access: Access,
    pub filter: Option<Expr>,
    pub wanted: Vec<bool>,
    /// Aggregation: GROUP BY expressions and aggregates over the source row.
    pub group_by: Option<(Vec<Expr>, Vec<AggSpec>)>,
    pub having: Option<Expr>,
    /// Output expressions: visible columns, then hidden ORDER BY keys.
    pub outputs: Vec<Expr>,
    pub visible: usize,
    pub order: Vec<bool>,
    pub distinct: bool,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    /// The scan already yields rows in ORDER BY order (forward or reversed).
    pub ordered_scan: Option<bool>,
    pub columns: Arc<Vec<ColumnMeta>>,
    pub for_update: bool,
    /// The tables after the first (see [`JoinStep`]); `filter` then holds only the WHERE
    /// terms over the first table.
    pub joins: Vec<JoinStep>,
    /// UNION / INTERSECT / EXCEPT: the operands, each with the operation that combines it
    /// with everything before it (the first one's is meaningless). Their rows are the source
    /// rows of this plan (which then has no table).
    pub union: Vec<(SelectPlan, SetOp)>,
    /// The first table is a derived table: the query whose rows it holds.
    pub derived: Option<Box<SelectPlan>>,
    /// Some expression of this plan (not of a UNION operand) runs a subquery.
    pub has_sub: bool,
    /// The types of the visible outputs (what a scalar subquery's value is typed as).
    pub types: Vec<SqlType>,
}

/// How a set operation combines an operand with the rows before it. `distinct`: the result
/// has no duplicates (UNION, INTERSECT, EXCEPT); otherwise multisets (the ALL forms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Union { distinct: bool },
    Intersect { distinct: bool },
    Except { distinct: bool },
}

/// How a join step finds the rows matching an outer row.
#[derive(Debug, Clone)]
pub enum JoinMethod {
    /// Index nested loop: key bounds computed from the outer row.
    Lookup(Access),
    /// The table read once (rows passing `build_filter`, over the table's own row) into a hash
    /// table on `build_keys` (over the table's row); outer rows probe with `probe_keys` (over
    /// the joined row).
    Hash {
        /// How the table is read for the build: a full scan, or constant key bounds.
        build_access: Access,
        build_filter: Option<Expr>,
        build_keys: Vec<Expr>,
        probe_keys: Vec<Expr>,
        classes: Vec<KeyClass>,
    },
    /// The table read once (rows passing `build_filter`); every row tried for every outer row.
    Loop {
        build_access: Access,
        build_filter: Option<Expr>,
    },
}

/// One table after the first of a FROM clause.
#[derive(Debug, Clone)]
pub struct JoinStep {
    pub table: Arc<Table>,
    /// A derived table: the query whose rows it holds (read once, like an unindexed table).
    pub derived: Option<Box<SelectPlan>>,
    /// Where the table's columns start in the joined row.
    pub offset: usize,
    /// LEFT JOIN: outer rows without a match continue with NULLs for this table.
    pub left: bool,
    /// The match condition over the joined row up to this table: the ON clause, and for an
    /// inner join the WHERE terms whose last table is this one. `None`: every row matches.
    pub on: Option<Expr>,
    /// WHERE terms whose last table is this one, checked after NULL extension (LEFT joins).
    pub after: Option<Expr>,
    /// Columns of this table the statement reads.
    pub wanted: Vec<bool>,
    pub method: JoinMethod,
}

/// A compiled subquery: an entry of its statement's table (`PlanRoot::subqueries`), which
/// `Expr::Subquery` refers to by [`SubqueryId`](crate::expr::SubqueryId). Nested subqueries
/// have entries of their own in the same table; their plans refer to them by id.
#[derive(Debug, Clone)]
pub struct Subquery {
    pub plan: SelectPlan,
}
