//! The tables after the first of a FROM clause as operators: one [`JoinStep`] over the
//! operator of the tables before it, so a join of n tables is a left-deep chain of n - 1 of
//! them over the first table's scan (and its WHERE terms).
//!
//! Each step does what `exec::join::drive` does for its table, one joined row per `next`:
//! for each row of its child it tries its candidates in order (a lookup scan opened with the
//! row's key values, the probe key's hash bucket merged with the rows that could not be
//! hashed, or every held row), checks the ON terms, then the `after` terms; a LEFT step gives
//! a row that matched nothing one NULL-extended row, if `after` holds for it. Pulling from the
//! last step asks the earlier ones for a row only when its candidates are used up, which is
//! the depth-first order of `drive`'s recursion: rows come out in the same order and every
//! expression is evaluated for the same rows, in the same order, up to the row where the
//! consumer stops pulling (LIMIT), as `drive` stopped when its sink said so.
//!
//! Calls nest one frame per step (each `next` pulls from its child), as `drive`'s recursion
//! did: as deep as the FROM clause has tables.

use crate::exec::hash::{hash_key, HashPart};
use crate::exec::join::Built;
use crate::exec::op::join_spill::{passes, Grace};
use crate::exec::op::materialize::Reader;
use crate::exec::op::{Operator, Row};
use crate::expr::Ctx;
use crate::plan::select::{JoinMethod, JoinStep};
use crate::types::value::Value;
use crate::SqlError;

/// Opens the scan of a lookup step's table for one row of the tables before it (its key
/// bounds read that row). Handed down by the tree's builder, which owns the table scan.
pub(crate) type OpenLookup<'a> =
    Box<dyn Fn(&[Value], &Ctx) -> Result<Box<dyn Operator + 'a>, SqlError> + 'a>;

/// `child` extended by each step of `steps` in turn. `built` holds what `join::build` read for
/// each step (the hash and loop steps' tables), `open` the lookup steps' scans.
pub(crate) fn steps<'a>(
    mut child: Box<dyn Operator + 'a>,
    steps: &'a [JoinStep],
    built: Vec<Built<'a>>,
    open: &dyn Fn(&'a JoinStep) -> OpenLookup<'a>,
) -> Box<dyn Operator + 'a> {
    for (step, built) in steps.iter().zip(built) {
        let built = match built {
            Built::Spilled(parts) => {
                child = Box::new(Grace::new(child, step, parts));
                continue;
            }
            b => b,
        };
        let open = matches!(step.method, JoinMethod::Lookup(_)).then(|| open(step));
        child = Box::new(Join {
            child,
            step,
            built,
            open,
            outer: Vec::new(),
            cand: Vec::new(),
            cands: Cands::Idle,
            matched: false,
        });
    }
    child
}

/// Where the candidates for the current outer row come from.
enum Cands<'a> {
    /// No outer row in progress: the next `next` pulls one.
    Idle,
    /// Lookup: the table scanned along key bounds computed from the outer row.
    Scan(Box<dyn Operator + 'a>),
    /// Hash: the bucket of `key` merged with the unhashable rows, positions `i` and `j`.
    Hits {
        key: Vec<HashPart>,
        i: usize,
        j: usize,
    },
    /// Every held row from position `at` (loop, or a probe key that could not be hashed).
    All(usize),
    /// A loop step's rows in a temporary file: one read pass per outer row.
    Pass(Reader),
    /// A NULL probe key: it equals nothing.
    None,
}

struct Join<'a> {
    child: Box<dyn Operator + 'a>,
    step: &'a JoinStep,
    built: Built<'a>,
    open: Option<OpenLookup<'a>>,
    /// The row of the tables before this step being extended.
    outer: Row,
    /// A lookup candidate, as the scan decodes it.
    cand: Row,
    cands: Cands<'a>,
    /// Some candidate of the current outer row passed ON (LEFT: no NULL row then).
    matched: bool,
}

impl<'a> Join<'a> {
    /// The candidates of the outer row just pulled.
    fn start(&self, cx: &Ctx) -> Result<Cands<'a>, SqlError> {
        Ok(match (&self.step.method, &self.built) {
            (JoinMethod::Lookup(_), _) => match &self.open {
                Some(open) => Cands::Scan(open(&self.outer, cx)?),
                None => return Err(SqlError::internal("lookup step without its scan")),
            },
            (
                JoinMethod::Hash {
                    probe_keys,
                    classes,
                    ..
                },
                Built::Hash { .. },
            ) => match hash_key(probe_keys, classes, &self.outer, cx)? {
                Ok(None) => Cands::None,
                Ok(Some(key)) => Cands::Hits { key, i: 0, j: 0 },
                Err(()) => Cands::All(0),
            },
            (JoinMethod::Loop { .. }, Built::Rows(m)) if m.spilled() => Cands::Pass(m.reader()),
            (JoinMethod::Loop { .. }, Built::Rows(_)) => Cands::All(0),
            _ => return Err(SqlError::internal("join step was not built")),
        })
    }
}

/// `out` = `outer` ++ `cand`, reusing `out`'s buffer.
fn joined(out: &mut Row, outer: &[Value], cand: &[Value]) {
    out.clear();
    out.extend_from_slice(outer);
    out.extend_from_slice(cand);
}

impl Operator for Join<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        let off = self.step.offset;
        loop {
            if matches!(self.cands, Cands::Idle) {
                if !self.child.next(cx, &mut self.outer)? {
                    return Ok(false);
                }
                debug_assert_eq!(self.outer.len(), off, "a join step's outer row is off");
                self.matched = false;
                self.cands = self.start(cx)?;
            }
            let found = match &mut self.cands {
                Cands::Idle | Cands::None => false,
                Cands::Scan(scan) => {
                    let more = scan.next(cx, &mut self.cand)?;
                    if more {
                        joined(out, &self.outer, &self.cand);
                    }
                    more
                }
                Cands::Hits { key, i, j } => match &self.built {
                    Built::Hash {
                        rows,
                        buckets,
                        wild,
                        ..
                    } => {
                        let hits = buckets.get(key).map(Vec::as_slice).unwrap_or(&[]);
                        match merge_next(hits, wild, i, j) {
                            Some(n) => {
                                joined(out, &self.outer, &rows[n]);
                                true
                            }
                            None => false,
                        }
                    }
                    _ => return Err(SqlError::internal("hash step without its table")),
                },
                Cands::Pass(rd) => match &self.built {
                    Built::Rows(m) => {
                        let more = m.next(rd, &mut self.cand)?;
                        if more {
                            joined(out, &self.outer, &self.cand);
                        }
                        more
                    }
                    _ => return Err(SqlError::internal("a loop step without its table")),
                },
                Cands::All(at) => match &self.built {
                    Built::Rows(m) => match m.in_memory().get(*at) {
                        Some(r) => {
                            *at += 1;
                            joined(out, &self.outer, r);
                            true
                        }
                        None => false,
                    },
                    Built::Hash { rows, .. } => match rows.get(*at) {
                        Some(r) => {
                            *at += 1;
                            joined(out, &self.outer, r);
                            true
                        }
                        None => false,
                    },
                    Built::None | Built::Spilled(_) => {
                        return Err(SqlError::internal("join step was not built"))
                    }
                },
            };
            if found {
                // A join can run long between rows of the first table: KILL QUERY is checked
                // per candidate (one relaxed load), as `drive` does.
                cx.check_killed()?;
                if !passes(&self.step.on, out, cx)? {
                    continue;
                }
                self.matched = true;
                if !passes(&self.step.after, out, cx)? {
                    continue;
                }
                return Ok(true);
            }
            self.cands = Cands::Idle;
            if self.step.left && !self.matched {
                out.clear();
                out.extend_from_slice(&self.outer);
                out.resize(off + self.step.table.types.len(), Value::Null);
                if passes(&self.step.after, out, cx)? {
                    return Ok(true);
                }
            }
        }
    }
}

/// The next candidate of a hash probe: positions from the key's bucket (`hits`) and the rows
/// that could not be hashed (`wild`), `i` and `j` into each. Both lists are in table order;
/// merging keeps the output in it.
fn merge_next(hits: &[usize], wild: &[usize], i: &mut usize, j: &mut usize) -> Option<usize> {
    let next = match (hits.get(*i), wild.get(*j)) {
        (Some(&a), Some(&b)) if a < b => {
            *i += 1;
            a
        }
        (Some(_), Some(&b)) | (None, Some(&b)) => {
            *j += 1;
            b
        }
        (Some(&a), None) => {
            *i += 1;
            a
        }
        (None, None) => return None,
    };
    Some(next)
}
