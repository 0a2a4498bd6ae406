//! Feeds arbitrary bytes to the page-image decoder as if they were read from disk: parse the
//! header, verify the checksum, decode. Must return errors, never panic or read out of bounds.
//! Half the inputs get a valid checksum patched in, so the fuzzer reaches the codecs too.
//!
//! The Trim codec (id 4) is reached three ways, since its payload is short and structured
//! enough that whole images rarely hit it: the input as a Trim payload for several page sizes
//! (decoded straight and through an image whose header says codec 4), and a page built from
//! the input, with a zero run the input places, that must round-trip through an image. That
//! page has a zstd cold layer (issue 19 step 8) when the input's bit 1 says so, and is encoded
//! as leaving the pool when bit 2 does: its image is then zstd (or raw), and must round-trip
//! too, so the decoder sees zstd images of pages shaped by the input. With bit 3 the cold codec
//! is zstd with tree 1's dictionary (codec 5, session 18), from a registry that every decode
//! here is given, so arbitrary images naming codec 5 reach the dictionary decoder as well.
#![no_main]

use std::sync::OnceLock;

use zipdb_storage::dict::{DictVersion, PageDicts};

use libfuzzer_sys::fuzz_target;
use zipdb_storage::codec::{self, CodecCtx, TRIM_ID, ZSTD_DICT_ID};
use zipdb_storage::page::{self, crc32c, LogicalHeader, IMAGE_HEADER_LEN};
use zipdb_storage::{Codec, PageId, PageType, TreeId};

/// Tree 1's dictionary, version 1, trained once on word salad.
fn dicts() -> &'static PageDicts {
    static D: OnceLock<PageDicts> = OnceLock::new();
    D.get_or_init(|| {
        const WORDS: [&str; 8] = [
            "the ", "page ", "debian ", "license ", "of ", "and ", "file ", "zipdb ",
        ];
        let mut data = Vec::new();
        let mut sizes = Vec::new();
        let mut x = 7u64;
        for _ in 0..2000 {
            let start = data.len();
            for _ in 0..12 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                data.extend_from_slice(WORDS[(x >> 61) as usize].as_bytes());
            }
            sizes.push(data.len() - start);
        }
        let bytes = zipdb_storage::dict::train(&data, &sizes, 8192).expect("trains");
        let d = PageDicts::new();
        d.install(TreeId(1), DictVersion(1), &bytes, 3)
            .expect("installs");
        d
    })
}

fuzz_target!(|data: &[u8]| {
    let mut buf = data.to_vec();
    if buf.len() > 40 && buf[0] & 1 == 1 {
        let len = 40
            + (u32::from_le_bytes([buf[36], buf[37], buf[38], buf[39]]) as usize)
                .min(buf.len() - 40);
        let crc = crc32c(&buf[4..len]);
        buf[..4].copy_from_slice(&crc.to_le_bytes());
    }
    for page_size in [4096usize, 16384] {
        let Ok(h) = page::parse_header(&buf, page_size) else {
            continue;
        };
        if page::verify_checksum(&buf, &h).is_err() {
            continue;
        }
        let mut ctx = CodecCtx::new();
        let mut out = vec![0u8; page_size];
        let _ = page::decode_image(&mut ctx, &buf, &h, &mut out);
        let _ = page::decode_image_local(&buf, &h, &mut out);
        let _ = page::decode_image_local_with(&buf, &h, &mut out, Some(dicts()));
    }

    // The input as a Trim payload: a result, never a panic; what decodes is the input's pieces.
    for page_size in [0usize, 1, 100, 4096, data.len().saturating_sub(8)] {
        let mut out = vec![0xEEu8; page_size];
        if codec::decompress_trim(data, &mut out).is_ok() {
            let off = u32::from_le_bytes(data[0..4].try_into().unwrap()) as usize;
            let len = u32::from_le_bytes(data[4..8].try_into().unwrap()) as usize;
            assert_eq!(out[..off], data[8..8 + off]);
            assert!(out[off..off + len].iter().all(|&b| b == 0));
            assert_eq!(out[off + len..], data[8 + off..]);
        }
    }
    // The same payload inside an image with a valid header and checksum.
    let page_size = 4096;
    if data.len() <= page_size && !data.is_empty() {
        let mut img = vec![0u8; IMAGE_HEADER_LEN + data.len()];
        img[4..6].copy_from_slice(&page::IMAGE_MAGIC.to_le_bytes());
        img[6] = page::IMAGE_VERSION;
        img[7] = TRIM_ID;
        img[32..36].copy_from_slice(&(page_size as u32).to_le_bytes());
        img[36..40].copy_from_slice(&(data.len() as u32).to_le_bytes());
        img[IMAGE_HEADER_LEN..].copy_from_slice(data);
        let crc = crc32c(&img[4..]);
        img[..4].copy_from_slice(&crc.to_le_bytes());
        let h = page::parse_header(&img, page_size).expect("well-formed header");
        page::verify_checksum(&img, &h).expect("checksum just computed");
        let mut out = vec![0u8; page_size];
        let _ = page::decode_image_local(&img, &h, &mut out);
    }

    // A page built from the input: its bytes from 16 on, a zero run at a place and of a length
    // the first 4 bytes choose. Must come back identical, as Trim or (no run long enough) raw.
    if data.len() >= 4 {
        let page_size = if data[0] & 1 == 0 { 4096 } else { 16384 };
        let mut p = vec![0u8; page_size];
        let cold = match (data[0] & 2 != 0, data[0] & 8 != 0) {
            (_, true) => Codec::ZstdDict,
            (true, false) => Codec::Zstd(1),
            (false, false) => Codec::None,
        };
        let leaving = data[0] & 4 != 0;
        LogicalHeader::init_cold(&mut p, PageType::Leaf, Codec::Trim, cold, TreeId(1));
        let body = &data[4..];
        let n = body.len().min(page_size - 16);
        p[16..16 + n].copy_from_slice(&body[..n]);
        // The run stays off the logical header (bytes 0..16): zeroing its tree id would send a
        // zstd-dict page to plain zstd (no dictionary for tree 0) and break `want` below.
        let at = 16 + u16::from_le_bytes([data[1], data[2]]) as usize % (page_size - 16);
        let len = (data[3] as usize * 64).min(page_size - at);
        p[at..at + len].fill(0);
        let mut img = vec![0u8; IMAGE_HEADER_LEN + page_size];
        let n = page::encode_image_local_cold(&p, PageId(9), 512, &mut img, leaving, Some(dicts()));
        let h = page::parse_header(&img[..n], page_size).expect("own header parses");
        page::verify_checksum(&img, &h).expect("own checksum holds");
        let want = match cold {
            Codec::ZstdDict if leaving => ZSTD_DICT_ID,
            Codec::None => TRIM_ID,
            _ if leaving => cold.id(),
            _ => TRIM_ID,
        };
        assert!(h.codec_id == want || h.codec_id == Codec::None.id());
        let mut back = vec![0u8; page_size];
        page::decode_image_local_with(&img, &h, &mut back, Some(dicts()))
            .expect("own image decodes");
        assert!(back == p, "image round trip changed the page");
    }
});
