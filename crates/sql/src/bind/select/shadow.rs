//! The shadow check of D1b–D1d (docs/design/issue20-sql-engine.md §3, Phase D): in debug
//! builds and tests, every query block that takes the LogicalPlan path (block.rs, then
//! `plan::lower`) is compiled again the old way (`compile_flat`), from a copy of the compiler
//! taken before, and the two `SelectPlan`s, and the compilers after them (subquery tables,
//! placeholders), must print the same. A difference is a binding or lowering bug: it panics
//! with both, before any row is read. Release builds do neither.
//!
//! While the old path runs (`running`), the blocks it compiles (derived tables, CTE uses,
//! subqueries) take the old path too, without a check of their own: the comparison is old
//! code against new all the way down, each nesting level is checked once where it is
//! compiled for real, and a chain of nested subqueries costs quadratic time, not exponential.

use std::cell::Cell;

use crate::bind::compile::Compiler;
use crate::plan::select::SelectPlan;
use crate::SqlError;

thread_local! {
    static RUNNING: Cell<bool> = const { Cell::new(false) };
}

/// The old path is being run for a check on this thread.
pub(crate) fn running() -> bool {
    RUNNING.with(Cell::get)
}

/// Resets the flag when the old path returns or unwinds.
struct Running;

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.with(|r| r.set(false));
    }
}

/// Runs `f` as the old path: the blocks it compiles (derived tables', subqueries') take the
/// old path too, without checks of their own.
pub(crate) fn as_old<T>(f: impl FnOnce() -> T) -> T {
    RUNNING.with(|r| r.set(true));
    let _guard = Running;
    f()
}

/// Runs `old` (the old path on a copy of the compiler) and panics unless it gives what the
/// new path gave: `new` and `c` after it.
pub(crate) fn check(
    new: &Result<SelectPlan, SqlError>,
    c: &Compiler,
    old: impl FnOnce() -> (Result<SelectPlan, SqlError>, Compiler),
) {
    let (old_plan, old_c) = as_old(old);
    if let Err(diff) = compare(
        &format!("{new:?}\n{c:?}"),
        &format!("{old_plan:?}\n{old_c:?}"),
    ) {
        panic!("{diff}");
    }
}

/// `Err` with both texts unless they are equal.
pub(crate) fn compare(new: &str, old: &str) -> Result<(), String> {
    if new == old {
        return Ok(());
    }
    let at = new
        .bytes()
        .zip(old.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(new.len().min(old.len()));
    Err(format!(
        "shadow check: the LogicalPlan path and compile_select differ at byte {at}\n\
         new (bind + lower):\n{new}\nold (compile_select):\n{old}"
    ))
}
