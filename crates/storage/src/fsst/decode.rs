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
/// Three speeds, each symbol stored with one unaligned 8-byte write where room allows (the
/// bytes past its length are overwritten by the next symbol or left as slack past the result):
/// - 8 codes at a time while 64 bytes of room remain, after one word-wide test that none of
///   them is the escape or an unknown code ([`CodeCheck`]): no per-code branch at all; a block
///   with an escape decodes the symbols before it the same way, then the escape by [`step`];
///   the last codes of the input are a block padded with escapes;
/// - else 4 codes at a time, tested by their lengths (0 for the escape and unknown codes),
///   while the block's farthest store has 8 bytes of room: the end of an exact destination;
/// - else [`step`]: one code with exact bounds, escapes and errors.
#[inline]
fn decode_kernel(
    t: &SymbolTable,
    codes: &[u8],
    dst: &mut [MaybeUninit<u8>],
) -> Result<usize, DecodeError> {
    let check = CodeCheck::new(t.len());
    let cap = dst.len();
    let mut i = 0;
    let mut o = 0;
    while i < codes.len() {
        if cap - o >= 8 * MAX_SYMBOL_LEN {
            let block = next_block(&codes[i..]);
            let bad = check.non_symbols(block);
            if bad == 0 {
                for k in 0..8 {
                    let c = ((block >> (8 * k)) & 0xFF) as usize;
                    store8(dst, o, t.words[c]);
                    o += usize::from(t.lens[c]);
                }
                i += 8;
                continue;
            }
            // The symbols before the first escape, unknown code or end of input, then
            // that code (if any).
            for k in 0..(bad.trailing_zeros() / 8) {
                let c = ((block >> (8 * k)) & 0xFF) as usize;
                store8(dst, o, t.words[c]);
                o += usize::from(t.lens[c]);
                i += 1;
            }
            if i < codes.len() {
                (i, o) = step(t, codes, i, dst, o)?;
            }
            continue;
        }
        if let Some(&[c0, c1, c2, c3]) = codes.get(i..i + 4) {
            let (c0, c1, c2, c3) = (c0 as usize, c1 as usize, c2 as usize, c3 as usize);
            let l0 = usize::from(t.lens[c0]);
            let l1 = usize::from(t.lens[c1]);
            let l2 = usize::from(t.lens[c2]);
            let l3 = usize::from(t.lens[c3]);
            // No overflow: o <= cap <= isize::MAX and each length is at most 8.
            if l0.min(l1).min(l2).min(l3) != 0 && o + l0 + l1 + l2 + MAX_SYMBOL_LEN <= cap {
                store8(dst, o, t.words[c0]);
                o += l0;
                store8(dst, o, t.words[c1]);
                o += l1;
                store8(dst, o, t.words[c2]);
                o += l2;
                store8(dst, o, t.words[c3]);
                o += l3;
                i += 4;
                continue;
            }
        }
        (i, o) = step(t, codes, i, dst, o)?;
    }
    Ok(o)
}

/// Tests 8 codes at once for "every one names a symbol", i.e. every byte `b` is below the
/// symbol count `n` (the escape, 255, never is: n <= 255).
///
/// `b >= n` iff `b - n` does not borrow. Subtract the low 7 bits with the top bit of each
/// byte of the minuend forced on, `t = (b | 0x80) - (n & 0x7F)`, which never borrows across
/// bytes; bit 7 of `t` is then "no borrow out of the low 7 bits". The full byte does not borrow
/// iff at least two of (`b`'s top bit, not `n`'s top bit, `t`'s bit 7) hold: a majority, so
/// all 8 bytes take 7 word operations and two constants per table.
#[derive(Clone, Copy)]
struct CodeCheck {
    /// `n & 0x7F` in every byte.
    n_low: u64,
    /// `HIGH` when `n < 128`, else 0: "not `n`'s top bit" in every byte.
    n_top_clear: u64,
}

const HIGH: u64 = 0x8080_8080_8080_8080;
const ONES: u64 = 0x0101_0101_0101_0101;

impl CodeCheck {
    #[inline]
    fn new(n: usize) -> CodeCheck {
        debug_assert!(n <= 255);
        CodeCheck {
            n_low: ONES * (n as u64 & 0x7F),
            n_top_clear: if n < 128 { HIGH } else { 0 },
        }
    }

    /// The top bit of each byte of the result is set where `block` holds a non-symbol.
    #[inline(always)]
    fn non_symbols(self, block: u64) -> u64 {
        let k = self.n_top_clear;
        let t = (block | HIGH) - self.n_low;
        ((block & (k | t)) | (k & t)) & HIGH
    }

    #[cfg(test)]
    fn all_symbols(self, block: u64) -> bool {
        self.non_symbols(block) == 0
    }
}

/// The next 8 codes as a little-endian word; past the end of `rest` (non-empty), escapes, so
/// that the word-wide test stops at the end of the input.
#[inline(always)]
fn next_block(rest: &[u8]) -> u64 {
    if let Some(&b) = rest.first_chunk::<8>() {
        return u64::from_le_bytes(b);
    }
    let mut b = [ESCAPE; 8];
    for (d, &c) in b.iter_mut().zip(rest) {
        *d = c;
    }
    u64::from_le_bytes(b)
}

/// Writes the 8 bytes of `word` (little-endian) at `dst[at..at + 8]`.
///
/// Callers check `at + 8 <= dst.len()` first (for a block, for its last and farthest store);
/// the debug assertion repeats it in tests.
#[inline(always)]
fn store8(dst: &mut [MaybeUninit<u8>], at: usize, word: u64) {
    debug_assert!(at + MAX_SYMBOL_LEN <= dst.len());
    // SAFETY: `at + 8 <= dst.len()` (see above), so the 8 bytes written lie inside `dst`;
    // `write_unaligned` has no alignment requirement, and `MaybeUninit<u8>` is laid out as
    // `u8`.
    unsafe {
        dst.as_mut_ptr()
            .add(at)
            .cast::<u64>()
            .write_unaligned(word.to_le())
    };
}

/// Decodes the one code at `codes[i]` into `dst[o..]` with exact bounds checks; returns the
/// next positions.
#[inline]
fn step(
    t: &SymbolTable,
    codes: &[u8],
    i: usize,
    dst: &mut [MaybeUninit<u8>],
    o: usize,
) -> Result<(usize, usize), DecodeError> {
    let full = DecodeError::OutputFull {
        capacity: dst.len(),
        at: i,
    };
    let code = codes[i];
    let len = usize::from(t.lens[usize::from(code)]);
    if len != 0 {
        let word = t.words[usize::from(code)];
        if o + MAX_SYMBOL_LEN <= dst.len() {
            store8(dst, o, word);
        } else {
            // The last bytes of an exactly sized destination: a short loop, not a memcpy call.
            let out = dst.get_mut(o..o + len).ok_or(full)?;
            for (d, b) in out.iter_mut().zip(word.to_le_bytes()) {
                d.write(b);
            }
        }
        Ok((i + 1, o + len))
    } else if code == ESCAPE {
        let &literal = codes
            .get(i + 1)
            .ok_or(DecodeError::TruncatedEscape { at: i })?;
        dst.get_mut(o).ok_or(full)?.write(literal);
        Ok((i + 2, o + 1))
    } else {
        Err(DecodeError::UnknownCode {
            code,
            at: i,
            symbols: t.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::CodeCheck;

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri; safe code")]
    fn the_word_wide_code_test_is_exact_for_every_symbol_count_and_byte() {
        for n in 0..=255usize {
            let check = CodeCheck::new(n);
            for b in 0..=255u8 {
                let valid = usize::from(b) < n;
                for filler in [0u8, (n.saturating_sub(1)) as u8] {
                    let filler_ok = usize::from(filler) < n;
                    for pos in [0, 3, 7] {
                        let mut bytes = [filler; 8];
                        bytes[pos] = b;
                        let want = valid && filler_ok;
                        assert_eq!(
                            check.all_symbols(u64::from_le_bytes(bytes)),
                            want,
                            "n {n} byte {b} at {pos} among {filler}"
                        );
                    }
                }
            }
        }
    }
}
