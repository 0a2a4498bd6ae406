//! A concurrent B+tree of byte-string keys (memcmp order) and byte-string values, on top of
//! the buffer pool. The node format is documented in [`node`].
//!
//! # Concurrency protocol
//!
//! Latches are the buffer pool's page latches (shared / exclusive, not reentrant). Every
//! thread acquires them top-down (parent before child) and, among siblings, left before
//! right; overflow pages are latched only while their leaf is latched, in chain order. No
//! latch is held across a call into user code.
//!
//! * **Readers** (`get`, cursors, `verify`) crab down with shared latches: latch the child,
//!   then release the parent.
//! * **Writers, optimistic path**: crab down with shared latches on inner nodes and take the
//!   leaf exclusively (the parent is still held shared while the leaf latch is acquired). If
//!   the change fits in the leaf without a split, and (for deletes) leaves it not underfull,
//!   it is applied; otherwise all latches are released and the writer restarts on the
//!   pessimistic path. A leaf root is read-latched, released, and write-latched again (and
//!   re-checked).
//! * **Writers, pessimistic path**: crab down from the root with exclusive latches; once a
//!   latched child is *safe* (an insert cannot split it: it has room for the largest
//!   separator, or exactly for the new leaf cell; a delete cannot make it underfull even if
//!   it loses its largest possible cell), every ancestor is released. The retained path is
//!   then exactly what a split or merge can modify.
//! * **Splits** write the left half in place and the right half into a new page, and push a
//!   separator into the (latched) parent; a root split moves the root's contents into two new
//!   children, so the root page id never changes.
//! * **Merges**: an underfull node (cells + slots below a quarter of the usable space) is
//!   merged with its right sibling (or its left one when it is the last child: the node's
//!   latch is released and the left sibling and the node are latched in left-to-right order
//!   while the parent stays exclusively latched) when both fit in one page; otherwise the
//!   two are re-balanced if the parent has room for the new separator. A root inner node left
//!   with no separator absorbs its only child (root collapse).
//! * **Cursors** never hold latches between calls: they copy all qualifying entries of one
//!   leaf into a buffer and, for the next batch, re-descend from the root to the leaf's fence
//!   key remembered during the descent (forward: the parent separator above the leaf, which
//!   is greater than every key returned; reverse: the separator below it, so the descent finds
//!   the predecessor leaf). No sibling link is followed with a latch held.
//! * Overflow chains of a replaced or deleted value are freed after the leaf latch is
//!   released: the cell that referenced them is gone, so no one else can reach them.

/// Compact leaf nodes (issue 19); public so that the `compact_leaf` fuzz target reaches them.
/// Trees whose format has `nodes = Compact` use them for every leaf ([`compact_tree`]).
mod append;
pub mod colddict;
pub mod compact;
mod compact_tree;
pub mod cursor;
mod delete;
mod leafview;
pub mod node;
mod reencode;
pub mod symtab;
mod verify;

use crate::error::RequestError;
use std::cell::RefCell;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use zipdb_storage::page::LogicalHeader;
use zipdb_storage::pool::{BufferPool, PageReadGuard, PageWriteGuard};
use zipdb_storage::{Codec, PageId, PageType, TreeId};

use crate::error::{Error, Result};
use crate::format::{NodeFormat, RecordCodec, TreeFormat};
use compact_tree::{classic, Visit};
pub use cursor::Cursor;
use node::{
    build_node, collect_cells, inner_cell, insert_cell, insert_raw, raw_cell_child, raw_cell_key,
    read_overflow, remove_cell, replace_cell_same_len, set_page_type, shortest_separator,
    split_point, split_point_append, write_leaf_cell_head, write_overflow, LeafValue, Limits, Node,
    SLOT_LEN, VALUE_INLINE, VALUE_OVERFLOW,
};
pub use reencode::{OptimizeReport, OPTIMIZE_SAMPLE_BYTES};
pub use verify::VerifyReport;

/// Largest value length the leaf cell format can describe.
pub const MAX_VALUE_LEN: usize = u32::MAX as usize;

thread_local! {
    /// Reused buffer for `get_with`, so a point lookup does not allocate.
    static VALUE_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// FSST codes of the value a `put` on this thread is writing (encoded before latches).
    pub(super) static ENC_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// One B+tree.
pub struct BTree {
    pool: Arc<BufferPool>,
    tree: TreeId,
    root: PageId,
    /// Fixed at creation; `format.image` is the codec every page of the tree gets.
    format: TreeFormat,
    limits: Limits,
    /// FSST symbol tables; empty unless `format.records` is FSST (issue 19 step 4).
    tables: symtab::SymbolTables,
    /// The cold layer's dictionary; collects only if `format.cold` is zstd-dict.
    cold_dict: colddict::ColdDict,
}

impl std::fmt::Debug for BTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BTree")
            .field("tree", &self.tree)
            .field("root", &self.root)
            .field("format", &self.format)
            .finish()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PutMode {
    Insert,
    Upsert,
}

enum PutOutcome {
    Inserted,
    /// The key existed and `insert` left it alone.
    Exists,
    /// The old value was replaced; its overflow chain (if any) must be freed.
    Replaced(Option<PageId>),
}

enum DelOutcome {
    NotFound,
    Deleted(Option<PageId>),
}

type Path<'a> = Vec<(PageWriteGuard<'a>, usize)>;

/// Writes in one sorted batch from which [`BTree::apply_sorted`] tries appending a leaf at a
/// time (append.rs).
const APPEND_BATCH_MIN: usize = 64;

fn chain_of(v: LeafValue<'_>) -> Option<PageId> {
    match v {
        LeafValue::Inline(_) => None,
        LeafValue::Overflow { first, .. } => Some(first),
    }
}

/// Writes a whole leaf cell (header, key, inline value or overflow reference) into `dst`,
/// which has exactly the cell's length.
fn fill_leaf_cell(dst: &mut [u8], key: &[u8], val: LeafValue<'_>) {
    match val {
        LeafValue::Inline(v) => {
            let at = write_leaf_cell_head(dst, key, VALUE_INLINE, v.len());
            dst[at..].copy_from_slice(v);
        }
        LeafValue::Overflow { first, len } => {
            let at = write_leaf_cell_head(dst, key, VALUE_OVERFLOW, len);
            dst[at..at + 8].copy_from_slice(&first.0.to_le_bytes());
        }
    }
}

impl BTree {
    /// Creates an empty tree (one empty root leaf). The caller checks that this build
    /// supports `format` ([`TreeFormat::check_supported`]): classic, or compact leaves with raw
    /// values ([`compact_tree`]).
    pub fn create(pool: Arc<BufferPool>, tree: TreeId, format: TreeFormat) -> Result<BTree> {
        let root = {
            let mut g = pool.allocate_cold(PageType::Leaf, tree, format.image, format.cold)?;
            let id = g.id();
            match format.nodes {
                NodeFormat::Classic => node::init_node(&mut g, 0, PageId::NONE),
                NodeFormat::Compact => compact::init_compact_leaf(
                    id,
                    &mut g,
                    compact::Fences::UNBOUNDED,
                    0,
                    PageId::NONE,
                )?,
            }
            id
        };
        Ok(BTree::open(pool, tree, root, format))
    }

    /// Opens the tree whose root is `root` (same precondition as [`BTree::create`]).
    pub fn open(pool: Arc<BufferPool>, tree: TreeId, root: PageId, format: TreeFormat) -> BTree {
        debug_assert!(format.validate().is_ok(), "invalid tree format {format}");
        let limits = Limits::new(pool.page_size());
        BTree {
            pool,
            tree,
            root,
            format,
            limits,
            tables: symtab::SymbolTables::new(tree),
            cold_dict: colddict::ColdDict::new(tree, format.cold),
        }
    }

    /// Loads the symbol-table versions saved in the tree's catalog entry; called once, before
    /// the tree is shared.
    pub fn load_tables(&mut self, versions: &[crate::catalog::SymbolTableVersion]) -> Result<()> {
        assert!(
            self.tables.is_empty(),
            "tree {:?}: tables loaded twice",
            self.tree
        );
        if !versions.is_empty() && self.format.records != crate::format::RecordCodec::Fsst {
            return Err(Error::corrupt_catalog(format!(
                "tree {:?}: symbol tables, but its records are not FSST ({})",
                self.tree, self.format
            )));
        }
        self.tables = symtab::SymbolTables::from_catalog(self.tree, versions)?;
        Ok(())
    }

    /// The tree's FSST symbol tables (what a checkpoint saves in the catalog).
    pub fn symbol_tables(&self) -> &symtab::SymbolTables {
        &self.tables
    }

    /// The tree's cold-layer dictionary (a checkpoint saves it, then hands it to the pool).
    pub fn cold_dict(&self) -> &colddict::ColdDict {
        &self.cold_dict
    }

    pub fn tree_id(&self) -> TreeId {
        self.tree
    }
    pub fn root(&self) -> PageId {
        self.root
    }
    /// The codec of the tree's page images (`format().image`).
    pub fn codec(&self) -> Codec {
        self.format.image
    }
    pub fn format(&self) -> TreeFormat {
        self.format
    }
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }
    /// Longest key accepted (page_size / 8 - 20 bytes: 492 for 4 KiB pages, 2028 for 16 KiB).
    pub fn max_key_len(&self) -> usize {
        self.limits.max_key
    }
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Parses a node latched by this thread and checks that it belongs to this tree and (if
    /// known) sits at the expected level.
    #[inline]
    fn node<'a>(&self, id: PageId, p: &'a [u8], level: Option<u8>) -> Result<Node<'a>> {
        let n = Node::parse(id, p)?;
        let tree = LogicalHeader::tree(p);
        if tree != self.tree {
            return Err(Error::corrupt(
                id,
                format!(
                    "node belongs to tree {}, expected tree {}",
                    tree.0, self.tree.0
                ),
            ));
        }
        if let Some(l) = level {
            if n.level() != l {
                return Err(Error::corrupt(
                    id,
                    format!("node level {} where {l} was expected", n.level()),
                ));
            }
        }
        Ok(n)
    }

    fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.len() > self.limits.max_key {
            return Err(Error::Request(RequestError::KeyTooLarge {
                len: key.len(),
                max: self.limits.max_key,
            }));
        }
        Ok(())
    }

    // ----------------------------------------------------------------------------------------
    // Reads

    /// Crabs down with shared latches to the leaf that covers `key`.
    fn descend_read(&self, key: &[u8]) -> Result<PageReadGuard<'_>> {
        let mut g = self.pool.read(self.root)?;
        let mut expect = None;
        loop {
            let Some(n) = self.inner(g.id(), &g, expect)? else {
                return Ok(g);
            };
            let child = n.child(n.child_index(key)?)?;
            expect = Some(n.level() - 1);
            g = self.pool.read(child)?;
        }
    }

    /// Appends the value of leaf cell `i` to `out` (reading its overflow chain if needed).
    fn read_value(&self, n: &Node<'_>, i: usize, out: &mut Vec<u8>) -> Result<()> {
        match n.value(i)? {
            LeafValue::Inline(v) => out.extend_from_slice(v),
            LeafValue::Overflow { first, len } => self.read_chain(n.id, first, len, out)?,
        }
        Ok(())
    }

    fn read_chain(&self, leaf: PageId, first: PageId, len: usize, out: &mut Vec<u8>) -> Result<()> {
        let mut id = first;
        let mut remaining = len;
        out.reserve(len);
        let mut prev = leaf;
        while remaining > 0 {
            if id.is_none() {
                return Err(Error::corrupt(
                    prev,
                    format!("overflow chain ends {remaining} bytes early"),
                ));
            }
            let g = self.pool.read(id)?;
            self.check_tree(id, &g)?;
            let (next, data) = read_overflow(id, &g)?;
            if data.len() > remaining {
                return Err(Error::corrupt(id, "overflow chain longer than its value"));
            }
            out.extend_from_slice(data);
            remaining -= data.len();
            prev = id;
            id = next;
        }
        if !id.is_none() {
            return Err(Error::corrupt(
                prev,
                "overflow chain continues past its value",
            ));
        }
        Ok(())
    }

    fn check_tree(&self, id: PageId, p: &[u8]) -> Result<()> {
        let tree = LogicalHeader::tree(p);
        if tree != self.tree {
            return Err(Error::corrupt(
                id,
                format!(
                    "page belongs to tree {}, expected tree {}",
                    tree.0, self.tree.0
                ),
            ));
        }
        Ok(())
    }

    /// Looks `key` up and appends its value to `out`; `false` if absent.
    fn lookup_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        if key.len() > self.limits.max_key {
            return Ok(false);
        }
        let g = self.descend_read(key)?;
        if self.is_compact() {
            return self.c_lookup(&g, key, out);
        }
        let n = self.node(g.id(), &g, Some(0))?;
        match n.search(key)? {
            Ok(i) => {
                self.read_value(&n, i, out)?;
                Ok(true)
            }
            Err(_) => Ok(false),
        }
    }

    /// Whether `key` is in the tree, found without reading its value: no FSST decode and no
    /// overflow chain, which an existence check through [`BTree::get_with`] paid (a decode
    /// per insert and per delete of a row, for nothing).
    pub fn contains(&self, key: &[u8]) -> Result<bool> {
        if key.len() > self.limits.max_key {
            return Ok(false);
        }
        let g = self.descend_read(key)?;
        let id = g.id();
        Ok(match self.is_compact() {
            true => self.cleaf(id, &g)?.search(key)?.is_ok(),
            false => self.node(id, &g, Some(0))?.search(key)?.is_ok(),
        })
    }

    /// The value of `key`, copied out.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut out = Vec::new();
        Ok(self.lookup_into(key, &mut out)?.then_some(out))
    }

    /// Calls `f` with the value of `key` (if present) without allocating: the value is copied
    /// into a reused per-thread buffer, all latches are released, then `f` runs (so `f` may
    /// itself use the database).
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        let mut buf = VALUE_BUF.with(|b| std::mem::take(&mut *b.borrow_mut()));
        buf.clear();
        let found = self.lookup_into(key, &mut buf);
        let r = match found {
            Ok(true) => Ok(Some(f(&buf))),
            Ok(false) => Ok(None),
            Err(e) => Err(e),
        };
        if buf.capacity() <= 1 << 20 {
            VALUE_BUF.with(|b| *b.borrow_mut() = buf);
        }
        r
    }

    /// Forward cursor over the keys in `range`, e.g. `tree.range(..)` or
    /// `tree.range((Bound::Included(&b"a"[..]), Bound::Excluded(&b"m"[..])))`.
    pub fn range<R: RangeBounds<[u8]>>(&self, range: R) -> Cursor<'_> {
        self.range_bounds(range.start_bound(), range.end_bound(), false)
    }

    /// Reverse cursor (descending keys) over `range`.
    pub fn range_rev<R: RangeBounds<[u8]>>(&self, range: R) -> Cursor<'_> {
        self.range_bounds(range.start_bound(), range.end_bound(), true)
    }

    /// Cursor over `lo..hi` in either direction.
    pub fn range_bounds(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>, reverse: bool) -> Cursor<'_> {
        Cursor::new(self, lo, hi, reverse)
    }

    // ----------------------------------------------------------------------------------------
    // Writes

    /// Inserts `key` → `value`; returns `false` (and changes nothing) if `key` exists.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.put(key, value, PutMode::Insert)
    }

    /// Inserts or replaces; returns `true` if an existing value was replaced.
    pub fn upsert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.put(key, value, PutMode::Upsert)
    }

    /// Deletes `key`; returns whether it existed.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        if key.len() > self.limits.max_key {
            return Ok(false);
        }
        let outcome = match (self.is_compact(), self.delete_optimistic_any(key)?) {
            (_, Some(o)) => o,
            (false, None) => self.delete_pessimistic(key)?,
            (true, None) => self.c_delete_pessimistic(key)?,
        };
        match outcome {
            DelOutcome::NotFound => Ok(false),
            DelOutcome::Deleted(chain) => {
                if let Some(c) = chain {
                    self.free_chain(c)?;
                }
                Ok(true)
            }
        }
    }

    /// Applies blind writes (`Some(value)`: upsert, `None`: delete) given in strictly
    /// increasing key order. Recovery uses it (commits use [`BTree::apply_sorted_live`]):
    /// writes that land in the same leaf share one descent and one latch, and the ones that
    /// would split or underfill the leaf, or need an overflow chain, go through
    /// [`BTree::upsert`]/[`BTree::delete`]. The result is the same as applying them one by one.
    pub fn apply_sorted(&self, writes: &[(&[u8], Option<&[u8]>)]) -> Result<()> {
        self.apply_sorted_with(writes, false)
    }

    fn apply_sorted_with(&self, writes: &[(&[u8], Option<&[u8]>)], live: bool) -> Result<()> {
        debug_assert!(
            writes.windows(2).all(|w| w[0].0 < w[1].0),
            "keys not increasing"
        );
        let simple = |key: &[u8], value: Option<&[u8]>| {
            key.len() <= self.limits.max_key
                && value.is_none_or(|v| self.inline_value(key.len(), v.len()))
        };
        let mut chains = Vec::new();
        // A batch long enough to be a load may append at the right edge, a leaf at a time;
        // short ones (most commits) are not worth the exclusive descent that finds out.
        let mut i = match writes.len() >= APPEND_BATCH_MIN {
            true => self.c_append_sorted(writes, live)?,
            false => 0,
        };
        while i < writes.len() {
            let (key, value) = writes[i];
            let mut j = i;
            if simple(key, value) {
                let mut fence = None;
                if let Some(mut g) = self.descend_leaf_write(key, Some(&mut fence))? {
                    while let Some(&(k, v)) = writes.get(j) {
                        let in_leaf = fence.as_deref().is_none_or(|f| k < f);
                        if !in_leaf
                            || !simple(k, v)
                            || !self.apply_in_leaf(&mut g, k, v, &mut chains)?
                        {
                            break;
                        }
                        j += 1;
                    }
                }
                // The leaf is released: offer what went into it to the trainer (the
                // ordinary path below does so itself).
                if live {
                    for &(_, v) in &writes[i..j] {
                        if let Some(v) = v {
                            self.note_stored(v);
                        }
                    }
                }
            }
            if j == i {
                // Needs a split, a merge or an overflow chain: the ordinary path.
                match value {
                    Some(v) => {
                        self.upsert(key, v)?;
                    }
                    None => {
                        self.delete(key)?;
                    }
                }
                j = i + 1;
            }
            // Replaced values' chains are freed once no leaf latch is held.
            for c in chains.drain(..) {
                self.free_chain(c)?;
            }
            i = j;
        }
        Ok(())
    }

    /// [`BTree::apply_sorted`] for live writes (a commit): the same, and then every inline
    /// value written is offered to the FSST trainer as [`BTree::upsert`] offers it, so that a
    /// tree loaded by batched commits is trained as one loaded row by row. Replay does not
    /// train (its trees are trained already, or train on the next live writes).
    pub fn apply_sorted_live(&self, writes: &[(&[u8], Option<&[u8]>)]) -> Result<()> {
        self.apply_sorted_with(writes, true)
    }

    /// First training and drift retraining (design §2.5) of an FSST tree, for an inline value
    /// just stored: after the write released its latches, still under the caller's
    /// `gate.read()`, so the install precedes any checkpoint that could capture a page naming
    /// the version.
    fn note_stored(&self, v: &[u8]) {
        if self.format.records != RecordCodec::Fsst {
            return;
        }
        match self.tables.is_empty() {
            true => self.tables.note_raw_for_training(v),
            false => {
                self.tables.note_written(v);
                self.cold_dict.note(&self.tables, v, &self.pool);
            }
        }
    }

    /// One write of [`BTree::apply_sorted`] into the latched leaf that covers its key; `false`
    /// (nothing changed) when it needs the pessimistic path.
    fn apply_in_leaf(
        &self,
        g: &mut PageWriteGuard<'_>,
        key: &[u8],
        value: Option<&[u8]>,
        chains: &mut Vec<PageId>,
    ) -> Result<bool> {
        if self.is_compact() {
            return self.c_apply_in_leaf(g, key, value, chains);
        }
        let id = g.id();
        let n = self.node(id, g, Some(0))?;
        let found = n.search(key)?;
        match (value, found) {
            (Some(v), found) => {
                let cell_len = self.limits.leaf_cell_len(key.len(), v.len());
                let pos = match found {
                    Ok(i) => {
                        if n.free_total() + n.cell_len(i)? < cell_len {
                            return Ok(false);
                        }
                        chains.extend(chain_of(n.value(i)?));
                        if self.replace_leaf_cell(g, i, key, LeafValue::Inline(v), cell_len)? {
                            return Ok(true);
                        }
                        remove_cell(id, g, i)?;
                        i
                    }
                    Err(pos) => {
                        if n.free_total() < cell_len + SLOT_LEN {
                            return Ok(false);
                        }
                        pos
                    }
                };
                if !self.insert_leaf_cell(g, pos, key, LeafValue::Inline(v), cell_len)? {
                    return Err(Error::corrupt(id, "cell did not fit"));
                }
            }
            (None, Err(_)) => {}
            (None, Ok(i)) => {
                let len = n.cell_len(i)? + SLOT_LEN;
                if id != self.root && n.used() - len < self.limits.underfull {
                    return Ok(false);
                }
                chains.extend(chain_of(n.value(i)?));
                remove_cell(id, g, i)?;
            }
        }
        Ok(true)
    }

    fn put_dispatch(
        &self,
        key: &[u8],
        val: LeafValue<'_>,
        enc: Option<compact_tree::Encoded<'_>>,
        cell_len: usize,
        mode: PutMode,
    ) -> Result<PutOutcome> {
        match self.is_compact() {
            false => match self.put_optimistic(key, val, cell_len, mode) {
                Ok(Some(o)) => Ok(o),
                Ok(None) => self.put_pessimistic(key, val, cell_len, mode),
                Err(e) => Err(e),
            },
            true => match self.c_put_optimistic(key, val, enc, mode) {
                Ok(Some(o)) => Ok(o),
                Ok(None) => self.c_put_pessimistic(key, val, enc, mode),
                Err(e) => Err(e),
            },
        }
    }

    fn put(&self, key: &[u8], value: &[u8], mode: PutMode) -> Result<bool> {
        self.check_key(key)?;
        if value.len() > MAX_VALUE_LEN {
            return Err(Error::Request(RequestError::ValueTooLarge {
                len: value.len(),
                max: MAX_VALUE_LEN,
            }));
        }
        // Overflow chains are written before any latch is taken.
        let val = if self.inline_value(key.len(), value.len()) {
            LeafValue::Inline(value)
        } else {
            LeafValue::Overflow {
                first: self.write_chain(value)?,
                len: value.len(),
            }
        };
        let cell_len = self.limits.leaf_cell_len(key.len(), value.len());
        // FSST trees encode an inline value with the current table here, before any latch,
        // into a per-thread buffer; it is stored encoded only when shorter (`choose`).
        // Taken out of the thread-local (not borrowed across the put), as `get_with` does.
        let mut buf = ENC_BUF.with(|b| std::mem::take(&mut *b.borrow_mut()));
        let enc = match val {
            LeafValue::Inline(v) => self.encode_value(v, &mut buf),
            LeafValue::Overflow { .. } => None,
        };
        let outcome = self.put_dispatch(key, val, enc, cell_len, mode);
        ENC_BUF.with(|b| *b.borrow_mut() = buf);
        if let LeafValue::Inline(v) = val {
            self.note_stored(v);
        }
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                if let Some(c) = chain_of(val) {
                    let _ = self.free_chain(c);
                }
                return Err(e);
            }
        };
        match outcome {
            PutOutcome::Inserted => Ok(mode == PutMode::Insert),
            PutOutcome::Exists => {
                if let Some(c) = chain_of(val) {
                    self.free_chain(c)?;
                }
                Ok(false)
            }
            PutOutcome::Replaced(old) => {
                if let Some(c) = old {
                    self.free_chain(c)?;
                }
                Ok(true)
            }
        }
    }

    /// Writes `value` into a new overflow chain and returns its first page.
    fn write_chain(&self, value: &[u8]) -> Result<PageId> {
        let mut next = PageId::NONE;
        for chunk in value.chunks(self.limits.overflow_capacity).rev() {
            match self.pool.allocate_cold(
                PageType::Overflow,
                self.tree,
                self.format.image,
                self.format.cold,
            ) {
                Ok(mut g) => {
                    write_overflow(&mut g, next, chunk);
                    next = g.id();
                }
                Err(e) => {
                    if !next.is_none() {
                        let _ = self.free_chain(next);
                    }
                    return Err(e.into());
                }
            }
        }
        Ok(next)
    }

    /// Frees an overflow chain that nothing references any more.
    fn free_chain(&self, first: PageId) -> Result<()> {
        let mut id = first;
        while !id.is_none() {
            let g = self.pool.write(id)?;
            self.check_tree(id, &g)?;
            let (next, _) = read_overflow(id, &g)?;
            self.pool.free(g)?;
            id = next;
        }
        Ok(())
    }

    /// Overwrites the cell at `pos` (which holds `key`) with `key`/`val` when the new cell has
    /// the old one's length; `false` (unchanged) otherwise.
    fn replace_leaf_cell(
        &self,
        g: &mut PageWriteGuard<'_>,
        pos: usize,
        key: &[u8],
        val: LeafValue<'_>,
        len: usize,
    ) -> Result<bool> {
        let id = g.id();
        replace_cell_same_len(id, g, pos, len, |dst| fill_leaf_cell(dst, key, val))
    }

    /// Writes a leaf cell for `key`/`val` at slot `pos`; `false` if it does not fit.
    fn insert_leaf_cell(
        &self,
        g: &mut PageWriteGuard<'_>,
        pos: usize,
        key: &[u8],
        val: LeafValue<'_>,
        len: usize,
    ) -> Result<bool> {
        let id = g.id();
        insert_cell(id, g, pos, len, |dst| fill_leaf_cell(dst, key, val))
    }

    /// Shared crabbing to the leaf covering `key`, which is latched exclusively. `None` when
    /// the root turned out not to be a leaf after re-latching (the caller goes pessimistic).
    /// With `fence`, also sets it to the leaf's upper fence (the separator above it; `None`
    /// for the last leaf): every key from `key` up to it belongs to this leaf.
    fn descend_leaf_write(
        &self,
        key: &[u8],
        mut fence: Option<&mut Option<Vec<u8>>>,
    ) -> Result<Option<PageWriteGuard<'_>>> {
        let mut g = self.pool.read(self.root)?;
        let mut expect = None;
        loop {
            let Some(n) = self.inner(g.id(), &g, expect)? else {
                // Only the root can get here (a leaf root).
                drop(g);
                let w = self.pool.write(self.root)?;
                if self.inner(w.id(), &w, None)?.is_none() {
                    return Ok(Some(w));
                }
                return Ok(None);
            };
            let idx = n.child_index(key)?;
            if let Some(f) = fence.as_deref_mut() {
                if idx < n.count() {
                    *f = Some(n.key(idx)?.to_vec());
                }
            }
            let child = n.child(idx)?;
            let level = n.level() - 1;
            if level == 0 {
                let w = self.pool.write(child)?;
                drop(g);
                self.visit(w.id(), &w, Some(0))?;
                return Ok(Some(w));
            }
            expect = Some(level);
            g = self.pool.read(child)?;
        }
    }

    fn put_optimistic(
        &self,
        key: &[u8],
        val: LeafValue<'_>,
        cell_len: usize,
        mode: PutMode,
    ) -> Result<Option<PutOutcome>> {
        let Some(mut g) = self.descend_leaf_write(key, None)? else {
            return Ok(None);
        };
        let n = self.node(g.id(), &g, Some(0))?;
        match n.search(key)? {
            Ok(i) => {
                if mode == PutMode::Insert {
                    return Ok(Some(PutOutcome::Exists));
                }
                let old_len = n.cell_len(i)?;
                if n.free_total() + old_len < cell_len {
                    return Ok(None);
                }
                let old = chain_of(n.value(i)?);
                let id = g.id();
                if !self.replace_leaf_cell(&mut g, i, key, val, cell_len)? {
                    remove_cell(id, &mut g, i)?;
                    if !self.insert_leaf_cell(&mut g, i, key, val, cell_len)? {
                        return Err(Error::corrupt(id, "replacement cell did not fit"));
                    }
                }
                Ok(Some(PutOutcome::Replaced(old)))
            }
            Err(pos) => {
                if n.free_total() < cell_len + SLOT_LEN {
                    return Ok(None);
                }
                if !self.insert_leaf_cell(&mut g, pos, key, val, cell_len)? {
                    return Err(Error::corrupt(g.id(), "cell did not fit"));
                }
                Ok(Some(PutOutcome::Inserted))
            }
        }
    }

    /// Exclusive crabbing from the root; ancestors are released once a child is `safe`.
    fn descend_exclusive(
        &self,
        key: &[u8],
        safe: impl Fn(&Visit<'_>) -> Result<bool>,
    ) -> Result<(Path<'_>, PageWriteGuard<'_>)> {
        let mut path: Path<'_> = Vec::new();
        let mut cur = self.pool.write(self.root)?;
        let mut expect = None;
        loop {
            let Some(n) = self.inner(cur.id(), &cur, expect)? else {
                return Ok((path, cur));
            };
            let idx = n.child_index(key)?;
            let child = n.child(idx)?;
            let level = n.level() - 1;
            expect = Some(level);
            let c = self.pool.write(child)?;
            let is_safe = safe(&self.visit(c.id(), &c, expect)?)?;
            if is_safe {
                path.clear();
                drop(cur);
            } else {
                path.push((cur, idx));
            }
            cur = c;
        }
    }

    fn put_pessimistic(
        &self,
        key: &[u8],
        val: LeafValue<'_>,
        cell_len: usize,
        mode: PutMode,
    ) -> Result<PutOutcome> {
        let max_inner = self.limits.max_inner_entry();
        let (path, mut cur) = self.descend_exclusive(
            key,
            classic(|n| {
                if !n.is_leaf() {
                    return Ok(n.free_total() >= max_inner);
                }
                Ok(match n.search(key)? {
                    Ok(i) => mode == PutMode::Insert || n.free_total() + n.cell_len(i)? >= cell_len,
                    Err(_) => n.free_total() >= cell_len + SLOT_LEN,
                })
            }),
        )?;
        let id = cur.id();
        let n = self.node(id, &cur, Some(0))?;
        let (pos, outcome) = match n.search(key)? {
            Ok(_) if mode == PutMode::Insert => return Ok(PutOutcome::Exists),
            Ok(i) => {
                let old = chain_of(n.value(i)?);
                remove_cell(id, &mut cur, i)?;
                (i, PutOutcome::Replaced(old))
            }
            Err(pos) => (pos, PutOutcome::Inserted),
        };
        if self.insert_leaf_cell(&mut cur, pos, key, val, cell_len)? {
            return Ok(outcome);
        }
        let n = self.node(id, &cur, Some(0))?;
        let mut cells = collect_cells(&n)?;
        cells.insert(pos, node::leaf_cell(key, val));
        self.split(path, cur, cells, pos)?;
        Ok(outcome)
    }

    /// `cur` must come to hold `cells`, which do not fit in one page: split it, push the
    /// separator up the latched `path`, splitting ancestors as needed. `inserted` is the index
    /// of the cell that did not fit: when it is the last, the split favours appends.
    fn split<'a>(
        &'a self,
        mut path: Path<'a>,
        mut cur: PageWriteGuard<'a>,
        mut cells: Vec<Vec<u8>>,
        mut inserted: usize,
    ) -> Result<()> {
        loop {
            let id = cur.id();
            let (level, link) = {
                let n = self.node(id, &cur, None)?;
                (n.level(), n.link())
            };
            let leaf = level == 0;
            let ty = if leaf {
                PageType::Leaf
            } else {
                PageType::Inner
            };
            let refs: Vec<&[u8]> = cells.iter().map(|c| c.as_slice()).collect();
            let append = inserted + 1 == refs.len();
            let m = append
                .then(|| split_point_append(&refs, leaf, self.limits.usable))
                .flatten()
                .unwrap_or_else(|| split_point(&refs, leaf, self.limits.usable));
            let sep: Vec<u8> = if leaf {
                shortest_separator(raw_cell_key(refs[m - 1], true), raw_cell_key(refs[m], true))
                    .to_vec()
            } else {
                raw_cell_key(refs[m], false).to_vec()
            };
            let (left_cells, right_cells, right_link) = if leaf {
                (&refs[..m], &refs[m..], link)
            } else {
                (&refs[..m], &refs[m + 1..], raw_cell_child(refs[m]))
            };
            if id == self.root {
                // Root split: the contents move into two new children.
                let mut r =
                    self.pool
                        .allocate_cold(ty, self.tree, self.format.image, self.format.cold)?;
                build_node(&mut r, level, right_link, right_cells);
                let mut l =
                    self.pool
                        .allocate_cold(ty, self.tree, self.format.image, self.format.cold)?;
                build_node(&mut l, level, if leaf { r.id() } else { link }, left_cells);
                let root_cell = inner_cell(&sep, r.id());
                if level + 1 > node::MAX_LEVEL {
                    return Err(Error::corrupt(id, "tree too deep"));
                }
                set_page_type(&mut cur, PageType::Inner);
                build_node(&mut cur, level + 1, l.id(), &[&root_cell]);
                return Ok(());
            }
            let mut r =
                self.pool
                    .allocate_cold(ty, self.tree, self.format.image, self.format.cold)?;
            build_node(&mut r, level, right_link, right_cells);
            let new_link = if leaf { r.id() } else { link };
            build_node(&mut cur, level, new_link, left_cells);
            let sep_cell = inner_cell(&sep, r.id());
            drop(r);
            drop(cur);
            let Some((mut parent, idx)) = path.pop() else {
                return Err(Error::corrupt(
                    id,
                    "split of a node whose parent is not latched",
                ));
            };
            let pid = parent.id();
            if insert_raw(pid, &mut parent, idx, &sep_cell)? {
                return Ok(());
            }
            let pn = self.node(pid, &parent, Some(level + 1))?;
            cells = collect_cells(&pn)?;
            cells.insert(idx, sep_cell);
            inserted = idx;
            cur = parent;
        }
    }
}
