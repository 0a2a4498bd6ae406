//! Page codecs: none, lz4, zstd (any level, negative "fast" levels included), zlib, trim
//! (the page with its longest run of zero bytes cut out, see [`compress_trim`]), and zstd with a
//! tree's dictionary ([`crate::dict`], which holds the dictionaries).
//!
//! Each thread keeps one [`CodecCtx`] with the compressor and decompressor states of every codec,
//! created on first use and reused afterwards, so compressing or decompressing a page never
//! allocates (InnoDB's zlib path allocated ~500 KB per call; see DESIGN.md). Output always goes
//! into a caller-provided buffer.

use std::cell::RefCell;

/// A codec and its level, as chosen per tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    None,
    Lz4,
    /// zstd at `level` (1..=22, or negative for the fast levels).
    Zstd(i8),
    /// zlib (deflate with a zlib header) at `level` 1..=9.
    Zlib(u8),
    /// The page minus its longest run of zero bytes (issue 19, design §2.6): two copies, no
    /// entropy coder, no codec state. Meant for pages that keep their free space zeroed.
    Trim,
    /// zstd with the page's tree's newest dictionary ([`crate::dict`]), at the level the
    /// dictionary was installed with. A cold codec only; while the tree has no dictionary its
    /// pages are written with `Zstd(1)`.
    ZstdDict,
}

impl Codec {
    /// zipdb's default, chosen by the storage benchmark (docs/BENCHMARKS.md): zstd level 1
    /// halves sbtest-shaped pages, which lz4 cannot do with random digits.
    pub const DEFAULT: Codec = Codec::Zstd(1);

    /// The id stored on disk in the page image header.
    pub fn id(self) -> u8 {
        match self {
            Codec::None => 0,
            Codec::Lz4 => 1,
            Codec::Zstd(_) => 2,
            Codec::Zlib(_) => 3,
            Codec::Trim => TRIM_ID,
            Codec::ZstdDict => ZSTD_DICT_ID,
        }
    }

    /// The level byte stored in a logical page header (0 where the codec has none).
    pub fn level_byte(self) -> u8 {
        match self {
            Codec::None | Codec::Lz4 | Codec::Trim | Codec::ZstdDict => 0,
            Codec::Zstd(l) => l as u8,
            Codec::Zlib(l) => l,
        }
    }

    /// Inverse of (`id`, `level_byte`); `None` for an unknown id.
    pub fn from_parts(id: u8, level: u8) -> Option<Codec> {
        Some(match id {
            0 => Codec::None,
            1 => Codec::Lz4,
            2 => Codec::Zstd(level as i8),
            3 => Codec::Zlib(level.clamp(1, 9)),
            // Trim has no level: the byte is ignored, as for lz4.
            TRIM_ID => Codec::Trim,
            ZSTD_DICT_ID => Codec::ZstdDict,
            _ => return None,
        })
    }

    /// Parses `none`, `lz4`, `zstd`, `zstd:3`, `zstd:-1`, `zlib`, `zlib:6`.
    ///
    /// Not `trim`: this parses the names users give (server `--codec`, benchmarks, the SQL
    /// layer's options), and Trim reaches users only with the SQL surface of issue 19 step 6.
    pub fn parse(s: &str) -> Option<Codec> {
        let (name, level) = match s.split_once(':') {
            Some((n, l)) => (n, Some(l.parse::<i32>().ok()?)),
            None => (s, None),
        };
        match name.to_ascii_lowercase().as_str() {
            "none" | "raw" if level.is_none() => Some(Codec::None),
            "lz4" if level.is_none() => Some(Codec::Lz4),
            "zstd" => {
                let l = level.unwrap_or(1);
                if (-7..=22).contains(&l) && l != 0 {
                    Some(Codec::Zstd(l as i8))
                } else {
                    None
                }
            }
            "zlib" => {
                let l = level.unwrap_or(6);
                (1..=9).contains(&l).then_some(Codec::Zlib(l as u8))
            }
            _ => None,
        }
    }
}

impl std::fmt::Display for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Codec::None => f.write_str("none"),
            Codec::Lz4 => f.write_str("lz4"),
            Codec::Zstd(l) => write!(f, "zstd:{l}"),
            Codec::Zlib(l) => write!(f, "zlib:{l}"),
            Codec::Trim => f.write_str("trim"),
            Codec::ZstdDict => f.write_str("zstd-dict"),
        }
    }
}

/// A decoder failure: the image is not what its codec id says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("unknown codec id {0}")]
    UnknownCodec(u8),
    #[error("{codec} payload is malformed: {detail}")]
    Malformed { codec: &'static str, detail: String },
    #[error("{codec} payload decoded to {got} bytes, expected {expected}")]
    WrongLength {
        codec: &'static str,
        got: usize,
        expected: usize,
    },
    #[error("the page names dictionary version {version} of tree {tree:?}, which is not loaded")]
    UnknownDictionary {
        tree: crate::page::TreeId,
        version: u16,
    },
}

extern "C" {
    // Exported by the liblz4 that lz4-sys builds; lz4-sys does not declare it. Using a
    // caller-owned state is what makes lz4 compression allocation-free.
    fn LZ4_compress_fast_extState(
        state: *mut libc::c_void,
        src: *const libc::c_char,
        dst: *mut libc::c_char,
        src_size: libc::c_int,
        dst_capacity: libc::c_int,
        acceleration: libc::c_int,
    ) -> libc::c_int;
    fn LZ4_sizeofState() -> libc::c_int;
}

/// One thread's reusable codec states.
pub struct CodecCtx {
    zstd_c: zstd::bulk::Compressor<'static>,
    zstd_level: i32,
    zstd_d: zstd::bulk::Decompressor<'static>,
    zlib_c: flate2::Compress,
    zlib_level: u32,
    zlib_d: flate2::Decompress,
    /// LZ4_stream_t needs 8-byte alignment: keep it in u64s.
    lz4_state: Vec<u64>,
    /// Built on the thread's first dictionary page.
    dict: Option<crate::dict::DictCtx>,
}

impl std::fmt::Debug for CodecCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CodecCtx")
    }
}

impl CodecCtx {
    pub fn new() -> CodecCtx {
        // SAFETY: a pure function of the library's compile-time configuration.
        let lz4_bytes = unsafe { LZ4_sizeofState() } as usize;
        CodecCtx {
            zstd_c: zstd::bulk::Compressor::new(1).expect("zstd context"),
            zstd_level: 1,
            zstd_d: zstd::bulk::Decompressor::new().expect("zstd context"),
            zlib_c: flate2::Compress::new(flate2::Compression::new(6), true),
            zlib_level: 6,
            zlib_d: flate2::Decompress::new(true),
            lz4_state: vec![0u64; lz4_bytes.div_ceil(8)],
            dict: None,
        }
    }

    /// Compresses `src` with a tree's dictionary (payload: version, then the frame); `None`
    /// when it does not fit in `dst`.
    pub fn compress_with_dict(
        &mut self,
        dict: &crate::dict::PageDict,
        src: &[u8],
        dst: &mut [u8],
    ) -> Option<usize> {
        self.dict
            .get_or_insert_with(crate::dict::DictCtx::new)
            .compress(dict, src, dst)
    }

    /// Decompresses a [`Codec::ZstdDict`] payload of a page of `tree`.
    pub fn decompress_with_dict(
        &mut self,
        dicts: Option<&crate::dict::PageDicts>,
        tree: crate::page::TreeId,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<(), CodecError> {
        self.dict
            .get_or_insert_with(crate::dict::DictCtx::new)
            .decompress(dicts, tree, src, dst)
    }

    /// Compresses `src` into `dst`. Returns `None` when the result would not fit in `dst`;
    /// callers size `dst` so that "does not fit" means "does not shrink" and store the page raw.
    pub fn compress(&mut self, codec: Codec, src: &[u8], dst: &mut [u8]) -> Option<usize> {
        match codec {
            // Needs the tree's dictionary: see `compress_with_dict`.
            Codec::None | Codec::ZstdDict => None,
            Codec::Trim => compress_trim(src, dst),
            Codec::Lz4 => {
                // SAFETY: pointers and lengths describe live buffers; the state is
                // LZ4_sizeofState() bytes and 8-aligned; liblz4 never writes past dst_capacity.
                let n = unsafe {
                    LZ4_compress_fast_extState(
                        self.lz4_state.as_mut_ptr().cast(),
                        src.as_ptr().cast(),
                        dst.as_mut_ptr().cast(),
                        src.len() as libc::c_int,
                        dst.len() as libc::c_int,
                        1,
                    )
                };
                (n > 0).then_some(n as usize)
            }
            Codec::Zstd(level) => {
                let level = level as i32;
                if level != self.zstd_level {
                    self.zstd_c.set_compression_level(level).ok()?;
                    self.zstd_level = level;
                }
                self.zstd_c.compress_to_buffer(src, dst).ok()
            }
            Codec::Zlib(level) => {
                let level = level as u32;
                if level != self.zlib_level {
                    self.zlib_c = flate2::Compress::new(flate2::Compression::new(level), true);
                    self.zlib_level = level;
                }
                self.zlib_c.reset();
                match self
                    .zlib_c
                    .compress(src, dst, flate2::FlushCompress::Finish)
                {
                    Ok(flate2::Status::StreamEnd) => Some(self.zlib_c.total_out() as usize),
                    _ => None,
                }
            }
        }
    }

    /// Decompresses `src` (written by codec `codec_id`) into exactly `dst.len()` bytes.
    pub fn decompress(
        &mut self,
        codec_id: u8,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<(), CodecError> {
        let expected = dst.len();
        let (name, got) = match codec_id {
            0 => return decompress_none(src, dst),
            TRIM_ID => return decompress_trim(src, dst),
            ZSTD_DICT_ID => {
                return Err(CodecError::Malformed {
                    codec: "zstd-dict",
                    detail: "decoded without its tree's dictionaries".into(),
                })
            }
            1 => {
                if src.len() > i32::MAX as usize || expected > i32::MAX as usize {
                    return Err(CodecError::Malformed {
                        codec: "lz4",
                        detail: "length out of range".into(),
                    });
                }
                // SAFETY: liblz4's safe decoder never reads past src_size nor writes past
                // max_decompressed_size, whatever the input bytes are.
                let n = unsafe {
                    lz4_sys::LZ4_decompress_safe(
                        src.as_ptr().cast(),
                        dst.as_mut_ptr().cast(),
                        src.len() as libc::c_int,
                        expected as libc::c_int,
                    )
                };
                if n < 0 {
                    return Err(CodecError::Malformed {
                        codec: "lz4",
                        detail: format!("liblz4 error {n}"),
                    });
                }
                ("lz4", n as usize)
            }
            2 => {
                let n = self.zstd_d.decompress_to_buffer(src, dst).map_err(|e| {
                    CodecError::Malformed {
                        codec: "zstd",
                        detail: e.to_string(),
                    }
                })?;
                ("zstd", n)
            }
            3 => {
                self.zlib_d.reset(true);
                match self
                    .zlib_d
                    .decompress(src, dst, flate2::FlushDecompress::Finish)
                {
                    Ok(flate2::Status::StreamEnd) => ("zlib", self.zlib_d.total_out() as usize),
                    Ok(_) => {
                        return Err(CodecError::Malformed {
                            codec: "zlib",
                            detail: "stream did not end within the page".into(),
                        })
                    }
                    Err(e) => {
                        return Err(CodecError::Malformed {
                            codec: "zlib",
                            detail: e.to_string(),
                        })
                    }
                }
            }
            other => return Err(CodecError::UnknownCodec(other)),
        };
        if got != expected {
            return Err(CodecError::WrongLength {
                codec: name,
                got,
                expected,
            });
        }
        Ok(())
    }
}

/// "Decompresses" a raw payload: a length check and a copy. Needs no codec context, so that
/// raw pages never build one (its zstd, zlib and lz4 states are foreign calls, which Miri
/// cannot run, and memory a pool of raw pages would not otherwise need).
pub fn decompress_none(src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
    if src.len() != dst.len() {
        return Err(CodecError::WrongLength {
            codec: "none",
            got: src.len(),
            expected: dst.len(),
        });
    }
    dst.copy_from_slice(src);
    Ok(())
}

/// The image codec id of [`Codec::Trim`].
pub const TRIM_ID: u8 = 4;
/// The image codec id of [`Codec::ZstdDict`].
pub const ZSTD_DICT_ID: u8 = 5;
/// Bytes of the Trim payload header: `u32 zero_off`, `u32 zero_len` (both LE).
pub const TRIM_HEADER_LEN: usize = 8;

/// The longest run of zero bytes in `p` as `(offset, length)`; the first of equally long runs;
/// `(0, 0)` when `p` has no zero byte.
///
/// Eight bytes at a time where it can: a word with no zero byte cannot start or extend a run,
/// and a run goes on over whole zero words, so only words at a run's ends are looked at byte by
/// byte. A 16 KiB page is then about two thousand word loads (around a microsecond, an
/// estimate, not measured here), and short enough for Miri to interpret.
pub fn longest_zero_run(p: &[u8]) -> (usize, usize) {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&p[i..i + 8]);
        u64::from_ne_bytes(w)
    };
    let n = p.len();
    let (mut best_off, mut best_len) = (0, 0);
    let mut i = 0;
    while i < n {
        if p[i] != 0 {
            // Skip words without a zero byte ("has a zero byte": the classic bit trick; it is
            // exact for "no zero byte", which is all that is used here).
            i += 1;
            while i + 8 <= n {
                let w = word(i);
                if w.wrapping_sub(LO) & !w & HI != 0 {
                    break;
                }
                i += 8;
            }
            continue;
        }
        let start = i;
        while i + 8 <= n && word(i) == 0 {
            i += 8;
        }
        while i < n && p[i] == 0 {
            i += 1;
        }
        // Strictly longer: a later run of the same length does not replace the first.
        if i - start > best_len {
            (best_off, best_len) = (start, i - start);
        }
    }
    (best_off, best_len)
}

/// Trim-encodes page `src` into `dst`: `[u32 zero_off][u32 zero_len][src minus that run]`,
/// the run being [`longest_zero_run`]. Returns the payload length, or `None` when it does not
/// fit in `dst` (callers size `dst` one allocation unit below raw, so `None` means "not worth
/// it", as for the other codecs). A scan and two copies: no state, no allocation, no FFI.
pub fn compress_trim(src: &[u8], dst: &mut [u8]) -> Option<usize> {
    // Offsets are stored as u32; pages are at most 64 KiB, so this never refuses a real page.
    u32::try_from(src.len()).ok()?;
    let (off, len) = longest_zero_run(src);
    let tail = src.len() - off - len;
    let out_len = TRIM_HEADER_LEN + off + tail;
    if out_len > dst.len() {
        return None;
    }
    dst[0..4].copy_from_slice(&(off as u32).to_le_bytes());
    dst[4..8].copy_from_slice(&(len as u32).to_le_bytes());
    dst[TRIM_HEADER_LEN..TRIM_HEADER_LEN + off].copy_from_slice(&src[..off]);
    dst[TRIM_HEADER_LEN + off..out_len].copy_from_slice(&src[off + len..]);
    Some(out_len)
}

/// Decodes a Trim payload into exactly `dst.len()` bytes. Total: whatever `src` holds (short,
/// offsets past the page, lengths that overflow or do not add up to the page), the answer is
/// an error, never a panic. It accepts any run that is consistent, not only the longest: the
/// image checksum, not the decoder, is what vouches for the bytes.
pub fn decompress_trim(src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
    let bad = |detail: &str| CodecError::Malformed {
        codec: "trim",
        detail: detail.to_string(),
    };
    let Some((head, body)) = src.split_first_chunk::<TRIM_HEADER_LEN>() else {
        return Err(bad("payload shorter than its 8-byte header"));
    };
    let off = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    let n = dst.len();
    // off + len <= n without overflow (usize holds any u32 sum on 64-bit, but not on 32-bit).
    if off > n || len > n - off {
        return Err(bad("zero run outside the page"));
    }
    if body.len() != n - len {
        return Err(CodecError::WrongLength {
            codec: "trim",
            got: body.len().saturating_add(len),
            expected: n,
        });
    }
    dst[..off].copy_from_slice(&body[..off]);
    dst[off..off + len].fill(0);
    dst[off + len..].copy_from_slice(&body[off..]);
    Ok(())
}

impl Default for CodecCtx {
    fn default() -> Self {
        CodecCtx::new()
    }
}

thread_local! {
    static CTX: RefCell<Option<CodecCtx>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's codec context (created on the thread's first call).
pub fn with_ctx<R>(f: impl FnOnce(&mut CodecCtx) -> R) -> R {
    CTX.with(|c| {
        let mut c = c.borrow_mut();
        f(c.get_or_insert_with(CodecCtx::new))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_page() -> Vec<u8> {
        // Digits with little repetition, like sysbench's c/pad columns.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        (0..16384)
            .map(|i| {
                if i % 12 == 11 {
                    b'-'
                } else {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    b'0' + (x % 10) as u8
                }
            })
            .collect()
    }

    #[test]
    fn every_codec_roundtrips() {
        let page = sample_page();
        let mut ctx = CodecCtx::new();
        for codec in [
            Codec::Lz4,
            Codec::Zstd(1),
            Codec::Zstd(-1),
            Codec::Zstd(3),
            Codec::Zlib(6),
            Codec::Zlib(1),
        ] {
            let mut out = vec![0u8; page.len()];
            let n = ctx.compress(codec, &page, &mut out).expect("fits");
            let mut back = vec![0u8; page.len()];
            ctx.decompress(codec.id(), &out[..n], &mut back).unwrap();
            assert_eq!(back, page, "{codec}");
        }
    }

    #[test]
    fn zstd_halves_random_digits_and_lz4_does_not() {
        let page = sample_page();
        let mut ctx = CodecCtx::new();
        let mut out = vec![0u8; page.len()];
        let z = ctx.compress(Codec::Zstd(1), &page, &mut out).unwrap();
        assert!(z < page.len() * 6 / 10, "zstd {z}");
        let l = ctx.compress(Codec::Lz4, &page, &mut out);
        assert!(l.is_none_or(|l| l > page.len() * 8 / 10), "lz4 {l:?}");
    }

    #[test]
    fn incompressible_does_not_fit() {
        let mut x: u64 = 7;
        let page: Vec<u8> = (0..4096)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect();
        let mut ctx = CodecCtx::new();
        let mut out = vec![0u8; page.len() - 64];
        for codec in [Codec::Lz4, Codec::Zstd(1), Codec::Zlib(6)] {
            assert_eq!(ctx.compress(codec, &page, &mut out), None, "{codec}");
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut ctx = CodecCtx::new();
        let mut dst = vec![0u8; 4096];
        for id in 0..=5u8 {
            for junk in [
                &[][..],
                &[0xff; 7][..],
                &[0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3][..],
            ] {
                assert!(ctx.decompress(id, junk, &mut dst).is_err());
            }
        }
    }

    /// The longest zero run by the definition, byte by byte.
    fn naive_run(p: &[u8]) -> (usize, usize) {
        let (mut best, mut i) = ((0, 0), 0);
        while i < p.len() {
            let start = i;
            while i < p.len() && p[i] == 0 {
                i += 1;
            }
            if i - start > best.1 {
                best = (start, i - start);
            }
            i = i.max(start + 1);
        }
        best
    }

    fn trim_roundtrip(page: &[u8]) -> usize {
        let mut out = vec![0u8; page.len() + TRIM_HEADER_LEN];
        let n = compress_trim(page, &mut out).expect("fits page + 8");
        let (off, len) = longest_zero_run(page);
        assert_eq!(n, TRIM_HEADER_LEN + page.len() - len);
        assert_eq!(
            out[..8],
            [(off as u32).to_le_bytes(), (len as u32).to_le_bytes()].concat()
        );
        let mut back = vec![0xAAu8; page.len()];
        decompress_trim(&out[..n], &mut back).unwrap();
        assert_eq!(back, page);
        // The shared context path gives the same bytes (but the image path never uses it).
        // Not under Miri: building a context calls into the C codecs.
        if !cfg!(miri) {
            let mut back2 = vec![0x55u8; page.len()];
            CodecCtx::new()
                .decompress(TRIM_ID, &out[..n], &mut back2)
                .unwrap();
            assert_eq!(back2, page);
        }
        n
    }

    /// Runs under Miri (`.ci/run`: `miri test ... miri_`): Trim is plain Rust, no FFI, so the
    /// whole encode/decode is checked there. Small pages keep it fast under the interpreter.
    #[test]
    fn miri_trim_roundtrip_and_garbage() {
        let mut p = vec![7u8; 1024];
        p[100..900].fill(0);
        p[950..990].fill(0);
        assert_eq!(longest_zero_run(&p), (100, 800));
        assert_eq!(trim_roundtrip(&p), 8 + 224);
        // Unaligned ends and a tie (the first run wins).
        let mut q = vec![1u8; 203];
        q[3..14].fill(0);
        q[190..201].fill(0);
        assert_eq!(longest_zero_run(&q), (3, 11));
        trim_roundtrip(&q);
        // All zeros; no zeros (8 bytes longer than the page: does not fit a page-sized dst).
        assert_eq!(trim_roundtrip(&[0u8; 77]), 8);
        assert_eq!(longest_zero_run(&[9u8; 77]), (0, 0));
        assert_eq!(compress_trim(&[9u8; 77], &mut [0u8; 77]), None);
        trim_roundtrip(&[]);
        let mut dst = [0u8; 64];
        for bad in [
            &[][..],
            &[0u8; 7][..],
            // Run past the page, overflowing offsets, lengths that do not add up.
            &[60, 0, 0, 0, 5, 0, 0, 0][..],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff][..],
            &[0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff][..],
            &[0, 0, 0, 0, 60, 0, 0, 0, 1, 2, 3][..],
            &[0, 0, 0, 0, 60, 0, 0, 0, 1, 2, 3, 4, 5][..],
        ] {
            assert!(decompress_trim(bad, &mut dst).is_err(), "{bad:?}");
        }
        assert!(decompress_trim(&[0, 0, 0, 0, 60, 0, 0, 0, 1, 2, 3, 4], &mut dst).is_ok());
    }

    #[test]
    fn trim_runs_match_the_definition() {
        let mut x: u64 = 0x1234_5678;
        for round in 0..400 {
            let n = [0, 1, 7, 8, 9, 63, 64, 65, 4096][round % 9];
            let mut p = vec![0u8; n];
            for b in p.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly non-zero bytes, zeros in short and long runs.
                *b = if x.is_multiple_of(5) {
                    0
                } else {
                    (x >> 8) as u8 | 1
                };
            }
            if n > 0 && round % 3 == 0 {
                let a = (x as usize) % n;
                let b = a + ((x >> 20) as usize) % (n - a + 1);
                p[a..b].fill(0);
            }
            assert_eq!(longest_zero_run(&p), naive_run(&p), "{p:?}");
            trim_roundtrip(&p);
        }
    }

    #[test]
    fn parse_names() {
        assert_eq!(Codec::parse("zstd"), Some(Codec::Zstd(1)));
        assert_eq!(Codec::parse("zstd:-3"), Some(Codec::Zstd(-3)));
        assert_eq!(Codec::parse("zlib:9"), Some(Codec::Zlib(9)));
        assert_eq!(Codec::parse("lz4"), Some(Codec::Lz4));
        assert_eq!(Codec::parse("none"), Some(Codec::None));
        assert_eq!(Codec::parse("zstd:99"), None);
        assert_eq!(Codec::parse("snappy"), None);
        for c in [Codec::None, Codec::Lz4, Codec::Zstd(-2), Codec::Zlib(4)] {
            assert_eq!(Codec::from_parts(c.id(), c.level_byte()), Some(c));
            assert_eq!(Codec::parse(&c.to_string()), Some(c));
        }
        // Trim: id 4, no level (the byte is ignored), not a user-facing name yet.
        assert_eq!((Codec::Trim.id(), Codec::Trim.level_byte()), (4, 0));
        assert_eq!(Codec::from_parts(4, 0), Some(Codec::Trim));
        assert_eq!(Codec::from_parts(4, 9), Some(Codec::Trim));
        assert_eq!(Codec::Trim.to_string(), "trim");
        assert_eq!(Codec::parse("trim"), None);
        // ZstdDict: id 5, no level (the dictionary carries it), not user-facing either.
        assert_eq!((Codec::ZstdDict.id(), Codec::ZstdDict.level_byte()), (5, 0));
        assert_eq!(Codec::from_parts(5, 3), Some(Codec::ZstdDict));
        assert_eq!(Codec::parse("zstd-dict"), None);
        assert_eq!(Codec::from_parts(6, 0), None);
        // Its payload cannot be decoded without the tree's dictionaries.
        let mut dst = [0u8; 16];
        assert!(CodecCtx::new().decompress(5, &[1, 0, 0], &mut dst).is_err());
    }
}
