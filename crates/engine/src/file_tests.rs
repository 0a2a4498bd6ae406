//! Databases on real files in a temporary directory: what the simulated disks cannot show
//! (the warm-restart list on disk, the file's allocated blocks).

use zipdb_storage::Codec;

use crate::tests::{opts, value};
use crate::Database;

#[test]
fn file_database_roundtrip() {
    let dir = std::env::temp_dir().join(format!("zipdb-engine-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    {
        let db = Database::open(&dir, opts(16384, Codec::DEFAULT)).unwrap();
        let t = db.create_tree("t", None).unwrap();
        for i in 0..500u32 {
            t.insert(&i.to_be_bytes(), &value(100, 9)).unwrap();
        }
        db.close().unwrap();
    }
    assert!(
        dir.join("zipdb.warm").exists(),
        "close saves the warm-restart list"
    );
    assert_eq!(Database::data_page_size(&dir).unwrap(), Some(16384));
    {
        let db = Database::open(&dir, opts(16384, Codec::DEFAULT)).unwrap();
        let t = db.open_tree("t").unwrap();
        assert_eq!(t.range(..).unwrap().count(), 500);
        db.verify().unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `OPTIMIZE` rewrites every leaf out of place; once a clean close has checkpointed, the
/// long free runs it left are punched, so the file's allocated size stays near the load's
/// (it grew by the table's size, 40-50%, before holes were punched; BENCHMARKS session 19).
#[test]
fn optimize_gives_its_old_extents_back_to_the_filesystem() {
    use crate::format::{RecordCodec, TreeFormat};
    use std::os::unix::fs::MetadataExt;
    let dir = std::env::temp_dir().join(format!("zipdb-engine-holes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let allocated = || std::fs::metadata(dir.join("zipdb.data")).unwrap().blocks() * 512;
    let format = TreeFormat {
        records: RecordCodec::Fsst,
        ..TreeFormat::compact(Codec::None)
    };
    {
        let db = Database::open(&dir, opts(16384, Codec::None)).unwrap();
        let t = db.create_tree_with("t", format).unwrap();
        for i in 0..40_000u32 {
            t.insert(&i.to_be_bytes(), &value(150, (i % 251) as u8))
                .unwrap();
        }
        db.close().unwrap();
    }
    let loaded = allocated();
    let failures = {
        let db = Database::open(&dir, opts(16384, Codec::None)).unwrap();
        let report = db.open_tree("t").unwrap().optimize().unwrap();
        assert!(report.leaves > 50, "{report:?}");
        db.close().unwrap();
        let db = Database::open(&dir, opts(16384, Codec::None)).unwrap();
        assert_eq!(
            db.open_tree("t").unwrap().range(..).unwrap().count(),
            40_000
        );
        db.verify().unwrap();
        let st = db.stats().store;
        db.close().unwrap();
        st.punch_failures
    };
    let after = allocated();
    std::fs::remove_dir_all(&dir).unwrap();
    if failures > 0 {
        eprintln!("skipped: the temporary directory's filesystem has no holes");
        return;
    }
    assert!(
        after * 10 <= loaded * 12,
        "allocated {loaded} bytes after the load, {after} after OPTIMIZE"
    );
}
