//! Rows shaped like sysbench's `sbtest` tables, and their key and value encodings.
//!
//! `CREATE TABLE sbtest(id INTEGER PRIMARY KEY, k INTEGER, c CHAR(120), pad CHAR(60))`, filled the
//! way sysbench 1.0 fills it: `c` is 10 groups of 11 random digits joined by `-` (119 bytes),
//! `pad` is 5 such groups (59 bytes), `k` is uniform in `[1, table_size]`.
//!
//! Key: the `i64` id, memcomparable (big-endian with the sign bit flipped), 8 bytes.
//! Value: `k` as 4 bytes little-endian, then `c` and `pad`, each as one length byte and its bytes
//! (CHAR values are stored without trailing spaces, as MySQL returns them). A sysbench row is
//! 8 + 184 bytes.

use rand::Rng;

/// Digit groups in `c`.
pub const C_GROUPS: usize = 10;
/// Digit groups in `pad`.
pub const PAD_GROUPS: usize = 5;
/// Length of `c` as sysbench fills it.
pub const C_LEN: usize = C_GROUPS * 12 - 1;
/// Length of `pad` as sysbench fills it.
pub const PAD_LEN: usize = PAD_GROUPS * 12 - 1;
/// Encoded length of a key.
pub const KEY_LEN: usize = 8;
/// Encoded length of a sysbench-filled value.
pub const VALUE_LEN: usize = 4 + 1 + C_LEN + 1 + PAD_LEN;

/// Encodes an id so that byte order equals numeric order.
pub fn encode_key(id: i64) -> [u8; KEY_LEN] {
    ((id as u64) ^ (1 << 63)).to_be_bytes()
}

/// Inverse of [`encode_key`]; `None` if `key` is not 8 bytes.
pub fn decode_key(key: &[u8]) -> Option<i64> {
    let b: [u8; KEY_LEN] = key.try_into().ok()?;
    Some((u64::from_be_bytes(b) ^ (1 << 63)) as i64)
}

/// Fills `out` with `groups` groups of 11 random digits joined by `-`.
pub fn fill_digit_groups<R: Rng>(rng: &mut R, groups: usize, out: &mut Vec<u8>) {
    for g in 0..groups {
        if g > 0 {
            out.push(b'-');
        }
        for _ in 0..11 {
            out.push(b'0' + rng.gen_range(0..10u8));
        }
    }
}

/// One row's non-key columns, borrowed from an encoded value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowRef<'a> {
    pub k: i32,
    pub c: &'a [u8],
    pub pad: &'a [u8],
}

impl<'a> RowRef<'a> {
    /// Decodes a value written by [`encode_value`]; `None` if it is malformed.
    pub fn decode(v: &'a [u8]) -> Option<RowRef<'a>> {
        let k = i32::from_le_bytes(v.get(..4)?.try_into().ok()?);
        let c_len = *v.get(4)? as usize;
        let c = v.get(5..5 + c_len)?;
        let p = 5 + c_len;
        let pad_len = *v.get(p)? as usize;
        let pad = v.get(p + 1..p + 1 + pad_len)?;
        (p + 1 + pad_len == v.len()).then_some(RowRef { k, c, pad })
    }
}

/// Encodes (k, c, pad) into `out` (cleared first). `c` and `pad` must be at most 255 bytes.
pub fn encode_value(k: i32, c: &[u8], pad: &[u8], out: &mut Vec<u8>) {
    assert!(
        c.len() <= 255 && pad.len() <= 255,
        "CHAR columns are at most 255 bytes"
    );
    out.clear();
    out.extend_from_slice(&k.to_le_bytes());
    out.push(c.len() as u8);
    out.extend_from_slice(c);
    out.push(pad.len() as u8);
    out.extend_from_slice(pad);
}

/// Writes a fresh sysbench-style value into `out`: k uniform in `[1, table_size]`, random c, pad.
pub fn random_value<R: Rng>(rng: &mut R, table_size: u64, out: &mut Vec<u8>) {
    let k = rng.gen_range(1..=table_size.clamp(1, i32::MAX as u64)) as i32;
    out.clear();
    out.extend_from_slice(&k.to_le_bytes());
    out.push(C_LEN as u8);
    fill_digit_groups(rng, C_GROUPS, out);
    out.push(PAD_LEN as u8);
    fill_digit_groups(rng, PAD_GROUPS, out);
}

/// `UPDATE ... SET k = k + 1` on an encoded value, in place. Returns false if it is malformed.
pub fn increment_k(v: &mut [u8]) -> bool {
    if RowRef::decode(v).is_none() {
        return false;
    }
    let k = i32::from_le_bytes(v[..4].try_into().unwrap()).wrapping_add(1);
    v[..4].copy_from_slice(&k.to_le_bytes());
    true
}

/// `UPDATE ... SET c = <new random c>` on an encoded value: writes the new value into `out`.
/// Returns false if `v` is malformed.
pub fn with_new_c<R: Rng>(rng: &mut R, v: &[u8], out: &mut Vec<u8>) -> bool {
    let Some(row) = RowRef::decode(v) else {
        return false;
    };
    let mut c = Vec::with_capacity(C_LEN);
    fill_digit_groups(rng, C_GROUPS, &mut c);
    encode_value(row.k, &c, row.pad, out);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn keys_sort_like_ids() {
        let ids = [
            i64::MIN,
            -1_000_000,
            -1,
            0,
            1,
            2,
            255,
            256,
            10_000,
            i64::MAX,
        ];
        for w in ids.windows(2) {
            assert!(encode_key(w[0]) < encode_key(w[1]), "{} < {}", w[0], w[1]);
        }
        for id in ids {
            assert_eq!(decode_key(&encode_key(id)), Some(id));
        }
        assert_eq!(decode_key(&[1, 2, 3]), None);
    }

    #[test]
    fn values_look_like_sysbench() {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut v = Vec::new();
        for _ in 0..100 {
            random_value(&mut rng, 10_000, &mut v);
            assert_eq!(v.len(), VALUE_LEN);
            let r = RowRef::decode(&v).unwrap();
            assert!((1..=10_000).contains(&r.k));
            for (field, groups) in [(r.c, C_GROUPS), (r.pad, PAD_GROUPS)] {
                let parts: Vec<&[u8]> = field.split(|&b| b == b'-').collect();
                assert_eq!(parts.len(), groups);
                assert!(parts
                    .iter()
                    .all(|p| p.len() == 11 && p.iter().all(u8::is_ascii_digit)));
            }
        }
    }

    #[test]
    fn updates_keep_the_other_columns() {
        let mut rng = SmallRng::seed_from_u64(1);
        let mut v = Vec::new();
        random_value(&mut rng, 100, &mut v);
        let before = v.clone();
        assert!(increment_k(&mut v));
        let (a, b) = (
            RowRef::decode(&before).unwrap(),
            RowRef::decode(&v).unwrap(),
        );
        assert_eq!((a.k + 1, a.c, a.pad), (b.k, b.c, b.pad));
        let mut out = Vec::new();
        assert!(with_new_c(&mut rng, &v, &mut out));
        let n = RowRef::decode(&out).unwrap();
        assert_eq!((n.k, n.pad, n.c.len()), (b.k, b.pad, C_LEN));
        assert_ne!(n.c, b.c);
        assert!(RowRef::decode(&out[..out.len() - 1]).is_none());
        assert!(!increment_k(&mut [0u8; 3]));
    }
}
