//! Moving compact leaves between FSST symbol-table versions (issue 19 step 7, design §2.5
//! "Lazy re-encoding" and "Retirement"): the lazy rebuild of a leaf a write reaches, the
//! re-encode of split/merge sources on another version, and `OPTIMIZE TABLE`'s walk.
//!
//! No WAL record is written for a rebuild: it changes how values are stored, never which
//! values a leaf holds, and the logical redo log replays onto whatever the last checkpoint
//! holds. Every rebuild runs under the checkpoint gate shared (the callers' `put`, or the
//! walk's per-leaf gate), so a checkpoint sees a leaf either before or after it, together with
//! page counts that agree.

use zipdb_storage::pool::PageWriteGuard;
use zipdb_storage::PageId;

use super::compact::{build_compact_leaf, entries_size, Entry, Fences, OwnedValue, FENCES_START};
use super::BTree;
use crate::catalog::TableVersion;
use crate::error::{Error, Result};

/// Bytes `OPTIMIZE TABLE` samples across the tree to train its version (design §2.5).
pub const OPTIMIZE_SAMPLE_BYTES: usize = 64 * 1024;

/// Values kept by the sampling walk (reservoir); their bytes are capped by
/// [`OPTIMIZE_SAMPLE_BYTES`] at training.
const RESERVOIR: usize = 2048;

/// What [`BTree::optimize`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OptimizeReport {
    /// The version every leaf was rewritten onto; `None` for a tree without a record codec
    /// or with no value to train on.
    pub version: Option<u16>,
    /// Whether that version was trained by this call (else the live-version cap was reached
    /// and the leaves moved onto the current one).
    pub trained: bool,
    pub leaves: u64,
    /// Leaves left on their version because the rebuilt leaf would not fit its page.
    pub leaves_skipped: u64,
}

impl BTree {
    /// The version a leaf built from sources on `versions` gets: none while all are on none,
    /// else the current one (sources on another version are re-encoded, [`BTree::reencode`]),
    /// so that no rebuild moves a leaf onto an older version.
    pub(super) fn target_version(&self, versions: &[u16]) -> u16 {
        if versions.iter().all(|&v| v == 0) {
            return 0;
        }
        self.tables.current().map_or(0, |s| s.version.0)
    }

    /// Re-encodes `entries` (from a leaf on version `from`) for a leaf on version `to`: FSST
    /// values are decoded with `from`, and, with `all` or when `from` differs, every inline
    /// value is encoded with `to` and stored FSST when shorter, raw otherwise.
    pub(super) fn reencode(
        &self,
        id: PageId,
        entries: &mut [Entry],
        from: u16,
        to: u16,
        all: bool,
    ) -> Result<()> {
        if from == to && !all {
            return Ok(());
        }
        let table = match to {
            0 => None,
            v => Some(
                &self
                    .tables
                    .get(TableVersion(v))
                    .ok_or_else(|| {
                        Error::corrupt(id, format!("re-encode onto missing version {v}"))
                    })?
                    .table,
            ),
        };
        let mut raw = Vec::new();
        let mut codes = Vec::new();
        for e in entries.iter_mut() {
            raw.clear();
            match &e.value {
                OwnedValue::Overflow { .. } => continue,
                OwnedValue::Raw(b) if table.is_none() => {
                    let _ = b;
                    continue;
                }
                OwnedValue::Raw(b) => raw.extend_from_slice(b),
                OwnedValue::Fsst { .. } => self.read_stored(id, from, e.value(), &mut raw)?,
            }
            let new = match table {
                Some(t) => {
                    codes.clear();
                    match t.encode(&raw, &mut codes) < raw.len() {
                        true => OwnedValue::Fsst {
                            bytes: codes.clone(),
                            len: raw.len(),
                        },
                        false => OwnedValue::Raw(raw.clone()),
                    }
                }
                None => OwnedValue::Raw(raw.clone()),
            };
            e.value = new;
        }
        Ok(())
    }

    /// Rebuilds the latched compact leaf `g` onto version `to` (every inline value re-encoded,
    /// [`BTree::reencode`]); `false` (unchanged) when the rebuilt leaf would not fit its page.
    pub(super) fn c_rebuild_leaf(&self, g: &mut PageWriteGuard<'_>, to: u16) -> Result<bool> {
        let id = g.id();
        let (from, lower, upper, link, mut entries) = {
            let l = self.cleaf(id, g)?;
            (
                l.symtab_version(),
                l.lower_fence().map(<[u8]>::to_vec),
                l.upper_fence().map(<[u8]>::to_vec),
                l.link(),
                l.collect_entries()?,
            )
        };
        self.reencode(id, &mut entries, from, to, true)?;
        let f = Fences {
            lower: lower.as_deref(),
            upper: upper.as_deref(),
        };
        let room = g.len()
            - FENCES_START
            - lower.as_ref().map_or(0, Vec::len)
            - upper.as_ref().map_or(0, Vec::len);
        if entries_size(f, &entries) > room {
            return Ok(false);
        }
        build_compact_leaf(id, g, f, to, link, &entries)?;
        self.tables.retag(from, to);
        Ok(true)
    }

    /// Lazy re-encoding (design §2.5): a write reached latched leaf `g`, which is on a live
    /// version that is not current; rebuild it onto the current one first, once. When the
    /// rebuilt leaf would not fit, the leaf stays as it is and the write stores its value raw
    /// (`choose`), which is valid on any version; the next write tries again.
    pub(super) fn c_lazy_reencode(
        &self,
        g: &mut PageWriteGuard<'_>,
        leaf_version: u16,
    ) -> Result<()> {
        let Some(cur) = self.tables.current() else {
            return Ok(());
        };
        let cur = cur.version.0;
        if leaf_version == 0 || leaf_version == cur {
            return Ok(());
        }
        if self.c_rebuild_leaf(g, cur)? {
            self.tables.count_leaf_reencoded();
        }
        Ok(())
    }

    /// `OPTIMIZE TABLE` (design §2.5 "Retirement"): samples about [`OPTIMIZE_SAMPLE_BYTES`] of
    /// values across the tree, trains and installs the next version (the current one when the
    /// live-version cap is reached), and rewrites every leaf onto it, leaf by leaf, each under
    /// its own exclusive latch. `gate` is taken around the install and around each leaf (the
    /// checkpoint gate shared, in a database), so checkpoints interleave with the walk.
    ///
    /// When every leaf moved, no leaf can be on an older version afterwards (writes and
    /// rebuilds only move leaves onto the current version), so the older versions' page
    /// counts are exactly 0 and the next checkpoint retires them.
    pub fn optimize<G>(&self, mut gate: impl FnMut() -> G) -> Result<OptimizeReport> {
        let mut rep = OptimizeReport::default();
        if self.format.records != crate::format::RecordCodec::Fsst || !self.is_compact() {
            return Ok(rep);
        }
        let sample = self.optimize_sample()?;
        let to = {
            let _g = gate();
            if sample.is_empty() {
                None
            } else {
                let (table, ratio) = super::symtab::train_with(&sample, OPTIMIZE_SAMPLE_BYTES);
                match self.tables.install_counted(table, ratio) {
                    Some(v) => {
                        rep.trained = true;
                        self.tables.count_retrain();
                        Some(v.0)
                    }
                    None => self.tables.current().map(|s| s.version.0),
                }
            }
        };
        let Some(to) = to else {
            return Ok(rep);
        };
        rep.version = Some(to);
        let mut key: Vec<u8> = Vec::new();
        loop {
            let _g = gate();
            let Some(mut g) = self.descend_leaf_write(&key, None)? else {
                continue;
            };
            rep.leaves += 1;
            if !self.c_rebuild_leaf(&mut g, to)? {
                rep.leaves_skipped += 1;
            }
            match self.cleaf(g.id(), &g)?.upper_fence() {
                Some(u) => key = u.to_vec(),
                None => break,
            }
        }
        if rep.leaves_skipped == 0 {
            let _g = gate();
            self.tables.older_than_have_no_pages(TableVersion(to));
        }
        Ok(rep)
    }

    /// A reservoir sample of the tree's inline values (decoded), in key order of the walk.
    fn optimize_sample(&self) -> Result<Vec<Vec<u8>>> {
        let mut out: Vec<Vec<u8>> = Vec::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut seen = 0u64;
        let mut cur = self.range::<std::ops::RangeFull>(..);
        while let Some(row) = cur.next_ref() {
            let (k, v) = row?;
            if !self.inline_value(k.len(), v.len()) {
                continue;
            }
            seen += 1;
            if out.len() < RESERVOIR {
                out.push(v.to_vec());
                continue;
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let j = x % seen;
            if let Some(slot) = out.get_mut(j as usize) {
                *slot = v.to_vec();
            }
        }
        Ok(out)
    }
}
