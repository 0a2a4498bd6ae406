//! Reading a table along an access path.

use std::ops::Bound;

use zipdb_engine::Transaction;

use crate::catalog::Table;
use crate::exec::keyrange::{as_ref, byte_ranges, KeyRange};
use crate::expr::Ctx;
use crate::plan::access::{Access, ColBound};
use crate::types::value::Value;
use crate::SqlError;

/// Reads the rows the access path yields, in key order (reversed with `reverse`), calling `f`
/// with (primary key, row) until it returns `false`.
#[allow(clippy::too_many_arguments)]
pub fn scan_rows(
    txn: &Transaction,
    t: &Table,
    access: &Access,
    wanted: &[bool],
    reverse: bool,
    ctx: &Ctx,
    f: &mut dyn FnMut(&[u8], Vec<Value>) -> Result<bool, SqlError>,
) -> Result<(), SqlError> {
    scan_rows_from(txn, t, access, wanted, reverse, &[], ctx, f)
}

/// [`scan_rows`] whose key bounds may read `outer`: the joined row of the tables before this
/// one (an index lookup in a nested-loop join).
#[allow(clippy::too_many_arguments)]
pub fn scan_rows_from(
    txn: &Transaction,
    t: &Table,
    access: &Access,
    wanted: &[bool],
    reverse: bool,
    outer: &[Value],
    ctx: &Ctx,
    f: &mut dyn FnMut(&[u8], Vec<Value>) -> Result<bool, SqlError>,
) -> Result<(), SqlError> {
    let eng = SqlError::engine;
    let decode = |v: &[u8]| t.decode_some(v, wanted);
    let full: Vec<KeyRange> = vec![(Bound::Unbounded, Bound::Unbounded)];
    match access {
        Access::None => Ok(()),
        Access::Full | Access::Primary(_) => {
            let ranges = match access {
                Access::Primary(b) => match byte_ranges(b, &t.def.pk, &t.types, outer, ctx)? {
                    Some(r) => r,
                    None => full,
                },
                _ => full,
            };
            let points = matches!(access, Access::Primary(b)
                if b.len() == t.def.pk.len() && b.iter().all(|x| !matches!(x, ColBound::Range(..))));
            let mut ranges = ranges;
            if reverse {
                ranges.reverse();
            }
            for (lo, hi) in &ranges {
                if points {
                    if let Bound::Included(k) = lo {
                        if let Some(v) = txn.get(&t.primary, k).map_err(eng)? {
                            if !f(k, decode(&v)?)? {
                                return Ok(());
                            }
                        }
                        continue;
                    }
                }
                let r = (as_ref(lo), as_ref(hi));
                let mut it = if reverse {
                    txn.scan_rev(&t.primary, r).map_err(eng)?
                } else {
                    txn.scan(&t.primary, r).map_err(eng)?
                };
                let (mut k, mut v) = (Vec::new(), Vec::new());
                while let Some(r) = it.next_into(&mut k, &mut v) {
                    r.map_err(eng)?;
                    if !f(&k, decode(&v)?)? {
                        return Ok(());
                    }
                }
            }
            Ok(())
        }
        Access::Index(i, b) => {
            let idx = &t.def.indexes[*i];
            let tree = &t.indexes[*i];
            let Some(mut ranges) = byte_ranges(b, &idx.columns, &t.types, outer, ctx)? else {
                return scan_rows_from(txn, t, &Access::Full, wanted, reverse, outer, ctx, f);
            };
            if reverse {
                ranges.reverse();
            }
            for (lo, hi) in &ranges {
                let r = (as_ref(lo), as_ref(hi));
                let mut it = if reverse {
                    txn.scan_rev(tree, r).map_err(eng)?
                } else {
                    txn.scan(tree, r).map_err(eng)?
                };
                let (mut k, mut entry_value) = (Vec::new(), Vec::new());
                while let Some(r) = it.next_into(&mut k, &mut entry_value) {
                    r.map_err(eng)?;
                    let n = t.index_prefix_len(*i, &k)?;
                    let pk = &k[n..];
                    match txn.get(&t.primary, pk).map_err(eng)? {
                        Some(v) => {
                            if !f(pk, decode(&v)?)? {
                                return Ok(());
                            }
                        }
                        None => {
                            return Err(SqlError::corrupt(format!(
                                "index {} of table {}.{} names a row that does not exist",
                                idx.name, t.def.db, t.def.name
                            )))
                        }
                    }
                }
            }
            Ok(())
        }
    }
}
