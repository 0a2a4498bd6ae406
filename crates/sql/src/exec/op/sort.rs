//! ORDER BY that the scan does not give: [`Sort`] holds every row, [`TopN`] (under LIMIT) only
//! the rows that can still be sent.
//!
//! Both order as `SelectPlan::run` does: by [`Value::order_cmp`] key by key, ties kept in
//! input order (a stable sort; TopN breaks ties by arrival), so that the rows and their order
//! are the same whichever way a statement runs.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::exec::op::{Operator, Row};
use crate::expr::{Ctx, Expr};
use crate::runtime::limits::row_bytes;
use crate::runtime::memory::Reservation;
use crate::types::value::Value;
use crate::SqlError;

/// `a` against `b` by their first `desc.len()` values, each descending where `desc` says so.
fn by_keys(a: &[Value], b: &[Value], desc: &[bool]) -> Ordering {
    for ((x, y), d) in a.iter().zip(b).zip(desc) {
        let c = x.order_cmp(y);
        if c != Ordering::Equal {
            return if *d { c.reverse() } else { c };
        }
    }
    Ordering::Equal
}

/// Every row of `child`, sorted on the keys at `keys_at..` of each row (the hidden ORDER BY
/// outputs). The rows are held, and charged, until they are sent.
pub(crate) struct Sort<'a> {
    child: Box<dyn Operator + 'a>,
    keys_at: usize,
    desc: &'a [bool],
    mem: Reservation<'a>,
    /// The sorted rows, once the input has been read.
    sorted: Option<std::vec::IntoIter<Row>>,
}

impl<'a> Sort<'a> {
    pub(crate) fn new(
        child: Box<dyn Operator + 'a>,
        keys_at: usize,
        desc: &'a [bool],
        mem: Reservation<'a>,
    ) -> Sort<'a> {
        Sort {
            child,
            keys_at,
            desc,
            mem,
            sorted: None,
        }
    }

    fn fill(&mut self, cx: &Ctx) -> Result<std::vec::IntoIter<Row>, SqlError> {
        let mut rows: Vec<Row> = Vec::new();
        let mut row = Vec::new();
        while self.child.next(cx, &mut row)? {
            self.mem.grow(row_bytes(&row))?;
            rows.push(std::mem::take(&mut row));
        }
        let (v, desc) = (self.keys_at, self.desc);
        rows.sort_by(|a, b| by_keys(&a[v..], &b[v..], desc));
        Ok(rows.into_iter())
    }
}

impl Operator for Sort<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        if self.sorted.is_none() {
            self.sorted = Some(self.fill(cx)?);
        }
        let Some(r) = self.sorted.as_mut().and_then(Iterator::next) else {
            return Ok(false);
        };
        self.mem.shrink(row_bytes(&r));
        *out = r;
        Ok(true)
    }
}

/// A row TopN keeps: its sort keys and its source row (the select list is computed only for
/// the rows sent, as MySQL does: no work and no warning for the rows cut).
struct Kept<'a> {
    keys: Vec<Value>,
    /// Arrival order, the tie-breaker that makes the heap agree with a stable sort.
    seq: u64,
    row: Row,
    bytes: u64,
    desc: &'a [bool],
}

impl PartialEq for Kept<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Kept<'_> {}
impl PartialOrd for Kept<'_> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Kept<'_> {
    fn cmp(&self, o: &Self) -> Ordering {
        by_keys(&self.keys, &o.keys, self.desc).then(self.seq.cmp(&o.seq))
    }
}

/// ORDER BY … LIMIT n OFFSET m: the first `n + m` rows of the sorted input, less the first
/// `m`, as source rows (the caller projects them). A max-heap of at most `n + m` rows holds
/// the best rows seen so far; a row that sorts after all of them when the heap is full is
/// dropped at once, so memory is O(n + m) whatever the input's size.
pub(crate) struct TopN<'a> {
    child: Box<dyn Operator + 'a>,
    /// The ORDER BY keys, over the source row.
    keys: &'a [Expr],
    desc: &'a [bool],
    /// `n + m`; `None` (OFFSET without LIMIT): every row is kept.
    cap: Option<u64>,
    offset: u64,
    mem: Reservation<'a>,
    sorted: Option<std::vec::IntoIter<Kept<'a>>>,
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
        TopN {
            child,
            keys,
            desc,
            cap: limit.map(|l| l.saturating_add(offset)),
            offset,
            mem,
            sorted: None,
        }
    }

    fn fill(&mut self, cx: &Ctx) -> Result<std::vec::IntoIter<Kept<'a>>, SqlError> {
        // Not preallocated: the bound comes from the query.
        let mut heap: BinaryHeap<Kept<'a>> = BinaryHeap::new();
        let mut row = Vec::new();
        let mut seq = 0u64;
        while self.child.next(cx, &mut row)? {
            // Every row's keys are computed (their warnings count), kept or not.
            let keys = self
                .keys
                .iter()
                .map(|e| e.eval(&row, cx))
                .collect::<Result<Vec<_>, _>>()?;
            seq += 1;
            let full = self.cap.is_some_and(|c| heap.len() as u64 >= c);
            if full {
                // Ties go to the row that came first, so a full heap keeps its rows unless
                // the new one sorts strictly before the last of them.
                let worst = heap.peek().map(|w| by_keys(&keys, &w.keys, self.desc));
                if worst != Some(Ordering::Less) {
                    continue;
                }
                if let Some(w) = heap.pop() {
                    self.mem.shrink(w.bytes);
                }
            }
            let bytes = row_bytes(&keys) + row_bytes(&row);
            self.mem.grow(bytes)?;
            heap.push(Kept {
                keys,
                seq,
                row: std::mem::take(&mut row),
                bytes,
                desc: self.desc,
            });
        }
        let mut sorted = heap.into_sorted_vec().into_iter();
        for k in sorted
            .by_ref()
            .take(usize::try_from(self.offset).unwrap_or(usize::MAX))
        {
            self.mem.shrink(k.bytes);
        }
        Ok(sorted)
    }
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
