//! Tree formats through the whole engine: creation, the catalog at a checkpoint, the "create
//! tree" redo record in WAL replay, and data directories written before catalog v3.

use crate::error::{OpenError, RequestError};
use zipdb_storage::store::PageStore;
use zipdb_storage::{Codec, TreeId};

use crate::catalog::Catalog;
use crate::format::{NodeFormat, RecordCodec, TreeFormat};
use crate::redo::{self, CommitEncoder};
use crate::tests::{opts, Disks};
use crate::{Database, Error};

const PAGE: usize = 4096;

/// A format this build still refuses: compact FSST leaves with a cold layer over raw images
/// (the cold layer of step 8 runs over Trim images only).
fn compact() -> TreeFormat {
    TreeFormat {
        nodes: NodeFormat::Compact,
        records: RecordCodec::Fsst,
        image: Codec::None,
        cold: Codec::Zstd(3),
    }
}

fn assert_formats(db: &Database, want: &[(&str, TreeFormat)], ctx: &str) {
    let names: Vec<String> = want.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(db.tree_names(), names, "{ctx}");
    let stats = db.stats();
    for (name, f) in want {
        let t = db.open_tree(name).unwrap();
        assert_eq!(t.format(), *f, "{ctx}: tree {name}");
        assert_eq!(t.codec(), f.image, "{ctx}: tree {name}");
        let s = stats.trees.iter().find(|s| s.name == *name).unwrap();
        assert_eq!((s.format, s.codec), (*f, f.image), "{ctx}: stats of {name}");
        for i in 0..50u32 {
            assert_eq!(
                t.get(&i.to_be_bytes()).unwrap().as_deref(),
                Some(name.as_bytes()),
                "{ctx}: tree {name} key {i}"
            );
        }
    }
    db.verify().unwrap();
}

fn fill(db: &Database, name: &str) {
    let t = db.open_tree(name).unwrap();
    for i in 0..50u32 {
        t.upsert(&i.to_be_bytes(), name.as_bytes()).unwrap();
    }
}

/// Trees created before a checkpoint come back from the catalog, trees created after it from
/// replaying their kind 4 records; either way with the format they were created with.
#[test]
fn format_survives_checkpoint_and_wal_replay() {
    let disks = Disks::new();
    let db = disks.open(opts(PAGE, Codec::Lz4)).unwrap();
    let before = [
        ("a_default", TreeFormat::classic(Codec::Lz4)),
        ("b_zstd", TreeFormat::classic(Codec::Zstd(-3))),
        ("b_zstd_cold", TreeFormat::FSST_ZSTD),
    ];
    let after = [
        ("c_zlib", TreeFormat::classic(Codec::Zlib(9))),
        ("d_none", TreeFormat::classic(Codec::None)),
        // Trim images: small leaves are mostly zeros, so they are written trimmed.
        ("e_trim", TreeFormat::classic(Codec::Trim)),
        ("f_cold", TreeFormat::FSST_ZSTD_INDEX),
    ];
    db.create_tree("a_default", None).unwrap();
    db.create_tree_with("b_zstd", before[1].1).unwrap();
    db.create_tree_with("b_zstd_cold", before[2].1).unwrap();
    for (n, _) in &before {
        fill(&db, n);
    }
    db.checkpoint().unwrap();
    db.create_tree("c_zlib", Some(Codec::Zlib(9))).unwrap();
    db.create_tree_with("d_none", after[1].1).unwrap();
    db.create_tree_with("e_trim", after[2].1).unwrap();
    db.create_tree_with("f_cold", after[3].1).unwrap();
    for (n, _) in &after {
        fill(&db, n);
    }
    // Power fails: the trees created after the checkpoint exist only in the WAL.
    let disks = disks.crash();
    drop(db);
    let all: Vec<_> = before.iter().chain(&after).copied().collect();
    let db = disks.open(opts(PAGE, Codec::DEFAULT)).unwrap();
    let report = db.recovery_report().expect("replayed the WAL");
    assert!(report.records >= 4, "{report:?}");
    assert_formats(&db, &all, "after replay");
    // Now all of them go through the catalog.
    db.checkpoint().unwrap();
    let disks = disks.crash();
    drop(db);
    let db = disks.open(opts(PAGE, Codec::DEFAULT)).unwrap();
    assert_formats(&db, &all, "after checkpoint");
    db.close().unwrap();
}

/// The catalog encoder of the build before issue 19 (version 2), for classic trees.
fn encode_v2(c: &Catalog) -> Vec<u8> {
    let mut out = b"ZCAT".to_vec();
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&c.next_tree_id.to_le_bytes());
    out.extend_from_slice(&(c.entries.len() as u32).to_le_bytes());
    out.extend_from_slice(&c.redo_lsn.to_le_bytes());
    out.extend_from_slice(&c.wal_id.to_le_bytes());
    for e in &c.entries {
        assert!(e.format.is_classic() && e.tables.is_empty());
        out.extend_from_slice(&e.id.0.to_le_bytes());
        out.extend_from_slice(&e.root.0.to_le_bytes());
        out.push(e.format.image.id());
        out.push(e.format.image.level_byte());
        out.extend_from_slice(&(e.name.len() as u16).to_le_bytes());
        out.extend_from_slice(e.name.as_bytes());
    }
    out
}

/// Replaces the catalog of the closed database on `disks` by `f(catalog)` (a checkpoint of
/// the page store alone, as the engine's checkpoint ends).
fn rewrite_catalog(disks: &Disks, f: impl FnOnce(Catalog) -> Vec<u8>) {
    let store = PageStore::open(Box::new(disks.data.clone())).unwrap();
    let bytes = f(Catalog::decode(&store.catalog()).unwrap());
    let snap = store.begin_checkpoint().unwrap();
    store.finish_checkpoint(snap, &bytes).unwrap();
}

fn catalog_version(disks: &Disks) -> u16 {
    let store = PageStore::open(Box::new(disks.data.clone())).unwrap();
    let c = store.catalog();
    u16::from_le_bytes([c[4], c[5]])
}

#[test]
fn v2_catalog_database_opens_and_is_rewritten_as_v4() {
    // The test's v2 encoder writes what the old build wrote.
    let fixture = crate::catalog::V2_FIXTURE;
    assert_eq!(encode_v2(&Catalog::decode(fixture).unwrap()), fixture);

    let disks = Disks::new();
    let db = disks.open(opts(PAGE, Codec::Zstd(1))).unwrap();
    let want = [
        ("lz", TreeFormat::classic(Codec::Lz4)),
        ("zs", TreeFormat::classic(Codec::Zstd(1))),
    ];
    db.create_tree("lz", Some(Codec::Lz4)).unwrap();
    db.create_tree("zs", None).unwrap();
    fill(&db, "lz");
    fill(&db, "zs");
    db.close().unwrap();
    rewrite_catalog(&disks, |c| encode_v2(&c));
    assert_eq!(catalog_version(&disks), 2);

    let db = disks.open(opts(PAGE, Codec::DEFAULT)).unwrap();
    assert_formats(&db, &want, "v2 catalog");
    db.checkpoint().unwrap();
    db.close().unwrap();
    assert_eq!(catalog_version(&disks), 4);
    let db = disks.open(opts(PAGE, Codec::DEFAULT)).unwrap();
    assert_formats(&db, &want, "rewritten as v4");
}

/// A WAL written before issue 19 creates trees with kind 2 records; they replay as classic.
#[test]
fn kind_2_create_record_replays_as_a_classic_tree() {
    let disks = Disks::new();
    let db = disks.open(opts(PAGE, Codec::Zstd(1))).unwrap();
    db.create_tree("new", Some(Codec::Lz4)).unwrap();
    fill(&db, "new");
    // Tree id 2 is the next one the database would hand out.
    db.log_raw_for_test(&redo::encode_create_tree_v1(
        TreeId(2),
        Codec::Zlib(6),
        "old",
    ))
    .unwrap();
    let mut c = CommitEncoder::new();
    for i in 0..50u32 {
        c.op(TreeId(2), &i.to_be_bytes(), Some(b"old"));
    }
    db.log_raw_for_test(&c.finish()).unwrap();
    let disks = disks.crash();
    drop(db);
    let db = disks.open(opts(PAGE, Codec::DEFAULT)).unwrap();
    let want = [
        ("new", TreeFormat::classic(Codec::Lz4)),
        ("old", TreeFormat::classic(Codec::Zlib(6))),
    ];
    assert_formats(&db, &want, "kind 2 replayed");
    // The next tree does not reuse the replayed id.
    assert_eq!(db.create_tree("next", None).unwrap().id(), TreeId(3));
}

#[test]
fn create_tree_with_refuses_what_this_build_cannot_run() {
    let disks = Disks::new();
    let db = disks.open(opts(PAGE, Codec::Zstd(1))).unwrap();
    for f in crate::format::all_formats() {
        let r = db.create_tree_with("t", f);
        match (f.validate(), f.check_supported("t").is_ok()) {
            (Err(_), _) => assert!(
                matches!(r, Err(Error::Request(RequestError::InvalidTreeFormat(_)))),
                "{f}: {r:?}"
            ),
            (Ok(()), false) => {
                let e = r.unwrap_err();
                assert!(
                    matches!(&e, Error::Open(OpenError::UnsupportedTreeFormat { tree, format }) if tree == "t" && *format == f),
                    "{f}: {e:?}"
                );
                assert!(e.to_string().contains("does not support"), "{e}");
            }
            (Ok(()), true) => {
                assert_eq!(r.unwrap().format(), f);
                db.drop_tree("t").unwrap();
            }
        }
    }
    // Refusals leave no trace: the name is free and nothing was logged for them.
    assert!(db.tree_names().is_empty());
    let disks = disks.crash();
    drop(db);
    let db = disks.open(opts(PAGE, Codec::DEFAULT)).unwrap();
    assert!(db.tree_names().is_empty());
}

/// A catalog or a log of a later build that holds a compact tree is refused when the
/// database opens, naming the tree, rather than misread page by page.
#[test]
fn unsupported_formats_on_disk_refuse_the_open() {
    // In the catalog.
    let disks = Disks::new();
    let db = disks.open(opts(PAGE, Codec::Zstd(1))).unwrap();
    db.create_tree("c", None).unwrap();
    db.close().unwrap();
    rewrite_catalog(&disks, |mut c| {
        c.entries[0].format = compact();
        c.encode()
    });
    let e = disks.open(opts(PAGE, Codec::DEFAULT)).unwrap_err();
    assert!(
        matches!(&e, Error::Open(OpenError::UnsupportedTreeFormat { tree, format }) if tree == "c" && *format == compact()),
        "{e:?}"
    );

    // In the WAL.
    let disks = Disks::new();
    let db = disks.open(opts(PAGE, Codec::Zstd(1))).unwrap();
    db.log_raw_for_test(&redo::encode_create_tree(TreeId(1), compact(), "w"))
        .unwrap();
    let disks = disks.crash();
    drop(db);
    let e = disks.open(opts(PAGE, Codec::DEFAULT)).unwrap_err();
    assert!(
        matches!(&e, Error::Open(OpenError::UnsupportedTreeFormat { tree, .. }) if tree == "w"),
        "{e:?}"
    );
}
