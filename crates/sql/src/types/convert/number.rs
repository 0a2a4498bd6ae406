//! Text read as a number: the one scanner under every conversion of text to a number (issue 20
//! T2). Expression context (`Value::to_f64/to_i64/to_decimal`, so comparison and arithmetic,
//! and CAST) and column storage (`convert::store`) read the same facts from [`Scan`] and decide
//! themselves what a problem becomes: a 1292 warning or note through `types::diag`, or a store
//! `Issue`. The scanner raises nothing and allocates nothing.
//!
//! The rules are MariaDB's (`my_strntod`, `str2my_decimal`, `my_strtoll10`) for utf8mb4 and
//! binary strings: leading ASCII spaces (space, tab, newline, CR, VT, FF) are skipped, then one
//! sign, digits with an optional point, an optional exponent (dropped when no digit follows
//! its `e` and sign); what follows is nothing, only those spaces (a note), or anything else.

/// MariaDB's space for numbers in text: what may precede a number, and what may follow it with
/// a note rather than a warning.
pub(crate) fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// What follows a number (or a date) in text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tail {
    None,
    Spaces,
    Garbage,
}

pub(crate) fn tail_of(rest: &[u8]) -> Tail {
    if rest.is_empty() {
        Tail::None
    } else if rest.iter().all(|&c| is_space(c)) {
        Tail::Spaces
    } else {
        Tail::Garbage
    }
}

/// Exponents are clamped here: past it a double is 0 or infinite and a DECIMAL (38 digits) is
/// zero or out of range, so the exact value no longer matters, and `point` cannot overflow.
const EXP_LIMIT: i64 = 1_000_000;

/// The numeric prefix of a byte string, as facts: slices of the text, no copies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scan<'a> {
    text: &'a [u8],
    /// Where the number's text (its sign) starts, after leading spaces.
    start: usize,
    /// Where the number's text ends (an `e` without exponent digits is not part of it).
    end: usize,
    /// Where the integer digits end (readers of integers stop there).
    int_end: usize,
    /// A minus sign was written (also before zero: callers decide about `-0`).
    pub(crate) neg: bool,
    /// The digits before the point, as written (leading zeros included).
    pub(crate) int: &'a [u8],
    /// The digits after the point, as written.
    pub(crate) frac: &'a [u8],
    /// The exponent, clamped to ±[`EXP_LIMIT`].
    pub(crate) exp: i64,
}

/// An integer prefix (sign and integer digits only), as `my_strtoll10` reads one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IntPrefix {
    pub(crate) neg: bool,
    /// The magnitude; `None` past `u64::MAX`.
    pub(crate) magnitude: Option<u64>,
    /// Whether there was any digit.
    pub(crate) found: bool,
    /// What follows the integer digits (for no digits: the whole text).
    pub(crate) tail: Tail,
}

impl IntPrefix {
    /// The 64 bits `my_strtoll10` returns, and whether it overflowed: a positive number past
    /// `i64::MAX` is its `u64` (negative as `i64`); past `u64::MAX` it is `u64::MAX`, below
    /// `i64::MIN` it is `i64::MIN`.
    pub(crate) fn bits(&self) -> (i64, bool) {
        match (self.neg, self.magnitude) {
            (false, Some(m)) => (m as i64, false),
            (false, None) => (-1, true),
            (true, Some(m)) if m <= 1 << 63 => ((m as i64).wrapping_neg(), false),
            (true, _) => (i64::MIN, true),
        }
    }
}

impl<'a> Scan<'a> {
    /// Reads the number at the start of `text` (after spaces).
    pub(crate) fn read(text: &'a [u8]) -> Scan<'a> {
        let mut i = 0;
        while i < text.len() && is_space(text[i]) {
            i += 1;
        }
        let start = i;
        let mut neg = false;
        if i < text.len() && (text[i] == b'-' || text[i] == b'+') {
            neg = text[i] == b'-';
            i += 1;
        }
        let int_start = i;
        while i < text.len() && text[i].is_ascii_digit() {
            i += 1;
        }
        let int_end = i;
        let int = &text[int_start..i];
        let mut frac: &[u8] = &[];
        if i < text.len() && text[i] == b'.' {
            let f0 = i + 1;
            let mut j = f0;
            while j < text.len() && text[j].is_ascii_digit() {
                j += 1;
            }
            if !int.is_empty() || j > f0 {
                frac = &text[f0..j];
                i = j;
            }
        }
        let mut exp = 0;
        if (!int.is_empty() || !frac.is_empty())
            && i < text.len()
            && (text[i] == b'e' || text[i] == b'E')
        {
            let mut j = i + 1;
            let mut eneg = false;
            if j < text.len() && (text[j] == b'-' || text[j] == b'+') {
                eneg = text[j] == b'-';
                j += 1;
            }
            let e0 = j;
            while j < text.len() && text[j].is_ascii_digit() {
                exp = (exp * 10 + i64::from(text[j] - b'0')).min(EXP_LIMIT);
                j += 1;
            }
            if j > e0 {
                if eneg {
                    exp = -exp;
                }
                i = j;
            } else {
                exp = 0;
            }
        }
        Scan {
            text,
            start,
            end: i,
            int_end,
            neg,
            int,
            frac,
            exp,
        }
    }

    /// Whether there was a number (any digit before or after the point).
    pub(crate) fn found(&self) -> bool {
        !self.int.is_empty() || !self.frac.is_empty()
    }

    /// How many bytes the number took, leading spaces included (0 when there was none).
    pub(crate) fn consumed(&self) -> usize {
        if self.found() {
            self.end
        } else {
            0
        }
    }

    /// What follows the number (for no number: the whole text).
    pub(crate) fn tail(&self) -> Tail {
        tail_of(&self.text[self.consumed()..])
    }

    /// Leading zeros of `int ‖ frac`.
    fn zeros(&self) -> usize {
        let z = self.int.iter().take_while(|&&c| c == b'0').count();
        if z < self.int.len() {
            z
        } else {
            z + self.frac.iter().take_while(|&&c| c == b'0').count()
        }
    }

    /// The `k`-th significant digit (0 past the last one).
    fn digit(&self, zeros: usize, k: usize) -> u8 {
        let i = zeros + k;
        let c = if i < self.int.len() {
            self.int[i]
        } else {
            self.frac.get(i - self.int.len()).copied().unwrap_or(b'0')
        };
        c - b'0'
    }

    /// Significant digits (no leading zeros), how many, and how many stand before the point
    /// (negative or past the count: `0.05` is "5" at -1, `1e5` is "1" at 6).
    fn significant(&self) -> (usize, usize, i64) {
        let zeros = self.zeros();
        let n = self.int.len() + self.frac.len() - zeros;
        if n == 0 {
            // Zero, whatever its exponent (`0e99999`).
            return (zeros, 0, 0);
        }
        (zeros, n, self.int.len() as i64 - zeros as i64 + self.exp)
    }

    /// How many significant digits stand before the point (0.05: -1; 1e5: 6).
    pub(crate) fn point(&self) -> i64 {
        self.significant().2
    }

    /// Whether the value is zero (`-0`, `0.000`, `0e5`).
    pub(crate) fn is_zero(&self) -> bool {
        self.significant().1 == 0
    }

    /// |value| × 10^scale rounded half away from zero (`None` past 38 digits), and whether a
    /// non-zero digit was rounded away.
    pub(crate) fn scaled(&self, scale: u8) -> (Option<i128>, bool) {
        let (zeros, n, point) = self.significant();
        let keep = point + i64::from(scale);
        if keep > 38 {
            return (None, false);
        }
        if keep < 0 {
            return (Some(0), n > 0);
        }
        let keep = keep as usize;
        let mut m: i128 = 0;
        for k in 0..keep {
            m = m * 10 + i128::from(self.digit(zeros, k));
        }
        if keep < n && self.digit(zeros, keep) >= 5 {
            m += 1;
        }
        let lost = (keep..n).any(|k| self.digit(zeros, k) != 0);
        (Some(m), lost)
    }

    /// The integer part of |value|, truncated (`None` past 38 digits).
    pub(crate) fn int_part(&self) -> Option<i128> {
        let (zeros, _, point) = self.significant();
        if point > 38 {
            return None;
        }
        Some((0..point.max(0) as usize).fold(0, |m, k| m * 10 + i128::from(self.digit(zeros, k))))
    }

    /// The digits after the point of |value|, up to the last significant one.
    pub(crate) fn frac_digits(&self) -> impl Iterator<Item = u8> + '_ {
        let (zeros, n, point) = self.significant();
        // Positions after the point: digit index k = point + j for j = 0, 1, …
        let first = (-point).max(0) as usize;
        let from = point.max(0) as usize;
        let count = if (n as i64) > point {
            (n as i64 - point) as usize
        } else {
            0
        };
        (0..count).map(move |j| {
            if j < first {
                0
            } else {
                self.digit(zeros, from + j - first)
            }
        })
    }

    /// The value as the nearest double (infinite past the largest; `-0.0` for `-0`).
    pub(crate) fn double(&self) -> f64 {
        if !self.found() {
            return 0.0;
        }
        // The number's own text is a valid Rust float literal (sign, digits, optional point,
        // optional exponent); exponents past EXP_LIMIT parse to the same 0 or infinity.
        std::str::from_utf8(&self.text[self.start..self.end])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0.0)
    }

    /// The integer prefix: sign and integer digits, stopping at a point or exponent, as
    /// `my_strtoll10` reads it for CAST AS SIGNED/UNSIGNED and integer arguments.
    pub(crate) fn int_prefix(&self) -> IntPrefix {
        let found = !self.int.is_empty();
        let magnitude = self.int.iter().try_fold(0u64, |m, &c| {
            m.checked_mul(10)?.checked_add(u64::from(c - b'0'))
        });
        IntPrefix {
            neg: self.neg,
            magnitude,
            found,
            tail: tail_of(&self.text[if found { self.int_end } else { 0 }..]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(t: &str) -> (bool, String, String, i64, usize, Tail) {
        let s = Scan::read(t.as_bytes());
        (
            s.neg,
            String::from_utf8(s.int.to_vec()).unwrap(),
            String::from_utf8(s.frac.to_vec()).unwrap(),
            s.exp,
            s.consumed(),
            s.tail(),
        )
    }

    #[test]
    fn reads_sign_digits_point_exponent_and_what_follows() {
        let f = |n: bool, i: &str, fr: &str, e, c, t| (n, i.to_string(), fr.to_string(), e, c, t);
        assert_eq!(
            facts(" -12.50e3x"),
            f(true, "12", "50", 3, 9, Tail::Garbage)
        );
        assert_eq!(facts("\t.5 "), f(false, "", "5", 0, 3, Tail::Spaces));
        assert_eq!(facts("5."), f(false, "5", "", 0, 2, Tail::None));
        assert_eq!(facts("1e+"), f(false, "1", "", 0, 1, Tail::Garbage));
        assert_eq!(facts("1e-7\n"), f(false, "1", "", -7, 4, Tail::Spaces));
        assert_eq!(facts("."), f(false, "", "", 0, 0, Tail::Garbage));
        assert_eq!(facts(" "), f(false, "", "", 0, 0, Tail::Spaces));
        assert_eq!(facts(""), f(false, "", "", 0, 0, Tail::None));
        assert_eq!(facts("-e5"), f(true, "", "", 0, 0, Tail::Garbage));
        assert_eq!(facts("\u{a0}1"), f(false, "", "", 0, 0, Tail::Garbage));
        assert_eq!(facts("1e99999999999999999999").3, EXP_LIMIT);
        assert_eq!(facts("1e-99999999999999999999").3, -EXP_LIMIT);
    }

    #[test]
    fn values_from_the_facts() {
        fn s(t: &str) -> Scan<'_> {
            Scan::read(t.as_bytes())
        }
        assert_eq!(s("-12.5e1").double(), -125.0);
        assert_eq!(s("1e400").double(), f64::INFINITY);
        assert_eq!(s("-.5").double(), -0.5);
        assert_eq!(s("5.e1").double(), 50.0);
        assert!(s("-0").double().is_sign_negative() && s("-0").is_zero());
        assert_eq!(s("0.0500").scaled(1), (Some(1), true));
        assert_eq!(s("0.0500").scaled(2), (Some(5), false));
        assert_eq!(s("1.5e2").scaled(0), (Some(150), false));
        assert_eq!(s("2.5").scaled(0), (Some(3), true));
        assert_eq!(s("1e39").scaled(0), (None, false));
        assert_eq!(s("0.004").scaled(2), (Some(0), true));
        assert_eq!(s("-0e99999").scaled(2), (Some(0), false));
        assert_eq!(s("123.0456").int_part(), Some(123));
        assert_eq!(
            s("123.0456").frac_digits().collect::<Vec<_>>(),
            [0, 4, 5, 6]
        );
        assert_eq!(s("0.05").frac_digits().collect::<Vec<_>>(), [0, 5]);
        assert_eq!(s("1.5e-3").frac_digits().collect::<Vec<_>>(), [0, 0, 1, 5]);
        assert_eq!(s("1.5e3").frac_digits().count(), 0);
        assert_eq!(s("1.5e3").int_part(), Some(1500));
    }

    #[test]
    fn integer_prefix_stops_at_the_point() {
        let p = |t: &str| Scan::read(t.as_bytes()).int_prefix();
        let ip = |neg, magnitude, found, tail| IntPrefix {
            neg,
            magnitude,
            found,
            tail,
        };
        assert_eq!(p(" -12.5"), ip(true, Some(12), true, Tail::Garbage));
        assert_eq!(p("1e3"), ip(false, Some(1), true, Tail::Garbage));
        assert_eq!(p("7 "), ip(false, Some(7), true, Tail::Spaces));
        assert_eq!(p(".5"), ip(false, Some(0), false, Tail::Garbage));
        assert_eq!(
            p("18446744073709551615"),
            ip(false, Some(u64::MAX), true, Tail::None)
        );
        assert_eq!(p("18446744073709551616").magnitude, None);
        assert_eq!(p("18446744073709551615").bits(), (-1, false));
        assert_eq!(p("18446744073709551616").bits(), (-1, true));
        assert_eq!(p("-9223372036854775808").bits(), (i64::MIN, false));
        assert_eq!(p("-9223372036854775809").bits(), (i64::MIN, true));
        assert_eq!(p("-0").bits(), (0, false));
    }
}
