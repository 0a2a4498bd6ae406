//! INTERSECT and EXCEPT by sorting against the in-memory model: the same rows in the same
//! order, for every kind, in memory and spilled; everything given back.

use proptest::prelude::*;

use super::*;
use crate::exec::op::testing::{ctx, Rows};
use crate::exec::GroupKey;
use crate::plan::select::SetOp;
use crate::runtime::limits::Interrupt;
use crate::runtime::spill::sim_space_with;

/// The model: `acc` combined with `part` by `op` in memory, rows compared as DISTINCT
/// compares them (what the buffered path did before the operator).
fn set_combine(op: SetOp, acc: &mut Vec<Vec<Value>>, part: Vec<Vec<Value>>) {
    let dedup = |rows: &mut Vec<Vec<Value>>| {
        let mut seen = std::collections::BTreeSet::new();
        rows.retain(|r| seen.insert(GroupKey(r.clone())));
    };
    match op {
        SetOp::Union { distinct } => {
            acc.extend(part);
            if distinct {
                dedup(acc);
            }
        }
        SetOp::Intersect { distinct } | SetOp::Except { distinct } => {
            let keep_found = matches!(op, SetOp::Intersect { .. });
            let mut counts: std::collections::BTreeMap<GroupKey, usize> = Default::default();
            for r in part {
                *counts.entry(GroupKey(r)).or_default() += 1;
            }
            if distinct {
                dedup(acc);
                acc.retain(|r| counts.contains_key(&GroupKey(r.clone())) == keep_found);
            } else {
                // Multisets: each row of the operand matches (and keeps, or removes) one row.
                acc.retain(|r| {
                    let n = counts.get_mut(&GroupKey(r.clone()));
                    let found = match n {
                        Some(n) if *n > 0 => {
                            *n -= 1;
                            true
                        }
                        _ => false,
                    };
                    found == keep_found
                });
            }
        }
    }
}

/// `left` combined with `right` by `kind` through [`combine`]: the rows and the temporary
/// files made. `buffer`: the sorts' buffer, with temporary space; `None`: in memory only.
fn sorted(left: &[Row], right: &[Row], kind: SetKind, buffer: Option<u64>) -> (Vec<Row>, usize) {
    let (space, files) = sim_space_with(None);
    let temp = SessionTemp::new(space.clone());
    let intr = Interrupt::default();
    intr.begin_statement(u64::MAX);
    let cx = ctx(&intr);
    let l = Box::new(Rows(left.iter().cloned()));
    let r = right.to_vec();
    let operand: Operand = Box::new(move || Ok(Box::new(Rows(r.into_iter())) as Box<dyn Operator>));
    let mut out = combine(
        l,
        operand,
        kind,
        Reservation::new(Some(&intr)),
        buffer.map(|_| &temp),
        buffer.unwrap_or(u64::MAX),
        &cx,
    )
    .expect("combines");
    let mut got = Vec::new();
    let mut row = Vec::new();
    while out.next(&cx, &mut row).expect("rows") {
        got.push(std::mem::take(&mut row));
    }
    drop(out);
    assert_eq!((intr.used(), temp.used(), space.used()), (0, 0, 0));
    let made = files.lock().len();
    (got, made)
}

/// Rows as their values print exactly (`Value` has no `PartialEq`: SQL's equality is not one).
fn show(rows: &[Row]) -> String {
    format!("{rows:?}")
}

/// Column values of one type each, as a set operation's columns are (its operands' values
/// are converted to the column's type): numbers, and text with collation ties (which of them
/// a DISTINCT keeps is the first to arrive).
fn number() -> BoxedStrategy<Value> {
    prop_oneof![1 => Just(Value::Null), 4 => (-3i64..3).prop_map(Value::Int)].boxed()
}

fn text() -> BoxedStrategy<Value> {
    let t = prop::sample::select(vec!["a", "A", "b", "B ", "é", "e", ""])
        .prop_map(|s| Value::Str(s.to_string()));
    prop_oneof![1 => Just(Value::Null), 4 => t].boxed()
}

/// Rows of a number and a text, few distinct, so that runs of equal rows are common.
fn rows() -> impl Strategy<Value = Vec<Row>> {
    prop::collection::vec((number(), text()).prop_map(|(a, b)| vec![a, b]), 0..150)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn sorting_gives_the_models_rows_in_its_order(left in rows(), right in rows()) {
        for (intersect, distinct) in [(true, true), (true, false), (false, true), (false, false)] {
            let kind = SetKind { intersect, distinct };
            let op = if intersect {
                SetOp::Intersect { distinct }
            } else {
                SetOp::Except { distinct }
            };
            let mut want = left.clone();
            set_combine(op, &mut want, right.clone());
            let (got, made) = sorted(&left, &right, kind, None);
            prop_assert_eq!(made, 0);
            prop_assert_eq!(show(&got), show(&want), "{:?} in memory", kind);
            // A buffer of one row: a run per row, merged in several passes.
            for buffer in [1, 300] {
                let (got, _) = sorted(&left, &right, kind, Some(buffer));
                prop_assert_eq!(show(&got), show(&want), "{:?} buffer {}", kind, buffer);
            }
        }
    }
}

#[test]
fn a_small_buffer_spills_to_temporary_files() {
    let left: Vec<Row> = (0..2_000).map(|i| vec![Value::Int(i % 700)]).collect();
    let right: Vec<Row> = (0..1_000).map(|i| vec![Value::Int(i * 2)]).collect();
    let kind = SetKind {
        intersect: false,
        distinct: false,
    };
    let (got, made) = sorted(&left, &right, kind, Some(4 << 10));
    assert!(made > 0, "no spill");
    let mut want = left.clone();
    set_combine(SetOp::Except { distinct: false }, &mut want, right);
    assert_eq!(show(&got), show(&want));
}
