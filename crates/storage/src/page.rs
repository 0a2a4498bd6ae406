//! Page identity, the logical page header, and the on-disk page image.
//!
//! A *logical page* is what the B-tree works on: `page_size` bytes, decoded, whose first
//! [`LOGICAL_HEADER_LEN`] bytes belong to the storage layer (page type, codec for write-back,
//! tree id, LSN). A *page image* is what lies on disk and in the compressed tier: a
//! [`IMAGE_HEADER_LEN`]-byte header followed by the (maybe compressed) logical page, padded to
//! the store's allocation unit. The exact bytes are documented in docs/FORMAT.md.

use crate::codec::{self, Codec, CodecCtx, CodecError};
use crate::dict::{self, PageDicts};

/// Identifies a page for its whole life; ids are dense and reused after the page is freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageId(pub u64);

impl PageId {
    /// Never a real page: marks "no page" in links (0 is the superblock's slot, never allocated).
    pub const NONE: PageId = PageId(0);

    pub fn is_none(self) -> bool {
        self == PageId::NONE
    }
}

impl std::fmt::Display for PageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Log sequence number (written by the WAL of the next layer; 0 until then).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lsn(pub u64);

/// Identifies a tree (a table or an index) within a database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TreeId(pub u32);

/// What a page holds. Byte 0 of every logical page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PageType {
    Free = 0,
    Leaf = 1,
    Inner = 2,
    Overflow = 3,
    /// Store-internal: a chunk of the checkpointed page map and catalog.
    Meta = 4,
}

impl PageType {
    pub fn from_u8(b: u8) -> Option<PageType> {
        Some(match b {
            0 => PageType::Free,
            1 => PageType::Leaf,
            2 => PageType::Inner,
            3 => PageType::Overflow,
            4 => PageType::Meta,
            _ => return None,
        })
    }
}

/// Bytes at the start of every logical page reserved for the storage layer:
/// `[0]` page type, `[1]` codec id (0 none, 1 lz4, 2 zstd, 3 zlib, 4 trim) and `[2]` codec level
/// used when the page is written back,
/// `[3]` cold codec id (0: none), `[4..8]` tree id (LE), `[8..16]` page LSN (LE).
///
/// The cold codec (issue 19 step 8) encodes the page only when it is written back because it
/// leaves the pool. With one, `[2]` holds the *cold* codec's level: the image codec must then be
/// one without a level (none, lz4, trim), so that both fit the one level byte.
pub const LOGICAL_HEADER_LEN: usize = 16;

/// Reads and writes the storage-owned header of a logical page.
pub struct LogicalHeader;

impl LogicalHeader {
    pub fn init(page: &mut [u8], ty: PageType, codec: Codec, tree: TreeId) {
        Self::init_cold(page, ty, codec, Codec::None, tree);
    }
    /// [`Self::init`] with a cold codec (`Codec::None`: no cold layer).
    ///
    /// # Panics
    /// When both `image` and `cold` need the level byte (see [`LOGICAL_HEADER_LEN`]).
    pub fn init_cold(page: &mut [u8], ty: PageType, image: Codec, cold: Codec, tree: TreeId) {
        page[0] = ty as u8;
        page[1] = image.id();
        if cold == Codec::None {
            page[2] = image.level_byte();
            page[3] = 0;
        } else {
            assert_eq!(
                image.level_byte(),
                0,
                "a cold codec needs an image codec without a level, not {image}"
            );
            page[2] = cold.level_byte();
            page[3] = cold.id();
        }
        page[4..8].copy_from_slice(&tree.0.to_le_bytes());
        page[8..16].copy_from_slice(&0u64.to_le_bytes());
    }
    pub fn page_type(page: &[u8]) -> u8 {
        page[0]
    }
    /// Changes the page type only: codecs, tree and LSN stay.
    pub fn set_page_type(page: &mut [u8], ty: PageType) {
        page[0] = ty as u8;
    }
    pub fn codec(page: &[u8]) -> Codec {
        Codec::from_parts(page[1], page[2]).unwrap_or(Codec::None)
    }
    /// The cold codec of the page; `Codec::None` when it has none (or names an unknown one).
    pub fn cold(page: &[u8]) -> Codec {
        match page[3] {
            0 => Codec::None,
            id => Codec::from_parts(id, page[2]).unwrap_or(Codec::None),
        }
    }
    pub fn tree(page: &[u8]) -> TreeId {
        TreeId(u32::from_le_bytes([page[4], page[5], page[6], page[7]]))
    }
    pub fn lsn(page: &[u8]) -> Lsn {
        let mut b = [0u8; 8];
        b.copy_from_slice(&page[8..16]);
        Lsn(u64::from_le_bytes(b))
    }
    pub fn set_lsn(page: &mut [u8], lsn: Lsn) {
        page[8..16].copy_from_slice(&lsn.0.to_le_bytes());
    }
}

/// Magic of a page image: "ZP" little-endian.
pub const IMAGE_MAGIC: u16 = u16::from_le_bytes(*b"ZP");
/// Version of the image format described in docs/FORMAT.md.
pub const IMAGE_VERSION: u8 = 1;
/// Size of the on-disk image header.
pub const IMAGE_HEADER_LEN: usize = 40;

/// The decoded header of a page image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageHeader {
    pub checksum: u32,
    pub codec_id: u8,
    pub page_id: PageId,
    pub lsn: Lsn,
    pub tree: TreeId,
    pub page_type: u8,
    /// Decoded size (the database's page size).
    pub logical_len: u32,
    /// Payload bytes after the header (excluding padding).
    pub physical_len: u32,
}

impl ImageHeader {
    /// Header plus payload: the bytes the checksum covers (from byte 4) and that must be read.
    pub fn image_len(&self) -> usize {
        IMAGE_HEADER_LEN + self.physical_len as usize
    }
}

/// What is wrong with a page image. Wrapped with file and location by the page store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Corruption {
    #[error("bad magic {found:#06x}")]
    BadMagic { found: u16 },
    #[error("unsupported image version {0}")]
    BadVersion(u8),
    #[error("checksum mismatch: stored {expected:#010x}, computed {actual:#010x}")]
    Checksum { expected: u32, actual: u32 },
    #[error("image claims page id {found}, expected {expected}")]
    WrongPage { expected: PageId, found: PageId },
    #[error("bad lengths: logical {logical}, physical {physical}, available {available}")]
    BadLength {
        logical: u32,
        physical: u32,
        available: usize,
    },
    #[error("decode failed: {0}")]
    Codec(#[from] CodecError),
}

/// CRC32C (hardware-accelerated where the CPU has it).
#[inline]
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// Parses the header of the image in `buf` and checks magic, version and lengths (not the
/// checksum: see [`verify_checksum`]).
pub fn parse_header(buf: &[u8], logical_len: usize) -> Result<ImageHeader, Corruption> {
    if buf.len() < IMAGE_HEADER_LEN {
        return Err(Corruption::BadLength {
            logical: 0,
            physical: 0,
            available: buf.len(),
        });
    }
    let u32_at = |o: usize| u32::from_le_bytes([buf[o], buf[o + 1], buf[o + 2], buf[o + 3]]);
    let u64_at = |o: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&buf[o..o + 8]);
        u64::from_le_bytes(b)
    };
    let magic = u16::from_le_bytes([buf[4], buf[5]]);
    if magic != IMAGE_MAGIC {
        return Err(Corruption::BadMagic { found: magic });
    }
    if buf[6] != IMAGE_VERSION {
        return Err(Corruption::BadVersion(buf[6]));
    }
    let h = ImageHeader {
        checksum: u32_at(0),
        codec_id: buf[7],
        page_id: PageId(u64_at(8)),
        lsn: Lsn(u64_at(16)),
        tree: TreeId(u32_at(24)),
        page_type: buf[28],
        logical_len: u32_at(32),
        physical_len: u32_at(36),
    };
    if h.logical_len as usize != logical_len
        || h.physical_len == 0
        || h.physical_len as usize > logical_len
        || h.image_len() > buf.len()
    {
        return Err(Corruption::BadLength {
            logical: h.logical_len,
            physical: h.physical_len,
            available: buf.len(),
        });
    }
    Ok(h)
}

/// Verifies the CRC32C of an image whose header was parsed. Called only on images just read
/// from storage: images already in memory were verified when they arrived.
pub fn verify_checksum(buf: &[u8], h: &ImageHeader) -> Result<(), Corruption> {
    let actual = crc32c(&buf[4..h.image_len()]);
    if actual != h.checksum {
        return Err(Corruption::Checksum {
            expected: h.checksum,
            actual,
        });
    }
    Ok(())
}

/// Encodes logical page `page` (id `id`) into `out` as a checksummed image, compressed with the
/// codec named in its logical header unless that does not make it shorter by at least one
/// allocation `unit`. Returns the image length (header + payload), before padding. `out` must
/// hold at least `IMAGE_HEADER_LEN + page.len()` bytes.
pub fn encode_image(
    ctx: &mut CodecCtx,
    page: &[u8],
    id: PageId,
    unit: usize,
    out: &mut [u8],
) -> usize {
    let codec = LogicalHeader::codec(page);
    encode_image_with(page, codec, id, unit, out, |codec, src, dst| {
        ctx.compress(codec, src, dst)
    })
}

/// [`encode_image`] with this thread's codec context, which is looked up (and built on the
/// thread's first call) only when the page's codec compresses: raw pages touch no codec state.
pub fn encode_image_local(page: &[u8], id: PageId, unit: usize, out: &mut [u8]) -> usize {
    encode_image_local_for(page, id, unit, out, false)
}

/// [`encode_image_local`] for a page that is `leaving` the buffer pool: such a page is
/// compressed with its cold codec when its logical header names one (issue 19 step 8).
pub fn encode_image_local_for(
    page: &[u8],
    id: PageId,
    unit: usize,
    out: &mut [u8],
    leaving: bool,
) -> usize {
    encode_image_local_cold(page, id, unit, out, leaving, None)
}

/// [`encode_image_local_for`] with the store's tree dictionaries, which a page leaving the
/// pool uses when its cold codec is [`Codec::ZstdDict`] and its tree has one (else it is
/// written with zstd:1).
pub fn encode_image_local_cold(
    page: &[u8],
    id: PageId,
    unit: usize,
    out: &mut [u8],
    leaving: bool,
    dicts: Option<&PageDicts>,
) -> usize {
    let codec = match LogicalHeader::cold(page) {
        cold if leaving && cold != Codec::None => cold,
        _ => LogicalHeader::codec(page),
    };
    let (codec, dict) = dict::effective(codec, dicts, LogicalHeader::tree(page));
    encode_image_with(page, codec, id, unit, out, |codec, src, dst| {
        codec::with_ctx(|c| match &dict {
            Some(d) => c.compress_with_dict(d, src, dst),
            None => c.compress(codec, src, dst),
        })
    })
}

/// The body of the encoders: `compress` runs only for a compressing codec.
fn encode_image_with(
    page: &[u8],
    codec: Codec,
    id: PageId,
    unit: usize,
    out: &mut [u8],
    compress: impl FnOnce(Codec, &[u8], &mut [u8]) -> Option<usize>,
) -> usize {
    let logical_len = page.len();
    assert!(out.len() >= IMAGE_HEADER_LEN + logical_len);
    // Compressing is worth it only if the image needs fewer allocation units than raw.
    let raw_units = (IMAGE_HEADER_LEN + logical_len).div_ceil(unit);
    let budget = (raw_units - 1) * unit - IMAGE_HEADER_LEN;
    let dst = &mut out[IMAGE_HEADER_LEN..IMAGE_HEADER_LEN + budget];
    let compressed = match codec {
        _ if raw_units < 2 => None,
        Codec::None => None,
        // Trim needs no codec context: it stays off `compress`, so that trimmed pages, like raw
        // ones, never build the FFI codec states (and run under Miri).
        Codec::Trim => codec::compress_trim(page, dst),
        _ => compress(codec, page, dst),
    };
    let (codec_id, physical) = match compressed {
        Some(n) => (codec.id(), n),
        None => {
            out[IMAGE_HEADER_LEN..IMAGE_HEADER_LEN + logical_len].copy_from_slice(page);
            (Codec::None.id(), logical_len)
        }
    };
    out[4..6].copy_from_slice(&IMAGE_MAGIC.to_le_bytes());
    out[6] = IMAGE_VERSION;
    out[7] = codec_id;
    out[8..16].copy_from_slice(&id.0.to_le_bytes());
    out[16..24].copy_from_slice(&LogicalHeader::lsn(page).0.to_le_bytes());
    out[24..28].copy_from_slice(&LogicalHeader::tree(page).0.to_le_bytes());
    out[28] = LogicalHeader::page_type(page);
    out[29..32].fill(0);
    out[32..36].copy_from_slice(&(logical_len as u32).to_le_bytes());
    out[36..40].copy_from_slice(&(physical as u32).to_le_bytes());
    let len = IMAGE_HEADER_LEN + physical;
    let crc = crc32c(&out[4..len]);
    out[0..4].copy_from_slice(&crc.to_le_bytes());
    len
}

/// Decodes a verified image into the logical page `dst` (of the database's page size).
pub fn decode_image(
    ctx: &mut CodecCtx,
    image: &[u8],
    h: &ImageHeader,
    dst: &mut [u8],
) -> Result<(), Corruption> {
    ctx.decompress(h.codec_id, &image[IMAGE_HEADER_LEN..h.image_len()], dst)?;
    Ok(())
}

/// [`decode_image`] with this thread's codec context, which raw and Trim images never touch.
pub fn decode_image_local(image: &[u8], h: &ImageHeader, dst: &mut [u8]) -> Result<(), Corruption> {
    decode_image_local_with(image, h, dst, None)
}

/// [`decode_image_local`] with the store's tree dictionaries, which [`Codec::ZstdDict`]
/// images need (without them such an image is an error, never a panic).
pub fn decode_image_local_with(
    image: &[u8],
    h: &ImageHeader,
    dst: &mut [u8],
    dicts: Option<&PageDicts>,
) -> Result<(), Corruption> {
    let payload = &image[IMAGE_HEADER_LEN..h.image_len()];
    match h.codec_id {
        0 => codec::decompress_none(payload, dst)?,
        codec::TRIM_ID => codec::decompress_trim(payload, dst)?,
        codec::ZSTD_DICT_ID => {
            codec::with_ctx(|c| c.decompress_with_dict(dicts, h.tree, payload, dst))?
        }
        id => codec::with_ctx(|c| c.decompress(id, payload, dst))?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(codec: Codec) -> Vec<u8> {
        let mut p = vec![0u8; 16384];
        LogicalHeader::init(&mut p, PageType::Leaf, codec, TreeId(7));
        LogicalHeader::set_lsn(&mut p, Lsn(99));
        for (i, b) in p[LOGICAL_HEADER_LEN..].iter_mut().enumerate() {
            *b = b'0' + ((i * 7919) % 10) as u8;
        }
        p
    }

    #[test]
    fn image_roundtrip_and_checksum() {
        let mut ctx = CodecCtx::new();
        for codec in [Codec::None, Codec::Lz4, Codec::Zstd(1), Codec::Zlib(6)] {
            let p = page(codec);
            let mut out = vec![0u8; IMAGE_HEADER_LEN + p.len()];
            let n = encode_image(&mut ctx, &p, PageId(42), 512, &mut out);
            let h = parse_header(&out[..n], p.len()).unwrap();
            assert_eq!(h.page_id, PageId(42));
            assert_eq!(h.lsn, Lsn(99));
            assert_eq!(h.tree, TreeId(7));
            assert_eq!(h.page_type, PageType::Leaf as u8);
            verify_checksum(&out, &h).unwrap();
            let mut back = vec![0u8; p.len()];
            decode_image(&mut ctx, &out, &h, &mut back).unwrap();
            assert_eq!(back, p);
            if codec != Codec::None {
                assert!(n < p.len() / 2, "{codec} gave {n}");
            }
            // Any flipped payload or header bit is caught by the checksum.
            for at in [0usize, 5, 9, 33, n - 1] {
                let mut bad = out.clone();
                bad[at] ^= 0x10;
                let r = parse_header(&bad, p.len()).and_then(|h| verify_checksum(&bad, &h));
                assert!(r.is_err(), "flip at {at} undetected");
            }
        }
    }

    /// The thread-context variants give the same images as the explicit-context ones (the
    /// pool uses them so that raw pages never build a codec context).
    #[test]
    fn local_context_variants_match() {
        let mut ctx = CodecCtx::new();
        for codec in [Codec::None, Codec::Lz4, Codec::Zstd(1)] {
            let p = page(codec);
            let mut a = vec![0u8; IMAGE_HEADER_LEN + p.len()];
            let mut b = a.clone();
            let n = encode_image(&mut ctx, &p, PageId(5), 512, &mut a);
            assert_eq!(encode_image_local(&p, PageId(5), 512, &mut b), n);
            assert_eq!(a[..n], b[..n], "{codec}");
            let h = parse_header(&b[..n], p.len()).unwrap();
            let mut back = vec![0u8; p.len()];
            decode_image_local(&b, &h, &mut back).unwrap();
            assert_eq!(back, p);
            // A raw payload of the wrong length is an error, not a panic.
            if codec == Codec::None {
                assert!(decode_image_local(&b, &h, &mut back[..100]).is_err());
            }
        }
    }

    /// A page with a cold codec: header bytes 2..4 name it, the image codec reads as before,
    /// and only an image for a page leaving the pool uses it; both images decode to the page.
    #[test]
    fn cold_codec_applies_only_to_leaving_pages() {
        let mut p = trim_page(4096, &[(1000, 3000)]);
        LogicalHeader::init_cold(
            &mut p,
            PageType::Leaf,
            Codec::Trim,
            Codec::Zstd(3),
            TreeId(7),
        );
        assert_eq!(p[1..4], [codec::TRIM_ID, 3, 2]);
        assert_eq!(LogicalHeader::codec(&p), Codec::Trim);
        assert_eq!(LogicalHeader::cold(&p), Codec::Zstd(3));
        LogicalHeader::set_page_type(&mut p, PageType::Inner);
        assert_eq!(
            LogicalHeader::cold(&p),
            Codec::Zstd(3),
            "a type change keeps it"
        );
        p[1000..3000].fill(0);
        for (leaving, id) in [(false, codec::TRIM_ID), (true, 2)] {
            let mut out = vec![0u8; IMAGE_HEADER_LEN + p.len()];
            let n = encode_image_local_for(&p, PageId(5), 512, &mut out, leaving);
            assert_eq!(out[7], id, "leaving {leaving}");
            let h = parse_header(&out[..n], p.len()).unwrap();
            let mut back = vec![0u8; p.len()];
            decode_image_local(&out, &h, &mut back).unwrap();
            assert_eq!(back, p);
        }
        let mut plain = p.clone();
        LogicalHeader::init(&mut plain, PageType::Leaf, Codec::Trim, TreeId(7));
        assert_eq!((plain[3], LogicalHeader::cold(&plain)), (0, Codec::None));
    }

    #[test]
    #[should_panic(expected = "a cold codec needs an image codec without a level")]
    fn cold_codec_refuses_an_image_codec_with_a_level() {
        let mut p = vec![0u8; 4096];
        LogicalHeader::init_cold(
            &mut p,
            PageType::Leaf,
            Codec::Zstd(1),
            Codec::Zstd(3),
            TreeId(1),
        );
    }

    /// A Trim page of `size` bytes: digits everywhere except `zeros` (`(start, end)` ranges).
    fn trim_page(size: usize, zeros: &[(usize, usize)]) -> Vec<u8> {
        let mut p = vec![0u8; size];
        LogicalHeader::init(&mut p, PageType::Leaf, Codec::Trim, TreeId(7));
        LogicalHeader::set_lsn(&mut p, Lsn(0x0102_0304_0506_0708));
        for (i, b) in p[LOGICAL_HEADER_LEN..].iter_mut().enumerate() {
            *b = b'0' + ((i * 7919) % 10) as u8;
        }
        for &(a, b) in zeros {
            p[a..b].fill(0);
        }
        p
    }

    /// Encodes `p` through both encoders, checks the image and that it decodes back through
    /// both decoders; returns (codec id, physical length).
    fn image_roundtrip(p: &[u8]) -> (u8, usize) {
        let mut out = vec![0u8; IMAGE_HEADER_LEN + p.len()];
        let n = encode_image_local(p, PageId(3), 512, &mut out);
        let h = parse_header(&out[..n], p.len()).unwrap();
        verify_checksum(&out, &h).unwrap();
        assert_eq!((h.page_id, h.tree), (PageId(3), TreeId(7)));
        let mut back = vec![0xEEu8; p.len()];
        decode_image_local(&out, &h, &mut back).unwrap();
        assert!(back == p, "local decode differs");
        // The explicit-context variants agree. Not under Miri: a context calls into C codecs.
        if !cfg!(miri) {
            let mut ctx = CodecCtx::new();
            let mut out2 = vec![0u8; IMAGE_HEADER_LEN + p.len()];
            assert_eq!(encode_image(&mut ctx, p, PageId(3), 512, &mut out2), n);
            assert_eq!(out[..n], out2[..n]);
            back.fill(0x11);
            decode_image(&mut ctx, &out, &h, &mut back).unwrap();
            assert!(back == p, "ctx decode differs");
        }
        // The rule for every codec: compressed only when it saves an allocation unit.
        if h.codec_id != 0 {
            assert!(n.div_ceil(512) < (IMAGE_HEADER_LEN + p.len()).div_ceil(512));
        }
        (h.codec_id, h.physical_len as usize)
    }

    #[test]
    fn trim_images_roundtrip_at_every_page_size() {
        for size in [4096usize, 16384, 65536] {
            let gap = size / 3..size / 3 + size / 2;
            // A gap of zeros in the middle (a compact leaf's free space).
            let p = trim_page(size, &[(gap.start, gap.end), (40, 60)]);
            assert_eq!(image_roundtrip(&p), (4, 8 + size - gap.len()), "{size}");
            // Free space at the end.
            let p = trim_page(size, &[(size - 1000, size)]);
            assert_eq!(image_roundtrip(&p), (4, 8 + size - 1000), "{size}");
            // No zeros in the body: the header's zero bytes save nothing; stored raw.
            let p = trim_page(size, &[]);
            assert_eq!(image_roundtrip(&p), (0, size), "{size}");
            // A run too short to save a 512-byte unit (at 4 KiB the image header alone pushes a
            // raw image into a 9th unit, so any run of 48 bytes would do): raw.
            let p = trim_page(size, &[(100, 140)]);
            assert_eq!(image_roundtrip(&p), (0, size), "{size}");
            // All zeros after the header: only the header is left.
            let p = trim_page(size, &[(LOGICAL_HEADER_LEN, size)]);
            assert_eq!(image_roundtrip(&p), (4, 8 + 16), "{size}");
            // A zero LSN joins the run, which then starts after the tree id at byte 4: the
            // codec knows nothing of the layout.
            let mut p = trim_page(size, &[(LOGICAL_HEADER_LEN, size)]);
            LogicalHeader::set_lsn(&mut p, Lsn(0));
            assert_eq!(image_roundtrip(&p), (4, 8 + 5), "{size}");
        }
    }

    /// Under Miri too (name `miri_`): the Trim image path runs no foreign code, so encode,
    /// checksum and decode of a whole image are checked there. One 4 KiB page keeps it quick.
    #[test]
    fn miri_trim_image_roundtrip() {
        let p = trim_page(4096, &[(1000, 3000)]);
        assert_eq!(image_roundtrip(&p), (4, 8 + 4096 - 2000));
        let p = trim_page(4096, &[]);
        assert_eq!(image_roundtrip(&p).0, 0);
    }

    /// Bytes that claim to be a Trim image, checksum and all, decode or fail; never panic.
    #[test]
    fn trim_image_garbage_is_an_error() {
        let p = trim_page(4096, &[(500, 3500)]);
        let mut out = vec![0u8; IMAGE_HEADER_LEN + p.len()];
        let n = encode_image_local(&p, PageId(3), 512, &mut out);
        assert_eq!(out[7], codec::TRIM_ID);
        let mut back = vec![0u8; p.len()];
        for at in IMAGE_HEADER_LEN..IMAGE_HEADER_LEN + 8 {
            for v in [0u8, 1, 0x7f, 0xff] {
                let mut bad = out.clone();
                bad[at] = v;
                let h = parse_header(&bad[..n], p.len()).unwrap();
                // A moved run that still fits decodes (to another page: the checksum, which
                // this skips, is what catches that); a changed length cannot add up.
                match decode_image_local(&bad, &h, &mut back) {
                    Ok(()) => assert!(at < IMAGE_HEADER_LEN + 4 || bad[at] == out[at], "{at}"),
                    Err(e) => assert!(matches!(e, Corruption::Codec(_)), "{e}"),
                }
            }
        }
    }

    mod trim_props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(96))]

            /// Random pages with random zero runs: the image decodes to the same page, uses
            /// Trim exactly when cutting the longest run saves a unit, and cuts that run.
            #[test]
            fn trim_images_roundtrip(
                size_i in 0usize..3,
                seed in any::<u64>(),
                runs in proptest::collection::vec((0.0f64..1.0, 0.0f64..0.6), 0..5),
                sparse in any::<bool>(),
            ) {
                let size = [4096usize, 16384, 65536][size_i];
                let mut p = vec![0u8; size];
                LogicalHeader::init(&mut p, PageType::Leaf, Codec::Trim, TreeId(7));
                let mut x = seed | 1;
                for b in p[LOGICAL_HEADER_LEN..].iter_mut() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    *b = if sparse && x.is_multiple_of(7) { 0 } else { (x >> 24) as u8 };
                }
                for (at, len) in runs {
                    let a = LOGICAL_HEADER_LEN + (at * (size - LOGICAL_HEADER_LEN) as f64) as usize;
                    let b = (a + (len * size as f64) as usize).min(size);
                    p[a..b].fill(0);
                }
                let (id, physical) = image_roundtrip(&p);
                let (_, run) = codec::longest_zero_run(&p);
                let trimmed = IMAGE_HEADER_LEN + 8 + size - run;
                let saves = trimmed.div_ceil(512) < (IMAGE_HEADER_LEN + size).div_ceil(512);
                prop_assert_eq!(id, if saves { 4 } else { 0 });
                prop_assert_eq!(physical, if saves { 8 + size - run } else { size });
            }

            /// Any payload bytes under codec 4, for any page size: a result, never a panic;
            /// what decodes is the payload's pieces around a zero fill.
            #[test]
            fn trim_decode_of_arbitrary_bytes(
                payload in proptest::collection::vec(any::<u8>(), 0..600),
                size in 0usize..700,
            ) {
                let mut dst = vec![0xEEu8; size];
                if codec::decompress_trim(&payload, &mut dst).is_ok() {
                    let off = u32::from_le_bytes(payload[0..4].try_into().unwrap()) as usize;
                    let len = u32::from_le_bytes(payload[4..8].try_into().unwrap()) as usize;
                    prop_assert_eq!(&dst[..off], &payload[8..8 + off]);
                    prop_assert!(dst[off..off + len].iter().all(|&b| b == 0));
                    prop_assert_eq!(&dst[off + len..], &payload[8 + off..]);
                }
            }
        }
    }

    #[test]
    fn header_rejects_nonsense_lengths() {
        let mut ctx = CodecCtx::new();
        let p = page(Codec::Zstd(1));
        let mut out = vec![0u8; IMAGE_HEADER_LEN + p.len()];
        let n = encode_image(&mut ctx, &p, PageId(1), 512, &mut out);
        assert!(matches!(
            parse_header(&out[..n], 8192),
            Err(Corruption::BadLength { .. })
        ));
        assert!(matches!(
            parse_header(&out[..10], 16384),
            Err(Corruption::BadLength { .. })
        ));
    }
}
