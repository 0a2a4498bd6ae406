//! The `zipdb serve` binary's settings: config file errors and page-size checks stop it with a
//! clear message and a non-zero exit before it serves anything.

use std::path::PathBuf;
use std::process::Command;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zipdb-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `zipdb serve` with `args` in `cwd`; returns (success, stderr).
fn serve(cwd: &PathBuf, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zipdb"))
        .arg("serve")
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_config_files_stop_the_server_naming_file_and_key() {
    let d = temp_dir("bad");
    std::fs::write(d.join("typo.toml"), "port = 0\npool_szie = 64\n").unwrap();
    let (ok, err) = serve(&d, &["--config", "typo.toml"]);
    assert!(!ok);
    assert!(
        err.contains("typo.toml") && err.contains("pool_szie") && err.contains("pool_mb"),
        "{err}"
    );

    // ./zipdb.toml is read without --config, and says so.
    std::fs::write(d.join("zipdb.toml"), "codec = \"brotli\"\n").unwrap();
    let (ok, err) = serve(&d, &[]);
    assert!(!ok);
    assert!(
        err.contains("reading ./zipdb.toml") && err.contains("`codec`") && err.contains("lz4"),
        "{err}"
    );

    let (ok, err) = serve(&d, &["--config", "missing.toml"]);
    assert!(!ok);
    assert!(err.contains("missing.toml"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_flags_are_refused_with_what_is_allowed() {
    let d = temp_dir("flags");
    let (ok, err) = serve(&d, &["--flush-policy", "always"]);
    assert!(!ok);
    assert!(err.contains("sync"), "{err}");
    let (ok, err) = serve(&d, &["--page-size", "1000"]);
    assert!(!ok);
    assert!(err.contains("16384"), "{err}");
    let (ok, err) = serve(&d, &["--connect-timeout", "1"]);
    assert!(!ok);
    assert!(err.contains("2..=31536000"), "{err}");
    let (ok, err) = serve(&d, &["--wait-timeout", "0"]);
    assert!(!ok);
    assert!(err.contains("1..=31536000"), "{err}");
    let (ok, err) = serve(&d, &["--codec", "trim"]);
    assert!(!ok);
    assert!(
        err.contains("zlib:LEVEL (1..=9), fsst or fsst+zstd"),
        "{err}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn serve_help_documents_the_limits_and_the_admin_slot() {
    let out = Command::new(env!("CARGO_BIN_EXE_zipdb"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--connect-timeout",
        "--wait-timeout",
        "--interactive-timeout",
        "--net-read-timeout",
        "--net-write-timeout",
        "--extra-max-connections",
    ] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
    assert!(help.contains("only the account named root"), "{help}");
    assert!(help.contains("or fsst"), "--codec: {help}");
}

#[test]
fn an_explicit_page_size_that_differs_from_the_existing_database_is_an_error() {
    let d = temp_dir("pagesize");
    let data = d.join("data");
    let db = zipdb_engine::Database::open(
        &data,
        zipdb_engine::Options {
            page_size: 4096,
            pool_bytes: 4 << 20,
            wal_bytes: 4 << 20,
            recovery_progress: false,
            ..Default::default()
        },
    )
    .unwrap();
    db.close().unwrap();
    // The file overrides the default silently, but an explicit value must match.
    std::fs::write(d.join("zipdb.toml"), "page_size = 8192\nport = 0\n").unwrap();
    let (ok, err) = serve(&d, &["--data-dir", "data"]);
    assert!(!ok);
    assert!(
        err.contains("4096") && err.contains("8192") && err.contains("zipdb.data"),
        "{err}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
