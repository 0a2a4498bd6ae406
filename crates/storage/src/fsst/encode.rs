//! The encoder: greedy longest match through three lookups per code.
//!
//! - Symbols of 3 to 8 bytes sit in a hash table keyed by their first 3 bytes, at most one per
//!   slot (the trainer never puts two in one slot; for a loaded table that does, the later code
//!   is never used, which costs ratio, not correctness).
//! - Every 2-byte prefix maps to its 2-byte symbol, else the 1-byte symbol of its first byte,
//!   else an escape.
//! - The last byte of a string maps through a 256-entry array the same way.
//!
//! So one probe finds the only long candidate, and the fall-back is the best short one: the
//! match is the longest symbol of the table that starts here. The trainer counts with this same
//! matcher, so the table it picks is the one this encoder uses best.

use super::table::{mask, SymbolTable};
use super::{max_encoded_len, ESCAPE};

/// log2 of the long-symbol hash table's slots. With 1024 slots about one long candidate in
/// nine lands in a taken slot and the trainer takes the next best instead; 2048 slots measured
/// no better ratio (docs/BENCHMARKS.md) and cost cache.
const HASH_BITS: u32 = 10;
pub(super) const HASH_SLOTS: usize = 1 << HASH_BITS;

/// A short-table entry: `code | len << 8`, `len` 1 or 2; 0 means "escape one byte".
type ShortEntry = u16;

#[derive(Clone, Copy, Default)]
struct LongEntry {
    word: u64,
    /// 0 = empty slot, else 3..=8.
    len: u8,
    code: u8,
}

/// The slot of a symbol or input position whose first three bytes are `word & 0xFF_FFFF`.
#[inline]
pub(super) fn hash_slot(word: u64) -> usize {
    let first3 = (word & 0xFF_FFFF) as u32;
    (first3.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
}

/// The next 8 input bytes as a little-endian word, zero-padded at the end of the input.
#[inline]
pub(super) fn load_word(rest: &[u8]) -> u64 {
    if let Some(b) = rest.first_chunk::<8>() {
        u64::from_le_bytes(*b)
    } else {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        u64::from_le_bytes(b)
    }
}

/// Lookup structures for encoding with one table (about 150 KB).
pub(crate) struct Encoder {
    long: Box<[LongEntry]>,
    short: Box<[ShortEntry]>,
    single: [ShortEntry; 256],
}

impl Encoder {
    pub(super) fn new(t: &SymbolTable) -> Encoder {
        let mut long = vec![LongEntry::default(); HASH_SLOTS].into_boxed_slice();
        let mut single = [0 as ShortEntry; 256];
        let mut pairs: Vec<(usize, ShortEntry)> = Vec::new();
        for (code, s) in t.symbols().enumerate() {
            let code = code as u8; // < 255
            match s.len() {
                1 => single[(s.word() & 0xFF) as usize] = ShortEntry::from(code) | 1 << 8,
                2 => pairs.push((s.word() as usize, ShortEntry::from(code) | 2 << 8)),
                len => {
                    let e = &mut long[hash_slot(s.word())];
                    if e.len == 0 {
                        *e = LongEntry {
                            word: s.word(),
                            len: len as u8,
                            code,
                        };
                    }
                }
            }
        }
        // A 2-byte prefix with no 2-byte symbol falls back to its first byte's entry.
        let mut short: Box<[ShortEntry]> = (0..1usize << 16).map(|p| single[p & 0xFF]).collect();
        for (prefix, entry) in pairs {
            short[prefix] = entry;
        }
        Encoder {
            long,
            short,
            single,
        }
    }

    /// The longest symbol at an input position whose next bytes are `word` (zero-padded) with
    /// `rest` bytes left (`rest >= 1`). Returns the pseudo-code and the bytes it covers: a code
    /// `< 256` is a symbol, `256 + b` is an escaped byte `b`.
    #[inline(always)]
    pub(super) fn longest(&self, word: u64, rest: usize) -> (u16, usize) {
        let e = self.long[hash_slot(word)];
        let len = usize::from(e.len);
        // `len != 0` first: `mask` needs a length of at least 1.
        if len != 0 && len <= rest && word & mask(len) == e.word {
            return (u16::from(e.code), len);
        }
        let s = if rest >= 2 {
            self.short[(word & 0xFFFF) as usize]
        } else {
            self.single[(word & 0xFF) as usize]
        };
        match s >> 8 {
            0 => (256 + (word & 0xFF) as u16, 1),
            len => (s & 0xFF, usize::from(len)),
        }
    }
}

/// Inputs at least this long are encoded as two halves whose matching loops run interleaved
/// (see [`SymbolTable::encode`]); shorter ones in one pass.
const TWO_STREAMS_FROM: usize = 32;

/// One greedy pass over `input[i..end]`, writing codes from `dst[o]` on. Matches never cross
/// `end` (`longest` is given the bytes left before it; the word may hold bytes past `end`,
/// which no match of at most `end - i` bytes reads).
struct Pass {
    i: usize,
    end: usize,
    o: usize,
}

impl Pass {
    #[inline(always)]
    fn live(&self) -> bool {
        self.i < self.end
    }

    /// Emits one code (or an escape and its byte). Needs `self.live()`, and room for two
    /// output bytes at `self.o`.
    #[inline(always)]
    fn step(&mut self, enc: &Encoder, input: &[u8], dst: &mut [std::mem::MaybeUninit<u8>]) {
        let word = load_word(&input[self.i..]);
        let (code, len) = enc.longest(word, self.end - self.i);
        if code < 256 {
            dst[self.o].write(code as u8);
            self.o += 1;
        } else {
            dst[self.o].write(ESCAPE);
            dst[self.o + 1].write(word as u8);
            self.o += 2;
        }
        self.i += len;
    }
}

impl SymbolTable {
    /// Appends the codes of `input` to `out` and returns how many were appended: at most
    /// `2 × input.len()` ([`super::max_encoded_len`]), all escapes with an empty table.
    ///
    /// Each code's position depends on the previous match's length, looked up in the tables
    /// (a chain of two dependent loads per code), so one pass is bound by load latency, not by
    /// work: 500–600 ns for a 184-byte sbtest value, most of an fsst update's extra cost
    /// (docs/design/issue19-record-compression.md, session 10). An input of
    /// [`TWO_STREAMS_FROM`] bytes or more is therefore cut in two halves encoded by two
    /// interleaved passes, whose chains the CPU overlaps; the second half's codes are then
    /// moved up behind the first's. The output is an ordinary code string (the decoder does
    /// not know about the cut). A cut inside a symbol makes the second pass start its greedy
    /// parse there: on sbtest values the ratio went from 0.499 to 0.500 (`zipdb-bench codecs`).
    ///
    /// The first call builds the encoder's lookup structures (tens of microseconds).
    pub fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> usize {
        let enc = self.encoder();
        let n = input.len();
        let room = max_encoded_len(n);
        out.reserve(room);
        let start = out.len();
        let dst = &mut out.spare_capacity_mut()[..room];
        let o = if n >= TWO_STREAMS_FROM {
            let mid = n / 2;
            // The first half writes at most 2 × mid bytes, so the second starts there.
            let mut a = Pass {
                i: 0,
                end: mid,
                o: 0,
            };
            let mut b = Pass {
                i: mid,
                end: n,
                o: 2 * mid,
            };
            while a.live() && b.live() {
                a.step(enc, input, dst);
                b.step(enc, input, dst);
            }
            while a.live() {
                a.step(enc, input, dst);
            }
            while b.live() {
                b.step(enc, input, dst);
            }
            dst.copy_within(2 * mid..b.o, a.o);
            a.o + (b.o - 2 * mid)
        } else {
            let mut a = Pass { i: 0, end: n, o: 0 };
            while a.live() {
                a.step(enc, input, dst);
            }
            a.o
        };
        // SAFETY: the passes initialized `dst[..o]`, the spare capacity right after
        // `out.len()` (the first pass's codes in place, the second's copied behind them), and
        // `o <= room` since each input byte produces at most 2 output bytes.
        unsafe { out.set_len(start + o) };
        o
    }
}
