//! The spilled sort against the in-memory one, and its failures: faults, corruption, caps,
//! kills, and the space it gives back.

use std::sync::Arc;

use parking_lot::Mutex;
use proptest::prelude::*;
use zipdb_engine::storage::io::{SimStorage, Storage};

use super::*;
use crate::exec::op::sort::Sort;
use crate::exec::op::Operator;
use crate::runtime::limits::Interrupt;
use crate::runtime::spill::TempSpace;

/// Rows handed out in order; `at_end` runs once when they are all out (to damage the runs
/// between their writing and their merge).
struct Rows {
    rows: std::vec::IntoIter<Row>,
    at_end: Option<Box<dyn FnOnce()>>,
}

impl Operator for Rows {
    fn next(&mut self, _: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        match self.rows.next() {
            Some(r) => {
                *out = r;
                Ok(true)
            }
            None => {
                if let Some(f) = self.at_end.take() {
                    f();
                }
                Ok(false)
            }
        }
    }
}

fn rows(v: Vec<Row>) -> Box<Rows> {
    Box::new(Rows {
        rows: v.into_iter(),
        at_end: None,
    })
}

/// Temp space on simulated disks; the list holds every file made, in order.
fn sim_space() -> (Arc<TempSpace>, Arc<Mutex<Vec<SimStorage>>>) {
    sim_space_with(None)
}

use crate::runtime::spill::sim_space_with;

fn ctx(intr: &Interrupt) -> Ctx<'_> {
    Ctx {
        killed: Some(intr),
        ..Ctx::detached()
    }
}

/// Every row of `op`, or its error.
fn drain(op: &mut dyn Operator, cx: &Ctx) -> Result<Vec<Row>, SqlError> {
    let mut got = Vec::new();
    let mut r = Vec::new();
    while op.next(cx, &mut r)? {
        got.push(std::mem::take(&mut r));
    }
    Ok(got)
}

/// Sorts `input` on its columns from 1 on, spilling past `buffer` bytes (`None`: in memory
/// only); the rows, and the runs written (files made).
fn sort(input: &[Row], desc: &[bool], buffer: Option<u64>) -> (Vec<Row>, usize) {
    let (space, files) = sim_space();
    let temp = SessionTemp::new(space.clone());
    let intr = Interrupt::default();
    intr.begin_statement(u64::MAX);
    let cx = ctx(&intr);
    let mut s = Sort::new(
        rows(input.to_vec()),
        1,
        desc,
        Reservation::new(Some(&intr)),
        buffer.map(|_| &temp),
    );
    if let Some(b) = buffer {
        s = s.with_buffer(b);
    }
    let got = drain(&mut s, &cx).expect("sorts");
    drop(s);
    // Everything is given back: memory, and the files with their space.
    assert_eq!((intr.used(), temp.used(), space.used()), (0, 0, 0));
    let made = files.lock().len();
    (got, made)
}

/// A value of kind `k` (a column holds one kind and NULLs, as a typed column or expression
/// does: `order_cmp` across kinds, text against numbers, is not a total order, and the
/// in-memory `sort_by` itself may panic on such input).
fn value(k: u8) -> BoxedStrategy<Value> {
    let v = match k {
        0 => (-3i64..3).prop_map(Value::Int).boxed(),
        1 => (0u64..3).prop_map(Value::UInt).boxed(),
        2 => (-2.0f64..2.0)
            .prop_map(|d| Value::Double((d * 2.0).round() / 2.0))
            .boxed(),
        3 => (-300i128..300, 0u8..3)
            .prop_map(|(mant, scale)| Value::Decimal(Decimal { mant, scale }))
            .boxed(),
        // Case and accents that the default collation takes as equal, and trailing spaces.
        4 => prop::sample::select(vec!["a", "A", "b", "B ", "b", "é", "e", "", "ab"])
            .prop_map(|s| Value::Str(s.to_string()))
            .boxed(),
        5 => prop::collection::vec(any::<u8>(), 0..3)
            .prop_map(Value::Bytes)
            .boxed(),
        6 => (0i64..3).prop_map(|d| Value::Date(d << 20)).boxed(),
        _ => (0i64..3).prop_map(|d| Value::DateTime(d << 20)).boxed(),
    };
    prop_oneof![1 => Just(Value::Null), 5 => v].boxed()
}

/// Rows of 1 to 3 keys, each column of one kind.
fn key_rows() -> impl Strategy<Value = Vec<Vec<Value>>> {
    prop::collection::vec(0u8..8, 1..4).prop_flat_map(|kinds| {
        let row: Vec<BoxedStrategy<Value>> = kinds.iter().map(|&k| value(k)).collect();
        prop::collection::vec(row, 0..700)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever the buffer, from one row a run to everything in memory, the spilled sort gives
    /// the in-memory sort's rows in its order (ties in arrival order: column 0 numbers them).
    #[test]
    fn a_spilled_sort_equals_the_in_memory_sort(
        keys in key_rows(),
        desc in prop::collection::vec(any::<bool>(), 3),
        buffer in prop_oneof![Just(1u64), 100u64..3_000, 3_000u64..60_000, Just(u64::MAX)],
    ) {
        let width = keys.first().map_or(1, Vec::len);
        let input: Vec<Row> = keys
            .into_iter()
            .enumerate()
            .map(|(i, k)| {
                let mut r = vec![Value::Int(i as i64)];
                r.extend(k);
                r
            })
            .collect();
        let desc = &desc[..width];
        let (want, none) = sort(&input, desc, None);
        prop_assert_eq!(none, 0);
        let (got, made) = sort(&input, desc, Some(buffer));
        prop_assert_eq!(format!("{got:?}"), format!("{want:?}"));
        // A buffer of one byte holds one row: every second row starts a run.
        if buffer == 1 && input.len() > 1 {
            prop_assert!(made >= 1);
        }
    }
}

#[test]
fn rows_read_back_are_the_rows_written() {
    let row = vec![
        Value::Null,
        Value::Int(i64::MIN),
        Value::UInt(u64::MAX),
        Value::Double(-0.0),
        Value::Double(f64::NAN),
        Value::Decimal(Decimal {
            mant: -12345678901234567890123456789,
            scale: 30,
        }),
        Value::Str("héllo".into()),
        Value::Bytes(vec![0, 255]),
        Value::Date(77 << 20),
        Value::DateTime(-5),
    ];
    let mut buf = Vec::new();
    encode_row(&mut buf, &row);
    let mut back = vec![Value::Int(9)];
    decode_row(&buf, &mut back).expect("decodes");
    assert_eq!(format!("{back:?}"), format!("{row:?}"));
    // Every cut of the record is an error, never a panic or a wrong row.
    for n in 0..buf.len() {
        let r = decode_row(&buf[..n], &mut back);
        assert!(r.is_err() || back.len() < row.len(), "cut at {n}");
    }
    assert_eq!(decode_row(&[9], &mut back), Err("an unknown value tag"));
    assert_eq!(
        decode_row(&[5, 2, 0, 0, 0, 0xff, 0xfe], &mut back),
        Err("a string is not UTF-8")
    );
}

/// 5,000 rows of a few hundred bytes: about 40 runs at a 64 KiB buffer, so the merge takes
/// more than one pass.
fn many() -> Vec<Row> {
    (0..5000i64)
        .map(|i| {
            vec![
                Value::Int(i),
                Value::Int((i * 7919) % 1009),
                Value::Str(format!("{:0>200}", i % 13)),
            ]
        })
        .collect()
}

#[test]
fn a_sort_past_its_buffer_merges_in_passes_and_deletes_its_files() {
    let input = many();
    let (want, _) = sort(&input, &[false, true], None);
    let (got, made) = sort(&input, &[false, true], Some(64 << 10));
    assert_eq!(format!("{got:?}"), format!("{want:?}"));
    // The first file held the runs, and each merge pass wrote a new one.
    assert!(made >= 2, "{made} files");
}

#[test]
fn the_statement_budget_makes_a_sort_spill_instead_of_failing() {
    let input = many();
    let (want, _) = sort(&input, &[true, false], None);
    let (space, _) = sim_space();
    let temp = SessionTemp::new(space);
    let intr = Interrupt::default();
    // Far below the rows' size (about 1.4 MB), with no sort buffer of its own.
    intr.begin_statement(100_000);
    let cx = ctx(&intr);
    let mut s = Sort::new(
        rows(input.clone()),
        1,
        &[true, false],
        Reservation::new(Some(&intr)),
        Some(&temp),
    );
    let got = drain(&mut s, &cx).expect("spills");
    assert_eq!(format!("{got:?}"), format!("{want:?}"));
    drop(s);
    assert_eq!((intr.used(), temp.used()), (0, 0));
    // Without temporary space it fails as before.
    let mut s = Sort::new(
        rows(input),
        1,
        &[true, false],
        Reservation::new(Some(&intr)),
        None,
    );
    assert_eq!(drain(&mut s, &cx).unwrap_err().code(), 1290);
}

/// A spilling sort of `many()` in sim space (each file's write number `write_fault` failing,
/// if given), `prepare`d, with `at_end` run when the input is out; its error, and the space's
/// usage after the sort is dropped.
fn failing(
    write_fault: Option<u64>,
    prepare: impl FnOnce(&SessionTemp, &Interrupt),
    at_end: impl FnOnce(&[SimStorage]) + 'static,
) -> (SqlError, u64) {
    let (space, files) = sim_space_with(write_fault);
    let temp = SessionTemp::new(space.clone());
    let intr = Interrupt::default();
    intr.begin_statement(u64::MAX);
    prepare(&temp, &intr);
    let cx = ctx(&intr);
    let seen = files.clone();
    let src = Box::new(Rows {
        rows: many().into_iter(),
        at_end: Some(Box::new(move || at_end(&seen.lock()))),
    });
    let mut s = Sort::new(src, 1, &[false], Reservation::new(Some(&intr)), Some(&temp))
        .with_buffer(64 << 10);
    let err = drain(&mut s, &cx).expect_err("fails");
    drop(s);
    assert_eq!((intr.used(), temp.used()), (0, 0));
    (err, space.used())
}

#[test]
fn a_write_fault_mid_spill_is_1026_and_gives_the_space_back() {
    let (err, left) = failing(Some(2), |_, _| {}, |_| {});
    assert_eq!(err.code(), 1026, "{err}");
    assert!(err.to_string().contains("/sim/tmp/zipdb-spill-"), "{err}");
    assert_eq!(left, 0);
}

#[test]
fn a_corrupt_block_is_1024_naming_the_file_and_offset() {
    // A bit flipped in the second block of the runs, after they are written.
    let second = Arc::new(Mutex::new(0u64));
    let at = second.clone();
    let (err, left) = failing(
        None,
        |_, _| {},
        move |files| {
            let disk = &files[0];
            let mut header = [0u8; 8];
            disk.read_at(&mut header, 0).expect("read");
            let off = 8 + u64::from(u32::from_le_bytes(header[0..4].try_into().unwrap()));
            *at.lock() = off;
            disk.corrupt(off + 30, 0x10);
        },
    );
    assert_eq!(err.code(), 1024, "{err}");
    let msg = err.to_string();
    assert!(msg.contains("/sim/tmp/zipdb-spill-"), "{msg}");
    let second = *second.lock();
    assert!(
        msg.contains(&format!("offset {second}")) && msg.contains("checksum"),
        "{msg}"
    );
    assert_eq!(left, 0);
}

#[test]
fn the_session_cap_and_a_kill_stop_a_spilling_sort_and_its_files_go() {
    let (err, left) = failing(None, |t, _| t.set_max(200_000), |_| {});
    assert_eq!(err.code(), 4198, "{err}");
    assert_eq!(left, 0);
    // A kill that comes while the runs are written or merged.
    let (err, left) = failing(None, |_, i| i.kill(), |_| {});
    assert_eq!(err.code(), 1317, "{err}");
    assert_eq!(left, 0);
}
