//! From a query block's [`LogicalPlan`] to the [`SelectPlan`] that runs it (issue 20, D1b,
//! D1c, D2): [`lower`] runs the optimizer's passes (`plan::rules::pipeline::optimize`),
//! which decide the WHERE split over joined tables, the columns each table reads, access
//! paths, join methods and whether the scan order already is the ORDER BY's, then
//! translates the plan as they left it (block.rs; the FROM side in from.rs). DML plans lower
//! in dml.rs (D3). Any shape other than the binder's is a bug: an internal error.

use std::sync::Arc;

use crate::error::SqlError;
use crate::plan::logical::node::LogicalPlan;
use crate::plan::rules::pipeline::optimize;
use crate::plan::select::SelectPlan;
use crate::types::result::ColumnMeta;

mod block;
mod dml;
mod from;

pub(crate) use self::dml::{lower_delete, lower_insert, lower_update};

use self::block::lower_block;

/// `columns`: the result's metadata (the wire's column definitions, which the plan's fields
/// do not carry); `has_sub`: some expression of the block runs a subquery.
pub(crate) fn lower(
    plan: LogicalPlan,
    columns: Arc<Vec<ColumnMeta>>,
    has_sub: bool,
) -> Result<SelectPlan, SqlError> {
    lower_block(optimize(plan)?, columns, has_sub)
}

/// As [`lower`], for a plan `optimize` has already run over (so that whoever optimized it,
/// EXPLAIN FORMAT=TREE, prints what runs without optimizing it twice).
pub(crate) fn lower_optimized(
    plan: LogicalPlan,
    columns: Arc<Vec<ColumnMeta>>,
    has_sub: bool,
) -> Result<SelectPlan, SqlError> {
    lower_block(plan, columns, has_sub)
}
