//! Feeds arbitrary bytes to the catalog decoder, as opening a database does with the blob of
//! its last checkpoint. It must return an error or a catalog, never panic; a decoded catalog
//! must survive an encode/decode round trip unchanged.
//!
//! Random bytes seldom get past the magic, the version and a symbol table's own CRC-32C, so
//! each input also builds a valid version 4 catalog (a compact FSST tree with symbol tables
//! made from the input's bytes and, when `flip`'s bit 1 says so, a cold-layer dictionary of
//! those bytes), checks its round trip, changes one byte of it and decodes that.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zipdb_engine::catalog::{
    Catalog, CatalogEntry, ColdDictVersion, PerMille, SymbolTableVersion, TableVersion,
    TABLE_VERSIONS_MAX,
};
use zipdb_engine::storage::dict::{DictVersion, PageDicts};
use zipdb_engine::storage::fsst::SymbolTable;
use zipdb_engine::storage::{Codec, PageId, TreeId};
use zipdb_engine::{NodeFormat, RecordCodec, TreeFormat};

fn check(data: &[u8]) {
    if let Ok(c) = Catalog::decode(data) {
        // What opening does with a decoded dictionary: refused or installed, never a panic.
        for e in &c.entries {
            if let Some(d) = &e.cold_dict {
                let _ = PageDicts::new().install(e.id, d.version, &d.bytes, i32::from(d.level));
            }
        }
        let again =
            Catalog::decode(&c.encode()).expect("a decoded catalog re-encodes to a valid one");
        assert_eq!(again, c);
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let [at, flip, n, rest @ ..] = data else {
        return;
    };
    let tables = (0..usize::from(*n) % (TABLE_VERSIONS_MAX + 1))
        .map(|v| {
            let symbols: Vec<&[u8]> = rest.chunks(1 + v).take(255).collect();
            SymbolTableVersion {
                version: TableVersion(v as u16 + 1),
                table: SymbolTable::from_symbols(&symbols).unwrap_or_default(),
                trained_ratio: PerMille(u16::from(*flip) * 4),
                pages: rest.len() as u64,
            }
        })
        .collect();
    let with_dict = flip & 2 != 0 && !rest.is_empty();
    let cold_dict = with_dict.then(|| ColdDictVersion {
        version: DictVersion(1 + u16::from(*at)),
        level: 1 + flip % 22,
        bytes: rest.into(),
    });
    let c = Catalog {
        next_tree_id: 3,
        redo_lsn: 1,
        wal_id: 2,
        entries: vec![CatalogEntry {
            name: "t".into(),
            id: TreeId(2),
            root: PageId(5),
            format: TreeFormat {
                nodes: NodeFormat::Compact,
                records: RecordCodec::Fsst,
                image: if with_dict { Codec::Trim } else { Codec::None },
                cold: if with_dict {
                    Codec::ZstdDict
                } else {
                    Codec::Zstd(1)
                },
            },
            tables,
            cold_dict,
        }],
    };
    let mut b = c.encode();
    assert_eq!(Catalog::decode(&b).expect("a valid v4 catalog decodes"), c);
    let i = usize::from(*at) * b.len() / 256;
    b[i] ^= flip | 1;
    check(&b);
});
