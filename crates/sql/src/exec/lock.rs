//! Locking reads (`SELECT … FOR UPDATE`) ahead of the operator tree.
//!
//! A locking read takes each row's lock and then reads the row's newest version, which needs
//! the transaction exclusively; the operator tree reads through a shared borrow of it (its
//! join lookups and subqueries scan while the first table is being read). So the rows of each
//! plan that locks are locked and read here first, in the order the buffered executor
//! (`SelectPlan::run`, gone since) locked them (the access path's keys, collected by one
//! scan, then one locking get per key), and held for the tree, which reads them instead of
//! its table ([`LockedPlan::take`](crate::exec::locked::LockedPlan::take)).
//!
//! One case keeps `run`'s early stop: a plain single-table read under LIMIT (no join, no
//! grouping, DISTINCT or sort, no subquery) tests its WHERE here and stops locking once
//! LIMIT + OFFSET rows passed, so rows after them stay unlocked, as InnoDB leaves them. With
//! a join under such a LIMIT, every row of the access path is locked (the join decides how
//! many rows a first-table row yields, and it reads through the shared transaction).

use zipdb_engine::Transaction;

use crate::exec::locked::{locks, Locked};
use crate::exec::scan::scan_rows;
use crate::exec::subquery::SubCtx;
use crate::exec::{fixed_terms_hold, limit_value};
use crate::expr::Ctx;
use crate::plan::select::{SelectPlan, Subquery};
use crate::runtime::limits::row_bytes;
use crate::SqlError;

/// Locks and reads the rows of every plan in `p` that locks: `p` itself, and the derived
/// tables' queries and set operands it reads (a join step's derived table is read without
/// locks, as on the buffered path). Recursion bounded as in [`locks`].
pub(crate) fn lock_rows(
    p: &SelectPlan,
    txn: &mut Transaction,
    ctx: &Ctx,
    subs: &[Subquery],
    out: &mut Locked,
) -> Result<(), SqlError> {
    if let Some(d) = p.derived.as_deref().filter(|d| locks(d)) {
        return lock_rows(d, txn, ctx, subs, out);
    }
    if !p.union.is_empty() {
        for (q, _) in p.union.iter().filter(|(q, _)| locks(q)) {
            lock_rows(q, txn, ctx, subs, out)?;
        }
        return Ok(());
    }
    let Some(t) = p
        .table
        .as_deref()
        .filter(|t| t.virt.is_none() && p.for_update)
    else {
        return Ok(());
    };
    let limit = limit_value(&p.limit, ctx)?;
    let offset = limit_value(&p.offset, ctx)?.unwrap_or(0);
    let impossible = limit == Some(0)
        || match &p.filter {
            // A constant term may be a subquery: it reads through a shared borrow, for this
            // test only (its cached rows are dropped before the rows are locked).
            Some(f) if p.has_sub => {
                let sc = SubCtx::new(subs, txn);
                !fixed_terms_hold(
                    f,
                    &Ctx {
                        sub: Some(&sc),
                        ..*ctx
                    },
                )?
            }
            Some(f) => !fixed_terms_hold(f, ctx)?,
            None => false,
        };
    // The stop point, where the WHERE can be tested here (it reads no subquery: those read
    // through the shared transaction the tree sets up).
    let plain = p.group_by.is_none()
        && !p.distinct
        && (p.order.is_empty() || p.ordered_scan.is_some())
        && p.joins.is_empty()
        && !p.has_sub;
    let stop_at = limit.map(|l| l.saturating_add(offset)).filter(|_| plain);
    let mut rows = Vec::new();
    if !impossible {
        let reverse = p.ordered_scan == Some(true);
        let mut keys = Vec::new();
        scan_rows(txn, t, &p.access, &p.wanted, reverse, ctx, &mut |k, _| {
            keys.push(k.to_vec());
            Ok(true)
        })?;
        let mut seen = 0u32;
        for k in keys {
            seen = seen.wrapping_add(1);
            if seen.is_multiple_of(512) {
                ctx.check_killed()?;
            }
            let Some(v) = txn
                .get_for_update(&t.primary, &k)
                .map_err(SqlError::engine)?
            else {
                continue;
            };
            let row = t.decode_some(&v, &p.wanted)?;
            if stop_at.is_some() {
                if let Some(f) = &p.filter {
                    if !f.test(&row, ctx)? {
                        continue;
                    }
                }
            }
            // Held until the tree reads it.
            ctx.charge(row_bytes(&row))?;
            rows.push(row);
            if stop_at.is_some_and(|s| rows.len() as u64 >= s) {
                break;
            }
        }
    }
    out.push(p, (limit, offset, impossible), stop_at.is_some(), rows);
    Ok(())
}
