//! Training: the paper's generational counting algorithm (§4.3 of Boncz et al.).
//!
//! Start from an empty table. Each generation encodes part of the sample with the current
//! table, counting how often each symbol (or escaped byte) is chosen and how often each pair of
//! consecutive choices occurs. The candidates for the next table are the symbols chosen, the
//! single bytes, and the concatenations of pairs (cut to 8 bytes); each is worth
//! `count × length`, the bytes of input it would cover. The 255 best become the next table.
//! Concatenation lets symbols double in length per generation, so five generations reach 8
//! bytes; the growing fraction of the sample (8/128 .. 128/128) makes the early generations
//! cheap and the last one exact. The last generation only re-ranks: it adds no
//! concatenations, so the chosen symbols' counts are true counts for the final table.
//!
//! Two refinements from the authors' reference implementation's ideas:
//! - each multi-byte match also counts its first byte alone, and each pair also the extension
//!   of the first symbol by the next byte alone, so shorter alternatives keep being measured;
//! - single-byte candidates weigh 8 times their covered bytes: an escaped byte costs 2 bytes
//!   of output, and few escapes also make encoding and decoding faster.
//!
//! Everything is deterministic: the sample is chosen with a fixed-seed generator, candidates
//! are ranked by (gain, length, bytes), a total order, so the same input gives the same table.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::encode::{hash_slot, load_word, Encoder, HASH_SLOTS};
use super::table::{Symbol, SymbolTable};
use super::MAX_SYMBOLS;

/// Bytes of sample the trainer uses by default, as in the paper: enough for a good table,
/// small enough that training takes about a millisecond.
pub const SAMPLE_BYTES: usize = 16 * 1024;

/// Longer sample strings are cut into pieces of this size when sampling.
const PIECE: usize = 512;

/// Per generation, the part of the sample counted, in 128ths.
const GENERATIONS: [u64; 5] = [8, 38, 68, 98, 128];

/// Pseudo-codes: 0..256 table codes, 256 + b the escaped byte b.
const PSEUDO: usize = 512;

/// Weight of single-byte candidates (see the module docs).
const SINGLE_BYTE_WEIGHT: u64 = 8;

impl SymbolTable {
    /// Trains a table on `samples` (each a string the table will encode, such as a record),
    /// using at most [`SAMPLE_BYTES`] of them. Empty or no samples give an empty table.
    pub fn train<S: AsRef<[u8]>>(samples: &[S]) -> SymbolTable {
        SymbolTable::train_with(samples, SAMPLE_BYTES)
    }

    /// [`SymbolTable::train`] with a sample budget of `sample_bytes`: when the samples hold
    /// more, pieces of up to 512 bytes are drawn from them at random (fixed seed) until the
    /// budget is met.
    pub fn train_with<S: AsRef<[u8]>>(samples: &[S], sample_bytes: usize) -> SymbolTable {
        let sample = pick_sample(samples, sample_bytes);
        let mut table = SymbolTable::empty();
        let mut counts = Counts::new();
        for (g, &fraction) in GENERATIONS.iter().enumerate() {
            let last = g + 1 == GENERATIONS.len();
            let enc = Encoder::new(&table);
            counts.clear();
            for (i, s) in sample.iter().enumerate() {
                if !last && mix(i as u64 ^ (g as u64) << 48) % 128 >= fraction {
                    continue;
                }
                counts.count(&enc, s, !last);
            }
            table = SymbolTable::from_list(&select(&table, &counts, !last));
        }
        table
    }
}

/// The strings to train on: all of them when they fit `budget`, else random pieces.
fn pick_sample<S: AsRef<[u8]>>(samples: &[S], budget: usize) -> Vec<&[u8]> {
    let strings: Vec<&[u8]> = samples
        .iter()
        .map(AsRef::as_ref)
        .filter(|s| !s.is_empty())
        .collect();
    let total: usize = strings.iter().map(|s| s.len()).sum();
    if total <= budget {
        return strings;
    }
    let mut state = 0x5EED_F557_u64;
    let mut next = |bound: usize| {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        (mix(state) % bound as u64) as usize
    };
    let mut out = Vec::new();
    let mut taken = 0;
    // Each piece has at least one byte, so this ends within `budget` draws.
    while taken < budget {
        let s = strings[next(strings.len())];
        let k = next(s.len().div_ceil(PIECE));
        let piece = &s[k * PIECE..s.len().min((k + 1) * PIECE)];
        taken += piece.len();
        out.push(piece);
    }
    out
}

/// SplitMix64's output function: a cheap, well-mixed hash of `x`.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// How often each pseudo-code was chosen, and each ordered pair of consecutive ones.
struct Counts {
    single: Vec<u32>,
    /// `PSEUDO × PSEUDO`, indexed `first * PSEUDO + second`.
    pair: Vec<u32>,
    /// Indexes of the non-zero `pair` entries: a few thousand of the 262,144, so selecting and
    /// clearing walk this list instead of the matrix.
    touched: Vec<usize>,
}

impl Counts {
    fn new() -> Counts {
        Counts {
            single: vec![0; PSEUDO],
            pair: vec![0; PSEUDO * PSEUDO],
            touched: Vec::new(),
        }
    }

    fn clear(&mut self) {
        self.single.fill(0);
        for &i in &self.touched {
            self.pair[i] = 0;
        }
        self.touched.clear();
    }

    fn bump_pair(&mut self, first: usize, second: usize) {
        let i = first * PSEUDO + second;
        if self.pair[i] == 0 {
            self.touched.push(i);
        }
        bump(&mut self.pair[i]);
    }

    /// Encodes `s` with `enc`, counting choices (and pairs when `pairs`).
    fn count(&mut self, enc: &Encoder, s: &[u8], pairs: bool) {
        let mut prev: Option<usize> = None;
        let mut i = 0;
        while i < s.len() {
            let rest = &s[i..];
            let word = load_word(rest);
            let (code, len) = enc.longest(word, rest.len());
            let code = usize::from(code);
            let first_byte = 256 + usize::from(rest[0]);
            bump(&mut self.single[code]);
            if len > 1 {
                bump(&mut self.single[first_byte]);
            }
            if let (true, Some(p)) = (pairs, prev) {
                self.bump_pair(p, code);
                if len > 1 {
                    self.bump_pair(p, first_byte);
                }
            }
            prev = Some(code);
            i += len;
        }
    }
}

#[inline]
fn bump(c: &mut u32) {
    *c = c.saturating_add(1);
}

/// The next table from this generation's counts: the best 255 candidates by gain, at most one
/// symbol of 3+ bytes per encoder hash slot.
fn select(table: &SymbolTable, counts: &Counts, extend: bool) -> Vec<Symbol> {
    let symbol_of = |p: usize| -> Option<Symbol> {
        if p < 256 {
            table.symbol(p as u8)
        } else {
            Some(Symbol::from_byte((p - 256) as u8))
        }
    };
    let mut gains: HashMap<Symbol, u64, BuildHasherDefault<SymbolHasher>> = HashMap::default();
    for (p, &n) in counts.single.iter().enumerate() {
        let Some(s) = symbol_of(p).filter(|_| n > 0) else {
            continue;
        };
        let weight = if s.len() == 1 { SINGLE_BYTE_WEIGHT } else { 1 };
        *gains.entry(s).or_default() += u64::from(n) * s.len() as u64 * weight;
    }
    if extend {
        for &i in &counts.touched {
            let (p, q) = (i / PSEUDO, i % PSEUDO);
            let (Some(first), Some(second)) = (symbol_of(p), symbol_of(q)) else {
                continue;
            };
            if first.len() == super::MAX_SYMBOL_LEN {
                continue;
            }
            let joined = first.concat(second);
            *gains.entry(joined).or_default() += u64::from(counts.pair[i]) * joined.len() as u64;
        }
    }
    // Best first: by gain, then longer, then bytes; a total order, so ties are deterministic.
    let order = |a: &(u64, Symbol), b: &(u64, Symbol)| -> Ordering {
        b.0.cmp(&a.0)
            .then(b.1.len().cmp(&a.1.len()))
            .then(a.1.cmp(&b.1))
    };
    let mut ranked: Vec<(u64, Symbol)> = gains.into_iter().map(|(s, g)| (g, s)).collect();
    // Tens of thousands of candidates for 255 places: rank only the head fully, and the rest
    // only if hash-slot conflicts use up the head.
    let head = ranked.len().min(4 * MAX_SYMBOLS);
    if head < ranked.len() {
        ranked.select_nth_unstable_by(head, order);
    }
    ranked[..head].sort_unstable_by(order);
    let mut slot_taken = vec![false; HASH_SLOTS];
    let mut chosen = Vec::with_capacity(MAX_SYMBOLS);
    for i in 0..ranked.len() {
        if chosen.len() == MAX_SYMBOLS {
            break;
        }
        if i == head {
            ranked[head..].sort_unstable_by(order);
        }
        let s = ranked[i].1;
        if s.len() >= 3 {
            let slot = hash_slot(s.word());
            if slot_taken[slot] {
                continue;
            }
            slot_taken[slot] = true;
        }
        chosen.push(s);
    }
    chosen
}

/// A fast hasher for symbols (a packed word and a length): the candidate map takes tens of
/// thousands of inserts per generation, and SipHash's resistance to chosen keys buys nothing
/// here (the worst case is a slower training, never a wrong table: the ranking is a total
/// order independent of the map).
#[derive(Default)]
struct SymbolHasher(u64);

impl Hasher for SymbolHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        // Multiply-rotate mixing (as in FxHash): cheap, and spreads the high bits that
        // hashbrown uses.
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517C_C1B7_2722_0A95);
    }
}
