//! Feeds arbitrary bytes to the SQL catalog's table-definition decoder, as opening the SQL
//! catalog does with each `T\0db\0table` value. It must return an error or a definition, never
//! panic; a decoded definition must re-encode to bytes that decode to the same definition.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zipdb_sql::catalog::TableDef;

fuzz_target!(|data: &[u8]| {
    if let Ok(d) = TableDef::decode(data) {
        let bytes = d.encode();
        let again = TableDef::decode(&bytes).expect("a decoded definition re-encodes to a valid one");
        assert_eq!(again.encode(), bytes);
    }
});
