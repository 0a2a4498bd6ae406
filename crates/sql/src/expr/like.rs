//! LIKE matching and text comparison under the default collation.

use std::cmp::Ordering;

use crate::types::collation::{collate_cmp, fold_char};

/// LIKE under the default collation (case-insensitive), `%` and `_`, with an escape char.
pub fn like(text: &str, pat: &str, esc: char, ci: bool) -> bool {
    let t: Vec<char> = text.chars().collect();
    let p: Vec<char> = pat.chars().collect();
    let eq = |a: char, b: char| {
        if ci {
            fold_char(a) == fold_char(b)
        } else {
            a == b
        }
    };
    // Iterative matcher with backtracking to the last '%'.
    let (mut ti, mut pi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() {
            match p[pi] {
                '%' => {
                    star = Some((pi, ti));
                    pi += 1;
                    continue;
                }
                '_' => {
                    ti += 1;
                    pi += 1;
                    continue;
                }
                c => {
                    let (lit, step) = if c == esc && pi + 1 < p.len() {
                        (p[pi + 1], 2)
                    } else {
                        (c, 1)
                    };
                    if eq(lit, t[ti]) {
                        ti += 1;
                        pi += step;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, st)) => {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    while pi < p.len() && p[pi] == '%' {
        pi += 1;
    }
    pi == p.len()
}

/// Orders by a collation-aware comparison, for callers outside `Value` (kept here so the
/// string rules live in one place).
pub fn text_cmp(a: &str, b: &str) -> Ordering {
    collate_cmp(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_matches_with_wildcards_case_and_escape() {
        assert!(like("Hello", "h%o", '\\', true));
        assert!(!like("Hello", "h%o", '\\', false));
        assert!(like("abc", "a_c", '\\', true));
        assert!(!like("abc", "a_", '\\', true));
        assert!(like("a%c", "a\\%c", '\\', true));
        assert!(!like("abc", "a\\%c", '\\', true));
        assert!(like("", "%", '\\', true));
        assert!(like("aXbXc", "%b%c", '\\', true));
        assert!(!like("ab", "%b%c", '\\', true));
    }
}
