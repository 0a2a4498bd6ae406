//! Cursors: `next_ref` and `with_limit` against a `BTreeMap` in the three leaf formats
//! (classic, compact, compact with FSST values), and scans running beside writers.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use zipdb_storage::Codec;

use crate::format::{RecordCodec, TreeFormat};
use crate::tests::Disks;
use crate::{Database, Tree};

const FORMATS: [&str; 3] = ["classic", "compact", "fsst"];

fn db(page: usize) -> (Disks, Database) {
    crate::tests::db_4k_pages(page)
}

fn tree(db: &Database, format: &str) -> Tree {
    match format {
        "classic" => db.create_tree(format, None).unwrap(),
        "compact" => db
            .create_tree_with(format, TreeFormat::compact(Codec::None))
            .unwrap(),
        _ => db
            .create_tree_with(
                format,
                TreeFormat {
                    records: RecordCodec::Fsst,
                    ..TreeFormat::compact(Codec::None)
                },
            )
            .unwrap(),
    }
}

/// Keys with a shared prefix (compact leaves strip it), in numeric order.
fn key(n: u32) -> Vec<u8> {
    format!("row:{n:07}").into_bytes()
}

/// The key, then digit groups of a random length (FSST encodes them), now and then a value
/// too large for a 4 KiB leaf (overflow) or an empty one: a row handed out with another
/// row's value shows.
fn value(rng: &mut SmallRng, k: &[u8]) -> Vec<u8> {
    let len = match rng.gen_range(0..40) {
        0 => 0,
        1 => rng.gen_range(3000..9000),
        _ => rng.gen_range(20..300),
    };
    let mut v = k.to_vec();
    v.extend((0..len).map(|_| b'0' + rng.gen_range(0..10u8)));
    v
}

fn inside(lo: Bound<&[u8]>, hi: Bound<&[u8]>, k: &[u8]) -> bool {
    let above = match lo {
        Bound::Included(b) => k >= b,
        Bound::Excluded(b) => k > b,
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(b) => k <= b,
        Bound::Excluded(b) => k < b,
        Bound::Unbounded => true,
    };
    above && below
}

fn random_bound(rng: &mut SmallRng, keep: &mut Vec<u8>) -> u8 {
    // A key that may or may not be in the tree (odd suffixes never are).
    *keep = key(rng.gen_range(0..3200));
    if rng.gen_bool(0.3) {
        keep.push(b'x');
    }
    rng.gen_range(0..3)
}

fn as_bound(kind: u8, k: &[u8]) -> Bound<&[u8]> {
    match kind {
        0 => Bound::Unbounded,
        1 => Bound::Included(k),
        _ => Bound::Excluded(k),
    }
}

type Rows = Vec<(Vec<u8>, Vec<u8>)>;

fn scan_ref(t: &Tree, lo: Bound<&[u8]>, hi: Bound<&[u8]>, rev: bool, limit: Option<usize>) -> Rows {
    let c = if rev {
        t.range_rev((lo, hi))
    } else {
        t.range((lo, hi))
    };
    let mut c = c.unwrap();
    if let Some(n) = limit {
        c = c.with_limit(n);
    }
    let mut out = Vec::new();
    while let Some(r) = c.next_ref() {
        let (k, v) = r.unwrap();
        out.push((k.to_vec(), v.to_vec()));
    }
    // Exhausted stays exhausted.
    assert!(c.next_ref().is_none());
    out
}

#[test]
fn next_ref_iterator_and_limit_match_a_model() {
    for format in FORMATS {
        let (_d, db) = db(4096);
        let t = tree(&db, format);
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut rng = SmallRng::seed_from_u64(19);
        for _ in 0..8000 {
            let k = key(rng.gen_range(0..3000));
            if rng.gen_range(0..5) == 0 {
                t.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = value(&mut rng, &k);
                t.upsert(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        let report = t.verify().unwrap();
        assert_eq!(report.entries, model.len() as u64);
        assert!(report.depth >= 2, "{format}: several leaves");
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for q in 0..400 {
            let (ka, kb) = (
                random_bound(&mut rng, &mut a),
                random_bound(&mut rng, &mut b),
            );
            let (lo, hi) = (as_bound(ka, &a), as_bound(kb, &b));
            let rev = q % 2 == 1;
            let limit = match rng.gen_range(0..4) {
                0 => None,
                1 => Some(rng.gen_range(0..3)),
                _ => Some(rng.gen_range(1..400)),
            };
            let mut want: Rows = model
                .iter()
                .filter(|(k, _)| inside(lo, hi, k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if rev {
                want.reverse();
            }
            want.truncate(limit.unwrap_or(usize::MAX));
            let got = scan_ref(&t, lo, hi, rev, limit);
            assert_eq!(
                got.len(),
                want.len(),
                "{format} {lo:?}..{hi:?} rev {rev} {limit:?}"
            );
            assert!(got == want, "{format} {lo:?}..{hi:?} rev {rev} {limit:?}");
            // The owned iterator agrees, with or without a limit.
            let c = if rev {
                t.range_rev((lo, hi))
            } else {
                t.range((lo, hi))
            }
            .unwrap();
            let c = match limit {
                Some(n) => c.with_limit(n),
                None => c,
            };
            let owned: Rows = c.map(|r| r.unwrap()).collect();
            assert!(
                owned == want,
                "{format}: iterator {lo:?}..{hi:?} rev {rev} {limit:?}"
            );
            // Keys alone: the same keys, empty values.
            let c = if rev {
                t.range_rev((lo, hi))
            } else {
                t.range((lo, hi))
            }
            .unwrap()
            .keys_only();
            let c = match limit {
                Some(n) => c.with_limit(n),
                None => c,
            };
            let keys: Rows = c.map(|r| r.unwrap()).collect();
            let want_keys: Rows = want.iter().map(|(k, _)| (k.clone(), Vec::new())).collect();
            assert!(
                keys == want_keys,
                "{format}: keys only {lo:?}..{hi:?} rev {rev}"
            );
            // A limit set after the first row counts from there, whatever is buffered.
            if let (Some(n), Some(first)) = (limit, want.first()) {
                let c = if rev {
                    t.range_rev((lo, hi))
                } else {
                    t.range((lo, hi))
                };
                let mut c = c.unwrap();
                assert_eq!(c.next_ref().unwrap().unwrap().0, &first.0[..]);
                let mut c = c.with_limit(n.saturating_sub(1));
                let mut rest = Vec::new();
                while let Some(r) = c.next_ref() {
                    rest.push(r.unwrap().0.to_vec());
                }
                let want_rest: Vec<Vec<u8>> = want[1..].iter().map(|(k, _)| k.clone()).collect();
                assert_eq!(
                    rest, want_rest,
                    "{format}: limit {n} set after the first row"
                );
            }
        }
    }
}

/// A keys-only scan of an FSST tree decodes no record and neither uses nor builds a leaf
/// view, where a plain scan builds them (the pool has room).
#[test]
fn keys_only_scans_leave_records_and_views_alone() {
    let (_d, db) = db(4096);
    let t = tree(&db, "fsst");
    let mut rng = SmallRng::seed_from_u64(5);
    for n in 0..3000 {
        let k = key(n);
        t.upsert(&k, &value(&mut rng, &k)).unwrap();
    }
    let pool = t.btree().pool();
    let decoded = || t.btree().symbol_tables().record_stats().records_decoded;
    let (d0, v0) = (decoded(), pool.stats().views);
    let keys = t.range(..).unwrap().keys_only().count();
    assert_eq!(keys, 3000);
    let (d1, v1) = (decoded(), pool.stats().views);
    assert_eq!(d1, d0, "a keys-only scan decodes nothing");
    assert_eq!(
        (v1.hits, v1.misses, v1.stored),
        (v0.hits, v0.misses, v0.stored),
        "a keys-only scan leaves the views alone"
    );
    // The test means something only where a plain scan does decode and build views.
    for _ in 0..3 {
        assert_eq!(t.range(..).unwrap().count(), 3000);
    }
    assert!(decoded() > d1);
    assert!(pool.stats().views.misses > v1.misses);
}

/// Readers scan while a writer inserts and deletes the odd keys and rewrites the even ones
/// (leaves split, merge and move): every scan is strictly ordered, sees every even key in the
/// stretch it covers, pairs each key with its own value and stops at its limit.
#[test]
fn scans_beside_writers_are_ordered_and_miss_no_stable_key() {
    for format in FORMATS {
        let (_d, db) = db(4096);
        let t = tree(&db, format);
        let mut rng = SmallRng::seed_from_u64(7);
        for n in (0..4000).step_by(2) {
            let k = key(n);
            t.insert(&k, &value(&mut rng, &k)).unwrap();
        }
        let stop = AtomicBool::new(false);
        let scans = std::thread::scope(|s| {
            let writer = s.spawn(|| {
                let mut rng = SmallRng::seed_from_u64(8);
                for _ in 0..6000 {
                    let n = rng.gen_range(0..4000u32);
                    let k = key(n);
                    if n % 2 == 1 && rng.gen_bool(0.4) {
                        t.delete(&k).unwrap();
                    } else {
                        t.upsert(&k, &value(&mut rng, &k)).unwrap();
                    }
                }
                stop.store(true, Ordering::Release);
            });
            let mut rng = SmallRng::seed_from_u64(9);
            let mut scans = 0;
            while !stop.load(Ordering::Acquire) || scans < 20 {
                let start = rng.gen_range(0..4000u32);
                let rev = scans % 3 == 2;
                let limit = rng.gen_range(1..300);
                let sk = key(start);
                let c = if rev {
                    t.range_rev((Bound::Unbounded, Bound::Included(&sk[..])))
                } else {
                    t.range((Bound::Included(&sk[..]), Bound::Unbounded))
                };
                let mut c = c.unwrap().with_limit(limit);
                let mut seen: Vec<u32> = Vec::new();
                while let Some(r) = c.next_ref() {
                    let (k, v) = r.unwrap();
                    assert!(v.starts_with(k), "{format}: a row with another row's value");
                    let n: u32 = std::str::from_utf8(&k[4..]).unwrap().parse().unwrap();
                    if let Some(&p) = seen.last() {
                        assert!(if rev { n < p } else { n > p }, "{format}: {p} then {n}");
                    }
                    seen.push(n);
                }
                assert!(seen.len() <= limit);
                // Even keys never leave the tree: none is skipped inside the covered stretch,
                // and the scan stops early only at the end of the key space.
                let evens = seen.iter().filter(|&&n| n % 2 == 0).count();
                if let (Some(&first), Some(&last)) = (seen.first(), seen.last()) {
                    let (a, b) = (first.min(last), first.max(last));
                    let want = (a..=b).filter(|n| n % 2 == 0).count();
                    assert_eq!(evens, want, "{format}: even keys skipped in {a}..={b}");
                }
                if seen.len() < limit {
                    let rest = if rev {
                        (0..=start).filter(|n| n % 2 == 0).count()
                    } else {
                        (start..4000).filter(|n| n % 2 == 0).count()
                    };
                    assert_eq!(evens, rest, "{format}: a short scan from {start}");
                }
                scans += 1;
            }
            writer.join().unwrap();
            scans
        });
        assert!(scans >= 20);
        t.verify().unwrap();
    }
}
