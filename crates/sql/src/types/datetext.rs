//! Text read as a date or datetime, the way MariaDB reads it — the one reader behind CAST,
//! storing into a temporal column and comparing text with a date.
//!
//! Two shapes, told apart by the first run of digits (a `T` inside it counts as part of it):
//! - **Compact**: the run reaches the end of the text or a `.`. Fields have fixed widths: a
//!   year of 4 digits when the run is 4, 8 or at least 14 long, else 2; then 2 each for month,
//!   day, hour, minute and second; a `T` may follow the day; a fraction only after `.` that
//!   follows the seconds. `24031` is 2024-03-01, `2403101` 2024-03-10 01:00:00.
//! - **Delimited**: fields of any number of digits (`2024-0003-10` is March), one punctuation
//!   character between the date's fields (a second one, or a space, makes the text no date),
//!   one or more spaces or a single `T` between date and time, one punctuation character
//!   between the time's fields, a fraction after `.` following the seconds.
//!
//! A two-digit year is 2000–2069 or 1970–1999 unless the whole date is zero. Text left after
//! what was read (other than spaces) keeps the value and is reported (MariaDB's 1292
//! "Truncated incorrect ... value"), as are fraction digits past the sixth; a missing field
//! (fewer than year, month and day), a field out of range or a malformed date part makes the
//! text no date. Behaviour taken from MariaDB 10.11 by experiment (tests below and
//! `tests/diff/regressions/text-as-dates.sql`).

use crate::types::temporal::{days_in_month, DateTime};

/// What [`read`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextTemporal {
    pub dt: DateTime,
    /// At least an hour was read.
    pub has_time: bool,
    /// Text other than spaces followed what was read: the value stands, with a warning.
    pub trailing: bool,
    /// Fraction digits past the sixth were dropped (CAST warns).
    pub dropped_fraction: bool,
    /// Of the dropped fraction digits, some were not zero (storing gives a note).
    pub lost_fraction: bool,
}

/// Reads `s` as MariaDB reads text as a DATETIME; `None` when it is no date at all.
pub fn read(s: &[u8]) -> Option<TextTemporal> {
    let mut i = s.iter().take_while(|c| c.is_ascii_whitespace()).count();
    if s.get(i) == Some(&b'+') {
        i += 1;
    }
    let run = s[i..]
        .iter()
        .take_while(|c| c.is_ascii_digit() || **c == b'T')
        .count();
    if run == 0 || !s[i].is_ascii_digit() {
        return None;
    }
    // A run of at most 4 digits before a `.` is a delimited year (`2024.03.10`).
    let compact = match s.get(i + run) {
        None => true,
        Some(b'.') => run > 4,
        Some(_) => false,
    };
    let mut r = Reader { s, i };
    let mut f = [0u32; 6];
    let mut year_digits = 0;
    let mut fields = 0;
    let mut micro = 0u32;
    let (mut trailing, mut dropped_fraction, mut lost_fraction) = (false, false, false);
    if compact {
        let year_width = if matches!(run, 4 | 8) || run >= 14 {
            4
        } else {
            2
        };
        while fields < 6 && r.digit() {
            let width = if fields == 0 { year_width } else { 2 };
            let (v, n) = r.number(width);
            if fields == 0 {
                year_digits = n;
            }
            f[fields] = v;
            fields += 1;
            if fields == 3 && r.peek() == Some(b'T') {
                r.i += 1;
            }
        }
        match r.peek() {
            None => {}
            Some(b'.') if fields == 6 => {
                r.i += 1;
                (micro, dropped_fraction, lost_fraction) = r.fraction();
            }
            // `.` before the seconds, or a `T` elsewhere in the run: no date.
            Some(b'.' | b'T') if fields < 6 => return None,
            Some(_) => trailing = true,
        }
    } else {
        // The date: three fields, one punctuation character between them.
        while fields < 3 {
            if !r.digit() {
                return None;
            }
            let (v, n) = r.number(usize::MAX);
            if fields == 0 {
                year_digits = n;
            }
            f[fields] = v;
            fields += 1;
            if fields < 3 {
                match r.peek() {
                    Some(c) if c.is_ascii_punctuation() && r.digit_at(1) => r.i += 1,
                    _ => return None,
                }
            }
        }
        // Between date and time: whitespace, or one `T` or punctuation character.
        let at = r.i;
        // A separator with no time after it is left over (a warning unless it ends the text).
        match r.peek() {
            Some(c) if c.is_ascii_whitespace() => {
                r.i += s[r.i..]
                    .iter()
                    .take_while(|c| c.is_ascii_whitespace())
                    .count();
            }
            Some(c) if c == b'T' || c.is_ascii_punctuation() => r.i += 1,
            _ => {}
        }
        if r.i > at && r.digit() {
            while fields < 6 {
                let (v, _) = r.number(usize::MAX);
                f[fields] = v;
                fields += 1;
                if fields < 6 {
                    match r.peek() {
                        Some(c) if c.is_ascii_punctuation() && r.digit_at(1) => r.i += 1,
                        _ => break,
                    }
                }
            }
            if fields == 6 && r.peek() == Some(b'.') {
                r.i += 1;
                (micro, dropped_fraction, lost_fraction) = r.fraction();
            }
        }
    }
    trailing |= s[r.i..].iter().any(|c| !c.is_ascii_whitespace());
    if fields < 3 || f.iter().any(|&v| v > 999_999) {
        return None;
    }
    let mut year = f[0];
    if year_digits == 2 && (f[0] | f[1] | f[2]) != 0 {
        year += if year < 70 { 2000 } else { 1900 };
    }
    let dt = DateTime {
        year: u16::try_from(year).ok().filter(|&y| y <= 9999)?,
        month: u8::try_from(f[1]).ok().filter(|&m| m <= 12)?,
        day: u8::try_from(f[2]).ok().filter(|&d| d <= 31)?,
        hour: u8::try_from(f[3]).ok().filter(|&h| h <= 23)?,
        minute: u8::try_from(f[4]).ok().filter(|&m| m <= 59)?,
        second: u8::try_from(f[5]).ok().filter(|&s| s <= 59)?,
        micro,
    };
    if dt.month != 0 && dt.day != 0 && dt.day > days_in_month(dt.year, dt.month) {
        return None;
    }
    Some(TextTemporal {
        dt,
        has_time: fields > 3,
        trailing,
        dropped_fraction,
        lost_fraction,
    })
}

struct Reader<'a> {
    s: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn digit(&self) -> bool {
        self.digit_at(0)
    }

    fn digit_at(&self, ahead: usize) -> bool {
        self.s.get(self.i + ahead).is_some_and(u8::is_ascii_digit)
    }

    /// Up to `width` digits as a number (saturating far above any valid field), and how
    /// many were read.
    fn number(&mut self, width: usize) -> (u32, usize) {
        let n = self.s[self.i..]
            .iter()
            .take(width)
            .take_while(|c| c.is_ascii_digit())
            .count();
        let v = self.s[self.i..self.i + n].iter().fold(0u32, |acc, &c| {
            acc.saturating_mul(10).saturating_add(u32::from(c - b'0'))
        });
        self.i += n;
        (v, n)
    }

    /// Fraction digits: microseconds from the first six, whether more were dropped, and
    /// whether any dropped one was not zero.
    fn fraction(&mut self) -> (u32, bool, bool) {
        let n = self.s[self.i..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let digits = &self.s[self.i..self.i + n];
        let mut micro = 0u32;
        for k in 0..6 {
            micro = micro * 10 + digits.get(k).map_or(0, |c| u32::from(c - b'0'));
        }
        self.i += n;
        let dropped = &digits[n.min(6)..];
        (
            micro,
            !dropped.is_empty(),
            dropped.iter().any(|&c| c != b'0'),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (text, MariaDB 10.11's `CAST(text AS DATETIME(6))`, whether it warned)
    const MARIADB: &[(&str, Option<&str>, bool)] = &[
        ("2024-03-10", Some("2024-03-10 00:00:00.000000"), false),
        ("  2024-03-10  ", Some("2024-03-10 00:00:00.000000"), false),
        ("+2024-03-10", Some("2024-03-10 00:00:00.000000"), false),
        ("2024-3-1", Some("2024-03-01 00:00:00.000000"), false),
        ("24-3-1 1:2:3.4", Some("2024-03-01 01:02:03.400000"), false),
        ("024-3-1", Some("0024-03-01 00:00:00.000000"), false),
        ("5-1-1", Some("0005-01-01 00:00:00.000000"), false),
        ("05-1-1", Some("2005-01-01 00:00:00.000000"), false),
        ("00-01-01", Some("2000-01-01 00:00:00.000000"), false),
        ("00-00-00", Some("0000-00-00 00:00:00.000000"), false),
        ("99-12-31", Some("1999-12-31 00:00:00.000000"), false),
        ("2024-0003-10", Some("2024-03-10 00:00:00.000000"), false),
        ("10:11:12", Some("2010-11-12 00:00:00.000000"), false),
        ("2024.03.10", Some("2024-03-10 00:00:00.000000"), false),
        ("2024@03@10", Some("2024-03-10 00:00:00.000000"), false),
        (
            "2024/03/10T10:11:12",
            Some("2024-03-10 10:11:12.000000"),
            false,
        ),
        ("2024-03-10T10", Some("2024-03-10 10:00:00.000000"), false),
        ("2024-03-10T", Some("2024-03-10 00:00:00.000000"), false),
        ("2024-03-10 10", Some("2024-03-10 10:00:00.000000"), false),
        ("2024-03-10 5:6", Some("2024-03-10 05:06:00.000000"), false),
        (
            "2024-03-10  10:11",
            Some("2024-03-10 10:11:00.000000"),
            false,
        ),
        ("2024/3/1 1.2.3", Some("2024-03-01 01:02:03.000000"), false),
        (
            "2024-03-10 10:11.5",
            Some("2024-03-10 10:11:05.000000"),
            false,
        ),
        (
            "2024-03-10 10:11:12.5",
            Some("2024-03-10 10:11:12.500000"),
            false,
        ),
        (
            "20240310101112.5",
            Some("2024-03-10 10:11:12.500000"),
            false,
        ),
        ("20240310T101112", Some("2024-03-10 10:11:12.000000"), false),
        ("240310T101112", Some("2024-03-10 10:11:12.000000"), false),
        ("2024.3.10", Some("2024-03-10 00:00:00.000000"), false),
        ("24.03.10", Some("2024-03-10 00:00:00.000000"), false),
        ("1.2.3", Some("0001-02-03 00:00:00.000000"), false),
        ("2024.03.10.5", Some("2024-03-10 05:00:00.000000"), false),
        (
            "2024-03-10-10:11",
            Some("2024-03-10 10:11:00.000000"),
            false,
        ),
        ("2024-03-10:10", Some("2024-03-10 10:00:00.000000"), false),
        (
            "2024-03-10/10/11/12",
            Some("2024-03-10 10:11:12.000000"),
            false,
        ),
        ("2024-03-10 .10", Some("2024-03-10 00:00:00.000000"), true),
        ("2024-03-10T 10", Some("2024-03-10 00:00:00.000000"), true),
        (
            "2024-03-10 10:11:12.5.6",
            Some("2024-03-10 10:11:12.500000"),
            true,
        ),
        ("240310101112.5", Some("2024-03-10 10:11:12.500000"), false),
        ("202403.10", None, true),
        ("12345.3.10", None, true),
        ("2403101011.5", None, true),
        ("310000", Some("2031-00-00 00:00:00.000000"), false),
        ("24031", Some("2024-03-01 00:00:00.000000"), false),
        ("2403101", Some("2024-03-10 01:00:00.000000"), false),
        ("24031012", Some("2403-10-12 00:00:00.000000"), false),
        ("240310123", Some("2024-03-10 12:03:00.000000"), false),
        ("24031012345", Some("2024-03-10 12:34:05.000000"), false),
        ("2403101234567", Some("2024-03-10 12:34:56.000000"), true),
        ("2024031012345678", Some("2024-03-10 12:34:56.000000"), true),
        ("000000000", Some("0000-00-00 00:00:00.000000"), false),
        ("591224099", Some("2059-12-24 09:09:00.000000"), false),
        ("2024-03-10 junk", Some("2024-03-10 00:00:00.000000"), true),
        (
            "2024-03-10 junk 10:11",
            Some("2024-03-10 00:00:00.000000"),
            true,
        ),
        (
            "2024-03-10--10:11",
            Some("2024-03-10 00:00:00.000000"),
            true,
        ),
        ("2024-03-10 T10", Some("2024-03-10 00:00:00.000000"), true),
        ("2024-03-10Tjunk", Some("2024-03-10 00:00:00.000000"), true),
        ("2024-03-10 -10", Some("2024-03-10 00:00:00.000000"), true),
        (
            "2024-03-10\t10:11",
            Some("2024-03-10 10:11:00.000000"),
            false,
        ),
        (
            "2024-03-10 10::11",
            Some("2024-03-10 10:00:00.000000"),
            true,
        ),
        (
            "2024-03-10 10 11 12",
            Some("2024-03-10 10:00:00.000000"),
            true,
        ),
        (
            "2024-03-10 10:11:12:13",
            Some("2024-03-10 10:11:12.000000"),
            true,
        ),
        (
            "2024-03-10 10:11:12.",
            Some("2024-03-10 10:11:12.000000"),
            false,
        ),
        (
            "2024-03-10 10:11:12,5",
            Some("2024-03-10 10:11:12.000000"),
            true,
        ),
        (
            "2024-03-10 10:11:12 AM",
            Some("2024-03-10 10:11:12.000000"),
            true,
        ),
        (
            "2024-03-10T10:11:12Z",
            Some("2024-03-10 10:11:12.000000"),
            true,
        ),
        (
            "2024-03-10 10:11:12.1234567",
            Some("2024-03-10 10:11:12.123456"),
            true,
        ),
        (
            "2024-03-10 10:11:12.0000009",
            Some("2024-03-10 10:11:12.000000"),
            true,
        ),
        (
            "2024-03-10 10:11:12.9999999",
            Some("2024-03-10 10:11:12.999999"),
            true,
        ),
        ("2024--03--10", None, true),
        ("2024-03--10", None, true),
        ("2024- 03-10", None, true),
        ("2024 -03-10", None, true),
        ("2024 03 10", None, true),
        ("2024-3", None, true),
        ("2024", None, true),
        ("1234", None, true),
        ("12345", None, true),
        ("2024031", None, true),
        ("20240310.5", None, true),
        ("240310.123", None, true),
        ("20240310 101112", None, true),
        ("20240310T1011", None, true),
        ("24031012345678", None, true),
        ("240310123456789", None, true),
        ("2024-03-1010:11", None, true),
        ("2024-03-10 24:00:00", None, true),
        ("2024-03-10 23:60:00", None, true),
        ("2024-03-10 100:00", None, true),
        ("2024-13-10", None, true),
        ("2024-02-30", None, true),
        ("99999-1-1", None, true),
        ("x2024-03-10", None, true),
        ("++2024-03-10", None, true),
        (".2024-03-10", None, true),
        ("-1-1-1", None, true),
        ("", None, true),
    ];

    #[test]
    fn reads_text_as_mariadb_does() {
        for &(text, want, warned) in MARIADB {
            let got = read(text.as_bytes());
            assert_eq!(got.map(|t| t.dt.format(6)).as_deref(), want, "{text:?}");
            if let Some(t) = got {
                assert_eq!(
                    t.trailing || t.dropped_fraction,
                    warned,
                    "{text:?}: warning"
                );
            }
        }
    }

    #[test]
    fn time_and_lost_fraction_are_reported() {
        let t = read(b"2024-03-10").unwrap();
        assert!(!t.has_time && !t.lost_fraction);
        assert!(read(b"2024-03-10 10").unwrap().has_time);
        assert!(read(b"2403101").unwrap().has_time);
        let t = read(b"2024-03-10 10:11:12.0000009").unwrap();
        assert!(t.dropped_fraction && t.lost_fraction && !t.trailing);
        let t = read(b"2024-03-10 10:11:12.1230000").unwrap();
        assert!(t.dropped_fraction && !t.lost_fraction);
        assert!(read(b"20240310101112.5x").unwrap().trailing);
    }

    #[test]
    fn long_digit_runs_do_not_overflow() {
        let long = "9".repeat(10_000);
        assert_eq!(read(long.as_bytes()), None);
        assert_eq!(read(format!("2024-{long}-1").as_bytes()), None);
        let frac = format!("2024-03-10 10:11:12.{long}");
        assert_eq!(
            read(frac.as_bytes()).map(|t| t.dt.format(6)).as_deref(),
            Some("2024-03-10 10:11:12.999999")
        );
    }

    proptest::proptest! {
        /// Any bytes, and strings of the characters dates are made of: never a panic, and
        /// every date read is a valid one.
        #[test]
        fn whatever_the_text_a_date_read_is_valid(
            raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            picks in proptest::collection::vec(0usize..16, 0..40),
        ) {
            const ALPHABET: &[u8] = b"0123456789-:. T+";
            let datey: Vec<u8> = picks.iter().map(|&i| ALPHABET[i]).collect();
            for text in [&raw, &datey] {
                if let Some(t) = read(text) {
                    let d = t.dt;
                    proptest::prop_assert!(d.year <= 9999 && d.month <= 12 && d.day <= 31);
                    proptest::prop_assert!(d.hour <= 23 && d.minute <= 59 && d.second <= 59);
                    proptest::prop_assert!(d.micro < 1_000_000);
                    proptest::prop_assert!(
                        d.month == 0 || d.day == 0 || d.day <= days_in_month(d.year, d.month)
                    );
                    proptest::prop_assert!(!t.lost_fraction || t.dropped_fraction);
                }
            }
        }
    }
}
