//! Feeds arbitrary bytes to the redo-record decoder, as recovery does with every WAL payload.
//! It must return an error or a record, never panic; a decoded commit or drop record must
//! re-encode to exactly the input (the format has one encoding per record).
#![no_main]

use libfuzzer_sys::fuzz_target;
use zipdb_engine::redo::{self, CommitEncoder, Record};

fuzz_target!(|data: &[u8]| {
    match redo::decode(data) {
        Ok(Record::Commit(ops)) => {
            let mut enc = CommitEncoder::new();
            for op in &ops {
                enc.op(op.tree, op.key, op.value);
            }
            assert_eq!(enc.finish(), data, "commit record re-encodes differently");
        }
        Ok(Record::DropTree { id }) => {
            assert_eq!(redo::encode_drop_tree(id), data);
        }
        Ok(Record::CreateTree { id, codec, name }) => {
            // The codec's level byte may have several spellings; the record must still decode
            // the same after a round trip.
            let again = redo::encode_create_tree(id, codec, name);
            assert_eq!(
                redo::decode(&again),
                Ok(Record::CreateTree { id, codec, name })
            );
        }
        Err(_) => {}
    }
});
