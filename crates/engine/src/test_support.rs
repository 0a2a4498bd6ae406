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
