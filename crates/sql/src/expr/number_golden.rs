//! Golden test of text read as a number, in every context that reads it: expression context
//! (`Value::to_f64/to_i64/to_decimal`, which comparison and arithmetic use, and CAST) with the
//! warnings it raises, and column storage (`convert`) with the issues it reports.
//!
//! `number_golden.txt` was recorded from the two readers that existed before issue 20's T2
//! (`numeric_prefix` in value.rs and the store's `Digits::scan`), then edited only where the
//! one scanner changed a result on purpose (the design note's T2 bullet lists them). Rerecord
//! with `ZIPDB_GOLDEN_WRITE=1 cargo test -p zipdb-sql number_golden` and read the diff.

use std::fmt::Write as _;

use crate::expr::{cast, CastTo};
use crate::types::convert::store::{convert, Issue};
use crate::types::diag::Scope;
use crate::types::sqltype::SqlType;
use crate::types::value::Value;

/// Inputs: every body with every sign and tail, plus leading space and byte specials.
fn corpus() -> Vec<Vec<u8>> {
    let bodies: &[&str] = &[
        "",
        "0",
        "00",
        "007",
        "1",
        "12",
        ".5",
        "5.",
        ".",
        "0.0",
        "1.50",
        "0.05",
        "1e",
        "1e+",
        "1e-",
        "1e3",
        "1E3",
        "1e+3",
        "1e-3",
        "1.5e2",
        ".5e1",
        "5.e1",
        ".e1",
        "e1",
        "1e400",
        "1e-400",
        "1e99999999999999999999",
        "0e99999",
        "2.5",
        "3.5",
        "0.5",
        "127",
        "128",
        "255",
        "256",
        "2147483647",
        "2147483648",
        "4294967295",
        "4294967296",
        "9007199254740993",
        "9223372036854775807",
        "9223372036854775808",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999999999999999999",
        "123456789012345678901234567890123456789012345",
        "0.1234567890123456789012345678901234567890",
        "12345678.125",
        "99999999.995",
        "0x1A",
        "1,5",
        "inf",
        "nan",
        "infinity",
        "abc",
        "1-2",
        "1..2",
        "1.2.3",
        "1e2e3",
        "١٢",
        "１２",
    ];
    // Every body with the common signs and tails; the rarer ones on the first bodies.
    let mut out: Vec<Vec<u8>> = Vec::new();
    for (i, b) in bodies.iter().enumerate() {
        let rare = i < 20;
        for s in ["", "-", "+", "--", "- "] {
            if rare || s.len() < 2 {
                out.push(format!("{s}{b}").into_bytes());
            }
        }
        for t in [
            " ", "x", "\t", "e", "  ", " x", "\n", "\u{e9}", ".", "e5", "\x00",
        ] {
            if rare || matches!(t, " " | "x" | "e") {
                out.push(format!("{b}{t}").into_bytes());
                out.push(format!("-{b}{t}").into_bytes());
            }
        }
    }
    for lead in [
        " ", "   ", "\t", "\n", "\r", "\x0b", "\x0c", "\u{a0}", "\u{3000}",
    ] {
        for b in ["12", "-1.5", "", "x", "1e3 "] {
            out.push(format!("{lead}{b}").into_bytes());
        }
    }
    for b in [
        &b"\xff"[..],
        b"12\xff",
        b"\xff12",
        b"1\x00",
        b"\x001",
        b"1.5\xc3",
    ] {
        out.push(b.to_vec());
    }
    out
}

fn value_of(b: &[u8]) -> Value {
    match std::str::from_utf8(b) {
        Ok(s) => Value::Str(s.to_string()),
        Err(_) => Value::Bytes(b.to_vec()),
    }
}

/// Printable, one line: bytes outside printable ASCII as `\xNN`.
fn esc(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        if (0x20..0x7f).contains(&c) && c != b'\\' && c != b'|' {
            s.push(c as char);
        } else {
            let _ = write!(s, "\\x{c:02x}");
        }
    }
    s
}

fn show(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Int(i) => format!("I{i}"),
        Value::UInt(u) => format!("U{u}"),
        Value::Double(f) => format!("D{f:e}"),
        Value::Decimal(d) => format!("M{d}"),
        other => format!("{other:?}"),
    }
}

/// Runs `f` in a diagnostics scope: its result and the warnings, a 1292 "Truncated incorrect
/// KIND value" for the input itself shown as `!KIND` (a warning) or `~KIND` (a note).
fn with_diag(input: &[u8], f: impl FnOnce() -> String) -> String {
    let scope = Scope::begin(false);
    let mut s = f();
    let d = scope.finish();
    let quoted = crate::types::diag::quoted(input);
    for w in &d.warnings {
        let short = w
            .message
            .strip_prefix("Truncated incorrect ")
            .and_then(|m| m.strip_suffix(&format!(" value: '{quoted}'")))
            .filter(|_| w.code == 1292);
        let _ = match (short, w.level) {
            (Some(kind), "Warning") => write!(s, " !{kind}"),
            (Some(kind), _) => write!(s, " ~{kind}"),
            _ => write!(s, " [{} {} {}]", w.level, w.code, esc(w.message.as_bytes())),
        };
    }
    s
}

/// A store issue, short: the BadValue's text is checked to be the input's.
fn issue(i: &Issue, input: &[u8]) -> String {
    match i {
        Issue::OutOfRange => "range".into(),
        Issue::Truncated => "trunc".into(),
        Issue::Note => "note".into(),
        Issue::BadValue { kind, text } if text.as_bytes() == shown(input).as_bytes() => {
            format!("bad-{kind}")
        }
        other => esc(format!("{other:?}").as_bytes()),
    }
}

/// The input as the store shows it in a message (invalid UTF-8 as `\xNN`).
fn shown(b: &[u8]) -> String {
    let mut out = String::new();
    for chunk in b.utf8_chunks() {
        out.push_str(chunk.valid());
        for x in chunk.invalid() {
            let _ = write!(out, "\\x{x:02X}");
        }
    }
    out
}

fn record() -> String {
    let casts = [
        ("signed", CastTo::Signed),
        ("unsigned", CastTo::Unsigned),
        ("double", CastTo::Double),
        (
            "dec2",
            CastTo::Decimal {
                precision: 38,
                scale: 2,
                name: "CAST(x AS DECIMAL(38,2))".into(),
            },
        ),
    ];
    let int = |bytes, unsigned| SqlType::Int { bytes, unsigned };
    let dec = |precision, scale| SqlType::Decimal { precision, scale };
    let columns = [
        ("tinyint", int(1, false)),
        ("int_u", int(4, true)),
        ("bigint", int(8, false)),
        ("bigint_u", int(8, true)),
        ("double", SqlType::Double),
        ("float", SqlType::Float),
        ("dec10_2", dec(10, 2)),
        ("dec38_30", dec(38, 30)),
    ];
    let mut out = String::new();
    for b in corpus() {
        let v = value_of(&b);
        let _ = writeln!(out, "== \"{}\"", esc(&b));
        let mut expr = Vec::new();
        expr.push(with_diag(&b, || format!("f64 {:?}", v.to_f64())));
        expr.push(with_diag(&b, || format!("i64 {:?}", v.to_i64())));
        expr.push(with_diag(&b, || {
            format!(
                "dec {}",
                v.to_decimal().map_or("None".into(), |d| d.to_string())
            )
        }));
        expr.push(with_diag(&b, || {
            format!("cmp1 {:?}", v.sql_cmp(&Value::Int(1)))
        }));
        for (name, to) in &casts {
            expr.push(with_diag(&b, || match cast(v.clone(), to) {
                Ok(r) => format!("{name} {}", show(&r)),
                Err(e) => format!("{name} error {}", e.code()),
            }));
        }
        let _ = writeln!(out, "  {}", expr.join(" | "));
        let mut store = Vec::new();
        for (name, ty) in columns {
            let (r, issues) = convert(v.clone(), ty, true);
            let issues: Vec<String> = issues.iter().map(|i| issue(i, &b)).collect();
            store.push(
                format!("{name} {} {}", show(&r), issues.join(","))
                    .trim_end()
                    .to_string(),
            );
        }
        let _ = writeln!(out, "  {}", store.join(" | "));
    }
    out
}

#[test]
fn text_as_numbers_matches_the_recorded_outputs() {
    let got = record();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/expr/number_golden.txt");
    if std::env::var_os("ZIPDB_GOLDEN_WRITE").is_some() {
        std::fs::write(path, &got).expect("write the golden file");
        return;
    }
    let want = std::fs::read_to_string(path).expect("read the golden file");
    let mut bad = Vec::new();
    let mut differ = 0;
    let mut input = "";
    for (g, w) in got.lines().zip(want.lines()) {
        if let Some(i) = w.strip_prefix("== ") {
            input = i;
        }
        if g != w {
            differ += 1;
            if bad.len() < 40 {
                bad.push(format!("input {input:?}\n  want {w}\n  got  {g}"));
            }
        }
    }
    assert_eq!(got.lines().count(), want.lines().count(), "corpus changed");
    assert!(bad.is_empty(), "{differ} differ:\n{}", bad.join("\n"));
}
