//! Page identity, the logical page header, and the on-disk page image.
//!
//! A *logical page* is what the B-tree works on: `page_size` bytes, decoded, whose first
//! [`LOGICAL_HEADER_LEN`] bytes belong to the storage layer (page type, codec for write-back,
//! tree id, LSN). A *page image* is what lies on disk and in the compressed tier: a
//! [`IMAGE_HEADER_LEN`]-byte header followed by the (maybe compressed) logical page, padded to
//! the store's allocation unit. The exact bytes are documented in docs/FORMAT.md.

use crate::codec::{self, Codec, CodecCtx, CodecError};

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
/// `[0]` page type, `[1]` codec id and `[2]` codec level used when the page is written back,
/// `[3]` reserved (0), `[4..8]` tree id (LE), `[8..16]` page LSN (LE).
pub const LOGICAL_HEADER_LEN: usize = 16;

/// Reads and writes the storage-owned header of a logical page.
pub struct LogicalHeader;

impl LogicalHeader {
    pub fn init(page: &mut [u8], ty: PageType, codec: Codec, tree: TreeId) {
        page[0] = ty as u8;
        page[1] = codec.id();
        page[2] = codec.level_byte();
        page[3] = 0;
        page[4..8].copy_from_slice(&tree.0.to_le_bytes());
        page[8..16].copy_from_slice(&0u64.to_le_bytes());
    }
    pub fn page_type(page: &[u8]) -> u8 {
        page[0]
    }
    pub fn codec(page: &[u8]) -> Codec {
        Codec::from_parts(page[1], page[2]).unwrap_or(Codec::None)
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
    encode_image_with(page, id, unit, out, |codec, src, dst| {
        ctx.compress(codec, src, dst)
    })
}

/// [`encode_image`] with this thread's codec context, which is looked up (and built on the
/// thread's first call) only when the page's codec compresses: raw pages touch no codec state.
pub fn encode_image_local(page: &[u8], id: PageId, unit: usize, out: &mut [u8]) -> usize {
    encode_image_with(page, id, unit, out, |codec, src, dst| {
        codec::with_ctx(|c| c.compress(codec, src, dst))
    })
}

/// The body of the encoders: `compress` runs only for a compressing codec.
fn encode_image_with(
    page: &[u8],
    id: PageId,
    unit: usize,
    out: &mut [u8],
    compress: impl FnOnce(Codec, &[u8], &mut [u8]) -> Option<usize>,
) -> usize {
    let logical_len = page.len();
    assert!(out.len() >= IMAGE_HEADER_LEN + logical_len);
    let codec = LogicalHeader::codec(page);
    // Compressing is worth it only if the image needs fewer allocation units than raw.
    let raw_units = (IMAGE_HEADER_LEN + logical_len).div_ceil(unit);
    let budget = (raw_units - 1) * unit - IMAGE_HEADER_LEN;
    let compressed = if codec == Codec::None || raw_units < 2 {
        None
    } else {
        compress(
            codec,
            page,
            &mut out[IMAGE_HEADER_LEN..IMAGE_HEADER_LEN + budget],
        )
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

/// [`decode_image`] with this thread's codec context, which a raw image never touches.
pub fn decode_image_local(image: &[u8], h: &ImageHeader, dst: &mut [u8]) -> Result<(), Corruption> {
    let payload = &image[IMAGE_HEADER_LEN..h.image_len()];
    if h.codec_id == Codec::None.id() {
        codec::decompress_none(payload, dst)?;
    } else {
        codec::with_ctx(|c| c.decompress(h.codec_id, payload, dst))?;
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
