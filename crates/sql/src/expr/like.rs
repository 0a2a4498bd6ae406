//! LIKE matching and text comparison under the default collation.

use std::cmp::Ordering;

use crate::types::collation::{collate_cmp, fold_char};

/// LIKE under the default collation (case-insensitive), `%` and `_`, with an escape char.
///
/// Greedy with backtracking to the last `%`, over the two strings' bytes, one character at a
/// time: no copy of either (collecting them into `Vec<char>` first made a full scan with
/// `c LIKE '%123%'` spend a third of its time allocating). Characters are folded only when
/// they differ.
pub fn like(text: &str, pat: &str, esc: char, ci: bool) -> bool {
    if text.is_ascii() && pat.is_ascii() {
        return like_ascii(text, pat, u8::try_from(esc).ok().filter(u8::is_ascii), ci);
    }
    like_chars(text, pat, esc, ci)
}

/// [`like`] over ASCII text and pattern, a byte per character (ASCII folds to upper case, as
/// `fold_char` does). `esc` is `None` when the escape character is not ASCII (then no pattern
/// byte is one).
fn like_ascii(text: &str, pat: &str, esc: Option<u8>, ci: bool) -> bool {
    let (t, p) = (text.as_bytes(), pat.as_bytes());
    // `%literal%`: a substring search, when no byte of the literal is special and folding
    // cannot make another byte equal to one of it (only letters fold).
    if p.len() >= 2 && p[0] == b'%' && p[p.len() - 1] == b'%' {
        let lit = &pat[1..pat.len() - 1];
        let plain = |b: &u8| {
            *b != b'%' && *b != b'_' && Some(*b) != esc && !(ci && b.is_ascii_alphabetic())
        };
        if lit.bytes().all(|b| plain(&b)) {
            return text.contains(lit);
        }
    }
    let eq = |a: u8, b: u8| a == b || (ci && a.eq_ignore_ascii_case(&b));
    let (mut ti, mut pi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() {
            match p[pi] {
                b'%' => {
                    star = Some((pi, ti));
                    pi += 1;
                    continue;
                }
                b'_' => {
                    ti += 1;
                    pi += 1;
                    continue;
                }
                c => {
                    let (lit, step) = if Some(c) == esc && pi + 1 < p.len() {
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
    while pi < p.len() && p[pi] == b'%' {
        pi += 1;
    }
    pi == p.len()
}

/// [`like`] over any text, a character at a time (decoded where it lies, not collected).
fn like_chars(text: &str, pat: &str, esc: char, ci: bool) -> bool {
    let (t, p) = (text.as_bytes(), pat.as_bytes());
    let eq = |a: char, b: char| a == b || (ci && fold_char(a) == fold_char(b));
    // The character at byte `i` of `s` (`i < s.len()`, on a boundary) and its length.
    let at = |s: &str, i: usize| -> (char, usize) {
        let c = s[i..].chars().next().expect("a character at a boundary");
        (c, c.len_utf8())
    };
    let (mut ti, mut pi) = (0, 0);
    // The last `%`'s position in the pattern, and where in the text its match ends now.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() {
            match p[pi] {
                b'%' => {
                    star = Some((pi, ti));
                    pi += 1;
                    continue;
                }
                b'_' => {
                    ti += at(text, ti).1;
                    pi += 1;
                    continue;
                }
                _ => {
                    let (c, n) = at(pat, pi);
                    let (lit, step) = if c == esc && pi + n < p.len() {
                        let (l, m) = at(pat, pi + n);
                        (l, n + m)
                    } else {
                        (c, n)
                    };
                    let (tc, tn) = at(text, ti);
                    if eq(lit, tc) {
                        ti += tn;
                        pi += step;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, st)) => {
                let next = st + at(text, st).1;
                pi = sp + 1;
                ti = next;
                star = Some((sp, next));
            }
            None => return false,
        }
    }
    while pi < p.len() && p[pi] == b'%' {
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
        // Multi-byte characters: `_` is one character, folding applies to them.
        assert!(like("héllo", "h_llo", '\\', true));
        assert!(like("HÉLLO", "%é%", '\\', true));
        assert!(!like("HÉLLO", "%é%", '\\', false));
        assert!(like("a€b", "a\\€b", '\\', true));
        // A trailing escape is a literal.
        assert!(like("ab\\", "ab\\", '\\', false));
        assert!(!like("ab", "ab\\", '\\', false));
    }

    /// The matcher before it worked on bytes, kept as the reference.
    fn like_reference(text: &str, pat: &str, esc: char, ci: bool) -> bool {
        let t: Vec<char> = text.chars().collect();
        let p: Vec<char> = pat.chars().collect();
        let eq = |a: char, b: char| {
            if ci {
                fold_char(a) == fold_char(b)
            } else {
                a == b
            }
        };
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

    proptest::proptest! {
        #[test]
        fn bytes_and_chars_agree(
            text in "[aAbé€_%\\\\x]{0,12}",
            pat in "[aAbé€_%\\\\x]{0,8}",
            esc in proptest::sample::select(vec!['\\', 'x', 'é']),
            ci: bool,
        ) {
            proptest::prop_assert_eq!(like(&text, &pat, esc, ci), like_reference(&text, &pat, esc, ci));
        }

        #[test]
        fn ascii_paths_agree(
            text in "[aAbB1_%\\\\x-]{0,14}",
            pat in "[aAbB1_%\\\\x-]{0,8}",
            esc in proptest::sample::select(vec!['\\', 'x', 'é', '1']),
            ci: bool,
        ) {
            proptest::prop_assert_eq!(like(&text, &pat, esc, ci), like_reference(&text, &pat, esc, ci));
            let wrapped = format!("%{pat}%");
            proptest::prop_assert_eq!(
                like(&text, &wrapped, esc, ci),
                like_reference(&text, &wrapped, esc, ci)
            );
        }
    }
}
