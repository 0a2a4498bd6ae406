//! Tables stored in the fsst record format (`COMPRESSION='fsst'`, issue 19 step 6), driven
//! through `Session`: rows, ranges and index lookups against a model, before and after a
//! restart; the trees each DDL statement makes; the options that pick the format.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use zipdb_engine::{Codec, Database, TableFormat, TreeFormat};
use zipdb_sql::{Instance, InstanceOptions, Session};

mod common;
use common::{q, temp_dir};

fn open(dir: &Path, default_format: TableFormat) -> (Database, Arc<Instance>) {
    common::open(
        dir,
        InstanceOptions {
            default_format,
            ..InstanceOptions::default()
        },
    )
}

fn session(inst: &Arc<Instance>) -> Session {
    let mut s = inst.session("root", 1);
    q(&mut s, "CREATE DATABASE IF NOT EXISTS d");
    s.use_db("d").expect("use d");
    s
}

fn show_create(s: &mut Session, table: &str) -> String {
    q(s, &format!("SHOW CREATE TABLE {table}"))[0][1].clone()
}

/// sbtest's `c` and `pad`: groups of 11 digits joined by dashes, from a small LCG.
fn digits(seed: &mut u64, groups: usize) -> String {
    let mut out = String::new();
    for g in 0..groups {
        if g > 0 {
            out.push('-');
        }
        for _ in 0..11 {
            *seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            out.push(char::from(b'0' + (*seed >> 33) as u8 % 10));
        }
    }
    out
}

type Model = BTreeMap<i64, (i64, String, String)>;

const ROWS: i64 = 2000;

fn load(s: &mut Session, model: &mut Model) {
    let mut seed = 7;
    for batch in 0..ROWS / 100 {
        let mut values = Vec::new();
        for id in batch * 100 + 1..=batch * 100 + 100 {
            let row = (id * 37 % 500, digits(&mut seed, 10), digits(&mut seed, 5));
            values.push(format!("({id}, {}, '{}', '{}')", row.0, row.1, row.2));
            model.insert(id, row);
        }
        q(
            s,
            &format!("INSERT INTO sbtest1 VALUES {}", values.join(", ")),
        );
    }
}

fn row_text(id: i64, r: &(i64, String, String)) -> Vec<String> {
    vec![id.to_string(), r.0.to_string(), r.1.clone(), r.2.clone()]
}

/// Point selects, a range, index lookups and a full scan, each against the model.
fn check(s: &mut Session, model: &Model) {
    for id in [1, 2, 99, 100, 101, 777, 1500, ROWS, ROWS + 1] {
        let got = q(
            s,
            &format!("SELECT id, k, c, pad FROM sbtest1 WHERE id = {id}"),
        );
        let want: Vec<_> = model
            .get(&id)
            .map(|r| row_text(id, r))
            .into_iter()
            .collect();
        assert_eq!(got, want, "id {id}");
    }
    let got = q(
        s,
        "SELECT id, k, c, pad FROM sbtest1 WHERE id BETWEEN 300 AND 420 ORDER BY id",
    );
    let want: Vec<_> = model
        .range(300..=420)
        .map(|(&i, r)| row_text(i, r))
        .collect();
    assert_eq!(got, want, "range");
    for k in [0, 42, 499] {
        let got = q(
            s,
            &format!("SELECT id FROM sbtest1 WHERE k = {k} ORDER BY id"),
        );
        let want: Vec<_> = model
            .iter()
            .filter(|(_, r)| r.0 == k)
            .map(|(&i, _)| vec![i.to_string()])
            .collect();
        assert!(!want.is_empty(), "k {k} has no rows in the model");
        assert_eq!(got, want, "k = {k}");
    }
    let got = q(s, "SELECT id, k, c, pad FROM sbtest1 ORDER BY id");
    let want: Vec<_> = model.iter().map(|(&i, r)| row_text(i, r)).collect();
    assert_eq!(got, want, "full scan");
}

/// Formats of the database's trees, with the names of those in an fsst format.
fn fsst_trees(db: &Database) -> (Vec<String>, Vec<String>) {
    let trees = db.stats().trees;
    let named = |f: TreeFormat| -> Vec<String> {
        trees
            .iter()
            .filter(|t| t.format == f)
            .map(|t| t.name.clone())
            .collect()
    };
    (
        named(TableFormat::Fsst.primary()),
        named(TableFormat::Fsst.index()),
    )
}

#[test]
fn fsst_tables_keep_their_rows_and_format_through_dml_ddl_and_a_restart() {
    let dir = temp_dir("fsst");
    let mut model = Model::new();
    {
        let (db, inst) = open(&dir.0, TableFormat::COMPRESSED_DEFAULT);
        let mut s = session(&inst);
        q(
            &mut s,
            "CREATE TABLE sbtest1 (id INT NOT NULL, k INT NOT NULL DEFAULT 0, \
             c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', \
             PRIMARY KEY (id), KEY k_1 (k)) ENGINE=InnoDB COMPRESSION='FSST'",
        );
        let (primary, index) = fsst_trees(&db);
        assert_eq!(
            (primary.len(), index.len()),
            (1, 1),
            "{primary:?} {index:?}"
        );
        load(&mut s, &mut model);
        // 2,000 rows of ~190 bytes are far past the 16 KB the symbol table trains on.
        let tree = db.open_tree(&primary[0]).unwrap();
        assert!(
            tree.btree().symbol_tables().current().is_some(),
            "not trained"
        );
        check(&mut s, &model);
        q(
            &mut s,
            "UPDATE sbtest1 SET k = k + 1 WHERE id BETWEEN 10 AND 60",
        );
        for id in 10..=60 {
            model.get_mut(&id).unwrap().0 += 1;
        }
        q(
            &mut s,
            "UPDATE sbtest1 SET c = 'changed', pad = CONCAT(LEFT(pad, 40), '-x') \
             WHERE id % 97 = 0",
        );
        for (_, r) in model.iter_mut().filter(|(&i, _)| i % 97 == 0) {
            r.1 = "changed".into();
            r.2 = format!("{}-x", &r.2[..40]);
        }
        q(&mut s, "DELETE FROM sbtest1 WHERE id % 10 = 3 OR id > 1900");
        model.retain(|&i, _| !(i % 10 == 3 || i > 1900));
        check(&mut s, &model);
        let create = show_create(&mut s, "sbtest1");
        assert!(create.ends_with(" COMPRESSION='fsst'"), "{create}");
        let info = q(
            &mut s,
            "SELECT ROW_FORMAT, CREATE_OPTIONS FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = 'sbtest1'",
        );
        assert_eq!(info, [["Compressed", "compression='fsst'"]]);
        drop(s);
        drop(inst);
        db.close().expect("close");
    }
    let (db, inst) = open(&dir.0, TableFormat::COMPRESSED_DEFAULT);
    let mut s = session(&inst);
    check(&mut s, &model);
    assert!(show_create(&mut s, "sbtest1").ends_with(" COMPRESSION='fsst'"));
    // New trees for the table take its format: an index built from its rows, then TRUNCATE.
    let before = fsst_trees(&db);
    q(&mut s, "CREATE INDEX c_1 ON sbtest1 (c)");
    let after = fsst_trees(&db);
    assert_eq!(after.0, before.0);
    assert_eq!(after.1.len(), 2, "{after:?}");
    let id = q(
        &mut s,
        "SELECT id FROM sbtest1 WHERE c = 'changed' ORDER BY id",
    );
    let want: Vec<_> = model
        .iter()
        .filter(|(_, r)| r.1 == "changed")
        .map(|(&i, _)| vec![i.to_string()])
        .collect();
    assert!(!want.is_empty());
    assert_eq!(id, want);
    q(&mut s, "TRUNCATE TABLE sbtest1");
    let truncated = fsst_trees(&db);
    assert_eq!(
        (truncated.0.len(), truncated.1.len()),
        (1, 2),
        "{truncated:?}"
    );
    assert!(truncated.0[0] != after.0[0] && !truncated.1.iter().any(|t| after.1.contains(t)));
    assert_eq!(q(&mut s, "SELECT COUNT(*) FROM sbtest1"), [["0"]]);
    model.clear();
    load(&mut s, &mut model);
    check(&mut s, &model);
    drop(s);
    drop(inst);
    db.close().expect("close");
}

#[test]
fn compression_options_pick_the_format_and_bad_ones_list_fsst() {
    let dir = temp_dir("fsst");
    let (db, inst) = open(&dir.0, TableFormat::Codec(Codec::None));
    let mut s = session(&inst);
    let mut r = s.query("CREATE TABLE bad (a INT PRIMARY KEY) COMPRESSION='brotli'");
    let e = r.remove(0).unwrap_err();
    assert_eq!((e.code(), e.sqlstate()), (1231, "42000"), "{}", e.message());
    assert!(e.message().contains("'fsst'"), "{}", e.message());
    assert!(e.message().contains("'fsst+zstd'"), "{}", e.message());
    let default_name = zipdb_sql::catalog::format_name(TableFormat::COMPRESSED_DEFAULT);
    for (options, want) in [
        ("", "none"),
        ("ROW_FORMAT=COMPRESSED", default_name),
        ("COMPRESSION='zstd'", "zstd"),
        ("COMPRESSION='fsst'", "fsst"),
        ("COMPRESSION='FSST+ZSTD'", "fsst+zstd"),
    ] {
        q(
            &mut s,
            &format!("CREATE TABLE t (a INT PRIMARY KEY) {options}"),
        );
        let create = show_create(&mut s, "t");
        assert!(
            create.ends_with(&format!(" COMPRESSION='{want}'")),
            "{options}: {create}"
        );
        q(&mut s, "DROP TABLE t");
    }
    drop(s);
    drop(inst);
    db.close().expect("close");

    // A server whose default is fsst: new tables and ROW_FORMAT=COMPRESSED are fsst, an
    // explicit uncompressed row format or codec is not.
    let dir = temp_dir("fsst");
    let (db, inst) = open(&dir.0, TableFormat::Fsst);
    let mut s = session(&inst);
    assert_eq!(
        q(&mut s, "SELECT @@zipdb_default_codec"),
        [["fsst"]],
        "the variable names the default"
    );
    for (options, want) in [
        ("", "fsst"),
        ("ROW_FORMAT=COMPRESSED", "fsst"),
        ("ROW_FORMAT=DYNAMIC", "none"),
        ("COMPRESSION='lz4'", "lz4"),
    ] {
        q(
            &mut s,
            &format!("CREATE TABLE t (a INT PRIMARY KEY, b INT, KEY (b)) {options}"),
        );
        let create = show_create(&mut s, "t");
        assert!(
            create.ends_with(&format!(" COMPRESSION='{want}'")),
            "{options}: {create}"
        );
        let (primary, index) = fsst_trees(&db);
        let n = usize::from(want == "fsst");
        assert_eq!((primary.len(), index.len()), (n, n), "{options}");
        q(&mut s, "DROP TABLE t");
    }
    drop(s);
    drop(inst);
    db.close().expect("close");
}

/// `information_schema.ZIPDB_TABLE_COMPRESSION` (issue 19 deliverable 4): one row per fsst
/// table, with a trained symbol table, encoded records at a ratio below 1, and decodes that
/// SELECTs move; SHOW STATUS sums the same counters.
#[test]
fn table_compression_rows_and_status_counters() {
    let dir = temp_dir("fsst");
    let mut model = Model::new();
    let (_db, inst) = open(&dir.0, TableFormat::COMPRESSED_DEFAULT);
    let mut s = session(&inst);
    q(
        &mut s,
        "CREATE TABLE sbtest1 (id INT NOT NULL, k INT NOT NULL DEFAULT 0, \
         c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', \
         PRIMARY KEY (id), KEY k_1 (k)) COMPRESSION='fsst'",
    );
    q(
        &mut s,
        "CREATE TABLE plain (id INT PRIMARY KEY, c CHAR(20)) COMPRESSION='zstd'",
    );
    q(&mut s, "INSERT INTO plain VALUES (1, 'x')");
    load(&mut s, &mut model);
    let row = |s: &mut Session| {
        let r = q(
            s,
            "SELECT TABLE_SCHEMA, TABLE_NAME, FORMAT, SYMBOL_TABLE_VERSION, TRAINED_RATIO, \
             RECORDS_ENCODED, BYTES_IN, BYTES_OUT, RUNNING_RATIO, RECORDS_DECODED, \
             LOGICAL_BYTES, PHYSICAL_BYTES FROM information_schema.ZIPDB_TABLE_COMPRESSION",
        );
        assert_eq!(r.len(), 1, "only the fsst table has a row: {r:?}");
        r.into_iter().next().unwrap()
    };
    let num = |v: &str| -> f64 { v.parse().unwrap_or_else(|_| panic!("not a number: {v}")) };
    let r = row(&mut s);
    assert_eq!(
        (r[0].as_str(), r[1].as_str(), r[2].as_str()),
        ("d", "sbtest1", "fsst")
    );
    assert!(num(&r[3]) >= 1.0, "trained: {r:?}");
    assert!(num(&r[4]) > 0.0 && num(&r[4]) < 1.0, "trained ratio: {r:?}");
    assert!(num(&r[5]) > 0.0, "records encoded: {r:?}");
    assert!(num(&r[7]) < num(&r[6]), "bytes out < in: {r:?}");
    assert!(num(&r[8]) > 0.0 && num(&r[8]) < 1.0, "running ratio: {r:?}");
    assert!(num(&r[10]) > 0.0, "logical bytes: {r:?}");
    let decoded = num(&r[9]);

    // Rows written late were encoded (the table trains on the first 16 KB); reading them
    // decodes each at least once.
    let ids: Vec<i64> = (ROWS - 50 + 1..=ROWS).collect();
    for &id in &ids {
        let got = q(&mut s, &format!("SELECT c FROM sbtest1 WHERE id = {id}"));
        assert_eq!(got, vec![vec![model[&id].1.clone()]]);
    }
    let after_gets = num(&row(&mut s)[9]);
    assert!(
        after_gets >= decoded + ids.len() as f64,
        "{} point SELECTs: decoded {decoded} -> {after_gets}",
        ids.len()
    );
    let count = q(&mut s, "SELECT COUNT(*) FROM sbtest1 WHERE c <> ''");
    assert_eq!(count, vec![vec![ROWS.to_string()]]);
    let after_scan = num(&row(&mut s)[9]);
    assert!(
        after_scan > after_gets,
        "a scan decodes: {after_gets} -> {after_scan}"
    );
    // A first visit to a leaf leaves no view (storage views.rs, USES_TO_REBUILD); the second
    // scan builds them, decoding whole leaves.
    let count = q(&mut s, "SELECT COUNT(*) FROM sbtest1 WHERE c <> ''");
    assert_eq!(count, vec![vec![ROWS.to_string()]]);
    let after_scan = num(&row(&mut s)[9]);

    // SHOW STATUS: the sums over fsst trees (only sbtest1's primary here).
    let status: BTreeMap<String, String> = q(&mut s, "SHOW STATUS")
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    for name in [
        "Zipdb_records_encoded",
        "Zipdb_records_raw",
        "Zipdb_record_bytes_in",
        "Zipdb_record_bytes_out",
        "Zipdb_records_decoded",
        "Zipdb_record_decode_ns",
        "Zipdb_record_encode_ns",
    ] {
        assert!(status.contains_key(name), "SHOW STATUS lacks {name}");
    }
    assert_eq!(num(&status["Zipdb_records_decoded"]), after_scan);
    assert_eq!(num(&status["Zipdb_records_encoded"]), num(&r[5]));
    assert!(num(&status["Zipdb_record_decode_ns"]) > 0.0);

    // Leaf views (the pool has room to spare here): the second scan kept decoded leaves, so
    // the same scan again is served from them and decodes no record. Their counters are
    // named after the pool's `views` field, not flattened into the pool's own names.
    assert!(!status.contains_key("Zipdb_pool_hits"), "{status:?}");
    assert!(num(&status["Zipdb_pool_views_stored"]) > 0.0, "{status:?}");
    let count = q(&mut s, "SELECT COUNT(*) FROM sbtest1 WHERE c <> ''");
    assert_eq!(count, vec![vec![ROWS.to_string()]]);
    let again: BTreeMap<String, String> = q(&mut s, "SHOW STATUS LIKE 'Zipdb_%'")
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    assert_eq!(num(&again["Zipdb_records_decoded"]), after_scan);
    assert!(num(&again["Zipdb_pool_views_hits"]) > num(&status["Zipdb_pool_views_hits"]));
}

/// `OPTIMIZE TABLE` (issue 19 step 7): MySQL's result set, one `status OK` row per table for
/// fsst and other formats alike, an `Error` row for a missing table; an fsst table ends with
/// every leaf on a new symbol-table version and the older one retired by the next checkpoint,
/// and its rows unchanged.
#[test]
fn optimize_table_retrains_and_retires_the_old_version() {
    let dir = temp_dir("fsst");
    let mut model = Model::new();
    let (db, inst) = open(&dir.0, TableFormat::COMPRESSED_DEFAULT);
    let mut s = session(&inst);
    q(
        &mut s,
        "CREATE TABLE sbtest1 (id INT NOT NULL, k INT NOT NULL DEFAULT 0, \
         c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', \
         PRIMARY KEY (id), KEY k_1 (k)) COMPRESSION='fsst'",
    );
    q(
        &mut s,
        "CREATE TABLE plain (id INT PRIMARY KEY, c CHAR(20)) COMPRESSION='zstd'",
    );
    q(&mut s, "INSERT INTO plain VALUES (1, 'x')");
    load(&mut s, &mut model);
    let (primary, _) = fsst_trees(&db);
    let tree = db.open_tree(&primary[0]).unwrap();
    let before = tree.btree().symbol_tables().current().unwrap().version;

    let got = q(&mut s, "OPTIMIZE TABLE sbtest1, d.plain, nosuch");
    let row = |t: &str, kind: &str, text: &str| -> Vec<String> {
        [t, "optimize", kind, text].map(String::from).to_vec()
    };
    assert_eq!(
        got,
        vec![
            row("d.sbtest1", "status", "OK"),
            row("d.plain", "status", "OK"),
            row("d.nosuch", "Error", "Table 'd.nosuch' doesn't exist"),
            row("d.nosuch", "status", "Operation failed"),
        ]
    );
    let tables = tree.btree().symbol_tables();
    let after = tables.current().unwrap();
    assert!(after.version > before, "{before:?} -> {:?}", after.version);
    let leaves = tree.verify().unwrap().leaves;
    assert_eq!(after.pages(), leaves, "every leaf on the new version");
    assert_eq!(tables.get(before).unwrap().pages(), 0);
    db.checkpoint().unwrap();
    assert_eq!(tables.live_versions(), 1, "the old version retired");
    check(&mut s, &model);
    let r = q(
        &mut s,
        "SELECT SYMBOL_TABLE_VERSION, LIVE_VERSIONS, RETRAINS, RETRAINS_SKIPPED \
         FROM information_schema.ZIPDB_TABLE_COMPRESSION",
    );
    let want = [
        after.version.0.to_string(),
        "1".into(),
        "1".into(),
        "0".into(),
    ];
    assert_eq!(r, vec![want.to_vec()]);
    let status: BTreeMap<String, String> = q(&mut s, "SHOW STATUS LIKE 'Zipdb_record_retrains%'")
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    assert_eq!(
        status.get("Zipdb_record_retrains").map(String::as_str),
        Some("1")
    );
    assert_eq!(
        status
            .get("Zipdb_record_retrains_skipped")
            .map(String::as_str),
        Some("0")
    );
    // A lone table, `NO_WRITE_TO_BINLOG` and `LOCAL`, and a syntax error.
    for sql in [
        "OPTIMIZE TABLE plain",
        "optimize no_write_to_binlog table plain",
        "OPTIMIZE LOCAL TABLES `plain`",
    ] {
        assert_eq!(
            q(&mut s, sql),
            vec![row("d.plain", "status", "OK")],
            "{sql}"
        );
    }
    let e = s.query("OPTIMIZE plain").pop().unwrap().unwrap_err();
    assert_eq!(e.code(), 1064, "{e:?}");
}

/// `COMPRESSION='fsst+zstd'` (issue 19 step 8): fsst trees with the zstd cold layer; the rows
/// survive a restart, and the option reads back from SHOW CREATE TABLE, information_schema and
/// the compression table.
#[test]
fn fsst_zstd_tables_keep_their_rows_and_show_their_option() {
    let dir = temp_dir("fsst");
    let mut model = Model::new();
    let cold = |db: &Database| {
        let trees = db.stats().trees;
        let n = |f: TreeFormat| trees.iter().filter(|t| t.format == f).count();
        (
            n(TableFormat::FsstZstd.primary()),
            n(TableFormat::FsstZstd.index()),
        )
    };
    {
        let (db, inst) = open(&dir.0, TableFormat::Codec(Codec::None));
        let mut s = session(&inst);
        q(
            &mut s,
            "CREATE TABLE sbtest1 (id INT NOT NULL, k INT NOT NULL DEFAULT 0, \
             c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', \
             PRIMARY KEY (id), KEY k_1 (k)) COMPRESSION='fsst+zstd'",
        );
        assert_eq!(cold(&db), (1, 1));
        load(&mut s, &mut model);
        check(&mut s, &model);
        drop(s);
        drop(inst);
        db.close().expect("close");
    }
    let (db, inst) = open(&dir.0, TableFormat::Codec(Codec::None));
    let mut s = session(&inst);
    check(&mut s, &model);
    assert_eq!(cold(&db), (1, 1));
    let create = show_create(&mut s, "sbtest1");
    assert!(create.ends_with(" COMPRESSION='fsst+zstd'"), "{create}");
    let info = q(
        &mut s,
        "SELECT CREATE_OPTIONS FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = 'sbtest1'",
    );
    assert_eq!(info, [["compression='fsst+zstd'"]]);
    let codec = q(
        &mut s,
        "SELECT FORMAT FROM information_schema.ZIPDB_TABLE_COMPRESSION \
         WHERE TABLE_NAME = 'sbtest1'",
    );
    assert_eq!(codec, [["fsst+zstd"]]);
    // The cold layer's dictionary: this table is far below the 1 MiB sample.
    let dict = q(
        &mut s,
        "SELECT COLD_DICTIONARY, COLD_DICTIONARY_BYTES \
         FROM information_schema.ZIPDB_TABLE_COMPRESSION WHERE TABLE_NAME = 'sbtest1'",
    );
    assert_eq!(dict, [["collecting", "0"]]);
    // The definition recreates the table as it was.
    q(&mut s, "DROP TABLE sbtest1");
    q(&mut s, &create);
    assert_eq!(cold(&db), (1, 1));
    drop(s);
    drop(inst);
    db.close().expect("close");
}
