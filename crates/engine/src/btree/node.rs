//! Slotted-page B+tree nodes and overflow pages.
//!
//! # Node layout (every byte; all integers little-endian)
//!
//! A node is one logical page of `P` bytes (`P` = the database page size, 4–64 KiB).
//!
//! ```text
//! offset  size  field
//!  0      16    storage-owned logical header (page type 1 = Leaf / 2 = Inner, codec, tree id, LSN);
//!               written only through `zipdb_storage::page::LogicalHeader`
//! 16       1    level: 0 for a leaf, 1 for the inner nodes just above the leaves, ...
//! 17       1    flags: reserved, 0
//! 18       2    count: number of cells (= number of slots)
//! 20       4    cell_start: offset of the lowest byte of the cell area (P when there are no
//!               cells); cells grow downwards from the page end
//! 24       4    garbage: bytes inside [cell_start, P) that belong to removed cells; reclaimed
//!               by compaction when a cell does not fit in the contiguous gap
//! 28       2    prefix_len: every key in the node starts with the same prefix_len bytes (a
//!               common prefix, not necessarily the longest one)
//! 30       2    reserved, 0
//! 32       8    link: in a leaf, the page id of the right sibling (0 = none, the last leaf);
//!               in an inner node, the page id of child 0 (keys below the first separator)
//! 40    6*count slot array, in ascending key order; slot i is
//!                 0  2  offset of cell i
//!                 2  4  head of key i: the 4 key bytes after the node's prefix
//!                       (key[prefix_len..prefix_len + 4], zero-padded if shorter) read as a
//!                       big-endian number, stored as a little-endian u32
//!  ...          free gap: from 40 + 6*count up to cell_start
//! cell_start..P cells (in any physical order) and garbage
//! ```
//!
//! The binary search compares the search key's head with the slot heads (one contiguous array,
//! few cache lines) and reads a cell's key only when the heads are equal. Heads are monotone in
//! the key (zero padding never reorders), so a head mismatch decides the comparison.
//!
//! Leaf cell (one key/value pair):
//!
//! ```text
//! 0  2  key length k
//! 2  1  value kind: 0 = inline, 1 = overflow
//! 3  4  value length v (the full value, also when it lives in overflow pages)
//! 7  k  key bytes
//! 7+k   inline: v value bytes | overflow: 8-byte page id of the first overflow page
//! ```
//!
//! Inner cell (separator `s` and child `c`; `c` holds the keys `>= s` and `<` the next
//! separator; child 0 is the header link and holds the keys below the first separator):
//!
//! ```text
//! 0   2  separator length k
//! 2   8  child page id
//! 10  k  separator bytes
//! ```
//!
//! Leaf separators pushed into parents are the shortest prefix of the right node's first key
//! that is greater than the left node's last key (suffix truncation).
//!
//! # Overflow page layout (page type 3)
//!
//! ```text
//! 0   16  storage-owned logical header
//! 16   8  next page id of the chain (0 = last page)
//! 24   4  number of value bytes stored in this page (1 ..= P - 32)
//! 28   4  reserved, 0
//! 32  ..  value bytes
//! ```
//!
//! A value goes to an overflow chain when it is longer than P/4 or when its inline leaf cell
//! (plus its slot) would exceed a quarter of the node's usable space, so that any four cells
//! fit in one node. The chain of a value is owned by exactly one leaf cell; replacing or
//! deleting the value frees the chain.

use zipdb_storage::page::{LogicalHeader, LOGICAL_HEADER_LEN};
use zipdb_storage::{PageId, PageType};

use crate::error::{Error, Result};

pub const OFF_LEVEL: usize = 16;
pub const OFF_FLAGS: usize = 17;
pub const OFF_COUNT: usize = 18;
pub const OFF_CELL_START: usize = 20;
pub const OFF_GARBAGE: usize = 24;
pub const OFF_PREFIX: usize = 28;
pub const OFF_RESERVED: usize = 30;
pub const OFF_LINK: usize = 32;
/// First byte of the slot array.
pub const NODE_HEADER_END: usize = 40;
pub const SLOT_LEN: usize = 6;
pub const LEAF_CELL_HDR: usize = 7;
pub const INNER_CELL_HDR: usize = 10;
pub const OVERFLOW_REF_LEN: usize = 8;

pub const VALUE_INLINE: u8 = 0;
pub const VALUE_OVERFLOW: u8 = 1;

pub const OVF_OFF_NEXT: usize = 16;
pub const OVF_OFF_LEN: usize = 24;
pub const OVF_OFF_RESERVED: usize = 28;
pub const OVF_DATA: usize = 32;

/// Levels above this are nonsense (a tree of 2^64 keys is far shallower).
pub const MAX_LEVEL: u8 = 32;

#[inline]
pub(crate) fn rd_u16(p: &[u8], o: usize) -> usize {
    u16::from_le_bytes([p[o], p[o + 1]]) as usize
}
#[inline]
pub(crate) fn rd_u32(p: &[u8], o: usize) -> usize {
    u32::from_le_bytes([p[o], p[o + 1], p[o + 2], p[o + 3]]) as usize
}
#[inline]
pub(crate) fn rd_u64(p: &[u8], o: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&p[o..o + 8]);
    u64::from_le_bytes(b)
}
#[inline]
pub(crate) fn wr_u16(p: &mut [u8], o: usize, v: usize) {
    p[o..o + 2].copy_from_slice(&(v as u16).to_le_bytes());
}
#[inline]
pub(crate) fn wr_u32(p: &mut [u8], o: usize, v: usize) {
    p[o..o + 4].copy_from_slice(&(v as u32).to_le_bytes());
}
#[inline]
pub(crate) fn wr_u64(p: &mut [u8], o: usize, v: u64) {
    p[o..o + 8].copy_from_slice(&v.to_le_bytes());
}

/// Size limits derived from the page size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub page_size: usize,
    /// Bytes available for slots and cells.
    pub usable: usize,
    /// Largest key accepted.
    pub max_key: usize,
    /// Largest inline leaf cell (excluding its slot).
    pub max_inline_cell: usize,
    /// Largest value kept inline regardless of the key.
    pub max_inline_value: usize,
    /// A node using fewer bytes (cells + slots) than this is underfull.
    pub underfull: usize,
    /// Value bytes per overflow page.
    pub overflow_capacity: usize,
}

impl Limits {
    pub fn new(page_size: usize) -> Limits {
        let usable = page_size - NODE_HEADER_END;
        Limits {
            page_size,
            usable,
            // An inner cell with the largest key and its slot takes at most 1/8 page, so at
            // least 7 fit in a node and splits always leave both halves non-empty.
            max_key: page_size / 8 - INNER_CELL_HDR - SLOT_LEN - 4,
            max_inline_cell: usable / 4 - SLOT_LEN,
            max_inline_value: page_size / 4,
            underfull: usable / 4,
            overflow_capacity: page_size - OVF_DATA,
        }
    }

    /// Whether a value of `vlen` bytes under a key of `klen` bytes is stored inline.
    #[inline]
    pub fn inline(&self, klen: usize, vlen: usize) -> bool {
        vlen <= self.max_inline_value && LEAF_CELL_HDR + klen + vlen <= self.max_inline_cell
    }

    /// Leaf cell length for a key of `klen` and a value of `vlen` (stored as decided by `inline`).
    #[inline]
    pub fn leaf_cell_len(&self, klen: usize, vlen: usize) -> usize {
        if self.inline(klen, vlen) {
            LEAF_CELL_HDR + klen + vlen
        } else {
            LEAF_CELL_HDR + klen + OVERFLOW_REF_LEN
        }
    }

    /// Largest inner cell plus slot: what an inner node must have free to absorb a child split.
    pub fn max_inner_entry(&self) -> usize {
        INNER_CELL_HDR + self.max_key + SLOT_LEN
    }
}

/// The value of a leaf cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafValue<'a> {
    Inline(&'a [u8]),
    Overflow { first: PageId, len: usize },
}

/// A validated read-only view of a node.
#[derive(Clone, Copy)]
pub struct Node<'a> {
    pub id: PageId,
    p: &'a [u8],
    count: usize,
    cell_start: usize,
    level: u8,
}

impl<'a> Node<'a> {
    /// Parses and validates the header of node `id` in page bytes `p`.
    #[inline]
    pub fn parse(id: PageId, p: &'a [u8]) -> Result<Node<'a>> {
        let len = p.len();
        if !(4096..=65536).contains(&len) {
            return Err(Error::corrupt(id, format!("node page of {len} bytes")));
        }
        let ty = LogicalHeader::page_type(p);
        let level = p[OFF_LEVEL];
        let ok_type = (ty == PageType::Leaf as u8 && level == 0)
            || (ty == PageType::Inner as u8 && level > 0 && level <= MAX_LEVEL);
        if !ok_type {
            return Err(Error::corrupt(
                id,
                format!("not a B-tree node (page type {ty}, level {level})"),
            ));
        }
        let count = rd_u16(p, OFF_COUNT);
        let cell_start = rd_u32(p, OFF_CELL_START);
        let garbage = rd_u32(p, OFF_GARBAGE);
        if cell_start > len
            || NODE_HEADER_END + count * SLOT_LEN > cell_start
            || garbage > len - cell_start
            || p[OFF_FLAGS] != 0
            || rd_u16(p, OFF_RESERVED) != 0
        {
            return Err(Error::corrupt(
                id,
                format!(
                    "bad node header: count {count}, cell_start {cell_start}, garbage {garbage}, \
                     flags {}, reserved {}",
                    p[OFF_FLAGS],
                    rd_u16(p, OFF_RESERVED)
                ),
            ));
        }
        Ok(Node {
            id,
            p,
            count,
            cell_start,
            level,
        })
    }

    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        self.p
    }
    #[inline]
    pub fn is_leaf(&self) -> bool {
        self.level == 0
    }
    #[inline]
    pub fn level(&self) -> u8 {
        self.level
    }
    #[inline]
    pub fn count(&self) -> usize {
        self.count
    }
    #[inline]
    pub fn link(&self) -> PageId {
        PageId(rd_u64(self.p, OFF_LINK))
    }
    pub fn garbage(&self) -> usize {
        rd_u32(self.p, OFF_GARBAGE)
    }
    pub fn cell_start(&self) -> usize {
        self.cell_start
    }
    /// Bytes free for new cells and slots (contiguous gap plus garbage).
    #[inline]
    pub fn free_total(&self) -> usize {
        self.cell_start - NODE_HEADER_END - self.count * SLOT_LEN + self.garbage()
    }
    /// Bytes used by live cells and their slots.
    #[inline]
    pub fn used(&self) -> usize {
        self.p.len() - NODE_HEADER_END - self.free_total()
    }

    #[inline]
    fn slot(&self, i: usize) -> usize {
        rd_u16(self.p, NODE_HEADER_END + i * SLOT_LEN)
    }
    /// The head of key `i` stored in its slot.
    #[inline]
    pub fn head(&self, i: usize) -> u32 {
        rd_u32(self.p, NODE_HEADER_END + i * SLOT_LEN + 2) as u32
    }
    /// Length of the prefix all keys of the node share.
    #[inline]
    pub fn prefix_len(&self) -> usize {
        rd_u16(self.p, OFF_PREFIX)
    }

    fn bad_cell(&self, i: usize, why: &str) -> Error {
        Error::corrupt(
            self.id,
            format!("cell {i} (slot offset {}): {why}", self.slot(i)),
        )
    }

    /// The key of cell `i` (`i < count`).
    #[inline]
    pub fn key(&self, i: usize) -> Result<&'a [u8]> {
        let off = self.slot(i);
        let hdr = if self.is_leaf() {
            LEAF_CELL_HDR
        } else {
            INNER_CELL_HDR
        };
        if off < self.cell_start || off + hdr > self.p.len() {
            return Err(self.bad_cell(i, "offset outside the cell area"));
        }
        let k = rd_u16(self.p, off);
        self.p
            .get(off + hdr..off + hdr + k)
            .ok_or_else(|| self.bad_cell(i, "key runs past the page end"))
    }

    /// The whole cell `i`, bounds-checked.
    pub fn cell(&self, i: usize) -> Result<&'a [u8]> {
        let off = self.slot(i);
        let len = self.cell_len_at(i, off)?;
        Ok(&self.p[off..off + len])
    }

    fn cell_len_at(&self, i: usize, off: usize) -> Result<usize> {
        let p = self.p;
        if self.is_leaf() {
            if off < self.cell_start || off + LEAF_CELL_HDR > p.len() {
                return Err(self.bad_cell(i, "offset outside the cell area"));
            }
            let k = rd_u16(p, off);
            let len = match p[off + 2] {
                VALUE_INLINE => LEAF_CELL_HDR + k + rd_u32(p, off + 3),
                VALUE_OVERFLOW => LEAF_CELL_HDR + k + OVERFLOW_REF_LEN,
                other => return Err(self.bad_cell(i, &format!("unknown value kind {other}"))),
            };
            if off + len > p.len() {
                return Err(self.bad_cell(i, "cell runs past the page end"));
            }
            Ok(len)
        } else {
            if off < self.cell_start || off + INNER_CELL_HDR > p.len() {
                return Err(self.bad_cell(i, "offset outside the cell area"));
            }
            let len = INNER_CELL_HDR + rd_u16(p, off);
            if off + len > p.len() {
                return Err(self.bad_cell(i, "cell runs past the page end"));
            }
            Ok(len)
        }
    }

    /// Length of cell `i` (without its slot).
    pub fn cell_len(&self, i: usize) -> Result<usize> {
        self.cell_len_at(i, self.slot(i))
    }

    /// The value of leaf cell `i`.
    #[inline]
    pub fn value(&self, i: usize) -> Result<LeafValue<'a>> {
        let off = self.slot(i);
        let len = self.cell_len_at(i, off)?;
        let p = self.p;
        let k = rd_u16(p, off);
        let v = rd_u32(p, off + 3);
        let body = off + LEAF_CELL_HDR + k;
        if p[off + 2] == VALUE_INLINE {
            Ok(LeafValue::Inline(&p[body..off + len]))
        } else {
            let first = PageId(rd_u64(p, body));
            if first.is_none() {
                return Err(self.bad_cell(i, "overflow value without a first page"));
            }
            Ok(LeafValue::Overflow { first, len: v })
        }
    }

    /// Child `i` of an inner node (`i <= count`): 0 is the link, `i` is cell `i - 1`'s child.
    #[inline]
    pub fn child(&self, i: usize) -> Result<PageId> {
        let id = if i == 0 {
            self.link()
        } else {
            let off = self.slot(i - 1);
            if off < self.cell_start || off + INNER_CELL_HDR > self.p.len() {
                return Err(self.bad_cell(i - 1, "offset outside the cell area"));
            }
            PageId(rd_u64(self.p, off + 2))
        };
        if id.is_none() {
            return Err(Error::corrupt(self.id, format!("child {i} is page 0")));
        }
        Ok(id)
    }

    /// Binary search: `Ok(i)` if cell `i` has `key`, else `Err(i)` with the insert position.
    #[inline]
    pub fn search(&self, key: &[u8]) -> Result<std::result::Result<usize, usize>> {
        let count = self.count;
        if count == 0 {
            return Ok(Err(0));
        }
        let plen = self.prefix_len();
        if plen > 0 {
            let k0 = self.key(0)?;
            if k0.len() < plen {
                return Err(self.bad_cell(0, "key shorter than the node prefix"));
            }
            let n = plen.min(key.len());
            match key[..n].cmp(&k0[..n]) {
                std::cmp::Ordering::Less => return Ok(Err(0)),
                std::cmp::Ordering::Greater => return Ok(Err(count)),
                std::cmp::Ordering::Equal if key.len() < plen => return Ok(Err(0)),
                std::cmp::Ordering::Equal => {}
            }
        }
        let h = key_head(&key[plen..]);
        let (mut lo, mut hi) = (0usize, count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let hm = self.head(mid);
            let ord = if hm != h {
                hm.cmp(&h)
            } else {
                let k = self.key(mid)?;
                match k.get(plen..) {
                    Some(rest) => rest.cmp(&key[plen..]),
                    None => return Err(self.bad_cell(mid, "key shorter than the node prefix")),
                }
            };
            match ord {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(Ok(mid)),
            }
        }
        Ok(Err(lo))
    }

    /// Index of the child of an inner node that covers `key`.
    #[inline]
    pub fn child_index(&self, key: &[u8]) -> Result<usize> {
        Ok(match self.search(key)? {
            Ok(i) => i + 1,
            Err(i) => i,
        })
    }

    /// Index of the child of an inner node that holds the greatest keys `< key`.
    pub fn child_index_below(&self, key: &[u8]) -> Result<usize> {
        Ok(match self.search(key)? {
            Ok(i) => i,
            Err(i) => i,
        })
    }
}

/// Writes the node header (bytes 16..40) of an empty node; the caller sets bytes 0..16.
pub fn init_node(p: &mut [u8], level: u8, link: PageId) {
    let len = p.len();
    p[OFF_LEVEL] = level;
    p[OFF_FLAGS] = 0;
    wr_u16(p, OFF_COUNT, 0);
    wr_u32(p, OFF_CELL_START, len);
    wr_u32(p, OFF_GARBAGE, 0);
    wr_u16(p, OFF_PREFIX, 0);
    wr_u16(p, OFF_RESERVED, 0);
    wr_u64(p, OFF_LINK, link.0);
}

pub fn set_link(p: &mut [u8], link: PageId) {
    wr_u64(p, OFF_LINK, link.0);
}

/// Sets the page type in the storage header, keeping codecs (the cold one too), tree and LSN.
pub fn set_page_type(p: &mut [u8], ty: PageType) {
    LogicalHeader::set_page_type(p, ty);
}

/// Rewrites node `p` to hold exactly `cells` (raw cell bytes, in key order).
/// The caller guarantees they fit.
pub fn build_node(p: &mut [u8], level: u8, link: PageId, cells: &[&[u8]]) {
    init_node(p, level, link);
    let mut top = p.len();
    for (i, c) in cells.iter().enumerate() {
        top -= c.len();
        p[top..top + c.len()].copy_from_slice(c);
        wr_u16(p, NODE_HEADER_END + i * SLOT_LEN, top);
    }
    debug_assert!(NODE_HEADER_END + cells.len() * SLOT_LEN <= top);
    wr_u16(p, OFF_COUNT, cells.len());
    wr_u32(p, OFF_CELL_START, top);
    let leaf = level == 0;
    let plen = match (cells.first(), cells.last()) {
        (Some(f), Some(l)) => common_prefix(raw_cell_key(f, leaf), raw_cell_key(l, leaf)),
        _ => 0,
    };
    set_prefix(p, plen, cells.iter().map(|c| raw_cell_key(c, leaf)));
}

/// Length of the common prefix of `a` and `b`.
#[inline]
pub fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The head of a key suffix: its first 4 bytes, zero-padded, as a big-endian number.
#[inline]
pub fn key_head(rest: &[u8]) -> u32 {
    let mut b = [0u8; 4];
    let n = rest.len().min(4);
    b[..n].copy_from_slice(&rest[..n]);
    u32::from_be_bytes(b)
}

/// Sets the node prefix length and rewrites every slot head; `keys` are the node's keys in
/// slot order.
fn set_prefix<'k>(p: &mut [u8], plen: usize, keys: impl Iterator<Item = &'k [u8]>) {
    wr_u16(p, OFF_PREFIX, plen);
    for (i, k) in keys.enumerate() {
        let rest = k.get(plen..).unwrap_or(&[]);
        wr_u32(
            p,
            NODE_HEADER_END + i * SLOT_LEN + 2,
            key_head(rest) as usize,
        );
    }
}

/// Bytes (cells + slots) that `cells` take in a node.
pub fn cells_size(cells: &[&[u8]]) -> usize {
    cells.iter().map(|c| c.len() + SLOT_LEN).sum()
}

/// Copies the cells of a node out (for splits, merges and compaction).
pub fn collect_cells(node: &Node<'_>) -> Result<Vec<Vec<u8>>> {
    (0..node.count())
        .map(|i| node.cell(i).map(|c| c.to_vec()))
        .collect()
}

/// Inserts a cell of `len` bytes at slot position `pos`, filled by `fill`. Returns `false`
/// (leaving the node unchanged) if it does not fit. `p` must be a validated node.
pub fn insert_cell(
    id: PageId,
    p: &mut [u8],
    pos: usize,
    len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> Result<bool> {
    let node = Node::parse(id, p)?;
    let count = node.count();
    if node.free_total() < len + SLOT_LEN {
        return Ok(false);
    }
    let gap_end = node.cell_start();
    if gap_end - (NODE_HEADER_END + count * SLOT_LEN) < len + SLOT_LEN {
        compact(id, p)?;
    }
    let cell_start = rd_u32(p, OFF_CELL_START);
    let at = cell_start - len;
    fill(&mut p[at..cell_start]);
    let s = NODE_HEADER_END + pos * SLOT_LEN;
    let e = NODE_HEADER_END + count * SLOT_LEN;
    p.copy_within(s..e, s + SLOT_LEN);
    wr_u16(p, s, at);
    wr_u16(p, OFF_COUNT, count + 1);
    wr_u32(p, OFF_CELL_START, at);
    // Keep the prefix valid for the new key, and set its head.
    let leaf = p[OFF_LEVEL] == 0;
    let new_key = raw_cell_key(&p[at..at + len], leaf).to_vec();
    let plen = rd_u16(p, OFF_PREFIX);
    let keep = if count == 0 {
        new_key.len()
    } else {
        let node = Node::parse(id, p)?;
        let other = node.key(if pos == 0 { 1 } else { 0 })?;
        if other.len() < plen {
            return Err(Error::corrupt(id, "key shorter than the node prefix"));
        }
        common_prefix(&new_key, &other[..plen])
    };
    let keep = keep.min(u16::MAX as usize);
    if count == 0 || keep < plen {
        let copy = p.to_vec();
        let node = Node::parse(id, &copy)?;
        let keys: Vec<&[u8]> = (0..count + 1).map(|i| node.key(i)).collect::<Result<_>>()?;
        set_prefix(p, keep, keys.into_iter());
    } else {
        wr_u32(p, s + 2, key_head(&new_key[plen..]) as usize);
    }
    Ok(true)
}

/// Overwrites cell `pos` in place with a cell of the same length `len` (the same key with a
/// new value of the same size), filled by `fill`. Returns `false` (node unchanged) when the
/// lengths differ. Updates that keep a row's size (most OLTP updates) then move no slots,
/// leave no garbage and need no compaction.
pub fn replace_cell_same_len(
    id: PageId,
    p: &mut [u8],
    pos: usize,
    len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> Result<bool> {
    let node = Node::parse(id, p)?;
    if pos >= node.count() {
        return Err(Error::corrupt(
            id,
            format!("replace of cell {pos} of {}", node.count()),
        ));
    }
    let off = node.slot(pos);
    if node.cell_len_at(pos, off)? != len {
        return Ok(false);
    }
    fill(&mut p[off..off + len]);
    Ok(true)
}

/// Inserts raw cell bytes at `pos`.
pub fn insert_raw(id: PageId, p: &mut [u8], pos: usize, cell: &[u8]) -> Result<bool> {
    insert_cell(id, p, pos, cell.len(), |dst| dst.copy_from_slice(cell))
}

/// Removes cell `pos`; its bytes become garbage (or are given back if they are the lowest).
pub fn remove_cell(id: PageId, p: &mut [u8], pos: usize) -> Result<()> {
    let node = Node::parse(id, p)?;
    let count = node.count();
    if pos >= count {
        return Err(Error::corrupt(
            id,
            format!("remove of cell {pos} of {count}"),
        ));
    }
    let len = node.cell_len(pos)?;
    let off = node.slot(pos);
    let cell_start = node.cell_start();
    let garbage = node.garbage();
    let s = NODE_HEADER_END + pos * SLOT_LEN;
    let e = NODE_HEADER_END + count * SLOT_LEN;
    p.copy_within(s + SLOT_LEN..e, s);
    wr_u16(p, OFF_COUNT, count - 1);
    if off == cell_start {
        wr_u32(p, OFF_CELL_START, cell_start + len);
    } else {
        wr_u32(p, OFF_GARBAGE, garbage + len);
    }
    if count == 1 {
        wr_u32(p, OFF_CELL_START, p.len());
        wr_u32(p, OFF_GARBAGE, 0);
        wr_u16(p, OFF_PREFIX, 0);
    }
    Ok(())
}

/// Rewrites a node without garbage.
pub fn compact(id: PageId, p: &mut [u8]) -> Result<()> {
    let copy = p.to_vec();
    let node = Node::parse(id, &copy)?;
    let cells: Vec<&[u8]> = (0..node.count())
        .map(|i| node.cell(i))
        .collect::<Result<_>>()?;
    build_node(p, node.level(), node.link(), &cells);
    Ok(())
}

/// Writes a leaf cell header and key into `dst`; returns the offset where the value goes.
pub fn write_leaf_cell_head(dst: &mut [u8], key: &[u8], kind: u8, vlen: usize) -> usize {
    wr_u16(dst, 0, key.len());
    dst[2] = kind;
    wr_u32(dst, 3, vlen);
    dst[LEAF_CELL_HDR..LEAF_CELL_HDR + key.len()].copy_from_slice(key);
    LEAF_CELL_HDR + key.len()
}

/// A leaf cell as owned bytes.
pub fn leaf_cell(key: &[u8], value: LeafValue<'_>) -> Vec<u8> {
    match value {
        LeafValue::Inline(v) => {
            let mut c = vec![0u8; LEAF_CELL_HDR + key.len() + v.len()];
            let at = write_leaf_cell_head(&mut c, key, VALUE_INLINE, v.len());
            c[at..].copy_from_slice(v);
            c
        }
        LeafValue::Overflow { first, len } => {
            let mut c = vec![0u8; LEAF_CELL_HDR + key.len() + OVERFLOW_REF_LEN];
            let at = write_leaf_cell_head(&mut c, key, VALUE_OVERFLOW, len);
            wr_u64(&mut c, at, first.0);
            c
        }
    }
}

/// An inner cell as owned bytes.
pub fn inner_cell(key: &[u8], child: PageId) -> Vec<u8> {
    let mut c = vec![0u8; INNER_CELL_HDR + key.len()];
    wr_u16(&mut c, 0, key.len());
    wr_u64(&mut c, 2, child.0);
    c[INNER_CELL_HDR..].copy_from_slice(key);
    c
}

/// Key of a raw cell (leaf or inner).
pub fn raw_cell_key(cell: &[u8], leaf: bool) -> &[u8] {
    let k = rd_u16(cell, 0);
    let h = if leaf { LEAF_CELL_HDR } else { INNER_CELL_HDR };
    &cell[h..h + k]
}

/// Child of a raw inner cell.
pub fn raw_cell_child(cell: &[u8]) -> PageId {
    PageId(rd_u64(cell, 2))
}

/// Picks where to split `cells` so that both parts fit and are close in bytes.
/// For leaves the right part starts at the returned index; for inner nodes the cell at the
/// returned index moves up and both sides keep at least one cell where possible.
pub fn split_point(cells: &[&[u8]], leaf: bool, usable: usize) -> usize {
    let n = cells.len();
    let total = cells_size(cells);
    let (lo, hi) = if leaf {
        (1, n - 1)
    } else {
        (1, n.saturating_sub(2).max(1))
    };
    let mut best = lo;
    let mut best_diff = usize::MAX;
    let mut left = 0usize;
    for (i, c) in cells.iter().enumerate().take(hi + 1) {
        if i >= lo {
            let right = if leaf {
                total - left
            } else {
                total - left - c.len() - SLOT_LEN
            };
            if left <= usable && right <= usable {
                let diff = left.abs_diff(right);
                if diff < best_diff {
                    best_diff = diff;
                    best = i;
                }
            }
        }
        left += c.len() + SLOT_LEN;
    }
    best
}

/// Where to split `cells` when the cell that overflowed the node is the last one (an append,
/// as in loading rows in key order): the left part keeps as much as fits in 15/16 of the page,
/// leaving room for rows that grow, and the rest goes right. Balanced splits would leave every
/// page of an ascending load half empty for good. `None` when no such split keeps both parts
/// within a page (the caller then splits balanced). Same index convention as
/// [`split_point`].
pub fn split_point_append(cells: &[&[u8]], leaf: bool, usable: usize) -> Option<usize> {
    let n = cells.len();
    if n < 2 || (!leaf && n < 3) {
        return None;
    }
    let target = usable - usable / 16;
    let total = cells_size(cells);
    let mut left = 0usize;
    let mut best = None;
    for (i, c) in cells.iter().enumerate() {
        let last_allowed = if leaf { n - 1 } else { n - 2 };
        if i >= 1 && i <= last_allowed {
            let right = if leaf {
                total - left
            } else {
                total - left - c.len() - SLOT_LEN
            };
            if left > target {
                break;
            }
            if right <= usable {
                best = Some(i);
            }
        }
        left += c.len() + SLOT_LEN;
    }
    best
}

/// The shortest separator `s` with `left < s <= right` (requires `left < right`).
pub fn shortest_separator<'b>(left: &[u8], right: &'b [u8]) -> &'b [u8] {
    let common = left.iter().zip(right).take_while(|(a, b)| a == b).count();
    &right[..(common + 1).min(right.len())]
}

/// Initializes an overflow page's body.
pub fn write_overflow(p: &mut [u8], next: PageId, data: &[u8]) {
    wr_u64(p, OVF_OFF_NEXT, next.0);
    wr_u32(p, OVF_OFF_LEN, data.len());
    wr_u32(p, OVF_OFF_RESERVED, 0);
    p[OVF_DATA..OVF_DATA + data.len()].copy_from_slice(data);
}

/// Parses an overflow page: (next, data).
pub fn read_overflow(id: PageId, p: &[u8]) -> Result<(PageId, &[u8])> {
    if p.len() < OVF_DATA || LogicalHeader::page_type(p) != PageType::Overflow as u8 {
        return Err(Error::corrupt(
            id,
            format!(
                "expected an overflow page, found page type {}",
                p.first().copied().unwrap_or(0)
            ),
        ));
    }
    let len = rd_u32(p, OVF_OFF_LEN);
    if len == 0 || OVF_DATA + len > p.len() || rd_u32(p, OVF_OFF_RESERVED) != 0 {
        return Err(Error::corrupt(
            id,
            format!("overflow page holds {len} bytes"),
        ));
    }
    Ok((
        PageId(rd_u64(p, OVF_OFF_NEXT)),
        &p[OVF_DATA..OVF_DATA + len],
    ))
}

const _: () = assert!(LOGICAL_HEADER_LEN == 16);

#[cfg(test)]
mod tests {
    use super::*;
    use zipdb_storage::{Codec, TreeId};

    fn leaf_page(size: usize) -> Vec<u8> {
        let mut p = vec![0u8; size];
        LogicalHeader::init(&mut p, PageType::Leaf, Codec::None, TreeId(1));
        init_node(&mut p, 0, PageId::NONE);
        p
    }

    fn put(p: &mut [u8], k: &[u8], v: &[u8]) -> bool {
        let id = PageId(9);
        let pos = match Node::parse(id, p).unwrap().search(k).unwrap() {
            Ok(_) => panic!("dup"),
            Err(i) => i,
        };
        insert_raw(id, p, pos, &leaf_cell(k, LeafValue::Inline(v))).unwrap()
    }

    #[test]
    fn insert_search_remove_compact() {
        let mut p = leaf_page(4096);
        let id = PageId(9);
        for i in (0..100u32).rev() {
            assert!(put(&mut p, format!("k{i:04}").as_bytes(), &i.to_le_bytes()));
        }
        let n = Node::parse(id, &p).unwrap();
        assert_eq!(n.count(), 100);
        for i in 0..100u32 {
            let k = format!("k{i:04}");
            let pos = n.search(k.as_bytes()).unwrap().unwrap();
            assert_eq!(pos, i as usize);
            assert_eq!(n.value(pos).unwrap(), LeafValue::Inline(&i.to_le_bytes()));
        }
        assert_eq!(n.search(b"k0050x").unwrap(), Err(51));
        let used = n.used();
        assert_eq!(used, 100 * (7 + 5 + 4 + SLOT_LEN));
        // Remove every other key: garbage grows, used shrinks.
        for i in (0..100).step_by(2).rev() {
            remove_cell(id, &mut p, i).unwrap();
        }
        let n = Node::parse(id, &p).unwrap();
        assert_eq!(n.count(), 50);
        assert_eq!(n.used(), 50 * (16 + SLOT_LEN));
        assert!(n.garbage() > 0);
        compact(id, &mut p).unwrap();
        let n = Node::parse(id, &p).unwrap();
        assert_eq!(n.garbage(), 0);
        assert_eq!(n.key(0).unwrap(), b"k0001");
        // Fill until full, then compaction inside insert reclaims garbage.
        let mut i = 0;
        while put(&mut p, format!("z{i:05}").as_bytes(), &[7u8; 20]) {
            i += 1;
        }
        let n = Node::parse(id, &p).unwrap();
        assert!(n.free_total() < 20 + 7 + 6 + SLOT_LEN);
    }

    #[test]
    fn nonsense_is_an_error() {
        let mut p = leaf_page(4096);
        assert!(put(&mut p, b"a", b"b"));
        let id = PageId(3);
        let mut bad = p.clone();
        bad[OFF_COUNT] = 0xff;
        bad[OFF_COUNT + 1] = 0xff;
        assert!(
            matches!(Node::parse(id, &bad), Err(Error::Storage(crate::error::StorageError::Corrupt { page, .. })) if page == id)
        );
        let mut bad = p.clone();
        bad[0] = PageType::Inner as u8; // level 0 with inner type
        assert!(Node::parse(id, &bad).is_err());
        let mut bad = p.clone();
        let n = Node::parse(id, &bad).unwrap();
        let off = n.slot(0);
        bad[off] = 0xff; // key length past the page
        bad[off + 1] = 0xff;
        let n = Node::parse(id, &bad).unwrap();
        assert!(n.key(0).is_err());
        assert!(n.search(b"a").is_err());
        let mut bad = p.clone();
        bad[NODE_HEADER_END] = 1; // slot offset into the header
        bad[NODE_HEADER_END + 1] = 0;
        let n = Node::parse(id, &bad).unwrap();
        assert!(n.value(0).is_err());
        // Random garbage never panics.
        let mut x = 12345u64;
        for _ in 0..200 {
            let mut g = p.clone();
            for _ in 0..8 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let at = 16 + (x >> 33) as usize % (g.len() - 16);
                g[at] ^= (x >> 24) as u8;
            }
            if let Ok(n) = Node::parse(id, &g) {
                for i in 0..n.count() {
                    let _ = n.key(i);
                    let _ = n.value(i);
                    let _ = n.cell(i);
                }
                let _ = n.search(b"a");
            }
        }
    }

    #[test]
    fn separators_and_split_points() {
        assert_eq!(shortest_separator(b"abc", b"abd"), b"abd");
        assert_eq!(shortest_separator(b"abc", b"abzzz"), b"abz");
        assert_eq!(shortest_separator(b"ab", b"abc"), b"abc");
        assert_eq!(shortest_separator(b"", b"x"), b"x");
        let cells: Vec<Vec<u8>> = (0..10).map(|i| vec![i as u8; 100]).collect();
        let refs: Vec<&[u8]> = cells.iter().map(|c| c.as_slice()).collect();
        assert_eq!(split_point(&refs, true, 4000), 5);
        assert!([4, 5].contains(&split_point(&refs, false, 4000)));
        // An append keeps the left part up to 15/16 full: 900 - 900 / 16 = 844 bytes hold 8
        // cells of 100 + SLOT_LEN bytes, not 9.
        let a = split_point_append(&refs, true, 900).expect("a split exists");
        assert_eq!(a, 844 / (100 + SLOT_LEN));
        assert!(cells_size(&refs[..a]) <= 844 && cells_size(&refs[a..]) <= 900);
        let a = split_point_append(&refs, false, 900).expect("a split exists");
        assert!(a >= 1 && a + 1 < refs.len());
        assert!(cells_size(&refs[..a]) <= 844 && cells_size(&refs[a + 1..]) <= 900);
        // Too few cells to keep both sides non-empty.
        assert_eq!(split_point_append(&refs[..1], true, 900), None);
        assert_eq!(split_point_append(&refs[..2], false, 900), None);
    }

    #[test]
    fn limits_keep_four_cells_per_node() {
        for ps in [4096usize, 8192, 16384, 65536] {
            let l = Limits::new(ps);
            assert!(4 * (l.max_inline_cell + SLOT_LEN) <= l.usable);
            assert!(7 * l.max_inner_entry() <= l.usable);
            assert!(LEAF_CELL_HDR + l.max_key + OVERFLOW_REF_LEN + SLOT_LEN <= l.usable / 4);
            assert!(l.max_key >= 400);
            assert!(ps - 1 <= u16::MAX as usize);
        }
    }
}
