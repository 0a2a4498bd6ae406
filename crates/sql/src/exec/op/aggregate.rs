//! GROUP BY, and aggregation without it: every input row is folded into its group's
//! aggregate states; the groups come out in group-key order (a `BTreeMap` on [`GroupKey`],
//! the order MariaDB's implicit GROUP BY sort gives), each as its key values followed by its
//! aggregates' results, the row HAVING and the select list read.
//!
//! The map holds groups up to `tmp_memory_table_size`, or while the statement's budget keeps
//! `SPILL_ROOM` free besides (for the spill's own buffer). Past that no group is added: rows of groups already held still fold in memory, and
//! the rows of any other group go, as its key values and its aggregates' evaluated
//! arguments, to an external sort (`sort_spill::Sorter`) on the key. At the end the sorted
//! rows come back group by group (each group's rows together, in arrival order, since the
//! sort is stable), so one spilled group's states are held at a time, and they are merged by
//! key with the groups of the map. The two sets of groups are disjoint, so the output is
//! what the map alone would give, for every aggregate (nothing partial is ever written).
//!
//! A DISTINCT aggregate's value set grows with its group, and is charged as it grows. When a
//! held group's new value does not fit (less `SPILL_ROOM`), that group is split: its rows from
//! then on go to the sort too, and when it leaves the map its spilled rows, which all arrived
//! after those folded in memory, are folded into its states in arrival order.

use std::collections::btree_map::{self, BTreeMap};
use std::iter::Peekable;

use std::collections::BTreeSet;

use crate::exec::op::sort_spill::{try_hold, Sorted, Sorter};
use crate::exec::op::{Operator, Row};
use crate::exec::{AggState, GroupKey, KeyRef};
use crate::expr::{Ctx, Expr};
use crate::plan::select::AggSpec;
use crate::runtime::limits::row_bytes;
use crate::runtime::memory::Reservation;
use crate::runtime::spill::SessionTemp;
use crate::types::value::Value;
use crate::SqlError;

/// Bytes a group's aggregate states are charged, each (a fixed estimate, as before this
/// operator existed).
const STATE_BYTES: u64 = 64;

pub(crate) struct Aggregate<'a> {
    child: Box<dyn Operator + 'a>,
    keys: &'a [Expr],
    aggs: &'a [AggSpec],
    mem: Reservation<'a>,
    /// Where groups that do not fit go (`None`: outside a session, all stay in memory).
    temp: Option<&'a SessionTemp>,
    /// Bytes of groups the map holds before new groups spill (`tmp_memory_table_size`).
    table: u64,
    /// Bytes of spilled rows held before a sorted run is written (`sort_buffer_size`).
    buffer: u64,
    /// The groups, once the input has been read.
    groups: Option<Groups<'a>>,
}

/// The groups to send: those of the map, and those spilled (sorted by key), merged by key.
struct Groups<'a> {
    held: Peekable<btree_map::IntoIter<GroupKey, Vec<AggState>>>,
    spilled: Option<Sorted<'a>>,
    /// The next spilled row, the first of its group (read ahead to compare its key).
    ahead: Option<Row>,
}

impl<'a> Aggregate<'a> {
    pub(crate) fn new(
        child: Box<dyn Operator + 'a>,
        keys: &'a [Expr],
        aggs: &'a [AggSpec],
        mem: Reservation<'a>,
        temp: Option<&'a SessionTemp>,
    ) -> Aggregate<'a> {
        Aggregate {
            child,
            keys,
            aggs,
            mem,
            temp,
            table: temp.map_or(u64::MAX, SessionTemp::tmp_table),
            buffer: temp.map_or(u64::MAX, SessionTemp::sort_buffer),
            groups: None,
        }
    }

    /// With `table` bytes of groups and a sort buffer of `buffer` instead of the session's
    /// (tests).
    #[cfg(test)]
    pub(crate) fn with_sizes(mut self, table: u64, buffer: u64) -> Aggregate<'a> {
        self.table = table;
        self.buffer = buffer;
        self
    }

    fn group_bytes(&self, key: &[Value]) -> u64 {
        row_bytes(key) + self.states_bytes()
    }

    fn states_bytes(&self) -> u64 {
        STATE_BYTES * self.aggs.len() as u64
    }

    fn fresh(&self) -> Vec<AggState> {
        self.aggs
            .iter()
            .map(|a| AggState::new(a.distinct))
            .collect()
    }

    fn fill(&mut self, cx: &Ctx) -> Result<Groups<'a>, SqlError> {
        let mut groups: BTreeMap<GroupKey, Vec<AggState>> = BTreeMap::new();
        // Bytes of the map's groups, against `table`.
        let mut table = 0u64;
        // Made when the first group does not fit.
        let mut spill: Option<Sorter<'a>> = None;
        // Held groups whose DISTINCT values outgrew the budget: their later rows spill.
        let mut split: BTreeSet<GroupKey> = BTreeSet::new();
        let can_split =
            self.temp.is_some() && !self.keys.is_empty() && self.aggs.iter().any(|a| a.distinct);
        let mut args = Vec::with_capacity(self.aggs.len());
        let mut row = Vec::new();
        // The row's key values, searched for as they are; owned only by a new group.
        let mut key = Vec::with_capacity(self.keys.len());
        while self.child.next(cx, &mut row)? {
            key.clear();
            for e in self.keys {
                key.push(e.eval(&row, cx)?);
            }
            if let Some(states) = groups.get_mut(KeyRef::new(&key)) {
                if !can_split {
                    fold(states, self.aggs, &row, cx, &mut self.mem)?;
                    continue;
                }
                eval_args(self.aggs, &row, cx, &mut args)?;
                if split.is_empty() || !split.contains(KeyRef::new(&key)) {
                    let bytes = states
                        .iter()
                        .zip(self.aggs)
                        .zip(&args)
                        .map(|((st, spec), v)| st.would_hold(spec, v))
                        .sum();
                    if try_hold(&mut self.mem, 0, bytes, u64::MAX) {
                        for ((st, spec), v) in states.iter_mut().zip(self.aggs).zip(args.drain(..))
                        {
                            st.add(spec, v)?;
                        }
                        continue;
                    }
                    split.insert(GroupKey(key.clone()));
                }
                let sorter = match spill.as_mut() {
                    Some(s) => s,
                    None => {
                        let asc = vec![false; self.keys.len()];
                        spill.insert(Sorter::new(self.temp, self.buffer, 0, &asc))
                    }
                };
                let mut r = Vec::with_capacity(key.len() + args.len());
                r.extend(key.iter().cloned());
                r.append(&mut args);
                sorter.push(r, &mut self.mem, cx)?;
                continue;
            }
            let bytes = self.group_bytes(&key);
            let temp = match self.temp {
                // Without GROUP BY there is one group: nothing to gain by spilling it.
                Some(t) if spill.is_none() && !self.keys.is_empty() => {
                    // Room is left in the budget for the spill's own buffer.
                    if try_hold(&mut self.mem, table, bytes, self.table) {
                        None
                    } else {
                        Some(t)
                    }
                }
                Some(_) if spill.is_some() => None,
                _ => {
                    self.mem.grow(bytes)?;
                    None
                }
            };
            if let Some(t) = temp {
                let asc = vec![false; self.keys.len()];
                spill = Some(Sorter::new(Some(t), self.buffer, 0, &asc));
            }
            match spill.as_mut() {
                Some(sorter) => {
                    // The group's key, then one value per aggregate (NULL for COUNT(*)).
                    let mut r = Vec::with_capacity(key.len() + self.aggs.len());
                    r.append(&mut key);
                    eval_args(self.aggs, &row, cx, &mut args)?;
                    r.append(&mut args);
                    sorter.push(r, &mut self.mem, cx)?;
                }
                None => {
                    table += bytes;
                    let mut fresh = self.fresh();
                    fold(&mut fresh, self.aggs, &row, cx, &mut self.mem)?;
                    groups.insert(GroupKey(key.clone()), fresh);
                }
            }
        }
        // Aggregates without GROUP BY over no rows: one group (COUNT(*) is 0, SUM is NULL).
        if groups.is_empty() && self.keys.is_empty() {
            groups.insert(GroupKey(Vec::new()), self.fresh());
        }
        let mut spilled = match spill {
            Some(s) => Some(s.finish(&mut self.mem, cx)?),
            None => None,
        };
        let ahead = match spilled.as_mut() {
            Some(s) => s.next(&mut self.mem, cx)?,
            None => None,
        };
        Ok(Groups {
            held: groups.into_iter().peekable(),
            spilled,
            ahead,
        })
    }

    /// The spilled group whose first row is `first`: its key values into `out`, then its
    /// aggregates' results.
    fn spilled_group(&mut self, first: Row, cx: &Ctx, out: &mut Row) -> Result<(), SqlError> {
        let n = self.keys.len();
        let states_bytes = self.states_bytes();
        self.mem.grow(states_bytes)?;
        let mut states = self.fresh();
        let mut key = first;
        self.mem.shrink(row_bytes(&key));
        add_args(&mut states, self.aggs, key.split_off(n), &mut self.mem)?;
        self.fold_spilled(&key, &mut states, cx)?;
        self.mem.shrink(states_bytes + held_bytes(&states));
        *out = key;
        for (st, spec) in states.into_iter().zip(self.aggs) {
            out.push(st.finish(spec));
        }
        Ok(())
    }
}

impl Aggregate<'_> {
    /// Folds the spilled rows of group `key` that follow, in arrival order, into `states`;
    /// leaves the first row of the next spilled group read ahead.
    fn fold_spilled(
        &mut self,
        key: &[Value],
        states: &mut [AggState],
        cx: &Ctx,
    ) -> Result<(), SqlError> {
        let n = self.keys.len();
        let groups = self.groups.as_mut().expect("filled");
        let Some(sorted) = groups.spilled.as_mut() else {
            return Ok(());
        };
        loop {
            match sorted.next(&mut self.mem, cx)? {
                Some(mut r) if KeyRef::new(&r[..n]) == KeyRef::new(key) => {
                    self.mem.shrink(row_bytes(&r));
                    add_args(states, self.aggs, r.split_off(n), &mut self.mem)?;
                }
                next => {
                    groups.ahead = next;
                    return Ok(());
                }
            }
        }
    }
}

impl Operator for Aggregate<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        if self.groups.is_none() {
            self.groups = Some(self.fill(cx)?);
        }
        let g = self.groups.as_mut().expect("filled");
        let n = self.keys.len();
        let from_map = match (g.held.peek(), &g.ahead) {
            // A split group is in both; its map part arrived first.
            (Some((k, _)), Some(a)) => KeyRef::new(&k.0) <= KeyRef::new(&a[..n]),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return Ok(false),
        };
        if !from_map {
            let first = g.ahead.take().expect("a spilled group");
            self.spilled_group(first, cx, out)?;
            return Ok(true);
        }
        let (k, mut states) = g.held.next().expect("peeked");
        if let Some(mut first) = g
            .ahead
            .take_if(|a| KeyRef::new(&a[..n]) == KeyRef::new(&k.0))
        {
            self.mem.shrink(row_bytes(&first));
            add_args(&mut states, self.aggs, first.split_off(n), &mut self.mem)?;
            self.fold_spilled(&k.0, &mut states, cx)?;
        }
        let held = self.group_bytes(&k.0) + held_bytes(&states);
        self.mem.shrink(held);
        *out = k.0;
        for (st, spec) in states.into_iter().zip(self.aggs) {
            out.push(st.finish(spec));
        }
        Ok(true)
    }
}

/// Adds one input row to its group's aggregate states, charging to `mem` what they newly
/// hold (DISTINCT aggregates' values; past the budget, error 1290: a single group's value set
/// does not spill).
fn fold(
    states: &mut [AggState],
    aggs: &[AggSpec],
    row: &[Value],
    cx: &Ctx,
    mem: &mut Reservation<'_>,
) -> Result<(), SqlError> {
    for (st, spec) in states.iter_mut().zip(aggs) {
        let v = match &spec.arg {
            Some(a) => a.eval(row, cx)?,
            None => Value::Null,
        };
        charge(mem, st.add(spec, v)?)?;
    }
    Ok(())
}

/// Adds one spilled row's arguments, evaluated when it was read, to its group's states, as
/// [`fold`] does.
fn add_args(
    states: &mut [AggState],
    aggs: &[AggSpec],
    args: Row,
    mem: &mut Reservation<'_>,
) -> Result<(), SqlError> {
    for ((st, spec), v) in states.iter_mut().zip(aggs).zip(args) {
        charge(mem, st.add(spec, v)?)?;
    }
    Ok(())
}

/// The aggregates' arguments of `row` into `out` (cleared first; NULL for COUNT(*)).
fn eval_args(
    aggs: &[AggSpec],
    row: &[Value],
    cx: &Ctx,
    out: &mut Vec<Value>,
) -> Result<(), SqlError> {
    out.clear();
    for spec in aggs {
        out.push(match &spec.arg {
            Some(a) => a.eval(row, cx)?,
            None => Value::Null,
        });
    }
    Ok(())
}

fn charge(mem: &mut Reservation<'_>, bytes: u64) -> Result<(), SqlError> {
    if bytes > 0 {
        mem.grow(bytes)?;
    }
    Ok(())
}

/// Bytes `states` hold beyond their fixed charge, given back when the group leaves.
fn held_bytes(states: &[AggState]) -> u64 {
    states.iter().map(AggState::held_bytes).sum()
}

#[cfg(test)]
#[path = "aggregate_tests.rs"]
mod tests;
