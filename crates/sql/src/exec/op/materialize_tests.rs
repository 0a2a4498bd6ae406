//! Materialized rows spilled against rows in memory: every pass gives the rows pushed, in
//! order, whatever the table size or budget; everything given back when they are dropped.

use proptest::prelude::*;

use super::*;
use crate::exec::op::testing::ctx;
use crate::runtime::limits::Interrupt;
use crate::runtime::spill::sim_space_with;
use crate::types::value::Value;

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<i64>().prop_map(Value::Int),
        any::<u64>().prop_map(Value::UInt),
        (-1e6f64..1e6).prop_map(Value::Double),
        "[a-zA-Zé ]{0,12}".prop_map(Value::Str),
        prop::collection::vec(any::<u8>(), 0..8).prop_map(Value::Bytes),
        any::<i64>().prop_map(Value::DateTime),
    ]
}

/// Rows as printed (`Value` has no `PartialEq`; the debug form shows doubles exactly).
fn shown(rows: &[Row]) -> Vec<String> {
    rows.iter().map(|r| format!("{r:?}")).collect()
}

fn input() -> impl Strategy<Value = Vec<Row>> {
    prop::collection::vec(prop::collection::vec(value(), 0..4), 0..300)
}

/// The rows back from two passes and a drain; checks that all is given back.
fn passes(input: &[Row], table: u64, budget: u64) -> (Vec<Row>, bool) {
    let (space, _files) = sim_space_with(None);
    let temp = SessionTemp::new(space.clone());
    let intr = Interrupt::default();
    intr.begin_statement(budget);
    let cx = ctx(&intr);
    let mut m = Materialized::with(Reservation::new(Some(&intr)), Some(&temp), table);
    for r in input {
        m.push(r.clone()).expect("push");
    }
    m.finish().expect("finish");
    let spilled = m.spilled();
    for _ in 0..2 {
        let mut rd = m.reader();
        let mut got = Vec::new();
        let mut r = Vec::new();
        while m.next(&mut rd, &mut r).expect("read") {
            got.push(std::mem::take(&mut r));
        }
        assert_eq!(shown(&got), shown(input), "a read pass");
    }
    let mut d = m.into_rows().expect("drain");
    let mut got = Vec::new();
    while let Some(r) = d.next().expect("drain") {
        got.push(r);
    }
    drop(d);
    let _ = &cx;
    assert_eq!((intr.used(), temp.used(), space.used()), (0, 0, 0));
    (got, spilled)
}

proptest! {
    #[test]
    fn materialized_rows_read_back_as_pushed(rows in input(), table in 0u64..4000) {
        let (got, spilled) = passes(&rows, table, u64::MAX);
        prop_assert_eq!(shown(&got), shown(&rows));
        let bytes: u64 = rows.iter().map(|r| row_bytes(r)).sum();
        prop_assert_eq!(spilled, bytes > table);
    }
}

#[test]
fn rows_past_the_budget_spill_and_without_temp_space_fail_with_1290() {
    let rows: Vec<Row> = (0..2000)
        .map(|i| vec![Value::Int(i), Value::Str(format!("row {i:>40}"))])
        .collect();
    let (got, spilled) = passes(&rows, u64::MAX, 200_000);
    assert!(spilled);
    assert_eq!(shown(&got), shown(&rows));
    let intr = Interrupt::default();
    intr.begin_statement(200_000);
    let mut m = Materialized::with(Reservation::new(Some(&intr)), None, u64::MAX);
    let e = rows
        .iter()
        .try_for_each(|r| m.push(r.clone()))
        .expect_err("past the budget");
    assert_eq!(e.code(), 1290);
    drop(m);
    assert_eq!(intr.used(), 0);
}
