//! Feeds arbitrary bytes to the compact leaf parser (issue 19) as if they were a decoded page
//! of a compact tree: parse, every accessor, `verify`, and on copies compact, remove and
//! replace (plus an insert when the page verifies). Errors are fine, panics are not; a page
//! that verifies must still verify after each change (`compact::exercise`).
//! The input is padded or cut to a page size picked by its first byte, and bytes 16..18 are
//! forced to "level 0, compact flag" half the time so that the cell decoders get reached.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zipdb_engine::btree::compact;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let size = [4096usize, 16384, 65536][sel as usize % 3];
    let mut page = vec![0u8; size];
    let n = rest.len().min(size);
    page[..n].copy_from_slice(&rest[..n]);
    if sel & 0x80 != 0 {
        page[0] = 1; // page type: leaf
        page[16] = 0; // level
        page[17] = compact::FLAG_COMPACT;
    }
    compact::exercise(&page);
});
