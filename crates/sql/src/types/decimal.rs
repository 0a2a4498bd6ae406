//! Fixed-point decimals (`Decimal`): DECIMAL columns and exact arithmetic.

use std::cmp::Ordering;

use crate::types::convert::number::{Scan, Tail};

/// A fixed-point decimal: `mant / 10^scale`.
#[derive(Debug, Clone, Copy)]
pub struct Decimal {
    pub mant: i128,
    pub scale: u8,
}

/// Most digits a [`Decimal`] holds (i128 holds 38 decimal digits).
pub const DECIMAL_DIGITS_MAX: u32 = 38;

fn pow10(n: u8) -> i128 {
    10i128.pow(u32::from(n))
}

// Checked arithmetic returning Option: not the std operator traits.
#[allow(clippy::should_implement_trait)]
impl Decimal {
    pub fn from_i64(v: i64) -> Decimal {
        Decimal {
            mant: i128::from(v),
            scale: 0,
        }
    }

    /// The same value at another scale (rounding half away from zero when it shrinks);
    /// `None` on overflow.
    pub fn rescale(self, scale: u8) -> Option<Decimal> {
        if scale == self.scale {
            // Every sum and comparison of two values at one scale comes here.
            return Some(self);
        }
        if scale > self.scale {
            let f = 10i128.checked_pow(u32::from(scale - self.scale))?;
            Some(Decimal {
                mant: self.mant.checked_mul(f)?,
                scale,
            })
        } else {
            let f = pow10(self.scale - scale);
            let q = self.mant / f;
            let r = self.mant % f;
            let q = if r.abs() * 2 >= f {
                q + self.mant.signum()
            } else {
                q
            };
            Some(Decimal { mant: q, scale })
        }
    }

    pub fn to_f64(self) -> f64 {
        self.mant as f64 / 10f64.powi(i32::from(self.scale))
    }

    pub fn from_f64(v: f64, scale: u8) -> Option<Decimal> {
        if !v.is_finite() {
            return None;
        }
        let m = (v * 10f64.powi(i32::from(scale))).round();
        if m.abs() >= 1e38 {
            return None;
        }
        Some(Decimal {
            mant: m as i128,
            scale,
        })
    }

    /// Parses text that is all number (`[-+]digits[.digits][e[-+]digits]`, spaces around it
    /// allowed), exactly: see [`Decimal::of_scan`].
    pub fn parse(s: &str) -> Option<Decimal> {
        let d = Scan::read(s.as_bytes());
        if !d.found() || d.tail() == Tail::Garbage {
            return None;
        }
        Decimal::of_scan(&d)
    }

    /// A scanned number, exactly at its own scale (the digits after the point less the
    /// exponent), or rounded to 30 digits after the point, or to fewer where the integer
    /// digits leave less of the 38: `None` past 38 integer digits; zero for no number.
    pub(crate) fn of_scan(d: &Scan) -> Option<Decimal> {
        let int_digits = d.point().max(0);
        if int_digits > i64::from(DECIMAL_DIGITS_MAX) {
            return None;
        }
        let scale = (d.frac.len() as i64 - d.exp)
            .clamp(0, 30)
            .min(i64::from(DECIMAL_DIGITS_MAX) - int_digits) as u8;
        let mant = d.scaled(scale).0?;
        Some(Decimal {
            mant: if d.neg { -mant } else { mant },
            scale,
        })
    }

    fn align(a: Decimal, b: Decimal) -> Option<(i128, i128, u8)> {
        let s = a.scale.max(b.scale);
        Some((a.rescale(s)?.mant, b.rescale(s)?.mant, s))
    }

    pub fn add(self, o: Decimal) -> Option<Decimal> {
        let (a, b, scale) = Decimal::align(self, o)?;
        Some(Decimal {
            mant: a.checked_add(b)?,
            scale,
        })
    }

    pub fn sub(self, o: Decimal) -> Option<Decimal> {
        self.add(Decimal {
            mant: -o.mant,
            scale: o.scale,
        })
    }

    pub fn mul(self, o: Decimal) -> Option<Decimal> {
        let d = Decimal {
            mant: self.mant.checked_mul(o.mant)?,
            scale: self.scale.checked_add(o.scale)?,
        };
        if d.scale > 30 {
            d.rescale(30)
        } else {
            Some(d)
        }
    }

    /// Division with MySQL's `div_precision_increment` (4 more digits of scale).
    pub fn div(self, o: Decimal) -> Option<Decimal> {
        if o.mant == 0 {
            return None;
        }
        let scale = (self.scale + 4).min(30);
        // self * 10^(scale + o.scale - self.scale) / o.mant, rounded.
        let shift = scale + o.scale - self.scale;
        let n = self
            .mant
            .checked_mul(10i128.checked_pow(u32::from(shift))?)?;
        let q = n / o.mant;
        let r = n % o.mant;
        let q = if r.abs() * 2 >= o.mant.abs() {
            q + (n.signum() * o.mant.signum())
        } else {
            q
        };
        Some(Decimal { mant: q, scale })
    }

    pub fn cmp(self, o: Decimal) -> Ordering {
        match Decimal::align(self, o) {
            Some((a, b, _)) => a.cmp(&b),
            None => self.to_f64().total_cmp(&o.to_f64()),
        }
    }

    /// Digits before the point (for precision checks).
    pub fn int_digits(self) -> u32 {
        let int = (self.mant / pow10(self.scale)).unsigned_abs();
        if int == 0 {
            0
        } else {
            int.ilog10() + 1
        }
    }
}

impl std::fmt::Display for Decimal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let neg = self.mant < 0;
        let digits = self.mant.unsigned_abs().to_string();
        let scale = usize::from(self.scale);
        let s = if scale == 0 {
            digits
        } else if digits.len() > scale {
            format!(
                "{}.{}",
                &digits[..digits.len() - scale],
                &digits[digits.len() - scale..]
            )
        } else {
            format!("0.{}{}", "0".repeat(scale - digits.len()), digits)
        };
        if neg {
            write!(f, "-{s}")
        } else {
            f.write_str(&s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_parse_print_and_compute() {
        let d = Decimal::parse("-12.340").unwrap();
        assert_eq!(d.to_string(), "-12.340");
        assert_eq!(Decimal::parse("0.05").unwrap().to_string(), "0.05");
        assert_eq!(
            Decimal::parse("1.5")
                .unwrap()
                .add(Decimal::parse("2.25").unwrap())
                .unwrap()
                .to_string(),
            "3.75"
        );
        assert_eq!(
            Decimal::from_i64(10)
                .div(Decimal::from_i64(4))
                .unwrap()
                .to_string(),
            "2.5000"
        );
        assert_eq!(
            Decimal::parse("2.345")
                .unwrap()
                .rescale(2)
                .unwrap()
                .to_string(),
            "2.35"
        );
        assert_eq!(
            Decimal::parse("-2.345")
                .unwrap()
                .rescale(2)
                .unwrap()
                .to_string(),
            "-2.35"
        );
        assert!(Decimal::parse("1x").is_none());
        assert!(Decimal::parse(".").is_none());
        assert_eq!(
            Decimal::parse("1.10")
                .unwrap()
                .cmp(Decimal::parse("1.1").unwrap()),
            Ordering::Equal
        );
    }
}
