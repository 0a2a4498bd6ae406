//! GROUP BY, and aggregation without it: every input row is folded into its group's
//! aggregate states; the groups come out in group-key order (a `BTreeMap` on [`GroupKey`],
//! the order MariaDB's implicit GROUP BY sort gives), each as its key values followed by its
//! aggregates' results, the row HAVING and the select list read.

use std::collections::btree_map::{self, BTreeMap};

use crate::exec::op::{Operator, Row};
use crate::exec::{AggState, GroupKey, KeyRef};
use crate::expr::{Ctx, Expr};
use crate::plan::select::AggSpec;
use crate::runtime::limits::row_bytes;
use crate::runtime::memory::Reservation;
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
    /// The groups, once the input has been read.
    groups: Option<btree_map::IntoIter<GroupKey, Vec<AggState>>>,
}

impl<'a> Aggregate<'a> {
    pub(crate) fn new(
        child: Box<dyn Operator + 'a>,
        keys: &'a [Expr],
        aggs: &'a [AggSpec],
        mem: Reservation<'a>,
    ) -> Aggregate<'a> {
        Aggregate {
            child,
            keys,
            aggs,
            mem,
            groups: None,
        }
    }

    fn group_bytes(&self, key: &[Value]) -> u64 {
        row_bytes(key) + STATE_BYTES * self.aggs.len() as u64
    }

    fn fill(&mut self, cx: &Ctx) -> Result<BTreeMap<GroupKey, Vec<AggState>>, SqlError> {
        let mut groups: BTreeMap<GroupKey, Vec<AggState>> = BTreeMap::new();
        let mut row = Vec::new();
        // The row's key values, searched for as they are; owned only by a new group.
        let mut key = Vec::with_capacity(self.keys.len());
        while self.child.next(cx, &mut row)? {
            key.clear();
            for e in self.keys {
                key.push(e.eval(&row, cx)?);
            }
            match groups.get_mut(KeyRef::new(&key)) {
                Some(states) => fold(states, self.aggs, &row, cx)?,
                None => {
                    self.mem.grow(self.group_bytes(&key))?;
                    let mut fresh: Vec<AggState> = self
                        .aggs
                        .iter()
                        .map(|a| AggState::new(a.distinct))
                        .collect();
                    fold(&mut fresh, self.aggs, &row, cx)?;
                    groups.insert(GroupKey(key.clone()), fresh);
                }
            }
        }
        // Aggregates without GROUP BY over no rows: one group (COUNT(*) is 0, SUM is NULL).
        if groups.is_empty() && self.keys.is_empty() {
            groups.insert(
                GroupKey(Vec::new()),
                self.aggs
                    .iter()
                    .map(|a| AggState::new(a.distinct))
                    .collect(),
            );
        }
        Ok(groups)
    }
}

impl Operator for Aggregate<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        if self.groups.is_none() {
            self.groups = Some(self.fill(cx)?.into_iter());
        }
        let Some((k, states)) = self.groups.as_mut().and_then(Iterator::next) else {
            return Ok(false);
        };
        let held = self.group_bytes(&k.0);
        self.mem.shrink(held);
        *out = k.0;
        for (st, spec) in states.into_iter().zip(self.aggs) {
            out.push(st.finish(spec));
        }
        Ok(true)
    }
}

/// Adds one input row to its group's aggregate states.
fn fold(
    states: &mut [AggState],
    aggs: &[AggSpec],
    row: &[Value],
    cx: &Ctx,
) -> Result<(), SqlError> {
    for (st, spec) in states.iter_mut().zip(aggs) {
        let v = match &spec.arg {
            Some(a) => a.eval(row, cx)?,
            None => Value::Null,
        };
        st.add(spec, v)?;
    }
    Ok(())
}
