use std::collections::BTreeMap;

use proptest::prelude::*;
use zipdb_storage::{Codec, TreeId};

use super::*;
use crate::btree::node::{LEAF_CELL_HDR, NODE_HEADER_END};

const ID: PageId = PageId(9);

fn leaf_page(size: usize, fences: Fences<'_>, version: u16) -> Vec<u8> {
    let mut p = vec![0u8; size];
    LogicalHeader::init(&mut p, PageType::Leaf, Codec::None, TreeId(1));
    init_compact_leaf(ID, &mut p, fences, version, PageId::NONE).unwrap();
    p
}

fn parse(p: &[u8]) -> CompactLeaf<'_> {
    let l = CompactLeaf::parse(ID, p).unwrap();
    l.verify().unwrap();
    l
}

/// Inserts at the searched position; `false` when the node is full.
fn put(p: &mut [u8], k: &[u8], v: StoredValue<'_>) -> bool {
    let pos = match parse(p).search(k).unwrap() {
        Ok(_) => panic!("duplicate key {k:?}"),
        Err(i) => i,
    };
    insert_cell(ID, p, pos, k, v).unwrap()
}

const FENCES_K: Fences<'static> = Fences {
    lower: Some(b"k0"),
    upper: Some(b"k1"),
};

fn insert_search_remove_compact(size: usize) {
    let mut p = leaf_page(size, FENCES_K, 0);
    assert_eq!(parse(&p).prefix_len(), 1);
    let n = 100 * size / 4096;
    for i in (0..n as u32).rev() {
        let k = format!("k0{i:05}");
        assert!(put(
            &mut p,
            k.as_bytes(),
            StoredValue::Raw(&i.to_le_bytes())
        ));
    }
    let l = parse(&p);
    assert_eq!(l.count(), n);
    let mut key = Vec::new();
    for i in 0..n as u32 {
        let k = format!("k0{i:05}");
        let pos = l.search(k.as_bytes()).unwrap().unwrap();
        assert_eq!(pos, i as usize);
        l.key_into(pos, &mut key).unwrap();
        assert_eq!(key, k.as_bytes());
        assert_eq!(l.cmp_key(pos, k.as_bytes()).unwrap(), Ordering::Equal);
        assert_eq!(l.value(pos).unwrap(), StoredValue::Raw(&i.to_le_bytes()));
    }
    assert_eq!(l.search(b"k000050x").unwrap(), Err(51));
    assert_eq!(l.search(b"k").unwrap(), Err(0));
    assert_eq!(l.search(b"a").unwrap(), Err(0));
    assert_eq!(l.search(b"z").unwrap(), Err(n));
    // Suffix "0iiiii" (6 bytes): flags, s, n, 2 key-rest bytes, 4 value bytes.
    let cell = 1 + 1 + 1 + 2 + 4;
    assert_eq!(l.used(), n * (cell + SLOT_LEN));
    // Remove every other key: garbage grows, used shrinks, the gap stays zero (verify).
    for i in (0..n).step_by(2).rev() {
        remove_cell(ID, &mut p, i).unwrap();
        parse(&p);
    }
    let l = parse(&p);
    assert_eq!(l.count(), n / 2);
    assert_eq!(l.used(), n / 2 * (cell + SLOT_LEN));
    assert!(l.garbage() > 0);
    compact(ID, &mut p).unwrap();
    let l = parse(&p);
    assert_eq!(l.garbage(), 0);
    assert_eq!(l.key(0).unwrap(), b"k000001");
    // Fill until full, then compaction inside insert reclaims garbage.
    // Leave garbage again so that the fill below needs the compaction inside insert.
    for i in (0..n / 2).step_by(2).rev() {
        remove_cell(ID, &mut p, i).unwrap();
    }
    assert!(parse(&p).garbage() > 0);
    let mut i = 0;
    while put(
        &mut p,
        format!("k0{i:05}z").as_bytes(),
        StoredValue::Raw(&[7u8; 20]),
    ) {
        i += 1;
    }
    let l = parse(&p);
    assert!(l.free_space() < cell_len(7, StoredValue::Raw(&[7u8; 20])) + SLOT_LEN);
    assert!(i > 0);
}

#[test]
fn insert_search_remove_compact_4k() {
    insert_search_remove_compact(4096);
}

#[test]
fn insert_search_remove_compact_16k() {
    insert_search_remove_compact(16384);
}

#[test]
fn insert_search_remove_compact_64k() {
    insert_search_remove_compact(65536);
}

#[test]
fn varints_are_minimal_and_bounded() {
    let mut b = [0u8; 5];
    for v in [
        0usize,
        1,
        127,
        128,
        16383,
        16384,
        1 << 21,
        (1 << 28) - 1,
        1 << 28,
        u32::MAX as usize,
    ] {
        let n = put_varint(&mut b, v);
        assert_eq!(n, varint_len(v));
        assert_eq!(get_varint(&b[..n]), Some((v, n)));
        assert_eq!(get_varint(&b[..n - 1]), None);
    }
    assert_eq!(get_varint(&[0x80, 0x00]), None); // not minimal
    assert_eq!(get_varint(&[0xff, 0xff, 0xff, 0xff, 0x10]), None); // > u32::MAX
    assert_eq!(get_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]), None); // 6 bytes
}

#[test]
fn keys_with_zero_bytes_and_short_suffixes_sort_right() {
    // Heads zero-pad short suffixes, so "a", "a\0" and "a\0\0\0\0" share a head: ties are
    // decided by the suffix length or the key rest.
    let mut keys: Vec<&[u8]> = vec![
        b"",
        b"\0",
        b"a",
        b"a\0",
        b"a\0\0",
        b"a\0\0\0",
        b"a\0\0\0\0",
        b"a\0\0\0\0\0",
        b"a\0\0\0\x01",
        b"a\0\0\x01",
        b"ab",
        b"abcd",
        b"abcde",
        b"abcdf",
        b"abce",
        b"b",
    ];
    keys.sort();
    for fences in [
        Fences::UNBOUNDED,
        Fences {
            lower: Some(b""),
            upper: Some(b"c"),
        },
    ] {
        for order in [false, true] {
            let mut p = leaf_page(4096, fences, 0);
            let it: Vec<&[u8]> = if order {
                keys.iter().rev().copied().collect()
            } else {
                keys.clone()
            };
            for k in it {
                assert!(put(&mut p, k, StoredValue::Raw(k)));
            }
            let l = parse(&p);
            for (i, k) in keys.iter().enumerate() {
                assert_eq!(l.search(k).unwrap(), Ok(i));
                assert_eq!(l.key(i).unwrap(), *k);
                for (j, other) in keys.iter().enumerate() {
                    assert_eq!(
                        l.cmp_key(i, other).unwrap(),
                        i.cmp(&j),
                        "{k:?} vs {other:?}"
                    );
                }
            }
            assert_eq!(l.search(b"a\0\0\0\0\0\0").unwrap(), Err(8));
        }
    }
    // A prefix from the fences, with keys exactly the prefix or shorter than the head.
    let f = Fences {
        lower: Some(b"pre\0"),
        upper: Some(b"pre\x01"),
    };
    let mut p = leaf_page(4096, f, 0);
    assert_eq!(parse(&p).prefix_len(), 3);
    for k in [
        &b"pre\0"[..],
        b"pre\0\0",
        b"pre\0\x7f\xff\xff\xff\xff",
        b"pre\0x",
    ] {
        assert!(put(&mut p, k, StoredValue::Raw(b"")));
    }
    let l = parse(&p);
    assert_eq!(l.search(b"pre").unwrap(), Err(0));
    assert_eq!(l.search(b"pr").unwrap(), Err(0));
    assert_eq!(l.search(b"prf").unwrap(), Err(4));
    assert_eq!(l.search(b"pre\0\0").unwrap(), Ok(1));
}

#[test]
fn values_of_every_kind_and_replace() {
    let mut p = leaf_page(16384, Fences::UNBOUNDED, 3);
    assert_eq!(parse(&p).symtab_version(), 3);
    let fsst = StoredValue::Fsst {
        bytes: b"codes",
        len: 300,
    };
    let ovf = StoredValue::Overflow {
        first: PageId(77),
        len: 100_000,
    };
    assert!(put(&mut p, b"a", StoredValue::Raw(b"raw value")));
    assert!(put(&mut p, b"b", fsst));
    assert!(put(&mut p, b"c", ovf));
    let l = parse(&p);
    assert_eq!(l.value(0).unwrap(), StoredValue::Raw(b"raw value"));
    assert_eq!(l.value(1).unwrap(), fsst);
    assert_eq!(l.value(2).unwrap(), ovf);
    let start = l.cell_start();
    // Not longer: in place; the cell at cell_start gives its freed bytes to the gap.
    assert!(replace_if_not_longer(ID, &mut p, 2, StoredValue::Raw(b"x")).unwrap());
    let l = parse(&p);
    assert_eq!(l.value(2).unwrap(), StoredValue::Raw(b"x"));
    assert_eq!(l.garbage(), 0);
    assert!(l.cell_start() > start);
    // A cell above cell_start leaves garbage.
    assert!(replace_if_not_longer(ID, &mut p, 0, StoredValue::Raw(b"raw")).unwrap());
    let l = parse(&p);
    assert_eq!(l.garbage(), 6);
    assert_eq!(l.value(0).unwrap(), StoredValue::Raw(b"raw"));
    // Longer: refused, node unchanged.
    let before = p.clone();
    assert!(!replace_if_not_longer(ID, &mut p, 0, StoredValue::Raw(b"raw value!")).unwrap());
    assert_eq!(p, before);
    let e = parse(&p).collect_entries().unwrap();
    assert_eq!(e.len(), 3);
    assert_eq!(e[1], Entry::new(b"b", fsst));
    // Rebuild from the entries gives the same contents, no garbage.
    let mut q = vec![0u8; 16384];
    LogicalHeader::init(&mut q, PageType::Leaf, Codec::None, TreeId(1));
    build_compact_leaf(ID, &mut q, Fences::UNBOUNDED, 3, PageId(5), &e).unwrap();
    let l = parse(&q);
    assert_eq!(l.collect_entries().unwrap(), e);
    assert_eq!(l.link(), PageId(5));
    assert_eq!(l.garbage(), 0);
    // An FSST value needs a symbol-table version.
    let mut q = vec![0u8; 4096];
    LogicalHeader::init(&mut q, PageType::Leaf, Codec::None, TreeId(1));
    build_compact_leaf(ID, &mut q, Fences::UNBOUNDED, 0, PageId::NONE, &e).unwrap();
    let l = CompactLeaf::parse(ID, &q).unwrap();
    assert!(l.value(1).is_err());
    assert!(l.verify().is_err());
}

#[test]
fn compaction_packs_in_slot_order_and_refuses_overlapping_cells() {
    let f = Fences {
        lower: Some(b"m"),
        upper: Some(b"n"),
    };
    let mut p = leaf_page(4096, f, 3);
    // Inserted in descending order, so the first slot's cell lies lowest; then values of
    // every kind and length replaced and removed, leaving garbage between the cells.
    let keys: Vec<Vec<u8>> = (0..40u32)
        .map(|i| format!("m{i:03}").into_bytes())
        .collect();
    for (i, k) in keys.iter().enumerate().rev() {
        let v = vec![i as u8; 10 + i % 7];
        assert!(put(&mut p, k, StoredValue::Raw(&v)));
    }
    for i in (0..40).step_by(3) {
        assert!(replace_if_not_longer(ID, &mut p, i, StoredValue::Raw(b"x")).unwrap());
    }
    remove_cell(ID, &mut p, 7).unwrap();
    let fsst = StoredValue::Fsst {
        bytes: b"\x01\x02",
        len: 9,
    };
    assert!(replace_if_not_longer(ID, &mut p, 19, fsst).unwrap());
    // (key, stored bytes, kind) of every entry.
    let before: Vec<(Vec<u8>, Vec<u8>, u8)> = {
        let l = parse(&p);
        assert!(l.garbage() > 0);
        (0..l.count())
            .map(|i| {
                let v = l.value(i).unwrap();
                let mut b = vec![0u8; v.stored_len()];
                v.write(&mut b);
                (l.key(i).unwrap(), b, v.kind())
            })
            .collect()
    };
    let mut q = p.clone();
    compact(ID, &mut q).unwrap();
    let l = parse(&q);
    assert_eq!(l.garbage(), 0);
    assert_eq!(l.count(), before.len());
    let mut top = q.len();
    for (i, (k, b, kind)) in before.iter().enumerate() {
        assert_eq!(l.key(i).unwrap(), &k[..]);
        let v = l.value(i).unwrap();
        let mut got = vec![0u8; v.stored_len()];
        v.write(&mut got);
        assert_eq!((&got, v.kind()), (b, *kind), "value {i}");
        // Slot order, packed downwards from the page end without holes.
        let len = l.cell_len(i).unwrap();
        top -= len;
        assert_eq!(rd_u16(&q, l.slots_start() + i * SLOT_LEN), top, "cell {i}");
    }
    assert_eq!(l.cell_start(), top);
    assert_eq!(l.symtab_version(), 3);
    // Two slots naming one cell: refused, and the page is left as it was.
    let mut bad = p.clone();
    let s0 = parse(&p).slots_start();
    let off1 = bad[s0 + SLOT_LEN..s0 + SLOT_LEN + 2].to_vec();
    bad[s0..s0 + 2].copy_from_slice(&off1);
    let copy = bad.clone();
    assert!(compact(ID, &mut bad).is_err());
    assert_eq!(bad, copy);
    // A slot pointing into the gap, or at a cell header running past the page: refused too.
    for off in [0u16, 4095] {
        let mut bad = p.clone();
        bad[s0..s0 + 2].copy_from_slice(&off.to_le_bytes());
        let copy = bad.clone();
        assert!(compact(ID, &mut bad).is_err(), "slot offset {off}");
        assert_eq!(bad, copy);
    }
}

#[test]
fn verify_catches_broken_invariants() {
    let f = Fences {
        lower: Some(b"m"),
        upper: Some(b"n"),
    };
    let mut p = leaf_page(4096, f, 0);
    for k in [&b"m1"[..], b"m2", b"m3long"] {
        assert!(put(&mut p, k, StoredValue::Raw(b"v")));
    }
    let l = parse(&p);
    let gap = l.slots_start() + 3 * SLOT_LEN;
    let s0 = l.slots_start();
    // A non-zero byte in the gap.
    let mut bad = p.clone();
    bad[gap + 10] = 1;
    assert!(CompactLeaf::parse(ID, &bad).unwrap().verify().is_err());
    // A head that does not match its key.
    let mut bad = p.clone();
    bad[s0 + 2] ^= 1;
    assert!(CompactLeaf::parse(ID, &bad).unwrap().verify().is_err());
    // Keys out of order (slots 0 and 1 swapped).
    let mut bad = p.clone();
    let (a, b) = (bad[s0..s0 + 6].to_vec(), bad[s0 + 6..s0 + 12].to_vec());
    bad[s0..s0 + 6].copy_from_slice(&b);
    bad[s0 + 6..s0 + 12].copy_from_slice(&a);
    assert!(CompactLeaf::parse(ID, &bad).unwrap().verify().is_err());
    // Garbage count off by one.
    let mut bad = p.clone();
    bad[OFF_GARBAGE] = 1;
    assert!(CompactLeaf::parse(ID, &bad).unwrap().verify().is_err());
    // Header fields are checked by parse.
    for (at, val) in [
        (OFF_FLAGS, 0u8),
        (OFF_FLAGS, 3),
        (OFF_LEVEL, 1),
        (OFF_RESERVED, 1),
        (OFF_PREFIX, 1),
        (OFF_LOWER_LEN + 1, 0xf0),
        (OFF_COUNT + 1, 0x0f),
        (OFF_CELL_START + 2, 1),
    ] {
        let mut bad = p.clone();
        bad[at] = val;
        assert!(CompactLeaf::parse(ID, &bad).is_err(), "byte {at} = {val}");
    }
    let mut bad = p.clone();
    bad[0] = PageType::Inner as u8;
    assert!(CompactLeaf::parse(ID, &bad).is_err());
    // A classic node does not parse as a compact one, nor the reverse.
    assert!(super::super::node::Node::parse(ID, &p).is_err());
    let mut classic = vec![0u8; 4096];
    LogicalHeader::init(&mut classic, PageType::Leaf, Codec::None, TreeId(1));
    super::super::node::init_node(&mut classic, 0, PageId::NONE);
    assert!(CompactLeaf::parse(ID, &classic).is_err());
    // Disordered fences are refused when writing.
    let mut q = vec![0u8; 4096];
    let rev = Fences {
        lower: Some(b"n"),
        upper: Some(b"m"),
    };
    assert!(init_compact_leaf(ID, &mut q, rev, 0, PageId::NONE).is_err());
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "outside the leaf's fences")]
fn insert_outside_fences_asserts() {
    let mut p = leaf_page(4096, FENCES_K, 0);
    let _ = insert_cell(ID, &mut p, 0, b"z", StoredValue::Raw(b""));
}

#[test]
#[cfg(not(debug_assertions))]
fn insert_outside_fences_is_an_error() {
    let mut p = leaf_page(4096, FENCES_K, 0);
    let before = p.clone();
    assert!(insert_cell(ID, &mut p, 0, b"z", StoredValue::Raw(b"")).is_err());
    assert!(insert_cell(ID, &mut p, 0, b"k1", StoredValue::Raw(b"")).is_err());
    assert_eq!(p, before);
}

#[test]
fn limits_keep_four_cells_per_node() {
    // The values docs/FORMAT.md states.
    let max_cells: Vec<usize> = [4096, 16384, 65536]
        .map(|ps| CompactLimits::new(ps).max_cell)
        .to_vec();
    assert_eq!(max_cells, [760, 3064, 12280]);
    for ps in [4096usize, 8192, 16384, 65536] {
        let l = CompactLimits::new(ps);
        assert!(4 * (l.max_cell + SLOT_LEN) <= l.usable_min);
        // With fences near the key limit, four cells of the largest size fit.
        let common = vec![b'x'; l.max_key - 2];
        let lower = [&common[..], b"a"].concat();
        let upper = [&common[..], b"by"].concat();
        let f = Fences {
            lower: Some(&lower),
            upper: Some(&upper),
        };
        let mut p = leaf_page(ps, f, 0);
        // Keys of max_key bytes have a 2-byte suffix; value bytes pad the cell to max_cell.
        let n = l.max_cell - cell_len(2, StoredValue::Raw(b""));
        let n = n - (varint_len(n) - 1);
        let v = vec![1u8; n];
        assert_eq!(cell_len(2, StoredValue::Raw(&v)), l.max_cell);
        for i in 0..4u8 {
            let k = [&lower[..], &[i]].concat();
            assert_eq!(k.len(), l.max_key);
            assert!(put(&mut p, &k, StoredValue::Raw(&v)), "page {ps}, cell {i}");
        }
        // An overflow reference under the longest key always fits inline.
        let ovf = StoredValue::Overflow {
            first: PageId(1),
            len: u32::MAX as usize,
        };
        assert!(l.fits_inline(l.max_key, ovf));
        assert!(ps - 1 <= u16::MAX as usize);
    }
}

/// Capacity of a classic leaf for cells of `7 + klen + vlen` bytes (and their slots).
fn classic_capacity(ps: usize, klen: usize, vlen: usize) -> usize {
    (ps - NODE_HEADER_END) / (LEAF_CELL_HDR + klen + vlen + SLOT_LEN)
}

fn fill(ps: usize, fences: Fences<'_>, key: impl Fn(u64) -> Vec<u8>, v: StoredValue<'_>) -> usize {
    let mut p = leaf_page(ps, fences, 1);
    let mut n = 0;
    while insert_cell(ID, &mut p, n as usize, &key(n), v).unwrap() {
        n += 1;
    }
    parse(&p);
    n as usize
}

#[test]
fn compact_leaves_hold_about_twice_as_many_entries() {
    for ps in [4096usize, 16384] {
        // sbtest primary leaf: 8-byte big-endian ids, 184-byte values that FSST stores in
        // about 94 bytes (design note §2.3: ratio ≈ 0.51). Fences are the parent separators
        // around a leaf of consecutive ids: they share 6 bytes.
        let base = 1_000_000u64 << 8;
        let lo = base.to_be_bytes();
        let hi = (base + (1 << 8)).to_be_bytes();
        let f = Fences {
            lower: Some(&lo[..7]),
            upper: Some(&hi[..7]),
        };
        assert_eq!(f.prefix_len(), 6);
        let codes = [0x5au8; 94];
        let v = StoredValue::Fsst {
            bytes: &codes,
            len: 184,
        };
        let compact = fill(ps, f, |i| (base + i).to_be_bytes().to_vec(), v);
        let classic = classic_capacity(ps, 8, 184);
        assert!(
            compact * 10 >= classic * 19,
            "sbtest {ps}: {compact} vs {classic}"
        );

        // (k, id) secondary index leaf: 18-byte keys (7 shared by the fences: index id and
        // the high bytes of k), empty values.
        let head = *b"\x00\x00\x00\x05idx";
        let key = |i: u64| {
            let mut k = head.to_vec();
            k.extend_from_slice(&(i / 64).to_be_bytes()[5..]); // k: 3 bytes
            k.extend_from_slice(&(i * 7919).to_be_bytes()); // id: 8 bytes
            k
        };
        let mut lo = head.to_vec();
        lo.push(0);
        let mut hi = head.to_vec();
        hi.push(1);
        let f = Fences {
            lower: Some(&lo),
            upper: Some(&hi),
        };
        assert_eq!(f.prefix_len(), 7);
        assert_eq!(key(0).len(), 18);
        let compact = fill(ps, f, key, StoredValue::Raw(b""));
        let classic = classic_capacity(ps, 18, 0);
        assert!(
            compact * 10 >= classic * 18,
            "index {ps}: {compact} vs {classic}"
        );
    }
}

#[test]
fn garbage_never_panics_deterministic() {
    // Mutations of a valid page: errors, never panics.
    let mut p = leaf_page(4096, FENCES_K, 2);
    for i in 0..60u32 {
        let k = format!("k0{i:03}-{}", "x".repeat(i as usize % 7));
        let v = match i % 3 {
            0 => StoredValue::Raw(b"value"),
            1 => StoredValue::Fsst {
                bytes: b"cd",
                len: 9,
            },
            _ => StoredValue::Overflow {
                first: PageId(u64::from(i) + 1),
                len: 5000,
            },
        };
        assert!(put(&mut p, k.as_bytes(), v));
    }
    exercise(&p);
    let mut x = 12345u64;
    for _ in 0..2000 {
        let mut g = p.clone();
        for _ in 0..1 + (x >> 60) {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let at = 16 + (x >> 33) as usize % (g.len() - 16);
            g[at] ^= (x >> 24) as u8 | 1;
        }
        exercise(&g);
    }
}

// ---- property tests ----

#[derive(Debug, Clone)]
enum Val {
    Raw(Vec<u8>),
    Fsst(Vec<u8>, usize),
    Ovf(u64, usize),
}

impl Val {
    fn stored(&self) -> StoredValue<'_> {
        match self {
            Val::Raw(b) => StoredValue::Raw(b),
            Val::Fsst(b, len) => StoredValue::Fsst {
                bytes: b,
                len: *len,
            },
            Val::Ovf(first, len) => StoredValue::Overflow {
                first: PageId(*first),
                len: *len,
            },
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Vec<u8>, Val),
    Remove(usize),
    Replace(usize, Val),
    Compact,
}

fn val() -> impl Strategy<Value = Val> {
    prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..120).prop_map(Val::Raw),
        2 => (proptest::collection::vec(any::<u8>(), 1..60), 1usize..2000)
            .prop_map(|(b, l)| Val::Fsst(b, l)),
        1 => (1u64..u64::MAX, 0usize..u32::MAX as usize).prop_map(|(f, l)| Val::Ovf(f, l)),
    ]
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    let bases: Vec<&'static [u8]> = vec![
        b"",
        b"k",
        b"k\x10",
        b"k\x7f",
        b"pre\0",
        b"pre\0\x01",
        b"pre\0\x02",
        b"ab",
        b"m",
    ];
    (
        proptest::sample::select(bases),
        proptest::collection::vec(
            proptest::sample::select(vec![0u8, 1, 2, 0x10, 0x41, 0x80, 0xff]),
            0..9,
        ),
    )
        .prop_map(|(b, t)| [b, &t[..]].concat())
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (key(), val()).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => any::<usize>().prop_map(Op::Remove),
        2 => (any::<usize>(), val()).prop_map(|(i, v)| Op::Replace(i, v)),
        1 => Just(Op::Compact),
    ]
}

type FencePair = (Option<&'static [u8]>, Option<&'static [u8]>);

fn fences() -> impl Strategy<Value = FencePair> {
    proptest::sample::select(vec![
        (None, None),
        (Some(&b"k\x10"[..]), Some(&b"k\x80"[..])),
        (Some(&b"ab"[..]), None),
        (None, Some(&b"m"[..])),
        (Some(&b"pre\0\x01"[..]), Some(&b"pre\0\x03"[..])),
    ])
}

fn check_against_model(p: &[u8], model: &BTreeMap<Vec<u8>, Val>) {
    let l = parse(p);
    assert_eq!(l.count(), model.len());
    let mut key = Vec::new();
    for (i, (k, v)) in model.iter().enumerate() {
        l.key_into(i, &mut key).unwrap();
        assert_eq!(&key, k);
        assert_eq!(l.search(k).unwrap(), Ok(i));
        assert_eq!(l.cmp_key(i, k).unwrap(), Ordering::Equal);
        assert_eq!(l.value(i).unwrap(), v.stored());
        let mut longer = k.clone();
        longer.push(0);
        if !model.contains_key(&longer) {
            assert_eq!(l.search(&longer).unwrap(), Err(i + 1));
        }
        assert_eq!(l.cmp_key(i, &longer).unwrap(), Ordering::Less);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, max_shrink_iters: 500, ..ProptestConfig::default() })]

    #[test]
    fn random_ops_match_a_sorted_model(
        ps in proptest::sample::select(vec![4096usize, 16384, 65536]),
        (lower, upper) in fences(),
        ops in proptest::collection::vec(op(), 1..250),
    ) {
        let f = Fences { lower, upper };
        let mut p = leaf_page(ps, f, 1);
        let mut model: BTreeMap<Vec<u8>, Val> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(k, v) => {
                    if !f.contains(&k) {
                        continue;
                    }
                    let l = parse(&p);
                    let pos = model.range::<Vec<u8>, _>(..&k).count();
                    match l.search(&k).unwrap() {
                        Ok(i) => {
                            prop_assert!(model.contains_key(&k));
                            prop_assert_eq!(i, pos);
                            continue;
                        }
                        Err(i) => prop_assert_eq!(i, pos),
                    }
                    let need = cell_len(k.len() - l.prefix_len(), v.stored()) + SLOT_LEN;
                    let free = l.free_space();
                    if insert_cell(ID, &mut p, pos, &k, v.stored()).unwrap() {
                        prop_assert!(free >= need);
                        model.insert(k, v);
                    } else {
                        prop_assert!(free < need);
                    }
                }
                Op::Remove(r) => {
                    if model.is_empty() {
                        continue;
                    }
                    let i = r % model.len();
                    remove_cell(ID, &mut p, i).unwrap();
                    let k = model.keys().nth(i).unwrap().clone();
                    model.remove(&k);
                }
                Op::Replace(r, v) => {
                    if model.is_empty() {
                        continue;
                    }
                    let i = r % model.len();
                    let l = parse(&p);
                    let old = l.cell_len(i).unwrap();
                    let k = model.keys().nth(i).unwrap().clone();
                    let new = cell_len(k.len() - l.prefix_len(), v.stored());
                    let done = replace_if_not_longer(ID, &mut p, i, v.stored()).unwrap();
                    prop_assert_eq!(done, new <= old);
                    if done {
                        model.insert(k, v);
                    }
                }
                Op::Compact => {
                    compact(ID, &mut p).unwrap();
                    prop_assert_eq!(parse(&p).garbage(), 0);
                }
            }
            check_against_model(&p, &model);
        }
        let entries = parse(&p).collect_entries().unwrap();
        let mut q = vec![0u8; ps];
        LogicalHeader::init(&mut q, PageType::Leaf, Codec::None, TreeId(1));
        build_compact_leaf(ID, &mut q, f, 1, PageId::NONE, &entries).unwrap();
        check_against_model(&q, &model);
        exercise(&p);
    }

    #[test]
    fn arbitrary_pages_never_panic(
        mut page in proptest::collection::vec(any::<u8>(), 4096),
        header in any::<bool>(),
        count in 0u16..40,
        cell_start in 3000u32..4097,
        lf in prop_oneof![Just(0xFFFFu16), 0u16..20],
        uf in prop_oneof![Just(0xFFFFu16), 0u16..20],
    ) {
        if header {
            // Make the header plausible so that the cell decoders get exercised.
            LogicalHeader::init(&mut page, PageType::Leaf, Codec::None, TreeId(1));
            page[OFF_LEVEL] = 0;
            page[OFF_FLAGS] = FLAG_COMPACT;
            page[OFF_COUNT..OFF_COUNT + 2].copy_from_slice(&count.to_le_bytes());
            page[OFF_CELL_START..OFF_CELL_START + 4].copy_from_slice(&cell_start.to_le_bytes());
            page[OFF_GARBAGE..OFF_GARBAGE + 4].fill(0);
            page[OFF_LOWER_LEN..OFF_LOWER_LEN + 2].copy_from_slice(&lf.to_le_bytes());
            page[OFF_UPPER_LEN..OFF_UPPER_LEN + 2].copy_from_slice(&uf.to_le_bytes());
            page[OFF_RESERVED..OFF_RESERVED + 4].fill(0);
            let lower = (lf != 0xFFFF).then(|| page[48..48 + lf as usize].to_vec());
            let us = 48 + if lf == 0xFFFF { 0 } else { lf as usize };
            let upper = (uf != 0xFFFF).then(|| page[us..us + uf as usize].to_vec());
            let plen = Fences { lower: lower.as_deref(), upper: upper.as_deref() }.prefix_len();
            page[OFF_PREFIX..OFF_PREFIX + 2].copy_from_slice(&(plen as u16).to_le_bytes());
        }
        exercise(&page);
    }
}
