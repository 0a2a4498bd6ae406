//! Data generators shared by the crate's tests.

/// sysbench-like `c` values: ten 11-digit groups joined by '-', a deterministic function of
/// `id` (xorshift digits), so a test can recompute what it stored.
pub(crate) fn sbtest_c(id: u64) -> Vec<u8> {
    let mut x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut s = Vec::with_capacity(10 * 12);
    for g in 0..10 {
        if g > 0 {
            s.push(b'-');
        }
        for _ in 0..11 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.push(b'0' + (x % 10) as u8);
        }
    }
    s
}

/// `n` words drawn from `words` by a xorshift seeded with `seed`, joined by single spaces: a
/// deterministic function of its arguments, so a test can recompute what it stored.
pub(crate) fn word_salad(seed: u64, words: &[&str], n: usize) -> String {
    let mut x = seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
    let mut s = String::new();
    for w in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if w > 0 {
            s.push(' ');
        }
        s.push_str(words[(x % words.len() as u64) as usize]);
    }
    s
}
