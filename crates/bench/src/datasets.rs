//! Data sets read from outside the repository, shared by the benchmarks.
//!
//! `debian_docs`: paragraphs of real English text (copyright, changelog and NEWS files under
//! /usr/share/doc) made by `shared/datasets/debian_docs.py`, which prints one
//! `[pkg, file, paragraph]` JSON array per line. Its output is cached under
//! `target/zipdb-bench-data/` and made (with python3, seed 7) when absent.

use std::path::{Path, PathBuf};

use crate::db::Result;

/// Where debian_docs.py lives, relative to the repository root.
pub const DEBIAN_DOCS_SCRIPT: &str = "../shared/datasets/debian_docs.py";

/// Calls `f` on each of the first `n` paragraphs of the debian_docs data set: `text_file` if
/// given, else `target/zipdb-bench-data/debian_docs-<n>-seed7.jsonl`, made by running `script`
/// when it does not exist yet.
pub fn debian_docs(
    script: &Path,
    text_file: Option<&Path>,
    n: usize,
    mut f: impl FnMut(&str),
) -> Result<usize> {
    let path = text_file.map(Path::to_path_buf).unwrap_or_else(|| {
        PathBuf::from(format!(
            "target/zipdb-bench-data/debian_docs-{n}-seed7.jsonl"
        ))
    });
    if !path.exists() {
        if !script.is_file() {
            return Err(format!(
                "the debian_docs data set needs {} (or its output, {}): neither exists \
                 (--text-script / --text-file name other paths)",
                script.display(),
                path.display()
            )
            .into());
        }
        make_text_file(script, n, &path)?;
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut count = 0;
    for line in text.lines().take(n) {
        let row: serde_json::Value = serde_json::from_str(line)?;
        let para = row
            .get(2)
            .and_then(|p| p.as_str())
            .ok_or_else(|| format!("{}: not a [pkg, file, paragraph] row", path.display()))?;
        f(para);
        count += 1;
    }
    if count == 0 {
        return Err(format!("{}: no paragraphs", path.display()).into());
    }
    Ok(count)
}

/// Runs debian_docs.py (seed 7, its default) into `path`.
fn make_text_file(script: &Path, rows: usize, path: &Path) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("tmp");
    let file = std::fs::File::create(&tmp)?;
    let status = std::process::Command::new("python3")
        .arg(script)
        .args(["--rows", &rows.to_string(), "--seed", "7"])
        .stdout(file)
        .status()
        .map_err(|e| format!("python3 {}: {e}", script.display()))?;
    if !status.success() {
        return Err(format!("python3 {} failed: {status}", script.display()).into());
    }
    std::fs::rename(&tmp, path)?;
    Ok(())
}
