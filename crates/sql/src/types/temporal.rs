//! Dates and times: `DateTime` (packed into an i64 in chronological order), the Gregorian
//! calendar (day numbers, weeks, microseconds since the epoch) and the compact spellings
//! `YYYYMMDD[hhmmss]`.

use std::fmt::Write as _;

/// A date and time of day, with microseconds. Packs into an i64 whose order is the
/// chronological order (so it can be compared and used in keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DateTime {
    pub year: u16,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
    pub micro: u32,
}

impl DateTime {
    pub fn pack(&self) -> i64 {
        let ymd = (i64::from(self.year) * 13 + i64::from(self.month)) * 32 + i64::from(self.day);
        let hms =
            (i64::from(self.hour) * 60 + i64::from(self.minute)) * 60 + i64::from(self.second);
        (ymd * 86_400 + hms) * 1_000_000 + i64::from(self.micro)
    }

    pub fn unpack(p: i64) -> DateTime {
        let micro = p.rem_euclid(1_000_000) as u32;
        let secs = p.div_euclid(1_000_000);
        let hms = secs.rem_euclid(86_400);
        let ymd = secs.div_euclid(86_400);
        DateTime {
            year: (ymd / (13 * 32)) as u16,
            month: ((ymd / 32) % 13) as u8,
            day: (ymd % 32) as u8,
            hour: (hms / 3600) as u8,
            minute: ((hms / 60) % 60) as u8,
            second: (hms % 60) as u8,
            micro,
        }
    }

    /// Parses `YYYY-MM-DD`, `YYYY-MM-DD HH:MM:SS[.ffffff]` (also with `T`), checking ranges.
    /// Zero dates (`0000-00-00`) are accepted, as MySQL does outside strict NO_ZERO_DATE.
    pub fn parse(s: &str) -> Option<DateTime> {
        let s = s.trim();
        let (date, time) = match s.find([' ', 'T']) {
            Some(i) => (&s[..i], Some(s[i + 1..].trim())),
            None => (s, None),
        };
        let mut d = date.split('-');
        let year: u16 = d.next()?.parse().ok()?;
        let month: u8 = d.next()?.parse().ok()?;
        let day: u8 = d.next()?.parse().ok()?;
        if d.next().is_some() || year > 9999 || month > 12 || day > 31 {
            return None;
        }
        let zero = month == 0 || day == 0;
        if !zero && day > days_in_month(year, month) {
            return None;
        }
        let mut dt = DateTime {
            year,
            month,
            day,
            ..DateTime::default()
        };
        if let Some(t) = time.filter(|t| !t.is_empty()) {
            let (hms, frac) = t.split_once('.').unwrap_or((t, ""));
            let mut p = hms.split(':');
            dt.hour = p.next()?.parse().ok()?;
            dt.minute = p.next()?.parse().ok()?;
            dt.second = p.next().unwrap_or("0").parse().ok()?;
            if p.next().is_some() || dt.hour > 23 || dt.minute > 59 || dt.second > 59 {
                return None;
            }
            if !frac.is_empty() {
                if !frac.bytes().all(|c| c.is_ascii_digit()) {
                    return None;
                }
                let mut f: String = frac.chars().take(6).collect();
                while f.len() < 6 {
                    f.push('0');
                }
                dt.micro = f.parse().ok()?;
            }
        }
        Some(dt)
    }

    /// The same day at midnight (what a DATE keeps of a datetime).
    pub fn date_part(&self) -> DateTime {
        DateTime {
            hour: 0,
            minute: 0,
            second: 0,
            micro: 0,
            ..*self
        }
    }

    pub fn format_date(&self) -> String {
        format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }

    /// `YYYY-MM-DD HH:MM:SS` with `fsp` fractional digits.
    pub fn format(&self, fsp: u8) -> String {
        let mut s = format!(
            "{} {:02}:{:02}:{:02}",
            self.format_date(),
            self.hour,
            self.minute,
            self.second
        );
        if fsp > 0 {
            let f = format!("{:06}", self.micro);
            let _ = write!(s, ".{}", &f[..usize::from(fsp.min(6))]);
        }
        s
    }
}

/// Days in `month` (1–12) of `year`, by the Gregorian rule.
pub fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// ---- calendar ---------------------------------------------------------------------------------

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number from [`days_from_civil`].
pub fn civil_from_days(days: i64) -> (i64, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// MySQL's day number (TO_DAYS): 0001-01-01 is day 366.
pub fn daynr(d: &DateTime) -> i64 {
    days_from_civil(i64::from(d.year), i64::from(d.month), i64::from(d.day)) + 719_528
}

/// Whether the date has a zero month or day (`2024-00-00`), which calendar functions reject.
pub fn is_zero_date(d: &DateTime) -> bool {
    d.month == 0 || d.day == 0
}

pub(crate) fn is_leap(y: i64) -> bool {
    (y.rem_euclid(4) == 0 && y.rem_euclid(100) != 0) || y.rem_euclid(400) == 0
}

/// Day of the week, 0 = Monday.
pub fn weekday(d: &DateTime) -> i64 {
    (daynr(d) + 5).rem_euclid(7)
}

pub fn day_of_year(d: &DateTime) -> i64 {
    daynr(d) - days_from_civil(i64::from(d.year), 1, 1) - 719_528 + 1
}

pub(crate) const MONDAY_FIRST: u32 = 1;
pub(crate) const WEEK_YEAR: u32 = 2;
pub(crate) const FIRST_WEEKDAY: u32 = 4;

/// The `mode` argument of WEEK() as the flags of [`calc_week`].
pub fn week_mode(mode: i64) -> u32 {
    let mut m = (mode & 7) as u32;
    if m & MONDAY_FIRST == 0 {
        m ^= FIRST_WEEKDAY;
    }
    m
}

/// MySQL's week number: (week, the year it belongs to).
pub fn calc_week(d: &DateTime, flags: u32) -> (i64, i64) {
    let monday_first = flags & MONDAY_FIRST != 0;
    let mut week_year = flags & WEEK_YEAR != 0;
    let first_weekday = flags & FIRST_WEEKDAY != 0;
    let nr = daynr(d);
    let mut first = days_from_civil(i64::from(d.year), 1, 1) + 719_528;
    let mut wd = (first + 5 + i64::from(!monday_first)).rem_euclid(7);
    let mut year = i64::from(d.year);
    let days_in_year = |y: i64| if is_leap(y) { 366 } else { 365 };
    if d.month == 1 && i64::from(d.day) <= 7 - wd {
        if !week_year && ((first_weekday && wd != 0) || (!first_weekday && wd >= 4)) {
            return (0, year);
        }
        week_year = true;
        year -= 1;
        let n = days_in_year(year);
        first -= n;
        wd = (wd + 53 * 7 - n).rem_euclid(7);
    }
    let days = if (first_weekday && wd != 0) || (!first_weekday && wd >= 4) {
        nr - (first + (7 - wd))
    } else {
        nr - (first - wd)
    };
    if week_year && days >= 52 * 7 {
        let w = (wd + days_in_year(year)).rem_euclid(7);
        if (!first_weekday && w < 4) || (first_weekday && w == 0) {
            return (1, year + 1);
        }
    }
    (days / 7 + 1, year)
}

/// Microseconds since 1970-01-01 00:00:00.
pub fn to_micros(d: &DateTime) -> i128 {
    let days = days_from_civil(i64::from(d.year), i64::from(d.month), i64::from(d.day));
    let secs = i128::from(days) * 86_400
        + i128::from(d.hour) * 3600
        + i128::from(d.minute) * 60
        + i128::from(d.second);
    secs * 1_000_000 + i128::from(d.micro)
}

/// The datetime of [`to_micros`]; `None` outside 0001-01-01 .. 9999-12-31.
pub fn from_micros(us: i128) -> Option<DateTime> {
    let secs = us.div_euclid(1_000_000);
    let micro = us.rem_euclid(1_000_000) as u32;
    let days = i64::try_from(secs.div_euclid(86_400)).ok()?;
    let rem = secs.rem_euclid(86_400) as i64;
    let (year, month, day) = civil_from_days(days);
    if !(1..=9999).contains(&year) {
        return None;
    }
    Some(DateTime {
        year: year as u16,
        month,
        day,
        hour: (rem / 3600) as u8,
        minute: ((rem / 60) % 60) as u8,
        second: (rem % 60) as u8,
        micro,
    })
}

/// A number read as a date or datetime as MariaDB reads one (its `number_to_datetime`):
/// YYMMDD, YYYYMMDD, YYMMDDHHMMSS or YYYYMMDDHHMMSS by magnitude, two-digit years 00–69 in
/// the 2000s and 70–99 in the 1900s, 0 as the zero date. The gaps between the forms
/// (692000..700100, 99991232..101000000, ...) and negative numbers are no date, as are
/// out-of-range fields (zero months and days are allowed, as in date strings). Numbers of 13
/// or 14 digits are YYYYMMDDHHMMSS with a year below 1000 allowed (`1000101000000` is
/// 0100-01-01). The one reader for CAST, storage and comparison.
pub fn number_to_datetime(n: i128) -> Option<DateTime> {
    const YY_2000: i128 = 20_000_000;
    const YY_1900: i128 = 19_000_000;
    let full = match n {
        0 => return Some(DateTime::default()),
        101..=691_231 => (n + YY_2000) * 1_000_000,
        700_101..=991_231 => (n + YY_1900) * 1_000_000,
        10_000_101..=99_991_231 => n * 1_000_000,
        101_000_000..=691_231_235_959 => n + YY_2000 * 1_000_000,
        700_101_000_000..=991_231_235_959 => n + YY_1900 * 1_000_000,
        991_231_235_960..=99_991_231_235_959 => n,
        _ => return None,
    };
    let (ymd, hms) = (full / 1_000_000, full % 1_000_000);
    // Every field is below 10000 here, so the casts cannot truncate.
    let d = DateTime {
        year: (ymd / 10_000) as u16,
        month: (ymd / 100 % 100) as u8,
        day: (ymd % 100) as u8,
        hour: (hms / 10_000) as u8,
        minute: (hms / 100 % 100) as u8,
        second: (hms % 100) as u8,
        micro: 0,
    };
    let day_ok = d.month == 0 || d.day == 0 || d.day <= days_in_month(d.year, d.month);
    (d.month <= 12 && d.day <= 31 && day_ok && d.hour <= 23 && d.minute <= 59 && d.second <= 59)
        .then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dt(s: &str) -> DateTime {
        DateTime::parse(s).unwrap()
    }

    #[test]
    fn datetimes_pack_in_order_and_round_trip() {
        let a = DateTime::parse("2024-02-29 23:59:59.5").unwrap();
        assert_eq!(a.format(6), "2024-02-29 23:59:59.500000");
        assert_eq!(DateTime::unpack(a.pack()), a);
        let b = DateTime::parse("2024-03-01").unwrap();
        assert!(a.pack() < b.pack());
        assert!(DateTime::parse("2023-02-29").is_none());
        assert!(DateTime::parse("2023-13-01").is_none());
        assert!(DateTime::parse("0000-00-00").is_some());
        assert_eq!(DateTime::unpack(0), DateTime::default());
    }

    #[test]
    fn calendar_numbers_match_mysql() {
        assert_eq!(daynr(&dt("0001-01-01")), 366);
        assert_eq!(daynr(&dt("1970-01-01")), 719_528);
        assert_eq!(weekday(&dt("2024-01-01")), 0);
        assert_eq!(day_of_year(&dt("2024-12-31")), 366);
        assert_eq!(day_of_year(&dt("2023-12-31")), 365);
        let week = |s: &str, m| calc_week(&dt(s), week_mode(m)).0;
        assert_eq!(week("2024-01-01", 0), 0);
        assert_eq!(week("2023-01-01", 0), 1);
        assert_eq!(week("2024-12-31", 0), 52);
        assert_eq!(calc_week(&dt("2024-01-22"), WEEK_YEAR | MONDAY_FIRST).0, 4);
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
    }
}
