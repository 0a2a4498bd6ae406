//! The tree-level code of compact trees (issue 19 step 3b, design §2.6 "B-tree"): leaves are
//! compact leaves ([`super::compact`]) with raw values (`records = None`, symbol-table version
//! 0); inner nodes stay classic. `BTree` dispatches its leaf operations here when its format's
//! `nodes` is `Compact`; descents, latching and the inner-node split/merge code are shared with
//! classic trees.
//!
//! # Fences
//!
//! A compact leaf stores the parent separators around it: `lower` = the separator left of the
//! leaf (or unbounded at the tree's left edge), `upper` = the one right of it (unbounded at the
//! right edge). Every operation that moves a separator between two leaves rewrites both
//! leaves' fences in the same latched section:
//! * leaf split: left `lower..sep`, right `sep..upper` (a root split: `-inf..sep`, `sep..+inf`);
//! * merge: the survivor gets `left.lower..right.upper` (the separator between them goes);
//! * redistribution: left `left.lower..new_sep`, right `new_sep..right.upper`; the append
//!   top-up of the rightmost leaf (`c_top_up_left`) is one, done instead of a split;
//! * root collapse copies the only child, whose fences are then necessarily unbounded.
//!
//! Inner-node splits, merges and redistributions only move separators between levels, never
//! change their sequence, so the fences of the leaves below stay equal to their neighbours.

use zipdb_storage::fsst::SymbolTable;
use zipdb_storage::page::LogicalHeader;
use zipdb_storage::pool::{PageReadGuard, PageWriteGuard};
use zipdb_storage::{PageId, PageType};

use super::compact::{
    build_compact_leaf, cell_len, entries_size, insert_cell, remove_cell, replace_if_not_longer,
    varint_len, CompactLeaf, CompactLimits, Entry, Fences, StoredValue, FENCES_START,
};
use super::node::{
    self, build_node, collect_cells, inner_cell, insert_raw, set_page_type, shortest_separator,
    LeafValue, Node, INNER_CELL_HDR, OFF_LEVEL, SLOT_LEN,
};
use super::{BTree, DelOutcome, Path, PutMode, PutOutcome};

/// Sets a compact leaf's symbol-table version when its first FSST cell lands (the node
/// header's `symtab_version`, FORMAT.md "Compact leaf node").
fn set_symtab_version(p: &mut [u8], version: u16) {
    node::wr_u16(p, super::compact::OFF_SYMTAB, usize::from(version));
}

impl BTree {
    /// [`set_symtab_version`] on a leaf that was on `from`, keeping the page counts.
    fn set_leaf_version(&self, p: &mut [u8], from: u16, to: u16) {
        set_symtab_version(p, to);
        self.tables.retag(from, to);
    }
}
use crate::catalog::TableVersion;
use crate::error::{Error, Result};
use crate::format::{NodeFormat, RecordCodec};

/// A node as met during a descent: a classic node (inner, or a classic leaf) or a compact leaf.
pub(super) enum Visit<'a> {
    Node(Node<'a>),
    Compact(CompactLeaf<'a>),
}

/// Adapts a "is this node safe" test written for classic nodes to [`BTree::descend_exclusive`]
/// (classic trees never produce [`Visit::Compact`]).
pub(super) fn classic<'f>(
    f: impl Fn(&Node<'_>) -> Result<bool> + 'f,
) -> impl Fn(&Visit<'_>) -> Result<bool> + 'f {
    move |v| match v {
        Visit::Node(n) => f(n),
        Visit::Compact(_) => Ok(false),
    }
}

/// The overflow chain a stored value owns, if any.
pub(super) fn stored_chain(v: StoredValue<'_>) -> Option<PageId> {
    match v {
        StoredValue::Overflow { first, .. } => Some(first),
        _ => None,
    }
}

fn stored(v: LeafValue<'_>) -> StoredValue<'_> {
    match v {
        LeafValue::Inline(b) => StoredValue::Raw(b),
        LeafValue::Overflow { first, len } => StoredValue::Overflow { first, len },
    }
}

/// The FSST form of a value being written: its codes under the tree's current version,
/// encoded before any latch (`put`), or `None` when it is stored raw or in an overflow chain.
#[derive(Debug, Clone, Copy)]
pub(super) struct Encoded<'a> {
    pub codes: &'a [u8],
    pub version: u16,
}

/// Bytes for slots and cells of a compact leaf with `fences` in a page of `page` bytes.
pub(super) fn room(page: usize, f: Fences<'_>) -> usize {
    page - FENCES_START - f.lower.map_or(0, <[u8]>::len) - f.upper.map_or(0, <[u8]>::len)
}

/// How [`split_entries`] picks the split point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SplitAt {
    /// Both sides about equal in bytes.
    Balanced,
    /// The entry that did not fit is the last one (an ascending load): the left leaf keeps as
    /// much as fits in 15/16 of its room, as classic leaves do (`split_point_append`); if the
    /// rest does not fit the right leaf, balanced.
    Append,
    /// As `Append`, but `None` instead of a balanced split.
    AppendOnly,
}

/// Where to split `entries` (which do not fit one leaf with fences `f`) and the separator:
/// the right leaf starts at the returned index. Sizes are exact for each side's own fences
/// (the prefix a side strips depends on the separator). `None` only for
/// [`SplitAt::AppendOnly`].
///
/// Both searches are binary: as `m` grows the separator grows, so the left side's prefix
/// (common prefix of `lower` and the separator) can only shrink and its size only grow, and
/// symmetrically the right side only shrinks.
pub(super) fn split_entries(
    id: PageId,
    page: usize,
    f: Fences<'_>,
    entries: &[Entry],
    how: SplitAt,
) -> Result<Option<(usize, Vec<u8>)>> {
    let n = entries.len();
    if n < 2 {
        return Err(Error::corrupt(
            id,
            "split of a leaf with fewer than 2 entries",
        ));
    }
    let sep = |m: usize| shortest_separator(&entries[m - 1].key, &entries[m].key);
    // (left bytes, left room, right bytes, right room) when the right side starts at `m`.
    let sides = |m: usize| {
        let s = sep(m);
        let lf = Fences {
            lower: f.lower,
            upper: Some(s),
        };
        let rf = Fences {
            lower: Some(s),
            upper: f.upper,
        };
        (
            entries_size(lf, &entries[..m]),
            room(page, lf),
            entries_size(rf, &entries[m..]),
            room(page, rf),
        )
    };
    let fits = |m: usize| {
        let (l, lr, r, rr) = sides(m);
        l <= lr && r <= rr
    };
    let done = |m: usize| Ok(Some((m, sep(m).to_vec())));
    if how != SplitAt::Balanced {
        let slack = (page - FENCES_START) / 16;
        let pred = |m: usize| {
            let (l, lr, _, _) = sides(m);
            l + slack <= lr
        };
        if pred(1) {
            let (mut lo, mut hi) = (1, n - 1);
            while lo < hi {
                let mid = (lo + hi).div_ceil(2);
                if pred(mid) {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            if fits(lo) {
                return done(lo);
            }
        }
        if how == SplitAt::AppendOnly {
            return Ok(None);
        }
    }
    // Balanced: the first m where the left side is at least the right one, or the one before.
    let (mut lo, mut hi) = (1, n - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        let (l, _, r, _) = sides(mid);
        if l >= r {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let diff = |m: usize| {
        let (l, _, r, _) = sides(m);
        l.abs_diff(r)
    };
    let best = [lo.saturating_sub(1).max(1), lo]
        .into_iter()
        .filter(|&m| fits(m))
        .min_by_key(|&m| diff(m));
    if let Some(m) = best {
        return done(m);
    }
    // Unreachable while every cell is at most a quarter of the smallest room (CompactLimits);
    // kept as a scan rather than a panic.
    match (1..n).filter(|&m| fits(m)).min_by_key(|&m| diff(m)) {
        Some(m) => done(m),
        None => Err(Error::corrupt(
            id,
            "no split point fits both compact leaves",
        )),
    }
}

/// Whether a top-up could move even one entry into left sibling `l` (a page of `page`
/// bytes): false when its live cells, the first entry that would move and the append slack
/// already exceed the most room it can have. Checked before collecting both leaves, because
/// an ascending load of large rows overflows the rightmost leaf again when its left sibling
/// is already full (an instrumented 60,000-row fsst load: 265 top-ups tried, 1 moved
/// anything, 212 failed this bound).
///
/// A bound, not a guess: the separator only moves right, so the left leaf's prefix (common
/// to its fences) can only shorten and every cell it holds only widen; its room is largest
/// with a one-byte upper fence; a moved cell is at least its value and a three-byte header.
fn may_take_more(l: &CompactLeaf<'_>, page: usize, first: &Entry) -> bool {
    let slack = (page - FENCES_START) / 16;
    let room_max = page - FENCES_START - l.lower_fence().map_or(0, <[u8]>::len) - 1;
    l.used() + cell_len(0, first.value()) + SLOT_LEN + slack <= room_max
}

impl BTree {
    #[inline]
    pub(super) fn is_compact(&self) -> bool {
        self.format.nodes == NodeFormat::Compact
    }

    pub(super) fn compact_limits(&self) -> CompactLimits {
        CompactLimits::new(self.limits.page_size)
    }

    /// Parses a compact leaf latched by this thread and checks its tree and its symbol-table
    /// version: 0 in trees without a record codec, 0 or an installed version in FSST trees.
    pub(super) fn cleaf<'a>(&self, id: PageId, p: &'a [u8]) -> Result<CompactLeaf<'a>> {
        self.check_tree(id, p)?;
        let l = CompactLeaf::parse(id, p)?;
        let v = l.symtab_version();
        if v != 0 {
            if self.format.records != RecordCodec::Fsst {
                return Err(Error::corrupt(
                    id,
                    format!(
                        "compact leaf of tree {:?} names symbol-table version {v} in a tree \
                         without a record codec",
                        self.tree
                    ),
                ));
            }
            if self.tables.get(TableVersion(v)).is_none() {
                return Err(Error::corrupt(
                    id,
                    format!(
                        "compact leaf of tree {:?} names symbol-table version {v}, which the \
                         tree does not have",
                        self.tree
                    ),
                ));
            }
        }
        Ok(l)
    }

    /// The table of version `v` named by leaf `leaf` (checked by [`BTree::cleaf`], so a miss
    /// here is a leaf with FSST cells and version 0).
    pub(super) fn fsst_table(&self, leaf: PageId, v: u16) -> Result<&SymbolTable> {
        self.tables
            .get(TableVersion(v))
            .map(|s| &s.table)
            .ok_or_else(|| {
                Error::corrupt(
                    leaf,
                    format!(
                        "FSST value in a leaf of tree {:?} with symbol-table version {v}",
                        self.tree
                    ),
                )
            })
    }

    /// Parses any node of this tree: compact trees' leaves (level byte 0) as compact leaves.
    #[inline]
    pub(super) fn visit<'a>(
        &self,
        id: PageId,
        p: &'a [u8],
        level: Option<u8>,
    ) -> Result<Visit<'a>> {
        if self.is_compact() && p.get(OFF_LEVEL) == Some(&0) {
            if level.is_some_and(|l| l != 0) {
                return Err(Error::corrupt(
                    id,
                    format!("leaf where level {level:?} was expected"),
                ));
            }
            return self.cleaf(id, p).map(Visit::Compact);
        }
        self.node(id, p, level).map(Visit::Node)
    }

    /// The node as an inner node, or `None` when it is a leaf (of either format).
    #[inline]
    pub(super) fn inner<'a>(
        &self,
        id: PageId,
        p: &'a [u8],
        level: Option<u8>,
    ) -> Result<Option<Node<'a>>> {
        Ok(match self.visit(id, p, level)? {
            Visit::Node(n) if !n.is_leaf() => Some(n),
            _ => None,
        })
    }

    /// Whether a value of `vlen` bytes under a key of `klen` bytes is stored in the leaf.
    #[inline]
    pub(super) fn inline_value(&self, klen: usize, vlen: usize) -> bool {
        if !self.is_compact() {
            return self.limits.inline(klen, vlen);
        }
        // `CompactLimits::fits_inline` for a raw value, without a value slice: the worst case
        // (no prefix stripped), so the decision holds in every leaf the cell may move to.
        let worst = 1 + varint_len(klen) + varint_len(vlen) + klen.saturating_sub(4) + vlen;
        worst <= self.compact_limits().max_cell
    }

    /// Appends a stored value of a leaf on symbol-table version `version` to `out` (decoding
    /// FSST codes, or reading its overflow chain). `out` grows only while it is smaller than
    /// a value, so a reused buffer makes this allocation-free.
    pub(super) fn read_stored(
        &self,
        leaf: PageId,
        version: u16,
        v: StoredValue<'_>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        match v {
            StoredValue::Raw(b) => out.extend_from_slice(b),
            StoredValue::Overflow { first, len } => self.read_chain(leaf, first, len, out)?,
            StoredValue::Fsst { bytes, len } => {
                let table = self.fsst_table(leaf, version)?;
                let start = out.len();
                let n = self.tables.decode_counted(table, bytes, out).map_err(|e| {
                    Error::corrupt(
                        leaf,
                        format!("tree {:?}: FSST value (version {version}): {e}", self.tree),
                    )
                })?;
                if n != len {
                    out.truncate(start);
                    return Err(Error::corrupt(
                        leaf,
                        format!(
                            "tree {:?}: FSST value decodes to {n} bytes, its cell says {len}",
                            self.tree
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The FSST codes of inline value `v` under the tree's current version, in `buf`, when
    /// the tree has one and they are shorter than `v` (else the value is stored raw).
    pub(super) fn encode_value<'b>(&self, v: &[u8], buf: &'b mut Vec<u8>) -> Option<Encoded<'b>> {
        if !self.is_compact() {
            return None;
        }
        let t = self.tables.current()?;
        let n = self.tables.encode_counted(&t.table, v, buf);
        (n < v.len()).then_some(Encoded {
            codes: &buf[..n],
            version: t.version.0,
        })
    }

    /// How a value is stored in leaf `l`, and the leaf's version afterwards: FSST when encoded
    /// and the leaf is on that version or on none yet, raw (or overflow) otherwise. Raw is
    /// valid in every leaf, so a leaf on another version (one whose lazy rebuild did not fit,
    /// or a retrain raced the put's encode) takes the write without a rebuild.
    fn choose<'v>(
        &self,
        l: &CompactLeaf<'_>,
        val: LeafValue<'v>,
        enc: Option<Encoded<'v>>,
    ) -> (StoredValue<'v>, u16) {
        let lv = l.symtab_version();
        match (val, enc) {
            (LeafValue::Inline(v), Some(e)) if lv == 0 || lv == e.version => (
                StoredValue::Fsst {
                    bytes: e.codes,
                    len: v.len(),
                },
                e.version,
            ),
            _ => (stored(val), lv),
        }
    }

    /// Point lookup in the compact leaf `p` (the leaf covering `key`).
    /// A point read in compact leaf `g`. It decodes its one value even where the leaf has a
    /// decoded view: looking the view up (a shard mutex and a shared reference count) costs
    /// about as much as one decode, and more once threads contend for it.
    pub(super) fn c_lookup(
        &self,
        g: &PageReadGuard<'_>,
        key: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        let id = g.id();
        let l = self.cleaf(id, g)?;
        match l.search(key)? {
            Ok(i) => {
                self.read_stored(id, l.symtab_version(), l.value(i)?, out)?;
                Ok(true)
            }
            Err(_) => Ok(false),
        }
    }

    /// The cell length `key` with `v` gets in leaf `l`, which must cover the key (the descent
    /// chose `l` through separators equal to its fences; anything else is corruption).
    fn cell_len_in(&self, l: &CompactLeaf<'_>, key: &[u8], v: StoredValue<'_>) -> Result<usize> {
        if !l.fences().contains(key) {
            return Err(Error::corrupt(
                l.id,
                "key outside the fences of the leaf the descent reached",
            ));
        }
        Ok(cell_len(key.len() - l.prefix_len(), v))
    }

    pub(super) fn c_put_optimistic(
        &self,
        key: &[u8],
        val: LeafValue<'_>,
        enc: Option<Encoded<'_>>,
        mode: PutMode,
    ) -> Result<Option<PutOutcome>> {
        let Some(mut g) = self.descend_leaf_write(key, None)? else {
            return Ok(None);
        };
        let id = g.id();
        let sv = stored(val);
        // `put` chose inline or overflow with `inline_value`, which must agree with the node's
        // own limit (verify checks the same rule).
        debug_assert!(
            match sv {
                StoredValue::Raw(_) => self.compact_limits().fits_inline(key.len(), sv),
                _ => !self.inline_value(key.len(), sv.logical_len()),
            },
            "inline decision for a value of {} bytes",
            sv.logical_len()
        );
        let l = self.cleaf(id, &g)?;
        let lv = l.symtab_version();
        let l = if lv != 0 && self.tables.current().is_some_and(|c| c.version.0 != lv) {
            self.c_lazy_reencode(&mut g, lv)?;
            self.cleaf(id, &g)?
        } else {
            l
        };
        let lv = l.symtab_version();
        let (sv, version) = self.choose(&l, val, enc);
        let set_version = version != lv;
        let len = self.cell_len_in(&l, key, sv)?;
        let outcome = match l.search(key)? {
            Ok(_) if mode == PutMode::Insert => return Ok(Some(PutOutcome::Exists)),
            Ok(i) => {
                if l.free_space() + l.cell_len(i)? < len {
                    return Ok(None);
                }
                let old = stored_chain(l.value(i)?);
                if !replace_if_not_longer(id, &mut g, i, sv)? {
                    remove_cell(id, &mut g, i)?;
                    if !insert_cell(id, &mut g, i, key, sv)? {
                        return Err(Error::corrupt(id, "replacement cell did not fit"));
                    }
                }
                PutOutcome::Replaced(old)
            }
            Err(pos) => {
                if l.free_space() < len + SLOT_LEN {
                    return Ok(None);
                }
                if !insert_cell(id, &mut g, pos, key, sv)? {
                    return Err(Error::corrupt(id, "cell did not fit"));
                }
                PutOutcome::Inserted
            }
        };
        if set_version {
            self.set_leaf_version(&mut g, lv, version);
        }
        // A re-encode above changed no row, so this is the whole change (an overflow value
        // is not described: a leaf holding one has no view).
        if let LeafValue::Inline(v) = val {
            self.pool.note_view_change(&g, key, Some(v));
        }
        Ok(Some(outcome))
    }

    pub(super) fn c_put_pessimistic(
        &self,
        key: &[u8],
        val: LeafValue<'_>,
        enc: Option<Encoded<'_>>,
        mode: PutMode,
    ) -> Result<PutOutcome> {
        let max_inner = self.limits.max_inner_entry();
        let (path, mut cur) = self.descend_exclusive(key, |v| match v {
            Visit::Node(n) => Ok(!n.is_leaf() && n.free_total() >= max_inner),
            Visit::Compact(l) => {
                let (sv, _) = self.choose(l, val, enc);
                let len = self.cell_len_in(l, key, sv)?;
                Ok(match l.search(key)? {
                    Ok(i) => mode == PutMode::Insert || l.free_space() + l.cell_len(i)? >= len,
                    Err(_) => l.free_space() >= len + SLOT_LEN,
                })
            }
        })?;
        let id = cur.id();
        let l = self.cleaf(id, &cur)?;
        let lv = l.symtab_version();
        let (sv, version) = self.choose(&l, val, enc);
        let set_version = version != lv;
        self.cell_len_in(&l, key, sv)?;
        let (pos, outcome) = match l.search(key)? {
            Ok(_) if mode == PutMode::Insert => return Ok(PutOutcome::Exists),
            Ok(i) => {
                let old = stored_chain(l.value(i)?);
                remove_cell(id, &mut cur, i)?;
                (i, PutOutcome::Replaced(old))
            }
            Err(pos) => (pos, PutOutcome::Inserted),
        };
        if insert_cell(id, &mut cur, pos, key, sv)? {
            if set_version {
                self.set_leaf_version(&mut cur, lv, version);
            }
            return Ok(outcome);
        }
        // The split builds both halves on one version: the current one when the leaf (or the
        // new value's codes, if a retrain raced the put) is on an older one.
        let target = self.target_version(&[lv, version]);
        let mut entries = self.cleaf(id, &cur)?.collect_entries()?;
        self.reencode(id, &mut entries, lv, target, false)?;
        let mut new = Entry::new(key, sv);
        self.reencode(id, std::slice::from_mut(&mut new), version, target, false)?;
        entries.insert(pos, new);
        self.c_split_leaf(path, cur, entries, pos, target)?;
        Ok(outcome)
    }

    /// Compact leaf `cur` must come to hold `entries`, which do not fit one page: split it with
    /// fences (module docs) and push the separator up the latched `path`.
    fn c_split_leaf<'a>(
        &'a self,
        mut path: Path<'a>,
        mut cur: PageWriteGuard<'a>,
        entries: Vec<Entry>,
        inserted: usize,
        version: u16,
    ) -> Result<()> {
        let id = cur.id();
        let rightmost = self.cleaf(id, &cur)?.upper_fence().is_none();
        if inserted + 1 == entries.len() && rightmost && id != self.root {
            match self.c_top_up_left(&mut path, cur, &entries, version)? {
                Some(g) => cur = g,
                None => return Ok(()),
            }
        }
        let (lower, upper, link, old_version) = {
            let l = self.cleaf(id, &cur)?;
            (
                l.lower_fence().map(<[u8]>::to_vec),
                l.upper_fence().map(<[u8]>::to_vec),
                l.link(),
                l.symtab_version(),
            )
        };
        let f = Fences {
            lower: lower.as_deref(),
            upper: upper.as_deref(),
        };
        let how = match inserted + 1 == entries.len() {
            true => SplitAt::Append,
            false => SplitAt::Balanced,
        };
        let (m, sep) = split_entries(id, cur.len(), f, &entries, how)?
            .ok_or_else(|| Error::corrupt(id, "no split point for a compact leaf"))?;
        // The separator divides the leaf's range: lower < sep < upper, so both halves get
        // non-empty, ordered fences.
        debug_assert!(f.lower.is_none_or(|l| l < &sep[..]) && f.contains(&sep));
        let left_f = Fences {
            lower: f.lower,
            upper: Some(&sep),
        };
        let right_f = Fences {
            lower: Some(&sep),
            upper: f.upper,
        };
        let image = self.format.image;
        let mut r = self
            .pool
            .allocate_cold(PageType::Leaf, self.tree, image, self.format.cold)?;
        let rid = r.id();
        if id == self.root {
            // Root split: the contents move into two new leaves, the root becomes their parent.
            debug_assert_eq!(f, Fences::UNBOUNDED, "a root leaf is unbounded");
            build_compact_leaf(rid, &mut r, right_f, version, PageId::NONE, &entries[m..])?;
            let mut l =
                self.pool
                    .allocate_cold(PageType::Leaf, self.tree, image, self.format.cold)?;
            build_compact_leaf(l.id(), &mut l, left_f, version, rid, &entries[..m])?;
            set_page_type(&mut cur, PageType::Inner);
            build_node(&mut cur, 1, l.id(), &[&inner_cell(&sep, rid)]);
            self.tables.retag(old_version, 0);
            self.tables.page_added(TableVersion(version));
            self.tables.page_added(TableVersion(version));
            return Ok(());
        }
        build_compact_leaf(rid, &mut r, right_f, version, link, &entries[m..])?;
        build_compact_leaf(id, &mut cur, left_f, version, rid, &entries[..m])?;
        self.tables.retag(old_version, version);
        self.tables.page_added(TableVersion(version));
        let sep_cell = inner_cell(&sep, rid);
        drop(r);
        drop(cur);
        self.push_up(path, id, 0, sep_cell)
    }

    /// An append overflowed the rightmost leaf `cur` (upper fence unbounded), which must come
    /// to hold `entries`. That leaf strips no prefix, so it fills at the widest encoding; the
    /// leaf left of it, cut off by the previous append split, holds its entries at its own,
    /// narrower encoding and is only partly full, and an ascending load never adds to it. So
    /// before splitting, move entries into that left sibling up to 15/16 of its room and move
    /// the separator between them: `None` when that made room for everything (no split),
    /// otherwise the latched `cur` back (nothing changed) for an ordinary split.
    ///
    /// Latching: the parent is exclusively latched (it is the last entry of `path`: the leaf
    /// was not safe), so no descent reaches either leaf; `cur` is released and the two leaves
    /// are latched left to right, as `rebalance` does for a last child.
    fn c_top_up_left<'a>(
        &'a self,
        path: &mut Path<'a>,
        cur: PageWriteGuard<'a>,
        entries: &[Entry],
        version: u16,
    ) -> Result<Option<PageWriteGuard<'a>>> {
        let rid = cur.id();
        let Some((parent, idx)) = path.last_mut() else {
            return Ok(Some(cur));
        };
        let (pid, idx) = (parent.id(), *idx);
        if idx == 0 {
            return Ok(Some(cur));
        }
        let (left_id, old_sep, pfree, old_len) = {
            let pn = self.node(pid, parent, Some(1))?;
            if pn.child(idx)? != rid {
                return Err(Error::corrupt(
                    pid,
                    "latched path does not lead to the leaf",
                ));
            }
            (
                pn.child(idx - 1)?,
                pn.key(idx - 1)?.to_vec(),
                pn.free_total(),
                pn.cell_len(idx - 1)?,
            )
        };
        drop(cur);
        let mut left = self.pool.write(left_id)?;
        let mut right = self.pool.write(rid)?;
        let refused;
        let (lower, kept, mut all, left_version, target) = {
            let l = self.cleaf(left_id, &left)?;
            let lv = l.symtab_version();
            if l.upper_fence() != Some(&old_sep[..]) || l.link() != rid {
                return Err(Error::corrupt(
                    left_id,
                    "left sibling's upper fence or link differs from the parent",
                ));
            }
            let target = self.target_version(&[lv, version]);
            // The bound holds only while no cell is re-encoded (a newer table can shrink
            // them). Debug builds go on and assert below that it never refuses a top-up.
            refused =
                lv == version && target == version && !may_take_more(&l, left.len(), &entries[0]);
            if refused && !cfg!(debug_assertions) {
                drop(left);
                return Ok(Some(right));
            }
            (
                l.lower_fence().map(<[u8]>::to_vec),
                l.count(),
                l.collect_entries()?,
                lv,
                target,
            )
        };
        let right_version = self.cleaf(rid, &right)?.symtab_version();
        self.reencode(left_id, &mut all, left_version, target, false)?;
        let mut moved = entries.to_vec();
        self.reencode(rid, &mut moved, version, target, false)?;
        all.extend(moved);
        let version = target;
        let f = Fences {
            lower: lower.as_deref(),
            upper: None,
        };
        // Only an append split (left at most 15/16 full, the rest fitting the right leaf) is a
        // top-up. None may exist: moving the separator right can shorten the left leaf's
        // prefix and widen every entry it already holds.
        let fit = split_entries(left_id, left.len(), f, &all, SplitAt::AppendOnly)?;
        let Some((m, sep)) =
            fit.filter(|(m, sep)| *m > kept && pfree + old_len >= INNER_CELL_HDR + sep.len())
        else {
            drop(left);
            return Ok(Some(right));
        };
        debug_assert!(!refused, "may_take_more refused a top-up that fits");
        let left_f = Fences {
            lower: f.lower,
            upper: Some(&sep),
        };
        let right_f = Fences {
            lower: Some(&sep),
            upper: None,
        };
        build_compact_leaf(left_id, &mut left, left_f, version, rid, &all[..m])?;
        build_compact_leaf(rid, &mut right, right_f, version, PageId::NONE, &all[m..])?;
        self.tables.retag(left_version, version);
        self.tables.retag(right_version, version);
        drop(left);
        drop(right);
        node::remove_cell(pid, parent, idx - 1)?;
        if !insert_raw(pid, parent, idx - 1, &inner_cell(&sep, rid))? {
            return Err(Error::corrupt(pid, "separator did not fit after a top-up"));
        }
        Ok(None)
    }

    /// Inserts the separator cell of a split child (at `level`) into its latched parent, the
    /// last entry of `path`, splitting the parent (classic inner node) if it is full.
    pub(super) fn push_up<'a>(
        &'a self,
        mut path: Path<'a>,
        child: PageId,
        level: u8,
        sep_cell: Vec<u8>,
    ) -> Result<()> {
        let Some((mut parent, idx)) = path.pop() else {
            return Err(Error::corrupt(
                child,
                "split of a node whose parent is not latched",
            ));
        };
        let pid = parent.id();
        if insert_raw(pid, &mut parent, idx, &sep_cell)? {
            return Ok(());
        }
        let pn = self.node(pid, &parent, Some(level + 1))?;
        let mut cells = collect_cells(&pn)?;
        cells.insert(idx, sep_cell);
        self.split(path, parent, cells, idx)
    }

    pub(super) fn c_delete_optimistic(&self, key: &[u8]) -> Result<Option<DelOutcome>> {
        let Some(mut g) = self.descend_leaf_write(key, None)? else {
            return Ok(None);
        };
        let id = g.id();
        let l = self.cleaf(id, &g)?;
        let Ok(i) = l.search(key)? else {
            // Releasing the latch moves the version on: say that nothing changed.
            self.pool.note_view_change(&g, key, None);
            return Ok(Some(DelOutcome::NotFound));
        };
        let len = l.cell_len(i)? + SLOT_LEN;
        if id != self.root && l.used() - len < self.limits.underfull {
            return Ok(None);
        }
        let chain = stored_chain(l.value(i)?);
        remove_cell(id, &mut g, i)?;
        self.pool.note_view_change(&g, key, None);
        Ok(Some(DelOutcome::Deleted(chain)))
    }

    pub(super) fn c_delete_pessimistic(&self, key: &[u8]) -> Result<DelOutcome> {
        let lim = self.limits;
        let (path, mut cur) = self.descend_exclusive(key, |v| match v {
            Visit::Node(n) => Ok(n.used() >= lim.underfull + lim.max_inner_entry()),
            Visit::Compact(l) => Ok(match l.search(key)? {
                Ok(i) => l.used() >= lim.underfull + l.cell_len(i)? + SLOT_LEN,
                Err(_) => true,
            }),
        })?;
        let id = cur.id();
        let l = self.cleaf(id, &cur)?;
        let Ok(i) = l.search(key)? else {
            return Ok(DelOutcome::NotFound);
        };
        let chain = stored_chain(l.value(i)?);
        remove_cell(id, &mut cur, i)?;
        self.rebalance(path, cur)?;
        Ok(DelOutcome::Deleted(chain))
    }

    /// Merges or redistributes the adjacent compact leaves `left` and `right` (one of them
    /// underfull), whose separator is cell `sep_idx` of the latched `parent`.
    pub(super) fn c_rebalance_leaves(
        &self,
        parent: &mut PageWriteGuard<'_>,
        mut left: PageWriteGuard<'_>,
        mut right: PageWriteGuard<'_>,
        sep_idx: usize,
    ) -> Result<()> {
        let (pid, lid, rid) = (parent.id(), left.id(), right.id());
        let (lower, upper, rlink, lused, rused, entries, version) = {
            let (ll, rl) = (self.cleaf(lid, &left)?, self.cleaf(rid, &right)?);
            let old_sep = self.node(pid, parent, Some(1))?.key(sep_idx)?;
            if ll.upper_fence() != Some(old_sep) || rl.lower_fence() != Some(old_sep) {
                return Err(Error::corrupt(
                    pid,
                    format!("separator {sep_idx} differs from the fences of leaves {lid}, {rid}"),
                ));
            }
            // Encoded bytes move as they are when both leaves are on the target version; a
            // side on another one is re-encoded.
            let (lv, rv) = (ll.symtab_version(), rl.symtab_version());
            let version = self.target_version(&[lv, rv]);
            let mut entries = ll.collect_entries()?;
            self.reencode(lid, &mut entries, lv, version, false)?;
            let mut right_entries = rl.collect_entries()?;
            self.reencode(rid, &mut right_entries, rv, version, false)?;
            entries.extend(right_entries);
            (
                ll.lower_fence().map(<[u8]>::to_vec),
                rl.upper_fence().map(<[u8]>::to_vec),
                rl.link(),
                ll.used(),
                rl.used(),
                entries,
                (lv, rv, version),
            )
        };
        let (lv, rv, version) = version;
        let page = left.len();
        let merged = Fences {
            lower: lower.as_deref(),
            upper: upper.as_deref(),
        };
        if entries_size(merged, &entries) <= room(page, merged) {
            // Merge right into left: the survivor spans both ranges.
            build_compact_leaf(lid, &mut left, merged, version, rlink, &entries)?;
            self.pool.free(right)?;
            self.tables.retag(lv, version);
            self.tables.page_removed(TableVersion(rv));
            drop(left);
            return node::remove_cell(pid, parent, sep_idx);
        }
        let underfull = self.limits.underfull;
        if lused >= underfull && rused >= underfull {
            return Ok(());
        }
        let (m, sep) = split_entries(lid, page, merged, &entries, SplitAt::Balanced)?
            .ok_or_else(|| Error::corrupt(lid, "no split point for a compact leaf"))?;
        let (pfree, old_len) = {
            let pn = self.node(pid, parent, Some(1))?;
            (pn.free_total(), pn.cell_len(sep_idx)?)
        };
        if pfree + old_len < INNER_CELL_HDR + sep.len() {
            // The parent cannot take the longer separator: leave both leaves as they are.
            return Ok(());
        }
        let left_f = Fences {
            lower: merged.lower,
            upper: Some(&sep),
        };
        let right_f = Fences {
            lower: Some(&sep),
            upper: merged.upper,
        };
        build_compact_leaf(lid, &mut left, left_f, version, rid, &entries[..m])?;
        build_compact_leaf(rid, &mut right, right_f, version, rlink, &entries[m..])?;
        self.tables.retag(lv, version);
        self.tables.retag(rv, version);
        drop(left);
        drop(right);
        node::remove_cell(pid, parent, sep_idx)?;
        if !insert_raw(pid, parent, sep_idx, &inner_cell(&sep, rid))? {
            return Err(Error::corrupt(
                pid,
                "separator did not fit after redistribution",
            ));
        }
        Ok(())
    }

    /// [`BTree::apply_sorted`]'s write into the latched compact leaf covering `key`; `false`
    /// (nothing changed) when it needs the pessimistic path.
    pub(super) fn c_apply_in_leaf(
        &self,
        g: &mut PageWriteGuard<'_>,
        key: &[u8],
        value: Option<&[u8]>,
        chains: &mut Vec<PageId>,
    ) -> Result<bool> {
        let id = g.id();
        let l = self.cleaf(id, g)?;
        match (value, l.search(key)?) {
            (Some(v), found) => {
                // Encoded under the leaf latch with whatever version the tree has now (replay,
                // and commits applied a leaf at a time): `choose` settles it against the
                // leaf's version as the ordinary put does. Encoding is a few hundred
                // nanoseconds a row, short beside the descent the batch saves.
                let mut buf = super::ENC_BUF.with(|b| std::mem::take(&mut *b.borrow_mut()));
                let enc = self.encode_value(v, &mut buf);
                let (sv, version) = self.choose(&l, LeafValue::Inline(v), enc);
                let lv = l.symtab_version();
                let set_version = version != lv;
                // (An error below drops `buf`: the next put on this thread allocates anew.)
                let len = self.cell_len_in(&l, key, sv)?;
                let done = 'w: {
                    let pos = match found {
                        Ok(i) => {
                            if l.free_space() + l.cell_len(i)? < len {
                                break 'w false;
                            }
                            chains.extend(stored_chain(l.value(i)?));
                            if replace_if_not_longer(id, g, i, sv)? {
                                break 'w true;
                            }
                            remove_cell(id, g, i)?;
                            i
                        }
                        Err(pos) => {
                            if l.free_space() < len + SLOT_LEN {
                                break 'w false;
                            }
                            pos
                        }
                    };
                    if !insert_cell(id, g, pos, key, sv)? {
                        return Err(Error::corrupt(id, "cell did not fit"));
                    }
                    true
                };
                if done && set_version {
                    self.set_leaf_version(g, lv, version);
                }
                let r = Ok(done);
                super::ENC_BUF.with(|b| *b.borrow_mut() = buf);
                return r;
            }
            (None, Err(_)) => {}
            (None, Ok(i)) => {
                let len = l.cell_len(i)? + SLOT_LEN;
                if id != self.root && l.used() - len < self.limits.underfull {
                    return Ok(false);
                }
                chains.extend(stored_chain(l.value(i)?));
                remove_cell(id, g, i)?;
            }
        }
        Ok(true)
    }

    /// The overflow chains owned by the cells of compact leaf `p`.
    pub(super) fn c_leaf_chains(&self, l: &CompactLeaf<'_>) -> Result<Vec<PageId>> {
        (0..l.count())
            .filter_map(|i| l.value(i).map(stored_chain).transpose())
            .collect()
    }

    /// Root collapse copied a compact leaf into the root: it must span the whole key space.
    pub(super) fn c_check_root_leaf(&self, root: &[u8]) -> Result<()> {
        let l = self.cleaf(self.root, root)?;
        if l.fences() != Fences::UNBOUNDED {
            return Err(Error::corrupt(self.root, "root leaf with bounded fences"));
        }
        debug_assert_eq!(LogicalHeader::page_type(root), PageType::Leaf as u8);
        Ok(())
    }
}
