//! ORDER BY that the scan does not give: [`Sort`] holds every row, [`TopN`] (under LIMIT) only
//! the rows that can still be sent.
//!
//! Both order as `SelectPlan::run` does: by [`Value::order_cmp`] key by key, ties kept in
//! input order (a stable sort; TopN breaks ties by arrival), so that the rows and their order
//! are the same whichever way a statement runs. A Sort whose rows outgrow its buffer spills
//! sorted runs to temporary files and merges them (`sort_spill`), in the same order.

use std::cmp::Ordering;

use crate::exec::op::sort_spill::{by_keys, Sorted, Sorter};
use crate::exec::op::{Operator, Row};
use crate::expr::{Ctx, Expr};
use crate::runtime::limits::row_bytes;
use crate::runtime::memory::Reservation;
use crate::runtime::spill::SessionTemp;
use crate::types::value::Value;
use crate::SqlError;

/// Every row of `child`, sorted on the keys at `keys_at..` of each row (the hidden ORDER BY
/// outputs). Rows are held, and charged, until they are sent, up to the sort's buffer; past
/// it they go to sorted runs in the session's temporary space.
pub(crate) struct Sort<'a> {
    child: Box<dyn Operator + 'a>,
    keys_at: usize,
    desc: &'a [bool],
    mem: Reservation<'a>,
    /// Where runs go (`None`: outside a session, every row stays in memory).
    temp: Option<&'a SessionTemp>,
    /// Bytes of rows held before a run is written (`sort_buffer_size`).
    buffer: u64,
    /// `None` until the input has been read.
    sorted: Option<Sorted<'a>>,
}

impl<'a> Sort<'a> {
    pub(crate) fn new(
        child: Box<dyn Operator + 'a>,
        keys_at: usize,
        desc: &'a [bool],
        mem: Reservation<'a>,
        temp: Option<&'a SessionTemp>,
    ) -> Sort<'a> {
        Sort {
            child,
            keys_at,
            desc,
            mem,
            temp,
            buffer: temp.map_or(u64::MAX, SessionTemp::sort_buffer),
            sorted: None,
        }
    }

    /// With a buffer of `bytes` instead of the session's `sort_buffer_size` (tests).
    #[cfg(test)]
    pub(crate) fn with_buffer(mut self, bytes: u64) -> Sort<'a> {
        self.buffer = bytes;
        self
    }

    fn fill(&mut self, cx: &Ctx) -> Result<Sorted<'a>, SqlError> {
        let mut sorter = Sorter::new(self.temp, self.buffer, self.keys_at, self.desc);
        let mut row = Vec::new();
        while self.child.next(cx, &mut row)? {
            sorter.push(std::mem::take(&mut row), &mut self.mem, cx)?;
        }
        sorter.finish(&mut self.mem, cx)
    }
}

impl Operator for Sort<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        if self.sorted.is_none() {
            self.sorted = Some(self.fill(cx)?);
        }
        let Some(r) = self
            .sorted
            .as_mut()
            .expect("filled")
            .next(&mut self.mem, cx)?
        else {
            return Ok(false);
        };
        self.mem.shrink(row_bytes(&r));
        *out = r;
        Ok(true)
    }
}

/// A row TopN keeps: its sort keys and its source row (the select list is computed only for
/// the rows sent, as MySQL does: no work and no warning for the rows cut).
struct Kept {
    keys: Vec<Value>,
    /// Arrival order, the tie-breaker that makes the result agree with a stable sort.
    seq: u64,
    row: Row,
    bytes: u64,
}

/// ORDER BY … LIMIT n OFFSET m: the first `n + m` rows of the sorted input, less the first
/// `m`, as source rows (the caller projects them). Rows are kept in a buffer of at most
/// `2 (n + m)`; when it is full, the best `n + m` are selected (`select_nth_unstable`) and the
/// rest dropped, and the last one kept becomes a cut: a later row that does not sort before it
/// is dropped at once. So memory is O(n + m) whatever the input's size, and the work is a
/// linear selection per `n + m` rows kept plus one sort of the survivors. (A binary heap of
/// `n + m` rows was three times slower than the old full sort for a large OFFSET: its sifts
/// compare far more often, each comparison two pointer chases through a large array.)
pub(crate) struct TopN<'a> {
    child: Box<dyn Operator + 'a>,
    /// The ORDER BY keys, over the source row.
    keys: &'a [Expr],
    /// When every key is a column of the source row, those columns: the keys are compared
    /// where they lie in the kept row instead of being copied out of it (a copy of each
    /// key per row, and its free when the row is cut, were a third of `ORDER BY c LIMIT 10
    /// OFFSET 500000`).
    key_cols: Option<Vec<usize>>,
    desc: &'a [bool],
    /// `n + m`; `None` (OFFSET without LIMIT): every row is kept.
    cap: Option<usize>,
    offset: u64,
    mem: Reservation<'a>,
    sorted: Option<std::vec::IntoIter<Kept>>,
}

impl<'a> TopN<'a> {
    pub(crate) fn new(
        child: Box<dyn Operator + 'a>,
        keys: &'a [Expr],
        desc: &'a [bool],
        limit: Option<u64>,
        offset: u64,
        mem: Reservation<'a>,
    ) -> TopN<'a> {
        let key_cols = keys
            .iter()
            .map(|e| match e {
                Expr::Col(c) => Some(*c),
                _ => None,
            })
            .collect();
        TopN {
            child,
            keys,
            key_cols,
            desc,
            cap: limit.map(|l| usize::try_from(l.saturating_add(offset)).unwrap_or(usize::MAX)),
            offset,
            mem,
            sorted: None,
        }
    }

    /// Keeps the best `cap` rows of `buf`; returns the keys of the last of them.
    fn prune(&mut self, buf: &mut Vec<Kept>, cap: usize) -> Option<Vec<Value>> {
        let desc = self.desc;
        let cols = self.key_cols.as_deref();
        if cap == 0 {
            for k in buf.drain(..) {
                self.mem.shrink(k.bytes);
            }
            return None;
        }
        if buf.len() > cap {
            buf.select_nth_unstable_by(cap - 1, |a, b| ordered(a, b, cols, desc));
            for k in buf.drain(cap..) {
                self.mem.shrink(k.bytes);
            }
        }
        // After the selection the last kept row sorts after every other kept one.
        buf.get(cap - 1).map(|k| match cols {
            Some(cols) => cols.iter().map(|&c| k.row[c].clone()).collect(),
            None => k.keys.clone(),
        })
    }

    fn fill(&mut self, cx: &Ctx) -> Result<std::vec::IntoIter<Kept>, SqlError> {
        // Not preallocated: the bound comes from the query.
        let mut buf: Vec<Kept> = Vec::new();
        let mut cut: Option<Vec<Value>> = None;
        let mut row = Vec::new();
        let mut seq = 0u64;
        while self.child.next(cx, &mut row)? {
            // Every row's keys are computed (their warnings count), kept or not; columns
            // are read in place.
            let keys = match self.key_cols {
                Some(_) => Vec::new(),
                None => self
                    .keys
                    .iter()
                    .map(|e| e.eval(&row, cx))
                    .collect::<Result<Vec<_>, _>>()?,
            };
            seq += 1;
            // Ties go to the row that came first: a row equal to the cut sorts after it.
            if let Some(c) = &cut {
                let before = match &self.key_cols {
                    Some(cols) => by_cols(&row, cols, c, self.desc),
                    None => by_keys(&keys, c, self.desc),
                };
                if before != Ordering::Less {
                    continue;
                }
            }
            if self.cap == Some(0) {
                continue;
            }
            let bytes = row_bytes(&keys) + row_bytes(&row);
            self.mem.grow(bytes)?;
            buf.push(Kept {
                keys,
                seq,
                row: std::mem::take(&mut row),
                bytes,
            });
            if let Some(cap) = self.cap {
                if buf.len() >= cap.saturating_mul(2) {
                    cut = self.prune(&mut buf, cap);
                }
            }
        }
        if let Some(cap) = self.cap {
            self.prune(&mut buf, cap);
        }
        let (cols, desc) = (self.key_cols.as_deref(), self.desc);
        buf.sort_unstable_by(|a, b| ordered(a, b, cols, desc));
        let mut sorted = buf.into_iter();
        for k in sorted
            .by_ref()
            .take(usize::try_from(self.offset).unwrap_or(usize::MAX))
        {
            self.mem.shrink(k.bytes);
        }
        Ok(sorted)
    }
}

/// The order of kept rows: by their keys (`cols` of their rows, or their own keys), then by
/// arrival (a total order, so an unstable selection and sort give what a stable sort of the
/// input gives).
fn ordered(a: &Kept, b: &Kept, cols: Option<&[usize]>, desc: &[bool]) -> Ordering {
    let by = match cols {
        Some(cols) => {
            let mut o = Ordering::Equal;
            for (&c, d) in cols.iter().zip(desc) {
                o = a.row[c].order_cmp(&b.row[c]);
                if o != Ordering::Equal {
                    o = if *d { o.reverse() } else { o };
                    break;
                }
            }
            o
        }
        None => by_keys(&a.keys, &b.keys, desc),
    };
    by.then(a.seq.cmp(&b.seq))
}

/// A row's key columns against a cut's keys.
fn by_cols(row: &[Value], cols: &[usize], cut: &[Value], desc: &[bool]) -> Ordering {
    for ((&c, y), d) in cols.iter().zip(cut).zip(desc) {
        let o = row[c].order_cmp(y);
        if o != Ordering::Equal {
            return if *d { o.reverse() } else { o };
        }
    }
    Ordering::Equal
}

impl Operator for TopN<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        if self.sorted.is_none() {
            self.sorted = Some(self.fill(cx)?);
        }
        let Some(k) = self.sorted.as_mut().and_then(Iterator::next) else {
            return Ok(false);
        };
        self.mem.shrink(k.bytes);
        *out = k.row;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::op::testing::{ctx, Rows};
    use crate::runtime::limits::Interrupt;

    #[test]
    fn top_n_is_the_stable_sort_cut_whatever_the_limit_and_offset() {
        // Few distinct keys (many ties), some NULLs, in a scrambled order; column 1 is the
        // arrival number, which tells ties apart in the result.
        let input: Vec<Row> = (0..500i64)
            .map(|i| {
                let k = (i * 7919) % 23;
                let key = if k == 5 {
                    Value::Null
                } else {
                    Value::Int(k % 11)
                };
                vec![key, Value::Int(i)]
            })
            .collect();
        let keys = [Expr::Col(0)];
        let intr = Interrupt::default();
        for desc in [[false], [true]] {
            let mut want = input.clone();
            want.sort_by(|a, b| by_keys(a, b, &desc));
            for (limit, offset) in [
                (Some(1), 0),
                (Some(5), 0),
                (Some(7), 3),
                (Some(40), 100),
                (Some(250), 249),
                (Some(1000), 0),
                (Some(3), 498),
                (Some(3), 600),
                (Some(0), 0),
                (None, 10),
            ] {
                // Keys read in place from the row's columns, and keys evaluated into their
                // own vector (the path of computed ORDER BY expressions): the same rows.
                for in_place in [true, false] {
                    intr.begin_statement(u64::MAX);
                    let cx = ctx(&intr);
                    let src = Box::new(Rows(input.clone().into_iter()));
                    let mem = Reservation::new(Some(&intr));
                    let mut top = TopN::new(src, &keys, &desc, limit, offset, mem);
                    assert!(top.key_cols.is_some());
                    if !in_place {
                        top.key_cols = None;
                    }
                    let mut got = Vec::new();
                    let mut r = Vec::new();
                    while top.next(&cx, &mut r).expect("no error") {
                        got.push(r.clone());
                    }
                    let want: Vec<Row> = want
                        .iter()
                        .skip(offset as usize)
                        .take(limit.map_or(usize::MAX, |l| l as usize))
                        .cloned()
                        .collect();
                    assert_eq!(
                        format!("{got:?}"),
                        format!("{want:?}"),
                        "desc {desc:?} limit {limit:?} offset {offset} in place {in_place}"
                    );
                    // Everything it held was given back as the rows left.
                    assert_eq!(intr.used(), 0, "limit {limit:?} offset {offset}");
                }
            }
        }
    }

    #[test]
    fn top_n_holds_at_most_twice_its_rows_and_a_sort_holds_all() {
        let input: Vec<Row> = (0..2000i64)
            .map(|i| vec![Value::Int((i * 7919) % 1009), Value::Int(i)])
            .collect();
        let one = row_bytes(&input[0]) + row_bytes(&input[0][..1]);
        let keys = [Expr::Col(0)];
        let intr = Interrupt::default();
        // Room for 2 x (5 + 10) rows, far below the 2,000.
        intr.begin_statement(30 * one);
        let cx = ctx(&intr);
        let src = Box::new(Rows(input.clone().into_iter()));
        let mut top = TopN::new(
            src,
            &keys,
            &[false],
            Some(5),
            10,
            Reservation::new(Some(&intr)),
        );
        let mut r = Vec::new();
        assert!(top.next(&cx, &mut r).expect("fits"));
        assert!(intr.used() <= 5 * one, "{}", intr.used());
        drop(top);
        assert_eq!(intr.used(), 0);
        let src = Box::new(Rows(input.into_iter()));
        let mut sort = Sort::new(src, 0, &[false], Reservation::new(Some(&intr)), None);
        assert_eq!(sort.next(&cx, &mut r).unwrap_err().code(), 1290);
    }
}
