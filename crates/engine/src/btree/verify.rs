//! Structural verification of a tree.

use std::collections::HashSet;

use zipdb_storage::page::LogicalHeader;
use zipdb_storage::PageId;

use super::compact::StoredValue;
use super::node::{key_head, read_overflow, LeafValue, NODE_HEADER_END, SLOT_LEN};
use super::BTree;
use crate::catalog::TableVersion;
use crate::error::{Error, Result};

/// What `verify` found in a healthy tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Number of levels (1 for a lone root leaf).
    pub depth: usize,
    pub leaves: u64,
    pub inner_nodes: u64,
    pub overflow_pages: u64,
    pub entries: u64,
    pub key_bytes: u64,
    pub value_bytes: u64,
}

struct Walk {
    report: VerifyReport,
    seen: HashSet<PageId>,
    /// Leaves in key order.
    leaves: Vec<(PageId, PageId)>,
    /// Compact leaves per FSST symbol-table version (the recount `verify` stores).
    versions: Vec<(TableVersion, u64)>,
}

impl BTree {
    /// Checks the whole tree: node headers and free-space bookkeeping, cell bounds and
    /// overlaps, key order within nodes, every key within its parent's separators, all leaves
    /// at the same depth, the leaf sibling chain, fill (no empty node but the root), overflow
    /// chains, and that no page is reachable twice. Must run without concurrent writers
    /// (`Database::verify` holds the checkpoint gate) or it may report phantom damage.
    pub fn verify(&self) -> Result<VerifyReport> {
        let mut w = Walk {
            report: VerifyReport::default(),
            seen: HashSet::new(),
            leaves: Vec::new(),
            versions: Vec::new(),
        };
        let root_level = {
            let g = self.pool.read(self.root)?;
            self.inner(self.root, &g, None)?.map_or(0, |n| n.level())
        };
        w.report.depth = root_level as usize + 1;
        self.verify_node(&mut w, self.root, root_level, None, None)?;
        for pair in w.leaves.windows(2) {
            let ((a, link), (b, _)) = (pair[0], pair[1]);
            if link != b {
                return Err(Error::corrupt(
                    a,
                    format!("leaf links to {link}, the next leaf in key order is {b}"),
                ));
            }
        }
        if let Some(&(last, link)) = w.leaves.last() {
            if !link.is_none() {
                return Err(Error::corrupt(last, format!("last leaf links to {link}")));
            }
        }
        // The recount of the per-version page counts (design §2.5 "Retirement"): exact here,
        // since no writer runs during `verify`; counts kept exact by allocate, free and
        // rebuild must agree with it.
        self.tables
            .set_page_counts(&w.versions)
            .map_err(|e| Error::corrupt(self.root, format!("symbol-table page counts: {e}")))?;
        Ok(w.report)
    }

    fn verify_node(
        &self,
        w: &mut Walk,
        id: PageId,
        level: u8,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Result<()> {
        if !w.seen.insert(id) {
            return Err(Error::corrupt(id, "page reachable twice"));
        }
        if level == 0 && self.is_compact() {
            let chains = {
                let g = self.pool.read(id)?;
                self.verify_compact_leaf(w, id, &g, lo, hi)?
            };
            for (first, len) in chains {
                self.verify_chain(w, id, first, len)?;
            }
            return Ok(());
        }
        let mut children = Vec::new();
        let mut chains = Vec::new();
        {
            let g = self.pool.read(id)?;
            let n = self.node(id, &g, Some(level))?;
            let is_root = id == self.root;
            let count = n.count();
            if count == 0 && !is_root && n.is_leaf() {
                return Err(Error::corrupt(id, "empty leaf that is not the root"));
            }
            if count == 0 && is_root && !n.is_leaf() {
                return Err(Error::corrupt(id, "root inner node without separators"));
            }
            // Free-space bookkeeping: cells + garbage fill [cell_start, P); no overlaps.
            let mut spans = Vec::with_capacity(count);
            let mut sum = 0usize;
            for i in 0..count {
                let c = n.cell(i)?;
                let off = c.as_ptr() as usize - g.as_ptr() as usize;
                spans.push((off, c.len()));
                sum += c.len();
            }
            spans.sort_unstable();
            for s in spans.windows(2) {
                if s[0].0 + s[0].1 > s[1].0 {
                    return Err(Error::corrupt(
                        id,
                        format!("cells at {} and {} overlap", s[0].0, s[1].0),
                    ));
                }
            }
            if sum + n.garbage() != g.len() - n.cell_start() {
                return Err(Error::corrupt(
                    id,
                    format!(
                        "cells ({sum} bytes) + garbage ({}) != cell area ({} bytes)",
                        n.garbage(),
                        g.len() - n.cell_start()
                    ),
                ));
            }
            debug_assert!(NODE_HEADER_END + count * SLOT_LEN <= n.cell_start());
            // Key order, prefix and heads, fences.
            let mut prev: Option<&[u8]> = None;
            let plen = n.prefix_len();
            for i in 0..count {
                let k = n.key(i)?;
                let k0 = n.key(0)?;
                if k.len() < plen || k0.len() < plen || k[..plen] != k0[..plen] {
                    return Err(Error::corrupt(
                        id,
                        format!("key {i} does not have the node prefix"),
                    ));
                }
                if n.head(i) != key_head(&k[plen..]) {
                    return Err(Error::corrupt(id, format!("slot {i} has a stale key head")));
                }
                if let Some(p) = prev {
                    if p >= k {
                        return Err(Error::corrupt(
                            id,
                            format!("keys {i} and {} out of order", i - 1),
                        ));
                    }
                }
                if lo.is_some_and(|lo| k < lo) || hi.is_some_and(|hi| k >= hi) {
                    return Err(Error::corrupt(
                        id,
                        format!("key {i} outside the parent's separators"),
                    ));
                }
                prev = Some(k);
            }
            if n.is_leaf() {
                w.report.leaves += 1;
                w.leaves.push((id, n.link()));
                for i in 0..count {
                    let k = n.key(i)?;
                    w.report.entries += 1;
                    w.report.key_bytes += k.len() as u64;
                    match n.value(i)? {
                        LeafValue::Inline(v) => {
                            if !self.limits.inline(k.len(), v.len()) {
                                return Err(Error::corrupt(
                                    id,
                                    format!("cell {i}: value of {} bytes inline", v.len()),
                                ));
                            }
                            w.report.value_bytes += v.len() as u64;
                        }
                        LeafValue::Overflow { first, len } => {
                            if self.limits.inline(k.len(), len) {
                                return Err(Error::corrupt(
                                    id,
                                    format!("cell {i}: value of {len} bytes in overflow"),
                                ));
                            }
                            w.report.value_bytes += len as u64;
                            chains.push((first, len));
                        }
                    }
                }
            } else {
                w.report.inner_nodes += 1;
                for i in 0..=count {
                    let lo_i = if i == 0 {
                        lo.map(|s| s.to_vec())
                    } else {
                        Some(n.key(i - 1)?.to_vec())
                    };
                    let hi_i = if i == count {
                        hi.map(|s| s.to_vec())
                    } else {
                        Some(n.key(i)?.to_vec())
                    };
                    children.push((n.child(i)?, lo_i, hi_i));
                }
            }
        }
        for (first, len) in chains {
            self.verify_chain(w, id, first, len)?;
        }
        for (child, lo_i, hi_i) in children {
            self.verify_node(w, child, level - 1, lo_i.as_deref(), hi_i.as_deref())?;
        }
        Ok(())
    }

    /// A compact leaf: its own checks ([`CompactLeaf::verify`]: fences, prefix, heads, order,
    /// zeroed gap, cell bookkeeping), fences equal to the parent separators around it
    /// (`lo`/`hi`, unbounded at the tree's edges), raw values only (no record codec yet), and
    /// each value inline exactly when [`BTree::inline_value`] says so. Returns the overflow
    /// chains to check.
    fn verify_compact_leaf(
        &self,
        w: &mut Walk,
        id: PageId,
        p: &[u8],
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Result<Vec<(PageId, usize)>> {
        let l = self.cleaf(id, p)?;
        l.verify()?;
        if l.symtab_version() != 0 {
            let v = TableVersion(l.symtab_version());
            match w.versions.iter_mut().find(|(x, _)| *x == v) {
                Some((_, n)) => *n += 1,
                None => w.versions.push((v, 1)),
            }
        }
        if l.count() == 0 && id != self.root {
            return Err(Error::corrupt(id, "empty leaf that is not the root"));
        }
        if l.lower_fence() != lo || l.upper_fence() != hi {
            return Err(Error::corrupt(
                id,
                format!(
                    "fences {:?}..{:?} differ from the parent's separators {lo:?}..{hi:?}",
                    l.lower_fence(),
                    l.upper_fence()
                ),
            ));
        }
        w.report.leaves += 1;
        w.leaves.push((id, l.link()));
        let mut chains = Vec::new();
        let mut scratch = Vec::new();
        for i in 0..l.count() {
            let klen = l.key_len(i)?;
            w.report.entries += 1;
            w.report.key_bytes += klen as u64;
            let (len, inline) = match l.value(i)? {
                StoredValue::Raw(v) => (v.len(), true),
                StoredValue::Overflow { first, len } => {
                    chains.push((first, len));
                    (len, false)
                }
                v @ StoredValue::Fsst { len, .. } => {
                    // Decodes to exactly its length with a version the tree has
                    // (`read_stored` checks both; `cleaf` checked the version exists).
                    scratch.clear();
                    self.read_stored(id, l.symtab_version(), v, &mut scratch)
                        .map_err(|e| Error::corrupt(id, format!("cell {i}: {e}")))?;
                    (len, true)
                }
            };
            if self.inline_value(klen, len) != inline {
                return Err(Error::corrupt(
                    id,
                    format!("cell {i}: value of {len} bytes stored inline: {inline}"),
                ));
            }
            w.report.value_bytes += len as u64;
        }
        Ok(chains)
    }

    fn verify_chain(&self, w: &mut Walk, leaf: PageId, first: PageId, len: usize) -> Result<()> {
        let mut id = first;
        let mut remaining = len;
        let mut prev = leaf;
        while !id.is_none() {
            if !w.seen.insert(id) {
                return Err(Error::corrupt(id, "overflow page reachable twice"));
            }
            let g = self.pool.read(id)?;
            self.check_tree(id, &g)?;
            if LogicalHeader::codec(&g) != self.format.image {
                return Err(Error::corrupt(
                    id,
                    "overflow page with another codec than its tree",
                ));
            }
            let (next, data) = read_overflow(id, &g)?;
            if data.len() > remaining {
                return Err(Error::corrupt(id, "overflow chain longer than its value"));
            }
            if !next.is_none() && data.len() != self.limits.overflow_capacity {
                return Err(Error::corrupt(id, "overflow page not full but not last"));
            }
            remaining -= data.len();
            w.report.overflow_pages += 1;
            prev = id;
            id = next;
        }
        if remaining != 0 {
            return Err(Error::corrupt(
                prev,
                format!("overflow chain ends {remaining} bytes early"),
            ));
        }
        Ok(())
    }
}
