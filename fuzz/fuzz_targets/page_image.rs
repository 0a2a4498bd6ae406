//! Feeds arbitrary bytes to the page-image decoder as if they were read from disk: parse the
//! header, verify the checksum, decode. Must return errors, never panic or read out of bounds.
//! Half the inputs get a valid checksum patched in, so the fuzzer reaches the codecs too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zipdb_storage::codec::CodecCtx;
use zipdb_storage::page::{self, crc32c};

fuzz_target!(|data: &[u8]| {
    let mut buf = data.to_vec();
    if buf.len() > 40 && buf[0] & 1 == 1 {
        let len = 40 + (u32::from_le_bytes([buf[36], buf[37], buf[38], buf[39]]) as usize).min(buf.len() - 40);
        let crc = crc32c(&buf[4..len]);
        buf[..4].copy_from_slice(&crc.to_le_bytes());
    }
    for page_size in [4096usize, 16384] {
        let Ok(h) = page::parse_header(&buf, page_size) else { continue };
        if page::verify_checksum(&buf, &h).is_err() {
            continue;
        }
        let mut ctx = CodecCtx::new();
        let mut out = vec![0u8; page_size];
        let _ = page::decode_image(&mut ctx, &buf, &h, &mut out);
    }
});
