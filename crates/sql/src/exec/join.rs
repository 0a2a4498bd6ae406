//! Joins: planning and executing the tables after the first of a FROM clause.
//!
//! The joined row is the tables' rows side by side (table `k`'s columns at
//! `offset..offset + width`), so every expression of the statement is compiled once against
//! it. The first table is read by the ordinary access path; each later table is a
//! [`JoinStep`] that extends each row of the tables before it, by one of three methods:
//!
//! - **Lookup** (index nested loop): the ON/WHERE terms bound a key of the table with values
//!   of the earlier tables (`b.id = a.b_id`), so each outer row reads just its matches through
//!   the primary key or a secondary index, with the same access paths as a single-table query.
//! - **Hash**: no key is bounded but there are equalities between this table and the earlier
//!   ones (`b.x = a.y`, neither indexed): the table is read once, filtered by its own terms,
//!   into a hash table on the equality values; each outer row probes it.
//! - **Loop**: neither; the filtered table is read once and every outer row is tried against
//!   every row.
//!
//! Every method only has to yield a superset of the matches: the step's whole match condition
//! is checked again on each candidate, as the single-table access paths do. That is what makes
//! hashing safe under the collation: values equal by SQL comparison (`'a' = 'A '`, `1 = 1.0`)
//! must land in the same bucket, and values that cannot be hashed that way go to a list every
//! probe tries.
//!
//! LEFT JOIN: a row of the earlier tables that matches nothing gets NULLs for the table. The
//! ON clause decides matches; WHERE terms on the table are checked after the NULL extension
//! (`after`), which is what makes `LEFT JOIN b ... WHERE b.id IS NULL` an anti-join.

use std::collections::HashMap;

use zipdb_engine::Transaction;

use crate::exec::hash::{hash_key, HashPart};
use crate::exec::op::join_spill::{Collect, Collected, Spilled};
use crate::exec::op::materialize::Materialized;
use crate::exec::op::Operator;
use crate::exec::scan::scan_rows_from;
use crate::expr::Ctx;
use crate::plan::select::{JoinMethod, JoinStep, SelectPlan};
use crate::runtime::memory::Reservation;
use crate::types::value::Value;
use crate::SqlError;

/// A step's table as read once for the hash and loop methods.
pub enum Built<'a> {
    /// Lookup steps read per outer row.
    None,
    /// A loop step's rows (in memory, or in a temporary file read once per outer row).
    Rows(Materialized<'a>),
    Hash {
        rows: Vec<Vec<Value>>,
        buckets: HashMap<Vec<HashPart>, Vec<usize>>,
        /// Rows whose key could not be hashed: tried by every probe.
        wild: Vec<usize>,
        /// What `rows` are charged, given back when the step is dropped.
        _mem: Reservation<'a>,
    },
    /// A hash step's table past its memory, in partitions (`op::join_spill`).
    Spilled(Box<Spilled<'a>>),
}

/// Reads the tables of the hash and loop steps (once per execution).
/// `run_derived` builds a derived table's query (through the statement's transaction), whose
/// rows stream into the step's table (so they are held once, and spill with it).
pub(crate) fn build<'a>(
    steps: &'a [JoinStep],
    txn: &Transaction,
    ctx: &Ctx<'a>,
    run_derived: &dyn Fn(&'a SelectPlan) -> Result<Box<dyn Operator + 'a>, SqlError>,
) -> Result<Vec<Built<'a>>, SqlError> {
    let mut out = Vec::with_capacity(steps.len());
    for s in steps {
        let (access, filter) = match &s.method {
            JoinMethod::Lookup(_) => {
                out.push(Built::None);
                continue;
            }
            JoinMethod::Hash {
                build_access,
                build_filter,
                ..
            }
            | JoinMethod::Loop {
                build_access,
                build_filter,
            } => (build_access, build_filter),
        };
        let mut rows = Materialized::for_join(ctx);
        // A hash step's rows go to partitions past its memory; a loop step's to one file,
        // read again for each outer row.
        let mut collect = match &s.method {
            JoinMethod::Hash {
                build_keys,
                classes,
                ..
            } => Some((Collect::new(ctx), build_keys, classes)),
            _ => None,
        };
        let mut keep = |r: Vec<Value>| -> Result<bool, SqlError> {
            if match filter {
                Some(f) => f.test(&r, ctx)?,
                None => true,
            } {
                match &mut collect {
                    Some((c, keys, classes)) => c.push(r, keys, classes, ctx)?,
                    None => rows.push(r)?,
                }
            }
            Ok(true)
        };
        if let Some(p) = &s.derived {
            let mut src = run_derived(p)?;
            let mut r = Vec::new();
            while src.next(ctx, &mut r)? {
                keep(std::mem::take(&mut r))?;
            }
        } else {
            match s.table.virt {
                Some(kind) => {
                    for r in ctx.virtual_of(kind)? {
                        keep(r.clone())?;
                    }
                }
                None => scan_rows_from(
                    txn,
                    &s.table,
                    access,
                    &s.wanted,
                    false,
                    &[],
                    ctx,
                    &mut |_, r| keep(r),
                )?,
            }
        }
        out.push(match (&s.method, collect) {
            (
                JoinMethod::Hash {
                    build_keys,
                    classes,
                    ..
                },
                Some((c, ..)),
            ) => {
                let (rows, mem) = match c.finish()? {
                    Collected::Memory(rows, mem) => (rows, mem),
                    Collected::Spilled(sp) => {
                        out.push(Built::Spilled(sp));
                        continue;
                    }
                };
                let mut buckets: HashMap<Vec<HashPart>, Vec<usize>> = HashMap::new();
                let mut wild = Vec::new();
                for (i, r) in rows.iter().enumerate() {
                    match hash_key(build_keys, classes, r, ctx)? {
                        Ok(Some(k)) => buckets.entry(k).or_default().push(i),
                        // A NULL key equals nothing.
                        Ok(None) => {}
                        Err(()) => wild.push(i),
                    }
                }
                Built::Hash {
                    rows,
                    buckets,
                    wild,
                    _mem: mem,
                }
            }
            _ => {
                rows.finish()?;
                Built::Rows(rows)
            }
        });
    }
    Ok(out)
}
