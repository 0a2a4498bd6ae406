//! Feeds arbitrary bytes to the catalog decoder, as opening a database does with the blob of
//! its last checkpoint. It must return an error or a catalog, never panic; a decoded catalog
//! must survive an encode/decode round trip unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zipdb_engine::catalog::Catalog;

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = Catalog::decode(data) {
        let again = Catalog::decode(&c.encode()).expect("a decoded catalog re-encodes to a valid one");
        assert_eq!(again, c);
    }
});
