//! Runs `zipdb-bench crash` end to end: a few kill-and-check cycles must find nothing wrong, and
//! with a flush policy that does not make commits durable the checker must notice.

use std::process::{Command, Output};

fn crash(dir_name: &str, extra: &[&str]) -> (Output, serde_json::Value) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(dir_name);
    let out = Command::new(env!("CARGO_BIN_EXE_zipdb-bench"))
        .args(["crash", "--json", "--threads", "2", "--accounts", "100"])
        .args(extra)
        .arg("--dir")
        .arg(&dir)
        .output()
        .expect("run zipdb-bench");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let last = stdout.lines().last().unwrap_or_default().to_string();
    let v: serde_json::Value = serde_json::from_str(&last).unwrap_or_else(|e| {
        panic!(
            "last stdout line is not JSON ({e}): {last:?}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let _ = std::fs::remove_dir_all(&dir);
    (out, v)
}

#[test]
fn crash_cycles_lose_nothing() {
    let (out, v) = crash("crash-smoke", &["--cycles", "3", "--seed", "7"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "zipdb-bench crash failed:\n{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    // The documented prefix, in this order, so that scripts can match it as text.
    assert!(
        last.starts_with(
            r#"{"bench":"crash","cycles":3,"lost_commits":0,"partial_txns":0,"invariant_violations":0"#
        ),
        "{last}\n{stderr}"
    );
    assert_eq!(v["cycles"], 3);
    assert!(v["acked"].as_u64().is_some(), "{v}");
    assert!(stderr.contains("cycle 3/3"), "no progress lines:\n{stderr}");
}

#[test]
fn crash_checker_catches_non_durable_commits() {
    // With flush policy none a commit returns before its log record is written, so a SIGKILL
    // loses acknowledged commits: the checker must count them and the exit status must say so.
    let (out, v) = crash(
        "crash-smoke-none",
        &[
            "--cycles",
            "3",
            "--seed",
            "7",
            "--flush",
            "none",
            "--early-kill",
            "0",
        ],
    );
    assert!(!out.status.success(), "lost commits must fail the run: {v}");
    assert!(v["acked"].as_u64().unwrap_or(0) > 0, "{v}");
    assert!(v["lost_commits"].as_u64().unwrap_or(0) > 0, "{v}");
}
