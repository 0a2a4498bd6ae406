//! Runs `zipdb-bench storage --smoke --json` end to end and checks its JSON lines.

use std::collections::HashSet;
use std::process::Command;

#[test]
fn storage_smoke_run_emits_every_run() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("smoke-disk");
    let out = Command::new(env!("CARGO_BIN_EXE_zipdb-bench"))
        .args([
            "storage",
            "--smoke",
            "--json",
            "--rows",
            "200",
            "--inmem-rows",
            "2000",
            "--dir",
        ])
        .arg(&dir)
        .output()
        .expect("run zipdb-bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "zipdb-bench failed:\n{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let records: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let runs: Vec<_> = records
        .iter()
        .filter(|r| r["budget"].as_str().is_some_and(|b| b.starts_with("fits_")))
        .collect();
    let required = [
        "bench",
        "shape",
        "codec",
        "mem_mb",
        "disk",
        "threads",
        "workload",
        "ops_per_s",
        "logical_mb",
        "physical_mb",
        "hit_decoded",
        "hit_compressed",
        "miss",
        "decodes_per_op",
        "budget",
        "rows",
        "page_size",
        "seconds",
        "ratio_vs_none",
    ];
    for r in &runs {
        assert_eq!(r["bench"], "storage");
        assert_eq!(r["shape"], "sbtest");
        for f in required {
            assert!(r.get(f).is_some(), "field {f} missing in {r}");
        }
        assert!(r["ops_per_s"].as_f64().unwrap() > 0.0, "no ops in {r}");
    }
    let seen = |f: &str| -> HashSet<String> {
        runs.iter()
            .map(|r| r[f].to_string().replace('"', ""))
            .collect()
    };
    assert_eq!(seen("workload").len(), 5, "{:?}", seen("workload"));
    assert_eq!(seen("budget").len(), 3);
    // Smoke mode runs none and the format SQL's ROW_FORMAT=COMPRESSED picks.
    let default = zipdb_engine::TableFormat::COMPRESSED_DEFAULT.to_string();
    assert_eq!(
        seen("codec"),
        HashSet::from(["none".to_string(), default.clone()])
    );
    assert_eq!(seen("threads").len(), 2);
    // That format is marked on every line of its own.
    for r in records.iter().filter(|r| r.get("codec").is_some()) {
        assert_eq!(
            r["default"].as_bool(),
            Some(r["codec"] == default.as_str()),
            "{r}"
        );
    }
    assert_eq!(
        runs.iter().any(|r| r["default"] == true),
        seen("codec").contains(&default)
    );
    // 3 budgets x (5 workloads at 1 thread + point_get at 2) x 2 codecs.
    assert_eq!(runs.len(), 36);
    for r in runs.iter().filter(|r| r["codec"] == "none") {
        assert_eq!(r["ratio_vs_none"].as_f64(), Some(1.0));
    }
    assert!(records
        .iter()
        .any(|r| r["budget"] == "in_memory" && r["ns_per_op"].as_f64().is_some()));
    assert!(records.iter().any(|r| r["workload"] == "load"));
    assert!(stderr.contains("ops/s"), "no table on stderr:\n{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The debian_docs shape on a small text file written here (no python3 or /usr/share/doc needed),
/// with one paragraph longer than a value may be; and the error when the data set is missing.
#[test]
fn storage_smoke_run_with_text_rows() {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let text = tmp.join("smoke-text.jsonl");
    let mut lines = String::new();
    for i in 0..300 {
        let para = format!("Paragraph {i}: the quick brown fox jumps over the lazy dog. ");
        let para = if i == 7 { para.repeat(200) } else { para };
        lines += &serde_json::json!(["pkg", "copyright", para]).to_string();
        lines.push('\n');
    }
    std::fs::write(&text, lines).unwrap();
    let dir = tmp.join("smoke-text-disk");
    let run = |file: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_zipdb-bench"))
            .args(["storage", "--smoke", "--json", "--shape", "debian_docs"])
            .args(["--rows", "200", "--inmem-rows", "1000", "--tables", "2"])
            .args([
                "--workloads",
                "point_get,update,insert_delete",
                "--text-file",
            ])
            .arg(file)
            .arg("--dir")
            .arg(&dir)
            .output()
            .expect("run zipdb-bench")
    };
    let out = run(&text);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "zipdb-bench failed:\n{stderr}");
    assert!(stderr.contains("1 split at 3840 B"), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let records: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(records.iter().all(|r| r["shape"] == "debian_docs"));
    assert!(records
        .iter()
        .any(|r| r["workload"] == "load" && r["physical_mb"].as_f64().is_some()));
    assert!(records.iter().any(|r| r["workload"] == "insert_delete"));
    let missing = tmp.join("no-such-text.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_zipdb-bench"))
        .args(["storage", "--smoke", "--shape", "debian_docs"])
        .args([
            "--text-script",
            "/nonexistent/debian_docs.py",
            "--text-file",
        ])
        .arg(&missing)
        .output()
        .expect("run zipdb-bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("/nonexistent/debian_docs.py") && stderr.contains("no-such-text.jsonl"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
