//! DISTINCT with keys spilled against DISTINCT in memory: the same rows (the first of each
//! key, hidden columns and all) in the same order, whatever the sizes; everything given back.

use proptest::prelude::*;

use super::*;
use crate::exec::op::testing::{ctx, Rows};
use crate::runtime::limits::Interrupt;
use crate::runtime::spill::sim_space_with;

/// DISTINCT on the first `visible` columns of `input`: the rows, and the temporary files
/// made. `sizes`: (table, sort buffer) with temporary space; `None`: in memory only.
fn distinct(input: &[Row], visible: usize, sizes: Option<(u64, u64)>) -> (Vec<Row>, usize) {
    let (space, files) = sim_space_with(None);
    let temp = SessionTemp::new(space.clone());
    let intr = Interrupt::default();
    intr.begin_statement(u64::MAX);
    let cx = ctx(&intr);
    let src = Box::new(Rows(input.iter().cloned()));
    let mut d = Distinct::new(
        src,
        visible,
        Reservation::new(Some(&intr)),
        sizes.map(|_| &temp),
    );
    if let Some((table, buffer)) = sizes {
        d = d.with_sizes(table, buffer);
    }
    let mut got = Vec::new();
    let mut r = Vec::new();
    while d.next(&cx, &mut r).expect("rows") {
        got.push(std::mem::take(&mut r));
    }
    drop(d);
    assert_eq!((intr.used(), temp.used(), space.used()), (0, 0, 0));
    let made = files.lock().len();
    (got, made)
}

fn key(k: u8) -> BoxedStrategy<Value> {
    let v = match k {
        0 => (-4i64..4).prop_map(Value::Int).boxed(),
        1 => (-2.0f64..2.0)
            .prop_map(|d| Value::Double((d * 2.0).round() / 2.0))
            .boxed(),
        // Collation ties: the row sent is the first of them to arrive.
        2 => prop::sample::select(vec!["a", "A", "b", "B ", "é", "e", "E", ""])
            .prop_map(|s| Value::Str(s.to_string()))
            .boxed(),
        _ => prop::collection::vec(0u8..3, 0..3)
            .prop_map(Value::Bytes)
            .boxed(),
    };
    prop_oneof![1 => Just(Value::Null), 5 => v].boxed()
}

/// Two key columns, then a hidden column numbering the rows (which row of a key is sent).
fn input() -> impl Strategy<Value = Vec<Row>> {
    (0u8..4, 0u8..4).prop_flat_map(|(a, b)| {
        prop::collection::vec((key(a), key(b)), 0..400).prop_map(|v| {
            v.into_iter()
                .enumerate()
                .map(|(i, (a, b))| vec![a, b, Value::Int(i as i64)])
                .collect()
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn spilled_distinct_equals_the_in_memory_distinct(rows in input(), one in any::<bool>()) {
        let visible = if one { 1 } else { 2 };
        let (want, made) = distinct(&rows, visible, None);
        prop_assert_eq!(made, 0);
        for (table, buffer) in [
            (0, 1),
            (0, u64::MAX),
            (60, 1),
            (300, 2_048),
            (u64::MAX, u64::MAX),
        ] {
            let (got, made) = distinct(&rows, visible, Some((table, buffer)));
            prop_assert_eq!(
                format!("{got:?}"),
                format!("{want:?}"),
                "table {} buffer {}",
                table,
                buffer
            );
            // No key held and runs of one row: every row but the last is written.
            if (table, buffer) == (0, 1) && rows.len() > 1 {
                prop_assert!(made > 0);
            }
            if table == u64::MAX {
                prop_assert_eq!(made, 0);
            }
        }
    }
}

#[test]
fn many_keys_spill_and_come_back_in_arrival_order() {
    let input: Vec<Row> = (0..6000i64)
        .map(|i| {
            let k = (i * 7919) % 2000;
            vec![Value::Str(format!("{k:0>60}")), Value::Int(i)]
        })
        .collect();
    let (want, _) = distinct(&input, 1, None);
    assert_eq!(want.len(), 2000);
    let (got, made) = distinct(&input, 1, Some((20_000, 8_192)));
    assert!(made >= 2, "{made} files");
    assert_eq!(format!("{got:?}"), format!("{want:?}"));
}

#[test]
fn the_statement_budget_makes_a_distinct_spill_instead_of_failing() {
    let input: Vec<Row> = (0..6000i64)
        .map(|i| {
            vec![
                Value::Str(format!("{:0>60}", (i * 7919) % 2000)),
                Value::Int(i),
            ]
        })
        .collect();
    let (want, _) = distinct(&input, 1, None);
    let (space, files) = sim_space_with(None);
    let temp = SessionTemp::new(space.clone());
    let intr = Interrupt::default();
    // Below the keys' size (2,000 keys of about 100 bytes), no table size of its own.
    intr.begin_statement(120_000);
    let cx = ctx(&intr);
    let run = |temp: Option<&SessionTemp>| {
        let src = Box::new(Rows(input.iter().cloned()));
        let mut d = Distinct::new(src, 1, Reservation::new(Some(&intr)), temp)
            .with_sizes(u64::MAX, u64::MAX);
        let mut got = Vec::new();
        let mut r = Vec::new();
        loop {
            match d.next(&cx, &mut r) {
                Ok(true) => got.push(std::mem::take(&mut r)),
                Ok(false) => return Ok(got),
                Err(e) => return Err(e),
            }
        }
    };
    let got = run(Some(&temp)).expect("spills");
    assert_eq!(format!("{got:?}"), format!("{want:?}"));
    assert!(!files.lock().is_empty());
    assert_eq!((intr.used(), temp.used(), space.used()), (0, 0, 0));
    assert_eq!(run(None).unwrap_err().code(), 1290);
}

#[test]
fn the_space_cap_and_a_kill_stop_a_spilling_distinct_and_give_everything_back() {
    let (space, _) = sim_space_with(None);
    let temp = SessionTemp::new(space.clone());
    let intr = Interrupt::default();
    intr.begin_statement(u64::MAX);
    let cx = ctx(&intr);
    let input: Vec<Row> = (0..5000i64).map(|i| vec![Value::Int(i)]).collect();
    let run = |cap: u64| {
        temp.set_max(cap);
        let mut d = Distinct::new(
            Box::new(Rows(input.clone().into_iter())),
            1,
            Reservation::new(Some(&intr)),
            Some(&temp),
        )
        .with_sizes(0, 4_096);
        let mut r = Vec::new();
        let code = d.next(&cx, &mut r).unwrap_err().code();
        drop(d);
        assert_eq!((intr.used(), temp.used(), space.used()), (0, 0, 0));
        code
    };
    // The cap on the session's space: 4198.
    assert_eq!(run(65_536), 4198);
    // A kill while the rows are spilled: 1317.
    intr.kill();
    assert_eq!(run(u64::MAX), 1317);
}
