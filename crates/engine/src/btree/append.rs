//! Ascending appends at the right edge of a compact tree with raw values, a leaf at a time.
//!
//! A CREATE INDEX hands its sorted keys to an empty tree, and a bulk insert's commit hands
//! ascending keys to a tree it extends. Through the ordinary path every key is searched for
//! and inserted into its leaf alone, and each full leaf is then collected, split and rebuilt,
//! and rebuilt once more when the next split tops it up (`c_top_up_left`): four passes over
//! every entry. Here the rightmost leaf's entries and the next keys are gathered into one
//! window, a little over a leaf, and the leaf is built once with its final content and fences
//! (15/16 full, as an append split leaves it); the few entries past the split point start the
//! new rightmost leaf, and only they are gathered again for the next window.
//!
//! FSST trees (a bulk insert's primary tree) encode each new value with the tree's current
//! symbol table, as the ordinary path does, and rebuild the rightmost leaf's own entries onto
//! that version when the leaf is on an older one; raw values are valid on every version.

use zipdb_storage::{PageId, PageType};

use super::compact::{build_compact_leaf, cell_len, entries_size, Entry, Fences, StoredValue};
use super::compact_tree::{room, split_entries, SplitAt, Visit};
use super::node::{common_prefix, inner_cell, SLOT_LEN};
use super::BTree;
use crate::catalog::TableVersion;
use crate::error::{Error, Result};

impl BTree {
    /// Applies the longest prefix of `writes` (strictly ascending) that appends to the tree's
    /// right edge: inline puts, each key above every key the tree holds. Returns how many
    /// writes it applied; the caller applies the rest through the ordinary path. A tree whose
    /// root is a leaf takes its writes one at a time here until the root splits.
    /// With `live` (a commit, not replay), the values written are offered to the FSST
    /// trainer after each leaf, as the ordinary path offers them.
    pub(crate) fn c_append_sorted(
        &self,
        writes: &[(&[u8], Option<&[u8]>)],
        live: bool,
    ) -> Result<usize> {
        if !self.is_compact() {
            return Ok(0);
        }
        fn inline<'v>(t: &BTree, k: &[u8], v: Option<&'v [u8]>) -> Option<&'v [u8]> {
            v.filter(|v| k.len() <= t.limits.max_key && t.inline_value(k.len(), v.len()))
        }
        let max_inner = self.limits.max_inner_entry();
        let mut i = 0;
        while let Some(&(key, value)) = writes.get(i) {
            let Some(value) = inline(self, key, value) else {
                break;
            };
            let (path, mut cur) = self.descend_exclusive(key, |v| match v {
                Visit::Node(n) => Ok(!n.is_leaf() && n.free_total() >= max_inner),
                Visit::Compact(_) => Ok(false),
            })?;
            let id = cur.id();
            if id == self.root {
                // The root stays the root page when it splits (`c_split_leaf`): one write
                // through the ordinary path, until it does.
                drop(cur);
                drop(path);
                self.upsert(key, value)?;
                i += 1;
                continue;
            }
            let (lower, entries, lv) = {
                let l = self.cleaf(id, &cur)?;
                // Not the right edge (separators above every key, left by deletes), or not
                // an append: the ordinary path.
                if l.upper_fence().is_some() || l.link() != PageId::NONE {
                    break;
                }
                if l.count() > 0 && l.cmp_key(l.count() - 1, key)?.is_ge() {
                    break;
                }
                (
                    l.lower_fence().map(<[u8]>::to_vec),
                    l.collect_entries()?,
                    l.symtab_version(),
                )
            };
            // Every leaf built here is on the tree's current version (0 before training).
            let current = self.tables.current();
            let version = self.target_version(&[lv, current.as_ref().map_or(0, |c| c.version.0)]);
            let mut entries = entries;
            self.reencode(id, &mut entries, lv, version, false)?;
            let edge = Fences {
                lower: lower.as_deref(),
                upper: None,
            };
            let page = cur.len();
            let full = room(page, edge);
            // The window: a quarter of a leaf past full, as the left leaf will store it (its
            // fences strip their common prefix, about that of `lower` and the window's last
            // key). The split leaves the left leaf 15/16 full, so the new rightmost leaf
            // starts with about a fifth of one, gathered again for the next window.
            let window = full + full / 4;
            let strip = |k: &[u8]| edge.lower.map_or(0, |l| common_prefix(l, k));
            let stored = |e: &Entry, plen: usize| {
                cell_len(e.key.len().saturating_sub(plen), e.value()) + SLOT_LEN
            };
            let mut plen = entries.last().map_or(usize::MAX, |e| strip(&e.key));
            let mut left_size: usize = entries.iter().map(|e| stored(e, plen)).sum();
            let mut edge_size = entries_size(edge, &entries);
            let taken = i;
            let mut codes = Vec::new();
            while let Some(&(k, v)) = writes.get(i) {
                let Some(v) = inline(self, k, v) else {
                    break;
                };
                debug_assert!(entries.last().is_none_or(|e| e.key.as_slice() < k));
                let e = match current.as_ref().filter(|c| c.version.0 == version) {
                    Some(c) => {
                        let n = self.tables.encode_counted(&c.table, v, &mut codes);
                        match n < v.len() {
                            true => Entry::new(
                                k,
                                StoredValue::Fsst {
                                    bytes: &codes[..n],
                                    len: v.len(),
                                },
                            ),
                            false => Entry::new(k, StoredValue::Raw(v)),
                        }
                    }
                    None => Entry::new(k, StoredValue::Raw(v)),
                };
                if strip(k) < plen {
                    plen = strip(k);
                    left_size = entries.iter().map(|e| stored(e, plen)).sum();
                }
                let add = stored(&e, plen);
                if left_size + add > window {
                    break;
                }
                left_size += add;
                // The right edge strips no prefix (`Fences::prefix_len`).
                edge_size += stored(&e, 0);
                entries.push(e);
                i += 1;
            }
            if i == taken {
                return Err(Error::corrupt(id, "no write fits an empty window"));
            }
            if edge_size <= full {
                build_compact_leaf(id, &mut cur, edge, version, PageId::NONE, &entries)?;
                self.tables.retag(lv, version);
                drop(cur);
                drop(path);
                self.note_appended(&writes[taken..i], live);
                continue;
            }
            // Left 15/16 full and the rest fitting the new rightmost leaf. Keys whose
            // stripped prefix is most of them can make the rest too long for a leaf that
            // strips none: this window's writes then take the ordinary path.
            let Some((m, sep)) = split_entries(id, page, edge, &entries, SplitAt::AppendOnly)?
            else {
                i = taken;
                break;
            };
            let mut r = self.pool.allocate_cold(
                PageType::Leaf,
                self.tree,
                self.format.image,
                self.format.cold,
            )?;
            let rid = r.id();
            let right = Fences {
                lower: Some(&sep),
                upper: None,
            };
            build_compact_leaf(rid, &mut r, right, version, PageId::NONE, &entries[m..])?;
            let left = Fences {
                lower: edge.lower,
                upper: Some(&sep),
            };
            build_compact_leaf(id, &mut cur, left, version, rid, &entries[..m])?;
            self.tables.retag(lv, version);
            self.tables.page_added(TableVersion(version));
            drop(r);
            drop(cur);
            self.push_up(path, id, 0, inner_cell(&sep, rid))?;
            self.note_appended(&writes[taken..i], live);
        }
        Ok(i)
    }

    /// The trainer's share of an append, once no latch is held (see `note_stored`).
    fn note_appended(&self, writes: &[(&[u8], Option<&[u8]>)], live: bool) {
        if live {
            for &(_, v) in writes {
                if let Some(v) = v {
                    self.note_stored(v);
                }
            }
        }
    }
}
