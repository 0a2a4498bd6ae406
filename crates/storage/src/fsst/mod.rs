//! FSST: a static symbol table that compresses short strings one at a time.
//!
//! This is zipdb's own implementation of Fast Static Symbol Tables (Boncz, Neumann, Leis,
//! "FSST: Fast Random Access String Compression", VLDB 2020). A table holds up to 255 symbols of
//! 1 to 8 bytes. A compressed string is a sequence of one-byte codes: code `c < 255` stands for
//! symbol `c`, and [`ESCAPE`] (255) is followed by one literal byte. Each string is encoded on
//! its own, so any record can be decoded without its neighbours; that is why the record format
//! of issue 19 uses it instead of a whole-page codec (docs/design/issue19-record-compression.md).
//!
//! - [`SymbolTable::train`] builds a table from a sample with the paper's iterative counting
//!   algorithm ([`train`] module docs). It is deterministic: the same sample gives the same table.
//! - [`SymbolTable::encode`] appends the codes of a string (at most 2 bytes per input byte).
//! - [`SymbolTable::decode`] / [`SymbolTable::decode_into`] are **total**: any byte string gives
//!   the decoded bytes or a [`DecodeError`], never a panic or an out-of-bounds access, and the
//!   output is at most [`MAX_SYMBOL_LEN`] times the input.
//! - [`SymbolTable::to_bytes`] / [`SymbolTable::from_bytes`]: a versioned, CRC-32C-checked
//!   little-endian image, validated on load (docs/FORMAT.md, "FSST symbol table").
//!
//! Why our own rather than the `fsst-rs` crate: its decoder trusts its input (unchecked indexing
//! by code, a read past a trailing escape), it has no serialized form, and it decodes into
//! buffers with slack; a page decoder of a database must reject corrupt bytes with an error.
//! The crate stays in the codec benchmark as an oracle for ratio and speed.

mod decode;
mod encode;
mod table;
mod train;

#[cfg(test)]
mod tests;

pub use table::{Symbol, SymbolTable, FORMAT_VERSION};
pub use train::SAMPLE_BYTES;

/// The code that announces one literal byte.
pub const ESCAPE: u8 = 255;
/// Symbols per table at most: every code but [`ESCAPE`].
pub const MAX_SYMBOLS: usize = 255;
// Codes below the symbol count are symbols, so the escape must be above every symbol code.
const _: () = assert!(ESCAPE as usize == MAX_SYMBOLS);

/// Longest symbol, in bytes; also the most bytes one code can decode to.
pub const MAX_SYMBOL_LEN: usize = 8;

/// The most bytes `encoded_len` code bytes can decode to.
#[inline]
pub const fn max_decoded_len(encoded_len: usize) -> usize {
    encoded_len.saturating_mul(MAX_SYMBOL_LEN)
}

/// The most bytes encoding `raw_len` bytes can produce (every byte escaped).
#[inline]
pub const fn max_encoded_len(raw_len: usize) -> usize {
    raw_len.saturating_mul(2)
}

/// Why a code string does not decode with a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// A code names no symbol of this table.
    #[error("code {code} at byte {at} is not in the symbol table ({symbols} symbols)")]
    UnknownCode { code: u8, at: usize, symbols: usize },
    /// The last byte is an escape with no literal after it.
    #[error("escape at byte {at} is the last byte")]
    TruncatedEscape { at: usize },
    /// The decoded string does not fit the destination.
    #[error("decoded string exceeds the destination's {capacity} bytes (code at byte {at})")]
    OutputFull { capacity: usize, at: usize },
}

/// Why bytes are not a valid serialized symbol table (or symbols not a valid table).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    #[error("symbol table truncated: {len} bytes, need {need}")]
    Truncated { len: usize, need: usize },
    #[error("symbol table format version {0}, this build reads {FORMAT_VERSION}")]
    UnknownVersion(u8),
    #[error("symbol table checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    BadChecksum { stored: u32, computed: u32 },
    #[error("{0} symbols, at most {MAX_SYMBOLS}")]
    TooManySymbols(usize),
    #[error("symbol {code} has length {len}, must be 1..=8")]
    BadSymbolLength { code: usize, len: usize },
    #[error("symbol {code} repeats symbol {first}")]
    DuplicateSymbol { code: usize, first: usize },
    #[error("{0} bytes after the symbol table")]
    TrailingBytes(usize),
    #[error("symbol table internals inconsistent: {0}")]
    Inconsistent(&'static str),
}
