//! Output: a readable table (stdout, or stderr when `--json` is given) and JSON lines (stdout).

use std::io::Write;

/// Where lines go: with `json`, stdout carries only JSON objects and the table goes to stderr.
pub struct Out {
    pub json: bool,
}

impl Out {
    /// A line of the human-readable report.
    pub fn line(&self, s: &str) {
        if self.json {
            eprintln!("{s}");
        } else {
            println!("{s}");
            let _ = std::io::stdout().flush();
        }
    }

    /// One JSON object on one line of stdout (only with `--json`).
    pub fn record(&self, v: &serde_json::Value) {
        if self.json {
            println!("{v}");
            let _ = std::io::stdout().flush();
        }
    }
}

pub const MB: f64 = 1024.0 * 1024.0;

pub fn mb(bytes: u64) -> f64 {
    bytes as f64 / MB
}

/// Rounds to 3 significant decimals for JSON.
pub fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// `x` with 2 decimals, or `-`.
pub fn opt2(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"))
}

/// `x` with 3 decimals, or `-`.
pub fn opt3(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"))
}

/// A percentage of `part` in `whole`, or `-` when `whole` is 0.
pub fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// An integer with thousands separators.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string().into_bytes();
    let groups: Vec<&[u8]> = digits.rchunks(3).rev().collect();
    String::from_utf8(groups.join(&b","[..])).expect("ASCII digits")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(pct(1, 4), "25.0%");
        assert_eq!(pct(1, 0), "-");
        assert_eq!(opt2(None), "-");
        assert_eq!(opt2(Some(1.234)), "1.23");
        assert_eq!(r3(1.23456), 1.235);
    }
}
