//! D1b's shadow check (docs/design/issue20-sql-engine.md §3, Phase D): in debug builds and
//! tests, every query block that takes the LogicalPlan path (single.rs, then `plan::lower`)
//! is compiled again the old way (`compile_flat`), from a copy of the compiler taken before,
//! and the two `SelectPlan`s, and the compilers after them (subquery tables, placeholders),
//! must print the same. A difference is a lowering bug: it panics with both, before any row is
//! read. Release builds do neither.
//!
//! The old path's own subqueries take the new path without a check of their own (`running`):
//! each nesting level is checked once where it is compiled for real, and a chain of nested
//! subqueries costs quadratic time, not exponential.

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

/// Runs `old` (the old path on a copy of the compiler) and panics unless it gives what the
/// new path gave: `new` and `c` after it.
pub(crate) fn check(
    new: &Result<SelectPlan, SqlError>,
    c: &Compiler,
    old: impl FnOnce() -> (Result<SelectPlan, SqlError>, Compiler),
) {
    RUNNING.with(|r| r.set(true));
    let guard = Running;
    let (old_plan, old_c) = old();
    drop(guard);
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
