//! Feeds arbitrary bytes to the warm-restart list decoder, as opening a database does with
//! `zipdb.warm`. It must return an error or a list, never panic; a decoded list must survive an
//! encode/decode round trip unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zipdb_storage::warm;

fuzz_target!(|data: &[u8]| {
    for page_size in [4096usize, 16384] {
        if let Ok(ids) = warm::decode("fuzz", page_size, data) {
            let again = warm::decode("fuzz", page_size, &warm::encode(page_size, &ids))
                .expect("a decoded list re-encodes to a valid one");
            assert_eq!(again, ids);
        }
    }
});
