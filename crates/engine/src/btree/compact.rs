//! Compact leaf nodes (issue 19, design note §2.3–§2.4): a leaf that stores its fence keys,
//! strips the fences' common prefix from every key, keeps the next 4 key bytes only in the
//! slot head, and describes each cell with varints. Values may be raw, FSST-encoded or in an
//! overflow chain. This module is the node level; `super::compact_tree` wires it into
//! `BTree` (splits and merges with fences, cursors, verify).
//!
//! # Layout (every byte; integers little-endian unless said otherwise)
//!
//! ```text
//! offset  size  field
//!  0      16    storage-owned logical header (page type 1 = Leaf)
//! 16       1    level: 0
//! 17       1    flags: bit 0 = 1 (compact), other bits 0. Classic nodes require 0, so the
//!               two formats never parse as each other
//! 18       2    count
//! 20       4    cell_start (P when empty)
//! 24       4    garbage: bytes in [cell_start, P) that belong to no live cell
//! 28       2    prefix_len = common prefix of the two fences (0 when either is unbounded)
//! 30       2    symbol-table version of every FSST value in the node (0 = none)
//! 32       8    link: page id of the right sibling (0 = last leaf)
//! 40       2    lower fence length LF (0xFFFF = unbounded, -inf)
//! 42       2    upper fence length UF (0xFFFF = unbounded, +inf)
//! 44       4    reserved, 0
//! 48      LF    lower fence bytes: every key is >= it
//! 48+LF   UF    upper fence bytes: every key is < it
//! S=48+LF+UF    6*count slots: [u16 cell offset][u32 head]; head = suffix[0..4] zero-padded,
//!               read big-endian, stored little-endian (as in classic nodes)
//! ...           gap: KEPT ZEROED (the Trim image codec stores the page minus its longest
//!               zero run, which is then this gap)
//! cell_start..P cells and garbage
//! ```
//!
//! Cell: `flags u8` (bits 0–1 value kind: 0 raw, 1 FSST, 2 overflow; others 0), varint `s`
//! (key suffix length = klen - prefix_len), varint `n` (stored value bytes), varint `v`
//! (logical value length; kinds 1 and 2 only), `max(s - 4, 0)` key-rest bytes (the suffix
//! after the 4 bytes held by the head), `n` value bytes (kind 2: the first overflow page id,
//! u64). Varints are unsigned LEB128, at most 5 bytes, value <= u32::MAX, minimal encoding.
//!
//! The prefix is fixed by the fences: every key in [lower, upper) starts with their common
//! prefix, so an insert never changes prefix_len or rewrites heads. Freed bytes (removed
//! cells, the vacated tail of the slot array, replaced cells' leftovers) are zeroed whenever
//! they are freed, so the gap stays zero without a scan.

use crate::error::StorageError;
use std::cmp::Ordering;

use zipdb_storage::page::LogicalHeader;
use zipdb_storage::{PageId, PageType};

use super::node::{
    common_prefix, key_head, rd_u16, rd_u32, rd_u64, wr_u16, wr_u32, wr_u64, Limits,
    OFF_CELL_START, OFF_COUNT, OFF_FLAGS, OFF_GARBAGE, OFF_LEVEL, OFF_LINK, OFF_PREFIX,
    OVERFLOW_REF_LEN, SLOT_LEN,
};
use crate::error::{Error, Result};

/// Node flags bit 0: the node is a compact leaf.
pub const FLAG_COMPACT: u8 = 1;
pub const OFF_SYMTAB: usize = 30;
pub const OFF_LOWER_LEN: usize = 40;
pub const OFF_UPPER_LEN: usize = 42;
pub const OFF_RESERVED: usize = 44;
/// First byte of the lower fence.
pub const FENCES_START: usize = 48;
/// Fence length meaning "unbounded".
pub const FENCE_UNBOUNDED: usize = 0xFFFF;

pub const KIND_RAW: u8 = 0;
pub const KIND_FSST: u8 = 1;
pub const KIND_OVERFLOW: u8 = 2;
const KIND_MASK: u8 = 3;
/// Bytes of the key suffix kept in the slot head instead of the cell.
const HEAD_LEN: usize = 4;
/// Longest varint: 5 bytes carry 35 bits, enough for u32.
const MAX_VARINT: usize = 5;

/// Bytes of the unsigned LEB128 encoding of `v` (`v <= u32::MAX`).
#[inline]
pub fn varint_len(v: usize) -> usize {
    match v {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0xfff_ffff => 4,
        _ => 5,
    }
}

#[inline]
fn put_varint(dst: &mut [u8], mut v: usize) -> usize {
    debug_assert!(v <= u32::MAX as usize);
    let mut i = 0;
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            dst[i] = b;
            return i + 1;
        }
        dst[i] = b | 0x80;
        i += 1;
    }
}

/// Decodes a varint at the start of `src`: (value, bytes). `None` when it runs past `src`,
/// is longer than 5 bytes, exceeds u32::MAX or is not minimal (a non-minimal varint would let
/// two byte strings mean the same cell, and cell lengths follow from the varints).
#[inline]
fn get_varint(src: &[u8]) -> Option<(usize, usize)> {
    let mut v: u64 = 0;
    for i in 0..MAX_VARINT {
        let b = *src.get(i)?;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            if (i > 0 && b == 0) || v > u64::from(u32::MAX) {
                return None;
            }
            return Some((v as usize, i + 1));
        }
    }
    None
}

/// A value as stored in a compact cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredValue<'a> {
    /// Kind 0: the value bytes themselves.
    Raw(&'a [u8]),
    /// Kind 1: FSST codes under the node's symbol-table version, decoding to `len` bytes.
    Fsst { bytes: &'a [u8], len: usize },
    /// Kind 2: the value (`len` bytes) lives in the overflow chain starting at `first`.
    Overflow { first: PageId, len: usize },
}

impl StoredValue<'_> {
    #[inline]
    pub fn kind(&self) -> u8 {
        match self {
            StoredValue::Raw(_) => KIND_RAW,
            StoredValue::Fsst { .. } => KIND_FSST,
            StoredValue::Overflow { .. } => KIND_OVERFLOW,
        }
    }
    /// `n`: the value bytes inside the cell.
    #[inline]
    pub fn stored_len(&self) -> usize {
        match self {
            StoredValue::Raw(b) | StoredValue::Fsst { bytes: b, .. } => b.len(),
            StoredValue::Overflow { .. } => OVERFLOW_REF_LEN,
        }
    }
    /// `v`: the length of the value a reader gets.
    #[inline]
    pub fn logical_len(&self) -> usize {
        match self {
            StoredValue::Raw(b) => b.len(),
            StoredValue::Fsst { len, .. } | StoredValue::Overflow { len, .. } => *len,
        }
    }
    fn write(&self, dst: &mut [u8]) {
        match self {
            StoredValue::Raw(b) | StoredValue::Fsst { bytes: b, .. } => dst.copy_from_slice(b),
            StoredValue::Overflow { first, .. } => dst.copy_from_slice(&first.0.to_le_bytes()),
        }
    }
}

/// Length of a cell whose key suffix has `s` bytes and whose value is `value`.
#[inline]
pub fn cell_len(s: usize, value: StoredValue<'_>) -> usize {
    let n = value.stored_len();
    let v_len = if value.kind() == KIND_RAW {
        0
    } else {
        varint_len(value.logical_len())
    };
    1 + varint_len(s) + varint_len(n) + v_len + s.saturating_sub(HEAD_LEN) + n
}

/// Writes a cell into `dst` (exactly `cell_len(suffix.len(), value)` bytes).
fn encode_cell(dst: &mut [u8], suffix: &[u8], value: StoredValue<'_>) {
    dst[0] = value.kind();
    let mut at = 1 + put_varint(&mut dst[1..], suffix.len());
    at += put_varint(&mut dst[at..], value.stored_len());
    if value.kind() != KIND_RAW {
        at += put_varint(&mut dst[at..], value.logical_len());
    }
    let rest = suffix.get(HEAD_LEN..).unwrap_or(&[]);
    dst[at..at + rest.len()].copy_from_slice(rest);
    at += rest.len();
    value.write(&mut dst[at..]);
    debug_assert_eq!(at + value.stored_len(), dst.len());
}

/// An owned value, for entries copied out of a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedValue {
    Raw(Vec<u8>),
    Fsst { bytes: Vec<u8>, len: usize },
    Overflow { first: PageId, len: usize },
}

/// One key/value pair of a compact leaf, owned (splits, merges, rebuilds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: Vec<u8>,
    pub value: OwnedValue,
}

impl Entry {
    pub fn new(key: &[u8], value: StoredValue<'_>) -> Entry {
        let value = match value {
            StoredValue::Raw(b) => OwnedValue::Raw(b.to_vec()),
            StoredValue::Fsst { bytes, len } => OwnedValue::Fsst {
                bytes: bytes.to_vec(),
                len,
            },
            StoredValue::Overflow { first, len } => OwnedValue::Overflow { first, len },
        };
        Entry {
            key: key.to_vec(),
            value,
        }
    }
    pub fn value(&self) -> StoredValue<'_> {
        match &self.value {
            OwnedValue::Raw(b) => StoredValue::Raw(b),
            OwnedValue::Fsst { bytes, len } => StoredValue::Fsst { bytes, len: *len },
            OwnedValue::Overflow { first, len } => StoredValue::Overflow {
                first: *first,
                len: *len,
            },
        }
    }
}

/// The key range of a leaf: `lower <= key < upper`; `None` is unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fences<'a> {
    pub lower: Option<&'a [u8]>,
    pub upper: Option<&'a [u8]>,
}

impl Fences<'_> {
    /// Both ends unbounded: the fences of a root leaf.
    pub const UNBOUNDED: Fences<'static> = Fences {
        lower: None,
        upper: None,
    };

    #[inline]
    pub fn contains(&self, key: &[u8]) -> bool {
        self.lower.is_none_or(|l| key >= l) && self.upper.is_none_or(|u| key < u)
    }

    /// The prefix every key in the range shares: the fences' common prefix (any key that
    /// differs from it inside those bytes is below the lower or not below the upper fence).
    #[inline]
    pub fn prefix_len(&self) -> usize {
        match (self.lower, self.upper) {
            (Some(l), Some(u)) => common_prefix(l, u),
            _ => 0,
        }
    }

    fn stored_len(&self) -> usize {
        self.lower.map_or(0, <[u8]>::len) + self.upper.map_or(0, <[u8]>::len)
    }
}

/// Size limits of compact leaves, on *stored* lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactLimits {
    pub page_size: usize,
    /// Largest key (and so largest fence: fences are separators), as in classic nodes.
    pub max_key: usize,
    /// Bytes for slots and cells in a leaf whose two fences have the largest length.
    pub usable_min: usize,
    /// Largest cell (without its slot): any four cells with their slots fit in
    /// `usable_min`, so a split always finds room whatever the fences.
    pub max_cell: usize,
}

impl CompactLimits {
    pub fn new(page_size: usize) -> CompactLimits {
        let max_key = Limits::new(page_size).max_key;
        // The worst case fences make the limit independent of the leaf a cell lives in, so a
        // cell can move between leaves (split, merge) without changing its value kind.
        let usable_min = page_size - FENCES_START - 2 * max_key;
        CompactLimits {
            page_size,
            max_key,
            usable_min,
            max_cell: usable_min / 4 - SLOT_LEN,
        }
    }

    /// Cell length of a key of `klen` bytes with `value`, assuming no prefix is stripped
    /// (the upper bound over all leaves).
    #[inline]
    pub fn worst_cell_len(&self, klen: usize, value: StoredValue<'_>) -> usize {
        cell_len(klen, value)
    }

    /// Whether `value` may be stored in the cell (raw or FSST) under a key of `klen` bytes;
    /// otherwise it goes to an overflow chain.
    #[inline]
    pub fn fits_inline(&self, klen: usize, value: StoredValue<'_>) -> bool {
        self.worst_cell_len(klen, value) <= self.max_cell
    }
}

/// A decoded cell header with its parts (bounds-checked slices of the page).
#[derive(Debug, Clone, Copy)]
struct Cell<'a> {
    off: usize,
    len: usize,
    kind: u8,
    s: usize,
    v: usize,
    rest: &'a [u8],
    value: &'a [u8],
}

/// A validated read-only view of a compact leaf.
#[derive(Clone, Copy)]
pub struct CompactLeaf<'a> {
    pub id: PageId,
    p: &'a [u8],
    count: usize,
    cell_start: usize,
    garbage: usize,
    /// Offset of slot 0 (`S`).
    slots: usize,
    prefix_len: usize,
    lower: Option<&'a [u8]>,
    upper: Option<&'a [u8]>,
}

fn corrupt(id: PageId, detail: impl Into<String>) -> Error {
    Error::Storage(StorageError::Corrupt {
        page: id,
        detail: detail.into(),
    })
}

/// Whether page bytes carry the compact-leaf flag (to pick the parser).
#[inline]
pub fn is_compact(p: &[u8]) -> bool {
    p.get(OFF_FLAGS).is_some_and(|f| f & FLAG_COMPACT != 0)
}

impl<'a> CompactLeaf<'a> {
    /// Parses and validates the header of compact leaf `id`: every header field, the fences
    /// and the slot area. Cells are checked when read (and all of them by [`Self::verify`]).
    pub fn parse(id: PageId, p: &'a [u8]) -> Result<CompactLeaf<'a>> {
        let len = p.len();
        if !(4096..=65536).contains(&len) {
            return Err(corrupt(id, format!("node page of {len} bytes")));
        }
        let ty = LogicalHeader::page_type(p);
        let level = p[OFF_LEVEL];
        if ty != PageType::Leaf as u8 || level != 0 {
            return Err(corrupt(
                id,
                format!("not a compact leaf (page type {ty}, level {level})"),
            ));
        }
        if p[OFF_FLAGS] != FLAG_COMPACT || rd_u32(p, OFF_RESERVED) != 0 {
            return Err(corrupt(
                id,
                format!(
                    "bad compact leaf header: flags {}, reserved {}",
                    p[OFF_FLAGS],
                    rd_u32(p, OFF_RESERVED)
                ),
            ));
        }
        let count = rd_u16(p, OFF_COUNT);
        let cell_start = rd_u32(p, OFF_CELL_START);
        let garbage = rd_u32(p, OFF_GARBAGE);
        let lf = rd_u16(p, OFF_LOWER_LEN);
        let uf = rd_u16(p, OFF_UPPER_LEN);
        let fence_bytes = |f: usize| if f == FENCE_UNBOUNDED { 0 } else { f };
        let slots = FENCES_START + fence_bytes(lf) + fence_bytes(uf);
        if cell_start > len || slots + count * SLOT_LEN > cell_start || garbage > len - cell_start {
            return Err(corrupt(
                id,
                format!(
                    "bad compact leaf header: count {count}, cell_start {cell_start}, \
                     garbage {garbage}, fences {lf}/{uf}"
                ),
            ));
        }
        let lower = (lf != FENCE_UNBOUNDED).then(|| &p[FENCES_START..FENCES_START + lf]);
        let ustart = FENCES_START + fence_bytes(lf);
        let upper = (uf != FENCE_UNBOUNDED).then(|| &p[ustart..ustart + uf]);
        let prefix_len = rd_u16(p, OFF_PREFIX);
        let fences = Fences { lower, upper };
        if prefix_len != fences.prefix_len() {
            return Err(corrupt(
                id,
                format!(
                    "prefix_len {prefix_len}, but the fences share {} bytes",
                    fences.prefix_len()
                ),
            ));
        }
        Ok(CompactLeaf {
            id,
            p,
            count,
            cell_start,
            garbage,
            slots,
            prefix_len,
            lower,
            upper,
        })
    }

    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        self.p
    }
    #[inline]
    pub fn count(&self) -> usize {
        self.count
    }
    #[inline]
    pub fn link(&self) -> PageId {
        PageId(rd_u64(self.p, OFF_LINK))
    }
    #[inline]
    pub fn lower_fence(&self) -> Option<&'a [u8]> {
        self.lower
    }
    #[inline]
    pub fn upper_fence(&self) -> Option<&'a [u8]> {
        self.upper
    }
    #[inline]
    pub fn fences(&self) -> Fences<'a> {
        Fences {
            lower: self.lower,
            upper: self.upper,
        }
    }
    #[inline]
    pub fn prefix_len(&self) -> usize {
        self.prefix_len
    }
    /// The key prefix shared by every key of the node.
    #[inline]
    pub fn prefix(&self) -> &'a [u8] {
        // prefix_len > 0 only when both fences are bounded and at least that long (parse).
        self.lower.map_or(&[][..], |l| &l[..self.prefix_len])
    }
    #[inline]
    pub fn symtab_version(&self) -> u16 {
        rd_u16(self.p, OFF_SYMTAB) as u16
    }
    #[inline]
    pub fn cell_start(&self) -> usize {
        self.cell_start
    }
    #[inline]
    pub fn garbage(&self) -> usize {
        self.garbage
    }
    /// Offset of the first slot.
    #[inline]
    pub fn slots_start(&self) -> usize {
        self.slots
    }
    /// Contiguous free bytes between the slot array and the cells.
    #[inline]
    pub fn gap(&self) -> usize {
        self.cell_start - self.slots - self.count * SLOT_LEN
    }
    /// Bytes free for new cells and slots (gap plus garbage).
    #[inline]
    pub fn free_space(&self) -> usize {
        self.gap() + self.garbage
    }
    /// Bytes used by live cells and their slots.
    #[inline]
    pub fn used(&self) -> usize {
        self.p.len() - self.slots - self.free_space()
    }

    #[inline]
    fn slot_off(&self, i: usize) -> usize {
        rd_u16(self.p, self.slots + i * SLOT_LEN)
    }
    /// The head of key `i` stored in its slot (`i < count`).
    #[inline]
    pub fn head(&self, i: usize) -> u32 {
        rd_u32(self.p, self.slots + i * SLOT_LEN + 2) as u32
    }

    fn bad_cell(&self, i: usize, why: &str) -> Error {
        corrupt(
            self.id,
            format!("compact cell {i} (slot offset {}): {why}", self.slot_off(i)),
        )
    }

    fn check_index(&self, i: usize) -> Result<()> {
        if i >= self.count {
            return Err(corrupt(
                self.id,
                format!("cell {i} of a node with {}", self.count),
            ));
        }
        Ok(())
    }

    /// Decodes the header of cell `i`, checking that it lies inside the cell area.
    fn cell(&self, i: usize) -> Result<Cell<'a>> {
        self.check_index(i)?;
        let p = self.p;
        let off = self.slot_off(i);
        if off < self.cell_start || off >= p.len() {
            return Err(self.bad_cell(i, "offset outside the cell area"));
        }
        let c = &p[off..];
        let flags = c[0];
        let kind = flags & KIND_MASK;
        if flags & !KIND_MASK != 0 || kind > KIND_OVERFLOW {
            return Err(self.bad_cell(i, &format!("bad cell flags {flags:#04x}")));
        }
        let bad_varint = || self.bad_cell(i, "bad varint");
        let (s, a) = get_varint(&c[1..]).ok_or_else(bad_varint)?;
        let mut at = 1 + a;
        let (n, b) = get_varint(&c[at..]).ok_or_else(bad_varint)?;
        at += b;
        let v = if kind == KIND_RAW {
            n
        } else {
            let (v, d) = get_varint(&c[at..]).ok_or_else(bad_varint)?;
            at += d;
            v
        };
        if kind == KIND_OVERFLOW && n != OVERFLOW_REF_LEN {
            return Err(self.bad_cell(i, &format!("overflow reference of {n} bytes")));
        }
        let rest_len = s.saturating_sub(HEAD_LEN);
        let end = at + rest_len + n;
        if end > c.len() {
            return Err(self.bad_cell(i, "cell runs past the page end"));
        }
        Ok(Cell {
            off,
            len: end,
            kind,
            s,
            v,
            rest: &c[at..at + rest_len],
            value: &c[at + rest_len..end],
        })
    }

    /// Length of cell `i` (without its slot).
    pub fn cell_len(&self, i: usize) -> Result<usize> {
        Ok(self.cell(i)?.len)
    }

    /// Length of key `i`.
    pub fn key_len(&self, i: usize) -> Result<usize> {
        Ok(self.prefix_len + self.cell(i)?.s)
    }

    /// Writes key `i` into `out` (cleared first): prefix, head bytes, key rest.
    pub fn key_into(&self, i: usize, out: &mut Vec<u8>) -> Result<()> {
        let c = self.cell(i)?;
        out.clear();
        out.extend_from_slice(self.prefix());
        let head = self.head(i).to_be_bytes();
        out.extend_from_slice(&head[..c.s.min(HEAD_LEN)]);
        out.extend_from_slice(c.rest);
        Ok(())
    }

    /// Key `i` as an owned vector.
    pub fn key(&self, i: usize) -> Result<Vec<u8>> {
        let mut k = Vec::new();
        self.key_into(i, &mut k)?;
        Ok(k)
    }

    /// How key `i` compares with `key` (`Less`: key `i` sorts first), without building it.
    pub fn cmp_key(&self, i: usize, key: &[u8]) -> Result<Ordering> {
        let c = self.cell(i)?;
        let head = self.head(i).to_be_bytes();
        Ok(cmp_parts(
            &[self.prefix(), &head[..c.s.min(HEAD_LEN)], c.rest],
            key,
        ))
    }

    /// The value of cell `i`.
    pub fn value(&self, i: usize) -> Result<StoredValue<'a>> {
        let c = self.cell(i)?;
        self.stored(i, &c)
    }

    /// Appends key `i` to `out` and returns its value: one cell decode for both, where
    /// [`Self::key_into`] then [`Self::value`] take two (cursors copy whole leaves this way).
    pub fn entry_into(&self, i: usize, out: &mut Vec<u8>) -> Result<StoredValue<'a>> {
        let c = self.cell(i)?;
        out.extend_from_slice(self.prefix());
        let head = self.head(i).to_be_bytes();
        out.extend_from_slice(&head[..c.s.min(HEAD_LEN)]);
        out.extend_from_slice(c.rest);
        self.stored(i, &c)
    }

    fn stored(&self, i: usize, c: &Cell<'a>) -> Result<StoredValue<'a>> {
        match c.kind {
            KIND_RAW => Ok(StoredValue::Raw(c.value)),
            KIND_FSST => {
                // Version 0 says "no FSST value in the page": a kind-1 cell would have no
                // table to decode with.
                if self.symtab_version() == 0 {
                    return Err(self.bad_cell(i, "FSST value in a node without a symbol table"));
                }
                Ok(StoredValue::Fsst {
                    bytes: c.value,
                    len: c.v,
                })
            }
            _ => {
                let first = PageId(rd_u64(c.value, 0));
                if first.is_none() {
                    return Err(self.bad_cell(i, "overflow value without a first page"));
                }
                Ok(StoredValue::Overflow { first, len: c.v })
            }
        }
    }

    /// Copies every entry out, in key order.
    pub fn collect_entries(&self) -> Result<Vec<Entry>> {
        let mut key = Vec::new();
        (0..self.count)
            .map(|i| {
                self.key_into(i, &mut key)?;
                Ok(Entry::new(&key, self.value(i)?))
            })
            .collect()
    }

    /// Binary search (§2.4): `Ok(i)` if cell `i` has `key`, else `Err(i)` with the insert
    /// position. Compares the prefix once with the lower fence, then slot heads, and reads a
    /// cell's key rest only on a head tie; values are never read.
    pub fn search(&self, key: &[u8]) -> Result<std::result::Result<usize, usize>> {
        let count = self.count;
        if count == 0 {
            return Ok(Err(0));
        }
        let plen = self.prefix_len;
        if plen > 0 {
            let n = plen.min(key.len());
            match key[..n].cmp(&self.prefix()[..n]) {
                Ordering::Less => return Ok(Err(0)),
                Ordering::Greater => return Ok(Err(count)),
                Ordering::Equal if key.len() < plen => return Ok(Err(0)),
                Ordering::Equal => {}
            }
        }
        let suffix = &key[plen..];
        let h = key_head(suffix);
        let (mut lo, mut hi) = (0usize, count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let hm = self.head(mid);
            let ord = if hm != h {
                hm.cmp(&h)
            } else {
                let c = self.cell(mid)?;
                cmp_suffix_on_tie(c.s, c.rest, suffix)
            };
            match ord {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(Ok(mid)),
            }
        }
        Ok(Err(lo))
    }

    /// Full consistency check of the node: fences in order and within the key limit, prefix
    /// = common prefix of the fences, every cell decodable and within the cell-size limit,
    /// keys strictly ascending and inside the fences, heads matching the key bytes, FSST
    /// values only with a symbol-table version, overflow references non-zero, cells not
    /// overlapping, cells + garbage = cell area, and the gap all zero.
    pub fn verify(&self) -> Result<()> {
        let limits = CompactLimits::new(self.p.len());
        if let (Some(l), Some(u)) = (self.lower, self.upper) {
            if l >= u {
                return Err(corrupt(self.id, "lower fence not below the upper fence"));
            }
        }
        for f in [self.lower, self.upper].into_iter().flatten() {
            if f.len() > limits.max_key {
                return Err(corrupt(
                    self.id,
                    format!("fence of {} bytes (max {})", f.len(), limits.max_key),
                ));
            }
        }
        let gap_start = self.slots + self.count * SLOT_LEN;
        if self.p[gap_start..self.cell_start].iter().any(|&b| b != 0) {
            return Err(corrupt(self.id, "non-zero byte in the free gap"));
        }
        let fences = self.fences();
        let mut extents = Vec::with_capacity(self.count);
        let mut prev: Vec<u8> = Vec::new();
        let mut key: Vec<u8> = Vec::new();
        for i in 0..self.count {
            let c = self.cell(i)?;
            if c.len > limits.max_cell {
                return Err(self.bad_cell(
                    i,
                    &format!("cell of {} bytes (max {})", c.len, limits.max_cell),
                ));
            }
            self.value(i)?;
            self.key_into(i, &mut key)?;
            if key.len() > limits.max_key {
                return Err(self.bad_cell(i, &format!("key of {} bytes", key.len())));
            }
            if self.head(i) != key_head(&key[self.prefix_len..]) {
                return Err(self.bad_cell(i, "slot head does not match the key"));
            }
            if !fences.contains(&key) {
                return Err(self.bad_cell(i, "key outside the fences"));
            }
            if i > 0 && prev >= key {
                return Err(self.bad_cell(i, "keys out of order"));
            }
            std::mem::swap(&mut prev, &mut key);
            extents.push((c.off, c.len));
        }
        extents.sort_unstable();
        let mut live = 0usize;
        for (j, &(off, len)) in extents.iter().enumerate() {
            if let Some(&(next, _)) = extents.get(j + 1) {
                if off + len > next {
                    return Err(corrupt(self.id, format!("cells overlap at offset {next}")));
                }
            }
            live += len;
        }
        if live + self.garbage != self.p.len() - self.cell_start {
            return Err(corrupt(
                self.id,
                format!(
                    "cells ({live}) + garbage ({}) != cell area ({})",
                    self.garbage,
                    self.p.len() - self.cell_start
                ),
            ));
        }
        Ok(())
    }
}

/// Compares key suffixes whose heads are equal: `s`/`rest` of a cell against `suffix`. With
/// equal heads, if both suffixes are at least 4 bytes long their first 4 bytes are equal and
/// the rests decide; otherwise the shorter one is a prefix of the longer one (its padding
/// zeros matched real zero bytes), so the lengths decide.
#[inline]
fn cmp_suffix_on_tie(s: usize, rest: &[u8], suffix: &[u8]) -> Ordering {
    if s >= HEAD_LEN && suffix.len() >= HEAD_LEN {
        rest.cmp(&suffix[HEAD_LEN..])
    } else {
        s.cmp(&suffix.len())
    }
}

/// Compares the concatenation of `parts` with `other`, memcmp order.
fn cmp_parts(parts: &[&[u8]], mut other: &[u8]) -> Ordering {
    for part in parts {
        let n = part.len().min(other.len());
        match part[..n].cmp(&other[..n]) {
            Ordering::Equal => {}
            o => return o,
        }
        if n < part.len() {
            return Ordering::Greater;
        }
        other = &other[n..];
    }
    if other.is_empty() {
        Ordering::Equal
    } else {
        Ordering::Less
    }
}

/// Writes the node header (bytes 16..P) of an empty compact leaf with `fences`: header,
/// fence bytes, and zeros everywhere after them (the gap rule). The caller sets bytes 0..16
/// (page type 1). Fails, leaving `p` unchanged, if the fences are longer than keys may be or
/// out of order.
pub fn init_compact_leaf(
    id: PageId,
    p: &mut [u8],
    fences: Fences<'_>,
    version: u16,
    link: PageId,
) -> Result<()> {
    check_fences(id, p.len(), fences)?;
    let len = p.len();
    p[OFF_LEVEL] = 0;
    p[OFF_FLAGS] = FLAG_COMPACT;
    wr_u16(p, OFF_COUNT, 0);
    wr_u32(p, OFF_CELL_START, len);
    wr_u32(p, OFF_GARBAGE, 0);
    wr_u16(p, OFF_PREFIX, fences.prefix_len());
    wr_u16(p, OFF_SYMTAB, version as usize);
    wr_u64(p, OFF_LINK, link.0);
    wr_u16(
        p,
        OFF_LOWER_LEN,
        fences.lower.map_or(FENCE_UNBOUNDED, <[u8]>::len),
    );
    wr_u16(
        p,
        OFF_UPPER_LEN,
        fences.upper.map_or(FENCE_UNBOUNDED, <[u8]>::len),
    );
    wr_u32(p, OFF_RESERVED, 0);
    let mut at = FENCES_START;
    for f in [fences.lower, fences.upper].into_iter().flatten() {
        p[at..at + f.len()].copy_from_slice(f);
        at += f.len();
    }
    p[at..].fill(0);
    Ok(())
}

/// Fences are parent separators: no longer than a key, and lower < upper.
fn check_fences(id: PageId, page_size: usize, fences: Fences<'_>) -> Result<()> {
    let limits = CompactLimits::new(page_size);
    let too_long = |f: Option<&[u8]>| f.is_some_and(|f| f.len() > limits.max_key);
    let disordered = matches!((fences.lower, fences.upper), (Some(l), Some(u)) if l >= u);
    if too_long(fences.lower) || too_long(fences.upper) || disordered {
        return Err(corrupt(
            id,
            format!("bad fences for a compact leaf: {fences:?}"),
        ));
    }
    Ok(())
}

pub fn set_link(p: &mut [u8], link: PageId) {
    wr_u64(p, OFF_LINK, link.0);
}

/// Bytes (cells + slots) that `entries` take in a leaf with `fences`.
pub fn entries_size(fences: Fences<'_>, entries: &[Entry]) -> usize {
    let plen = fences.prefix_len();
    entries
        .iter()
        .map(|e| cell_len(e.key.len().saturating_sub(plen), e.value()) + SLOT_LEN)
        .sum()
}

/// Rewrites `p` as a compact leaf holding exactly `entries` (strictly ascending, inside
/// `fences`), re-deriving suffixes and heads. Fails, leaving `p` unchanged, if they do not
/// fit or break the order or the fences: a caller bug, checked because a wrong node would be
/// silently unreadable later.
pub fn build_compact_leaf(
    id: PageId,
    p: &mut [u8],
    fences: Fences<'_>,
    version: u16,
    link: PageId,
    entries: &[Entry],
) -> Result<()> {
    let bad = |why: &str| {
        debug_assert!(false, "build_compact_leaf: {why}");
        Err(corrupt(id, format!("compact leaf build: {why}")))
    };
    check_fences(id, p.len(), fences)?;
    for (j, e) in entries.iter().enumerate() {
        if !fences.contains(&e.key) {
            return bad("key outside the fences");
        }
        if j > 0 && entries[j - 1].key >= e.key {
            return bad("keys not strictly ascending");
        }
    }
    let room = p.len() - FENCES_START - fences.stored_len();
    if entries_size(fences, entries) > room {
        return bad("entries do not fit");
    }
    init_compact_leaf(id, p, fences, version, link)?;
    let plen = fences.prefix_len();
    let slots = FENCES_START + fences.stored_len();
    let mut top = p.len();
    for (i, e) in entries.iter().enumerate() {
        let suffix = &e.key[plen..];
        let len = cell_len(suffix.len(), e.value());
        top -= len;
        encode_cell(&mut p[top..top + len], suffix, e.value());
        let s = slots + i * SLOT_LEN;
        wr_u16(p, s, top);
        wr_u32(p, s + 2, key_head(suffix) as usize);
    }
    wr_u16(p, OFF_COUNT, entries.len());
    wr_u32(p, OFF_CELL_START, top);
    Ok(())
}

/// Inserts `key` with `value` at slot position `idx`. Returns `false` (node unchanged) when
/// it does not fit even after compaction. The key must lie inside the fences (otherwise the
/// descent reached the wrong leaf, i.e. fences and separators disagree: reported as
/// corruption) and belong at `idx`.
pub fn insert_cell(
    id: PageId,
    p: &mut [u8],
    idx: usize,
    key: &[u8],
    value: StoredValue<'_>,
) -> Result<bool> {
    let leaf = CompactLeaf::parse(id, p)?;
    let count = leaf.count();
    if idx > count {
        return Err(corrupt(id, format!("insert at {idx} of {count}")));
    }
    if !leaf.fences().contains(key) {
        debug_assert!(false, "insert of a key outside the leaf's fences");
        return Err(corrupt(id, "insert of a key outside the leaf's fences"));
    }
    debug_assert!(idx == 0 || leaf.cmp_key(idx - 1, key).ok() == Some(Ordering::Less));
    debug_assert!(idx == count || leaf.cmp_key(idx, key).ok() == Some(Ordering::Greater));
    let suffix = &key[leaf.prefix_len()..];
    let len = cell_len(suffix.len(), value);
    if leaf.free_space() < len + SLOT_LEN {
        return Ok(false);
    }
    let slots = leaf.slots_start();
    if leaf.gap() < len + SLOT_LEN {
        compact(id, p)?;
    }
    let cell_start = rd_u32(p, OFF_CELL_START);
    if cell_start - (slots + count * SLOT_LEN) < len + SLOT_LEN {
        // Compaction found less garbage than the header claimed.
        return Err(corrupt(id, "garbage count larger than the garbage found"));
    }
    let at = cell_start - len;
    encode_cell(&mut p[at..cell_start], suffix, value);
    let s = slots + idx * SLOT_LEN;
    let e = slots + count * SLOT_LEN;
    p.copy_within(s..e, s + SLOT_LEN);
    wr_u16(p, s, at);
    wr_u32(p, s + 2, key_head(suffix) as usize);
    wr_u16(p, OFF_COUNT, count + 1);
    wr_u32(p, OFF_CELL_START, at);
    Ok(true)
}

/// Removes cell `idx`. Its bytes are zeroed and given back to the gap if the cell started at
/// cell_start, else counted as garbage.
pub fn remove_cell(id: PageId, p: &mut [u8], idx: usize) -> Result<()> {
    let leaf = CompactLeaf::parse(id, p)?;
    let (off, len) = leaf.cell(idx).map(|c| (c.off, c.len))?;
    let count = leaf.count();
    let cell_start = leaf.cell_start();
    let garbage = leaf.garbage();
    let slots = leaf.slots_start();
    let s = slots + idx * SLOT_LEN;
    let e = slots + count * SLOT_LEN;
    p.copy_within(s + SLOT_LEN..e, s);
    p[e - SLOT_LEN..e].fill(0);
    p[off..off + len].fill(0);
    wr_u16(p, OFF_COUNT, count - 1);
    if count == 1 {
        // The whole cell area becomes gap; garbage left by an older writer may be non-zero.
        p[cell_start..].fill(0);
        wr_u32(p, OFF_CELL_START, p.len());
        wr_u32(p, OFF_GARBAGE, 0);
    } else if off == cell_start {
        wr_u32(p, OFF_CELL_START, cell_start + len);
    } else {
        wr_u32(p, OFF_GARBAGE, garbage + len);
    }
    Ok(())
}

/// Replaces the value of cell `idx` in place when the new cell is not longer than the old
/// one (FSST lengths wobble by a byte or two, so "same length" would rarely hold). The new
/// cell is written at the high end of the old one; the freed low bytes are zeroed and join
/// the gap if the cell started at cell_start, else become garbage. Returns `false` (node
/// unchanged) when the new cell is longer.
pub fn replace_if_not_longer(
    id: PageId,
    p: &mut [u8],
    idx: usize,
    value: StoredValue<'_>,
) -> Result<bool> {
    let leaf = CompactLeaf::parse(id, p)?;
    let c = leaf.cell(idx)?;
    let (off, old_len, s) = (c.off, c.len, c.s);
    let rest_len = c.rest.len();
    let old_rest = off + old_len - c.value.len() - rest_len;
    let new_len = cell_len(s, value);
    if new_len > old_len {
        return Ok(false);
    }
    let cell_start = leaf.cell_start();
    let garbage = leaf.garbage();
    let slot = leaf.slots_start() + idx * SLOT_LEN;
    let freed = old_len - new_len;
    let at = off + freed;
    // Header of the new cell, then the key rest moved (copy_within handles the overlap with
    // the old cell) before anything overwrites it, then the value.
    let mut hdr = [0u8; 1 + 3 * MAX_VARINT];
    hdr[0] = value.kind();
    let mut h = 1 + put_varint(&mut hdr[1..], s);
    h += put_varint(&mut hdr[h..], value.stored_len());
    if value.kind() != KIND_RAW {
        h += put_varint(&mut hdr[h..], value.logical_len());
    }
    p.copy_within(old_rest..old_rest + rest_len, at + h);
    p[at..at + h].copy_from_slice(&hdr[..h]);
    value.write(&mut p[at + h + rest_len..at + new_len]);
    p[off..at].fill(0);
    wr_u16(p, slot, at);
    if freed > 0 {
        if off == cell_start {
            wr_u32(p, OFF_CELL_START, cell_start + freed);
        } else {
            wr_u32(p, OFF_GARBAGE, garbage + freed);
        }
    }
    Ok(true)
}

/// Runs arbitrary page bytes through every accessor, `verify` and (on a copy) every
/// mutation, as the `compact_leaf` fuzz target and the tests do: errors are fine, panics are
/// not. A page that verifies must still verify after each mutation.
#[doc(hidden)]
pub fn exercise(p: &[u8]) {
    let id = PageId(7);
    let Ok(leaf) = CompactLeaf::parse(id, p) else {
        return;
    };
    let _ = (
        leaf.link(),
        leaf.symtab_version(),
        leaf.free_space(),
        leaf.used(),
    );
    let mut probes: Vec<Vec<u8>> = vec![Vec::new(), vec![0xff; 6], leaf.prefix().to_vec()];
    probes.extend(leaf.lower_fence().map(<[u8]>::to_vec));
    probes.extend(leaf.upper_fence().map(<[u8]>::to_vec));
    let mut key = Vec::new();
    for i in 0..leaf.count() {
        let _ = (
            leaf.cell_len(i),
            leaf.key_len(i),
            leaf.value(i),
            leaf.head(i),
        );
        if leaf.key_into(i, &mut key).is_ok() && probes.len() < 12 {
            probes.push(key.clone());
        }
        for k in &probes {
            let _ = leaf.cmp_key(i, k);
        }
    }
    for k in &probes {
        let _ = leaf.search(k);
    }
    let _ = leaf.collect_entries();
    let valid = leaf.verify().is_ok();
    let check = |q: &[u8]| {
        if valid {
            let l = CompactLeaf::parse(id, q).expect("a mutated valid leaf parses");
            l.verify().expect("a mutated valid leaf verifies");
        }
    };
    let mut q = p.to_vec();
    if compact(id, &mut q).is_ok() {
        check(&q);
    }
    if leaf.count() > 0 {
        let mut q = p.to_vec();
        if remove_cell(id, &mut q, leaf.count() / 2).is_ok() {
            check(&q);
        }
        let mut q = p.to_vec();
        if replace_if_not_longer(id, &mut q, 0, StoredValue::Raw(b"")).is_ok() {
            check(&q);
        }
    }
    // Inserting needs keys in order, which only a verified page promises.
    if valid {
        if let Some(lower) = leaf.lower_fence() {
            let mut q = p.to_vec();
            if let Ok(Err(at)) = leaf.search(lower) {
                if insert_cell(id, &mut q, at, lower, StoredValue::Raw(b"v")).is_ok() {
                    check(&q);
                }
            }
        }
    }
}

mod pack;
pub use pack::compact;

#[cfg(test)]
mod tests;
