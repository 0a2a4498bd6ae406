//! Symbols, the symbol table, and its serialized form.

use std::fmt;
use std::sync::OnceLock;

use super::encode::Encoder;
use super::{TableError, MAX_SYMBOLS, MAX_SYMBOL_LEN};
use crate::page::crc32c;

/// Format version of the serialized table (byte 4). Bump it for any change of layout or meaning.
pub const FORMAT_VERSION: u8 = 1;

/// CRC (4) + version (1) + symbol count (1).
const HEADER_LEN: usize = 6;

/// One symbol: 1 to 8 bytes packed little-endian into a `u64` (byte `i` is bits `8i..8i+8`),
/// the bytes past its length zero. Packing lets the decoder store a symbol with one 8-byte
/// write and the encoder compare one with a mask.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Symbol {
    word: u64,
    len: u8,
}

impl Symbol {
    /// The symbol made of `bytes`, or `None` unless it has 1 to 8 bytes.
    pub fn new(bytes: &[u8]) -> Option<Symbol> {
        if bytes.is_empty() || bytes.len() > MAX_SYMBOL_LEN {
            return None;
        }
        let mut b = [0u8; 8];
        b[..bytes.len()].copy_from_slice(bytes);
        Some(Symbol {
            word: u64::from_le_bytes(b),
            len: bytes.len() as u8,
        })
    }

    /// The one-byte symbol `b`.
    #[inline]
    pub fn from_byte(b: u8) -> Symbol {
        Symbol {
            word: u64::from(b),
            len: 1,
        }
    }

    /// Length in bytes, 1..=8.
    #[inline]
    pub fn len(self) -> usize {
        usize::from(self.len)
    }

    /// Never true: a symbol has at least one byte (here for clippy's `len` convention).
    #[inline]
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// The packed bytes (zero past [`Symbol::len`]).
    #[inline]
    pub fn word(self) -> u64 {
        self.word
    }

    /// The bytes, zero-padded to 8; the first [`Symbol::len`] are the symbol.
    #[inline]
    pub fn to_bytes(self) -> [u8; 8] {
        self.word.to_le_bytes()
    }

    /// `self` followed by `next`, cut to 8 bytes.
    pub(super) fn concat(self, next: Symbol) -> Symbol {
        if self.len() == MAX_SYMBOL_LEN {
            return self;
        }
        let len = (self.len() + next.len()).min(MAX_SYMBOL_LEN);
        // self.len() < 8 here, so the shift is below 64.
        let word = (self.word | next.word << (8 * self.len())) & mask(len);
        Symbol {
            word,
            len: len as u8,
        }
    }
}

/// The low `len` bytes of a word set (`len` in 1..=8).
#[inline]
pub(super) fn mask(len: usize) -> u64 {
    debug_assert!((1..=8).contains(&len));
    u64::MAX >> (64 - 8 * len)
}

impl fmt::Debug for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.to_bytes();
        write!(f, "{:?}", b[..self.len()].escape_ascii().to_string())
    }
}

/// A static symbol table: up to 255 symbols; code `c` stands for symbol `c`.
///
/// Decoding needs only the two 256-entry arrays (2.3 KB, cache-resident). Encoding needs
/// lookup structures of about 150 KB, built on the first [`SymbolTable::encode`] and kept with
/// the table, so a table that only decodes never pays for them.
pub struct SymbolTable {
    /// Number of symbols; codes `0..n` are valid.
    pub(super) n: usize,
    /// Packed symbol per code; 0 for codes `>= n` (and for the escape).
    pub(super) words: [u64; 256],
    /// Length per code; 0 marks a code with no symbol, which the decoder rejects.
    pub(super) lens: [u8; 256],
    encoder: OnceLock<Box<Encoder>>,
}

impl SymbolTable {
    /// A table with no symbols: every byte encodes as an escape.
    pub fn empty() -> SymbolTable {
        SymbolTable {
            n: 0,
            words: [0; 256],
            lens: [0; 256],
            encoder: OnceLock::new(),
        }
    }

    /// A table whose code `i` is `symbols[i]`. Errors: more than 255 symbols, a symbol of 0 or
    /// more than 8 bytes, a repeated symbol.
    pub fn from_symbols<S: AsRef<[u8]>>(symbols: &[S]) -> Result<SymbolTable, TableError> {
        if symbols.len() > MAX_SYMBOLS {
            return Err(TableError::TooManySymbols(symbols.len()));
        }
        let mut list = Vec::with_capacity(symbols.len());
        for (code, s) in symbols.iter().enumerate() {
            let s = s.as_ref();
            list.push(Symbol::new(s).ok_or(TableError::BadSymbolLength { code, len: s.len() })?);
        }
        let t = SymbolTable::from_list(&list);
        t.validate()?;
        Ok(t)
    }

    /// A table from symbols already known to be at most 255 and distinct (the trainer's).
    pub(super) fn from_list(symbols: &[Symbol]) -> SymbolTable {
        debug_assert!(symbols.len() <= MAX_SYMBOLS);
        let mut t = SymbolTable::empty();
        for (code, s) in symbols.iter().take(MAX_SYMBOLS).enumerate() {
            t.words[code] = s.word;
            t.lens[code] = s.len;
        }
        t.n = symbols.len().min(MAX_SYMBOLS);
        t
    }

    /// Number of symbols.
    #[inline]
    pub fn len(&self) -> usize {
        self.n
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The symbol of `code`, if the table has one.
    pub fn symbol(&self, code: u8) -> Option<Symbol> {
        let len = self.lens[usize::from(code)];
        (len != 0).then(|| Symbol {
            word: self.words[usize::from(code)],
            len,
        })
    }

    /// The symbols in code order.
    pub fn symbols(&self) -> impl Iterator<Item = Symbol> + '_ {
        (0..self.n).map(|c| Symbol {
            word: self.words[c],
            len: self.lens[c],
        })
    }

    /// Checks every invariant the decoder and encoder rely on: at most 255 symbols, each of
    /// 1..=8 bytes with zero padding, no symbol in unused codes (the escape included), no
    /// symbol twice. Called on every load. Memory safety never depends on it (the decoder
    /// bounds every access itself), but decoding as docs/FORMAT.md defines it does: the fast
    /// path takes every code below `n` for a symbol of at least one byte.
    pub fn validate(&self) -> Result<(), TableError> {
        if self.n > MAX_SYMBOLS {
            return Err(TableError::TooManySymbols(self.n));
        }
        for code in 0..self.n {
            let len = usize::from(self.lens[code]);
            if !(1..=MAX_SYMBOL_LEN).contains(&len) {
                return Err(TableError::BadSymbolLength { code, len });
            }
            if self.words[code] & !mask(len) != 0 {
                return Err(TableError::Inconsistent("symbol padding is not zero"));
            }
        }
        if (self.n..256).any(|c| self.lens[c] != 0 || self.words[c] != 0) {
            return Err(TableError::Inconsistent("an unused code has a symbol"));
        }
        let mut seen: Vec<(Symbol, usize)> = self.symbols().zip(0..).collect();
        seen.sort_unstable();
        for w in seen.windows(2) {
            if w[0].0 == w[1].0 {
                let (first, code) = (w[0].1.min(w[1].1), w[0].1.max(w[1].1));
                return Err(TableError::DuplicateSymbol { code, first });
            }
        }
        Ok(())
    }

    /// The encoder's lookup structures, built on first use.
    #[inline]
    pub(super) fn encoder(&self) -> &Encoder {
        self.encoder.get_or_init(|| Box::new(Encoder::new(self)))
    }

    /// Bytes of the serialized table.
    pub fn serialized_len(&self) -> usize {
        HEADER_LEN + self.n + self.symbols().map(Symbol::len).sum::<usize>()
    }

    /// Appends the serialized table (docs/FORMAT.md, "FSST symbol table"):
    /// `[crc32c u32][version u8][n u8][len u8 × n][symbol bytes]`, the CRC over everything
    /// after it.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        out.push(FORMAT_VERSION);
        out.push(self.n as u8); // n <= 255
        out.extend_from_slice(&self.lens[..self.n]);
        for s in self.symbols() {
            out.extend_from_slice(&s.to_bytes()[..s.len()]);
        }
        let crc = crc32c(&out[start + 4..]);
        out[start..start + 4].copy_from_slice(&crc.to_le_bytes());
    }

    /// The serialized table.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.serialized_len());
        self.write_to(&mut v);
        v
    }

    /// Loads a table serialized by [`SymbolTable::write_to`] that fills `bytes` exactly.
    pub fn from_bytes(bytes: &[u8]) -> Result<SymbolTable, TableError> {
        let (t, used) = SymbolTable::parse_prefix(bytes)?;
        if used != bytes.len() {
            return Err(TableError::TrailingBytes(bytes.len() - used));
        }
        Ok(t)
    }

    /// Loads the serialized table at the start of `bytes`; returns it and the bytes it took.
    /// Checks lengths, version and CRC before reading a symbol, then [`SymbolTable::validate`].
    pub fn parse_prefix(bytes: &[u8]) -> Result<(SymbolTable, usize), TableError> {
        let truncated = |need| TableError::Truncated {
            len: bytes.len(),
            need,
        };
        let header = bytes.get(..HEADER_LEN).ok_or(truncated(HEADER_LEN))?;
        let n = usize::from(header[5]);
        let lens = bytes
            .get(HEADER_LEN..HEADER_LEN + n)
            .ok_or(truncated(HEADER_LEN + n))?;
        let total = HEADER_LEN + n + lens.iter().map(|&l| usize::from(l)).sum::<usize>();
        let all = bytes.get(..total).ok_or(truncated(total))?;
        let stored = u32::from_le_bytes([all[0], all[1], all[2], all[3]]);
        let computed = crc32c(&all[4..]);
        if stored != computed {
            return Err(TableError::BadChecksum { stored, computed });
        }
        if all[4] != FORMAT_VERSION {
            return Err(TableError::UnknownVersion(all[4]));
        }
        // n came from one byte, so it is at most 255 = MAX_SYMBOLS.
        let mut t = SymbolTable::empty();
        let mut at = HEADER_LEN + n;
        for (code, &len) in lens.iter().enumerate() {
            let len = usize::from(len);
            if !(1..=MAX_SYMBOL_LEN).contains(&len) {
                return Err(TableError::BadSymbolLength { code, len });
            }
            // In bounds: `total` summed these lengths and `all` has `total` bytes.
            let s = Symbol::new(&all[at..at + len]).expect("length checked above");
            t.words[code] = s.word;
            t.lens[code] = s.len;
            at += len;
        }
        t.n = n;
        t.validate()?;
        Ok((t, total))
    }
}

impl Default for SymbolTable {
    fn default() -> Self {
        SymbolTable::empty()
    }
}

/// A clone shares no encoder: it is rebuilt on the clone's first encode.
impl Clone for SymbolTable {
    fn clone(&self) -> Self {
        SymbolTable {
            n: self.n,
            words: self.words,
            lens: self.lens,
            encoder: OnceLock::new(),
        }
    }
}

/// Tables are equal when their codes stand for the same symbols.
impl PartialEq for SymbolTable {
    fn eq(&self, other: &Self) -> bool {
        self.n == other.n && self.words == other.words && self.lens == other.lens
    }
}

impl Eq for SymbolTable {}

impl fmt::Debug for SymbolTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SymbolTable")
            .field("n", &self.n)
            .field("symbols", &self.symbols().collect::<Vec<_>>())
            .finish()
    }
}
