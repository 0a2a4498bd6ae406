//! The decoder: total over arbitrary input, one table lookup and one 8-byte store per code.

use std::mem::MaybeUninit;

use super::table::SymbolTable;
use super::{max_decoded_len, DecodeError, ESCAPE, MAX_SYMBOL_LEN};

impl SymbolTable {
    /// Appends the decoding of `codes` to `out` and returns its length. On error `out` keeps
    /// its length (bytes of its spare capacity may have been written).
    ///
    /// Reserves `8 × codes.len() + 8` bytes first, so every symbol is written with one 8-byte
    /// store; a reused `out` therefore allocates only while it grows.
    pub fn decode(&self, codes: &[u8], out: &mut Vec<u8>) -> Result<usize, DecodeError> {
        let room = max_decoded_len(codes.len()).saturating_add(MAX_SYMBOL_LEN);
        out.reserve(room);
        let start = out.len();
        let n = decode_kernel(self, codes, &mut out.spare_capacity_mut()[..room])?;
        // SAFETY: `decode_kernel` initialized the first `n` bytes of the spare capacity, which
        // start at `out.len()`, and `start + n <= capacity` because `n <= room`.
        unsafe { out.set_len(start + n) };
        Ok(n)
    }

    /// Decodes `codes` into the front of `dst` and returns the decoded length; an error if it
    /// does not fit. A `dst` of exactly the decoded length works (the last symbols are copied
    /// byte by byte), so a caller that knows the length needs no slack.
    pub fn decode_into(&self, codes: &[u8], dst: &mut [u8]) -> Result<usize, DecodeError> {
        // SAFETY: `MaybeUninit<u8>` has the layout of `u8`, and the kernel stores only
        // initialized bytes, so `dst` stays fully initialized through this view.
        let dst = unsafe { &mut *(dst as *mut [u8] as *mut [MaybeUninit<u8>]) };
        decode_kernel(self, codes, dst)
    }
}

/// Decodes `codes` into `dst`; returns the number of bytes decoded, which are initialized.
///
/// Safe code, with one branch per code for the room check: where 8 bytes of room remain the
/// symbol goes in one unaligned 8-byte store (the bytes past its length are overwritten by the
/// next symbol or left as slack), else only its own bytes are copied. Unused codes have length
/// 0, so the common case tests one byte; the escape and bad codes share the rare branch.
#[inline]
fn decode_kernel(
    t: &SymbolTable,
    codes: &[u8],
    dst: &mut [MaybeUninit<u8>],
) -> Result<usize, DecodeError> {
    let mut i = 0;
    let mut o = 0;
    while i < codes.len() {
        let c = usize::from(codes[i]);
        let len = usize::from(t.lens[c]);
        if len != 0 {
            let word = t.words[c].to_le_bytes().map(MaybeUninit::new);
            if let Some(w) = dst.get_mut(o..o + MAX_SYMBOL_LEN) {
                w.copy_from_slice(&word);
            } else if let Some(w) = dst.get_mut(o..o + len) {
                w.copy_from_slice(&word[..len]);
            } else {
                return Err(DecodeError::OutputFull {
                    capacity: dst.len(),
                    at: i,
                });
            }
            o += len;
            i += 1;
        } else if c == usize::from(ESCAPE) {
            let Some(&literal) = codes.get(i + 1) else {
                return Err(DecodeError::TruncatedEscape { at: i });
            };
            let Some(slot) = dst.get_mut(o) else {
                return Err(DecodeError::OutputFull {
                    capacity: dst.len(),
                    at: i,
                });
            };
            slot.write(literal);
            o += 1;
            i += 2;
        } else {
            return Err(DecodeError::UnknownCode {
                code: codes[i],
                at: i,
                symbols: t.len(),
            });
        }
    }
    Ok(o)
}
