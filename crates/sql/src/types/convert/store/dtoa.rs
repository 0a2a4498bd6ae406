//! DOUBLEs as text in a string column of limited width, as MariaDB's `my_gcvt` prints them.

/// The decimal digits of `x` (no leading zeros, no trailing zeros) and the position of the
/// point (`x` = 0.DIGITS × 10^decpt), from Rust's formatting of it: `e` with the shortest
/// digits (`prec` None), with `prec + 1` significant digits, or fixed with `prec` decimals.
fn dtoa(x: f64, mode: Dtoa) -> (Vec<u8>, i64) {
    let x = x.abs();
    let (digits, decpt) = match mode {
        Dtoa::Shortest | Dtoa::Significant(_) => {
            let s = match mode {
                Dtoa::Significant(n) => format!("{:.*e}", n.max(1) - 1, x),
                _ => format!("{x:e}"),
            };
            let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
            let digits: Vec<u8> = m.bytes().filter(u8::is_ascii_digit).collect();
            (digits, e.parse::<i64>().unwrap_or(0) + 1)
        }
        Dtoa::Fixed(n) => {
            let s = format!("{:.*}", n, x);
            let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
            let int = int.trim_start_matches('0');
            if int.is_empty() {
                let lead = frac.bytes().take_while(|&c| c == b'0').count();
                let digits = frac.as_bytes()[lead..].to_vec();
                (digits, -(lead as i64))
            } else {
                let digits: Vec<u8> = int.bytes().chain(frac.bytes()).collect();
                (digits, int.len() as i64)
            }
        }
    };
    let mut digits = digits;
    while digits.last() == Some(&b'0') {
        digits.pop();
    }
    if digits.is_empty() && matches!(mode, Dtoa::Shortest | Dtoa::Significant(_)) {
        return (b"0".to_vec(), 1);
    }
    (digits, decpt)
}

#[derive(Debug, Clone, Copy)]
enum Dtoa {
    Shortest,
    Significant(usize),
    Fixed(usize),
}

/// A DOUBLE as MariaDB stores it in a string column of `width` characters (observed on the
/// oracle, see the tests): its shortest digits in the form SELECT prints, when they fit;
/// otherwise rounded to fewer digits, in plain notation when the integer part fits and no
/// more than two zeros follow the point, in exponent notation else. `true` when even that
/// does not fit (the text is cut to the width).
pub(super) fn gcvt(x: f64, width: usize) -> (String, bool) {
    let neg = x < 0.0;
    let room = width as i64 - i64::from(neg);
    let (digits, point) = dtoa(x, Dtoa::Shortest);
    let n = digits.len() as i64;
    let exp_digits = |point: i64| {
        let e = (point - 1).abs();
        1 + i64::from(e >= 10) + i64::from(e >= 100)
    };
    // What all the digits take in plain notation: "0.00ddd", "dd.ddd" or "ddd000".
    let plain_len = if point <= 0 {
        2 - point + n
    } else if point < n {
        n + 1
    } else {
        point
    };
    // SELECT prints very large and very small numbers with an exponent.
    let select_plain = (-14..=15).contains(&point) || n > point;
    let plain = if plain_len <= room {
        select_plain
    } else {
        // A number below one whose "0.0…" leaves no room for a digit goes to the exponent
        // form when one digit of that fits.
        let exp_fits = point <= 0 && room <= 2 - point && room >= 3 + exp_digits(point);
        !exp_fits && point <= room && point >= -2
    };
    let (text, cut) = if plain {
        fit_plain(x, neg, room, digits, point)
    } else {
        fit_exponent(x, neg, room, digits, point, exp_digits(point))
    };
    // Rounding may carry into one more digit (99.96 in two characters is "100").
    let cut = cut || text.chars().count() > width;
    let text: String = text.chars().take(width).collect();
    (text, cut)
}

/// Plain notation in `room` characters (the sign aside), rounding decimals away.
fn fit_plain(x: f64, neg: bool, room: i64, digits: Vec<u8>, point: i64) -> (String, bool) {
    let (mut digits, mut point) = (digits, point);
    let n = digits.len() as i64;
    // Places for digits: the room less the point and any "0." and zeros before the digits.
    let mut places = room - i64::from(point < n) - if point <= 0 { 1 - point } else { 0 };
    let mut cut = false;
    if places < n {
        // Cut when the integer digits do not fit, or a number below one has no room for
        // "0." (observed: 0.5 does not fit one character, 1.5 does, as "2").
        cut = if point > 0 { room < point } else { room < 2 };
        places = places.max(point);
        (digits, point) = dtoa(x, Dtoa::Fixed((places - point).max(0) as usize));
        if digits.is_empty() {
            // Rounded to nothing: zero, without a sign.
            return ("0".into(), cut);
        }
    }
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-point) as usize));
    }
    for (i, &d) in digits.iter().enumerate() {
        out.push(char::from(d));
        if i as i64 + 1 == point && (i + 1) < digits.len() {
            out.push('.');
        }
    }
    for _ in digits.len() as i64..point {
        out.push('0');
    }
    (out, cut)
}

/// Exponent notation ("d.dddeN", "de-N") in `room` characters, with fewer digits as needed.
fn fit_exponent(
    x: f64,
    neg: bool,
    room: i64,
    digits: Vec<u8>,
    point: i64,
    exp_digits: i64,
) -> (String, bool) {
    let (mut digits, mut point) = (digits, point);
    let exp_neg = point < 1;
    let n = digits.len() as i64;
    let mut places = room - i64::from(exp_neg) - 1 - exp_digits - i64::from(n > 1);
    let mut cut = false;
    if places <= 0 {
        cut = true;
        places = 0;
    }
    if places < n {
        (digits, point) = dtoa(x, Dtoa::Significant(places.max(1) as usize));
    }
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push(char::from(digits[0]));
    if digits.len() > 1 {
        out.push('.');
        out.extend(digits[1..].iter().map(|&d| char::from(d)));
    }
    out.push('e');
    if exp_neg {
        out.push('-');
    }
    out.push_str(&(point - 1).abs().to_string());
    (out, cut)
}
