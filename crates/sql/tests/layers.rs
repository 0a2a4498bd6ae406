//! The shape rules of `crates/sql` (docs/design/issue20-sql-engine.md §2.1), checked on its
//! source text:
//!
//! - **Layers.** Every module belongs to a layer: the folder of `src/` it sits in (`error.rs`
//!   is the layer `error`). A module may import only from its own layer or lower ones, and
//!   imports inside a layer must not form a cycle.
//! - **Size.** No source file over [`MAX_LINES`] lines, generated tables excepted.
//!
//! Today's violations are listed in [`ALLOWED_IMPORTS`] and [`ALLOWED_LARGE_FILES`]. The lists
//! may only shrink: a new violation fails the test, and so does an entry that is no longer a
//! violation (delete it, so that it cannot come back unnoticed). A pure move (`git mv`) renames
//! modules; then replace the list with the one the failure message prints, after checking that
//! it holds the same violations under their new names.
//!
//! The import graph is computed as `scripts/sql-import-graph.py` does: every path that starts
//! with `crate::`, `super::` or `self::` (in `use` trees, groups included, and inline in code),
//! resolved through `mod` files and `use` re-exports (lib.rs's among them) to the file that
//! defines the item. Comments, string literals and `#[cfg(test)]` items are left out; lib.rs is
//! the facade (re-exports only) and is not a source of edges.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// Longest allowed source file, in lines.
const MAX_LINES: usize = 1200;

/// Generated files, by file name: exempt from the size rule.
const GENERATED: &[&str] = &["collation_table.rs"];

/// The layer of each top-level module (its first path segment, a folder of `src/`), lowest
/// first (§2.1).
const LAYERS: &[(&str, u32)] = &[
    ("error", 0),
    ("types", 1),
    ("runtime", 2),
    ("catalog", 3),
    ("front", 4),
    ("expr", 5),
    ("plan", 6),
    ("bind", 7),
    ("exec", 8),
    ("instance", 9),
    ("ddl", 10),
    ("admin", 11),
    ("session", 12),
    // lib.rs: the facade.
    ("crate", 13),
];

/// Imports that break the layer rule today, as `"from -> to"` (module paths, `crate` for
/// lib.rs): upward imports, and the imports that close a cycle inside a layer. Only shrinks.
const ALLOWED_IMPORTS: &[&str] = &[];

/// Files over [`MAX_LINES`] today, relative to `crates/sql/src`. Only shrinks.
const ALLOWED_LARGE_FILES: &[&str] = &[];

#[test]
fn imports_follow_the_layers() {
    let files = source_files();
    let graph = Graph::new(&files);
    assert!(
        graph.edges.len() >= 60,
        "only {} imports found in crates/sql/src: the scanner is broken",
        graph.edges.len()
    );
    let mut report = String::new();
    for m in graph.modules.keys() {
        if layer_of(m).is_none() {
            let _ = writeln!(
                report,
                "module `{}` has no layer: add it to LAYERS",
                name(m)
            );
        }
    }
    if !report.is_empty() {
        panic!("{report}");
    }
    let violations = violations(&graph);
    let allowed: BTreeSet<(String, String)> = ALLOWED_IMPORTS
        .iter()
        .map(|e| {
            let (a, b) = e
                .split_once(" -> ")
                .expect("ALLOWED_IMPORTS entries read \"a -> b\"");
            (a.to_string(), b.to_string())
        })
        .collect();
    let new: Vec<_> = violations
        .iter()
        .filter(|(e, _)| !allowed.contains(*e))
        .collect();
    let stale: Vec<_> = allowed
        .iter()
        .filter(|e| !violations.contains_key(*e))
        .collect();
    if new.is_empty() && stale.is_empty() {
        return;
    }
    let sccs = graph.cycles_within_layers();
    if !new.is_empty() {
        let _ = writeln!(
            report,
            "imports against the layer rule of docs/design/issue20-sql-engine.md §2.1 (a module \
             may use only its own layer or lower ones, without cycles inside a layer):"
        );
        for ((a, b), why) in &new {
            let _ = writeln!(report, "  {a} -> {b}: {why} ({})", graph.lines(a, b));
        }
        for scc in sccs
            .iter()
            .filter(|s| new.iter().any(|((a, _), _)| s.contains(a)))
        {
            let _ = writeln!(
                report,
                "  a cycle through: {}",
                scc.iter().cloned().collect::<Vec<_>>().join(", ")
            );
        }
        let _ = writeln!(
            report,
            "Move the item down (or the importer up), or hand the call down as a function value or \
             trait object; do not add to ALLOWED_IMPORTS."
        );
    }
    if !stale.is_empty() {
        let _ = writeln!(
            report,
            "ALLOWED_IMPORTS entries that are no longer violations (delete them):"
        );
        for (a, b) in &stale {
            let _ = writeln!(report, "  \"{a} -> {b}\",");
        }
    }
    let _ = writeln!(
        report,
        "\nAfter a pure move (files renamed, the same imports), ALLOWED_IMPORTS in \
         crates/sql/tests/layers.rs becomes (check it holds no new violation):\n\
         const ALLOWED_IMPORTS: &[&str] = &["
    );
    for (a, b) in violations.keys() {
        let _ = writeln!(report, "    \"{a} -> {b}\",");
    }
    let _ = writeln!(report, "];");
    panic!("{report}");
}

#[test]
fn files_stay_small() {
    let files = source_files();
    let large: BTreeMap<&str, usize> = files
        .iter()
        .map(|(path, text)| (path.as_str(), text.lines().count()))
        .filter(|&(path, lines)| {
            lines > MAX_LINES && !GENERATED.contains(&path.rsplit('/').next().unwrap())
        })
        .collect();
    let allowed: BTreeSet<&str> = ALLOWED_LARGE_FILES.iter().copied().collect();
    let mut report = String::new();
    for (path, lines) in &large {
        if !allowed.contains(path) {
            let _ = writeln!(
                report,
                "crates/sql/src/{path} has {lines} lines (at most {MAX_LINES}): split it by \
                 responsibility; do not add it to ALLOWED_LARGE_FILES"
            );
        }
    }
    for path in &allowed {
        if !large.contains_key(path) {
            let _ = writeln!(
                report,
                "ALLOWED_LARGE_FILES lists {path}, which is not over {MAX_LINES} lines (or no \
                 longer exists): delete the entry"
            );
        }
    }
    if !report.is_empty() {
        let _ = writeln!(
            report,
            "\nAfter a pure move (files renamed, none grown), ALLOWED_LARGE_FILES in \
             crates/sql/tests/layers.rs becomes:\nconst ALLOWED_LARGE_FILES: &[&str] = &["
        );
        for path in large.keys() {
            let _ = writeln!(report, "    \"{path}\",");
        }
        let _ = writeln!(report, "];");
        panic!("{report}");
    }
}

/// The scanner on a made-up crate: groups, renames, re-exports through lib.rs and mod.rs,
/// `super::` and inline paths count; comments, strings and test modules do not.
#[test]
fn scanner_finds_the_imports() {
    let files: Vec<(String, String)> = [
        (
            "lib.rs",
            "mod a;\nmod b;\nmod up;\npub use a::deep::Thing;\npub use b::Other as Renamed;\n",
        ),
        ("a/mod.rs", "pub mod deep;\npub use self::deep::Thing;\n"),
        (
            "a/deep.rs",
            "use super::super::b::Other;\npub struct Thing;\nfn f() -> crate::up::U { todo!() }\n",
        ),
        (
            "b.rs",
            "use crate::{a::{self, Thing as T}, Renamed};\n\
             // use crate::up::Hidden;\n\
             const S: &str = \"crate::up::Str\";\n\
             const C: char = '{';\n\
             const R: &str = r#\"crate::up::Raw \" still\"#;\n\
             #[cfg(test)]\nmod tests {\n    use crate::up::Test;\n}\n\
             pub struct Other;\n",
        ),
        (
            "up.rs",
            "pub struct U;\nfn g() -> crate::Thing { crate::a::Thing }\n",
        ),
    ]
    .iter()
    .map(|(p, t)| (p.to_string(), t.to_string()))
    .collect();
    let graph = Graph::new(&files);
    let edges: BTreeSet<String> = graph
        .edges
        .keys()
        .map(|(a, b)| format!("{a} -> {b}"))
        .collect();
    let want: BTreeSet<String> = [
        "a -> a::deep",
        "a::deep -> b",
        "a::deep -> up",
        "b -> a",
        "b -> a::deep",
        "up -> a::deep",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(edges, want);
    assert_eq!(graph.lines("a::deep", "up"), "src/a/deep.rs:3");
}

/// Prints the import graph (every edge with its lines, and the layer of each end):
/// `cargo test -p zipdb-sql --test layers -- --ignored --nocapture`.
#[test]
#[ignore]
fn print_import_graph() {
    let graph = Graph::new(&source_files());
    for (a, b) in graph.edges.keys() {
        println!(
            "{a} ({}) -> {b} ({})  {}",
            layer_by_name(a),
            layer_by_name(b),
            graph.lines(a, b)
        );
    }
    println!("{} imports", graph.edges.len());
}

/// `(path relative to src, text)` of every `.rs` file under crates/sql/src.
fn source_files() -> Vec<(String, String)> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            let rel = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if path.is_dir() {
                walk(&path, &rel, out);
            } else if name.ends_with(".rs") {
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        "",
        &mut out,
    );
    out
}

type ModPath = Vec<String>;

fn name(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

fn layer_of(m: &[String]) -> Option<u32> {
    let first = m.first().map_or("crate", String::as_str);
    LAYERS.iter().find(|(n, _)| *n == first).map(|&(_, l)| l)
}

/// One source file, as a module.
struct Module {
    file: String,
    /// Child modules that are files (`mod x;` with x.rs or x/mod.rs).
    children: BTreeSet<String>,
    /// Names its top-level `use` items bring in, as absolute paths.
    aliases: BTreeMap<String, ModPath>,
    /// Every crate-internal path it mentions (absolute), with the line.
    paths: Vec<(ModPath, usize)>,
}

struct Graph {
    modules: BTreeMap<ModPath, Module>,
    /// (from, to) by module name → lines in the importing file.
    edges: BTreeMap<(String, String), BTreeSet<usize>>,
}

impl Graph {
    fn new(files: &[(String, String)]) -> Graph {
        let mut modules = BTreeMap::new();
        for (file, _) in files {
            let path = module_path(file);
            modules.insert(
                path,
                Module {
                    file: file.clone(),
                    children: BTreeSet::new(),
                    aliases: BTreeMap::new(),
                    paths: Vec::new(),
                },
            );
        }
        let all: Vec<ModPath> = modules.keys().cloned().collect();
        for m in &all {
            if let Some((last, parent)) = m.split_last() {
                if let Some(p) = modules.get_mut(parent) {
                    p.children.insert(last.clone());
                }
            }
        }
        for (file, text) in files {
            let path = module_path(file);
            let code = without_test_items(&without_comments_and_literals(text));
            let tokens = tokenize(&code);
            let children = modules[&path].children.clone();
            let (aliases, paths) = scan(&tokens, &path, &children);
            let m = modules.get_mut(&path).unwrap();
            m.aliases = aliases;
            m.paths = paths;
        }
        let mut graph = Graph {
            modules,
            edges: BTreeMap::new(),
        };
        let mut edges = BTreeMap::new();
        for (m, module) in &graph.modules {
            if m.is_empty() {
                continue; // lib.rs: the facade
            }
            for (p, line) in &module.paths {
                let target = graph.resolve(p, 0);
                if &target != m {
                    edges
                        .entry((name(m), name(&target)))
                        .or_insert_with(BTreeSet::new)
                        .insert(*line);
                }
            }
        }
        graph.edges = edges;
        graph
    }

    /// The module that defines what the absolute path `p` names.
    fn resolve(&self, p: &[String], depth: usize) -> ModPath {
        assert!(depth < 32, "re-export loop resolving {}", p.join("::"));
        let mut cur: ModPath = Vec::new();
        for (i, seg) in p.iter().enumerate() {
            let Some(m) = self.modules.get(&cur) else {
                return cur;
            };
            if m.children.contains(seg) {
                cur.push(seg.clone());
            } else if let Some(target) = m.aliases.get(seg) {
                let mut next = target.clone();
                next.extend(p[i + 1..].iter().cloned());
                return self.resolve(&next, depth + 1);
            } else {
                break; // an item of `cur`
            }
        }
        cur
    }

    fn lines(&self, a: &str, b: &str) -> String {
        let file = self
            .modules
            .iter()
            .find(|(m, _)| name(m) == a)
            .map(|(_, m)| m.file.as_str())
            .unwrap_or("?");
        let lines = &self.edges[&(a.to_string(), b.to_string())];
        let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        format!("src/{file}:{}", lines.join(","))
    }

    /// Strongly connected components (more than one module) of the imports that do not go
    /// upward: every cycle left once the upward imports are gone lies inside one layer.
    fn cycles_within_layers(&self) -> Vec<BTreeSet<String>> {
        let layer = |n: &str| layer_by_name(n);
        let nodes: BTreeSet<&str> = self
            .edges
            .keys()
            .flat_map(|(a, b)| [a.as_str(), b.as_str()])
            .collect();
        let mut succ: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (a, b) in self.edges.keys() {
            if layer(b) <= layer(a) {
                succ.entry(a.as_str()).or_default().push(b.as_str());
            }
        }
        tarjan(&nodes, &succ)
            .into_iter()
            .filter(|s| s.len() > 1)
            .collect()
    }
}

fn layer_by_name(n: &str) -> u32 {
    let first = n.split("::").next().unwrap();
    LAYERS
        .iter()
        .find(|(l, _)| *l == first)
        .map_or(u32::MAX, |&(_, l)| l)
}

/// Every import against the rule, with the reason.
fn violations(graph: &Graph) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    let sccs = graph.cycles_within_layers();
    for (a, b) in graph.edges.keys() {
        let (la, lb) = (layer_by_name(a), layer_by_name(b));
        let why = if lb > la {
            format!("upward, layer {la} -> {lb}")
        } else if sccs.iter().any(|s| s.contains(a) && s.contains(b)) {
            format!("a cycle inside layer {la}")
        } else {
            continue;
        };
        out.insert((a.clone(), b.clone()), why);
    }
    out
}

fn tarjan<'a>(
    nodes: &BTreeSet<&'a str>,
    succ: &BTreeMap<&'a str, Vec<&'a str>>,
) -> Vec<BTreeSet<String>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(v: &'a str, succ: &BTreeMap<&'a str, Vec<&'a str>>, s: &mut State<'a>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on.insert(v);
        for &w in succ.get(v).map_or(&[][..], |x| x.as_slice()) {
            if !s.index.contains_key(w) {
                visit(w, succ, s);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = BTreeSet::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(w);
                comp.insert(w.to_string());
                if w == v {
                    break;
                }
            }
            s.out.push(comp);
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in nodes {
        if !s.index.contains_key(v) {
            visit(v, succ, &mut s);
        }
    }
    s.out
}

/// `a/b.rs` → `[a, b]`, `a/mod.rs` → `[a]`, `lib.rs` → `[]`.
fn module_path(file: &str) -> ModPath {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
        parts.pop();
    }
    parts
}

/// The text with comments blanked and string and character literals emptied; line breaks
/// are kept, so line numbers stay.
fn without_comments_and_literals(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let n = c.len();
    let at = |i: usize| if i < n { c[i] } else { '\0' };
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < n {
        let ch = c[i];
        let prev = if i > 0 { c[i - 1] } else { ' ' };
        if ch == '/' && at(i + 1) == '/' {
            while i < n && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < n {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if let Some((mut j, hashes)) =
            (!ident(prev)).then(|| raw_string_start(&c, i)).flatten()
        {
            // raw string: r#"…"#, br"…"
            out.push('"');
            j += 1;
            while j < n {
                if c[j] == '"' && (1..=hashes).all(|k| at(j + k) == '#') {
                    j += 1 + hashes;
                    break;
                }
                blank(&mut out, c[j]);
                j += 1;
            }
            out.push('"');
            i = j;
        } else if ch == '"' {
            out.push('"');
            i += 1;
            while i < n && c[i] != '"' {
                if c[i] == '\\' {
                    blank(&mut out, c[i]);
                    i += 1;
                }
                if i < n {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
        } else if ch == '\'' && (at(i + 1) == '\\' || (at(i + 1) != '\'' && at(i + 2) == '\'')) {
            // a character literal ('x', '\n', '\u{..}'); otherwise a lifetime
            let mut j = i + 1;
            if at(j) == '\\' {
                j += 2;
            } else {
                j += 1;
            }
            while j < n && c[j] != '\'' {
                j += 1;
            }
            out.push_str("' '");
            i = j + 1;
        } else {
            out.push(ch);
            i += 1;
        }
    }
    out
}

/// At a raw string's `r` (or `br`): the index of its opening quote and its number of `#`.
fn raw_string_start(c: &[char], i: usize) -> Option<(usize, usize)> {
    let mut j = match (c.get(i), c.get(i + 1)) {
        (Some('r'), _) => i + 1,
        (Some('b'), Some('r')) => i + 2,
        _ => return None,
    };
    let hashes = c[j..].iter().take_while(|&&ch| ch == '#').count();
    j += hashes;
    (c.get(j) == Some(&'"')).then_some((j, hashes))
}

/// The code with every `#[cfg(test)]` item (test modules, test-only functions and imports)
/// blanked, line breaks kept.
fn without_test_items(code: &str) -> String {
    const ATTR: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(start) = rest.find(ATTR) {
        out.push_str(&rest[..start]);
        let item = &rest[start..];
        let mut depth = 0i32;
        let mut end = item.len();
        let mut seen_attr_end = false;
        for (i, ch) in item.char_indices() {
            if i < ATTR.len() {
                continue;
            }
            seen_attr_end = true;
            match ch {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' => depth -= 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        debug_assert!(seen_attr_end);
        out.extend(
            item[..end]
                .chars()
                .map(|ch| if ch == '\n' { '\n' } else { ' ' }),
        );
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

#[derive(Debug)]
struct Token {
    text: String,
    line: usize,
}

fn tokenize(code: &str) -> Vec<Token> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let mut text: String = c[start..i].iter().collect();
            if text == "r"
                && i + 1 < c.len()
                && c[i] == '#'
                && (c[i + 1].is_alphabetic() || c[i + 1] == '_')
            {
                // raw identifier r#name
                i += 1;
                let s = i;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                text = c[s..i].iter().collect();
            }
            out.push(Token { text, line });
        } else if ch == ':' && i + 1 < c.len() && c[i + 1] == ':' {
            out.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                text: ch.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

/// The absolute form of a path written in module `m`, or `None` for one outside the crate.
fn absolute(segs: &[String], m: &[String], children: &BTreeSet<String>) -> Option<ModPath> {
    let first = segs.first()?;
    match first.as_str() {
        "crate" => Some(segs[1..].to_vec()),
        "self" => Some(m.iter().chain(&segs[1..]).cloned().collect()),
        "super" => {
            let mut base = m.to_vec();
            let mut k = 0;
            while segs.get(k).is_some_and(|s| s == "super") {
                base.pop()?;
                k += 1;
            }
            base.extend(segs[k..].iter().cloned());
            Some(base)
        }
        s if children.contains(s) => Some(m.iter().chain(segs).cloned().collect()),
        _ => None,
    }
}

/// The names a module's top-level `use` items bring in, and every crate-internal path it
/// mentions (in `use` items at any depth and inline in code).
fn scan(
    tokens: &[Token],
    m: &[String],
    children: &BTreeSet<String>,
) -> (BTreeMap<String, ModPath>, Vec<(ModPath, usize)>) {
    let mut aliases = BTreeMap::new();
    let mut paths = Vec::new();
    let mut depth = 0i32;
    let mut i = 0;
    let is = |i: usize, s: &str| tokens.get(i).is_some_and(|t| t.text == s);
    while i < tokens.len() {
        let t = &tokens[i];
        let after_sep = i > 0 && tokens[i - 1].text == "::";
        match t.text.as_str() {
            "{" => depth += 1,
            "}" => depth -= 1,
            "use" if !after_sep => {
                let mut leaves = Vec::new();
                i = use_tree(tokens, i + 1, Vec::new(), &mut leaves);
                for (segs, alias, line) in leaves {
                    let Some(abs) = absolute(&segs, m, children) else {
                        continue;
                    };
                    if depth == 0 {
                        if let Some(alias) = alias {
                            aliases.insert(alias, abs.clone());
                        }
                    }
                    paths.push((abs, line));
                }
                continue;
            }
            s if !after_sep
                && is(i + 1, "::")
                && (matches!(s, "crate" | "self" | "super") || children.contains(s)) =>
            {
                let mut segs = vec![t.text.clone()];
                let mut j = i + 1;
                while is(j, "::")
                    && tokens
                        .get(j + 1)
                        .is_some_and(|t| t.text.chars().all(|c| c.is_alphanumeric() || c == '_'))
                {
                    segs.push(tokens[j + 1].text.clone());
                    j += 2;
                }
                if let Some(abs) = absolute(&segs, m, children) {
                    paths.push((abs, t.line));
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    (aliases, paths)
}

/// Parses a use tree from `i`; pushes `(path, name it binds, line)` per leaf (name `None` for
/// a glob). Returns the index after the tree (after the `;` at the top level).
fn use_tree(
    tokens: &[Token],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>, usize)>,
) -> usize {
    let top = prefix.is_empty();
    loop {
        let Some(t) = tokens.get(i) else { return i };
        match t.text.as_str() {
            "::" => i += 1,
            "{" => {
                i += 1;
                while tokens.get(i).is_some_and(|t| t.text != "}") {
                    i = use_tree(tokens, i, prefix.clone(), out);
                    if tokens.get(i).is_some_and(|t| t.text == ",") {
                        i += 1;
                    }
                }
                i += 1;
                break;
            }
            "*" => {
                out.push((prefix.clone(), None, t.line));
                i += 1;
                break;
            }
            ";" | "," | "}" => break,
            word => {
                i += 1;
                if tokens.get(i).is_some_and(|t| t.text == "::") {
                    prefix.push(word.to_string());
                    continue;
                }
                let (path, mut alias) = if word == "self" {
                    (prefix.clone(), prefix.last().cloned())
                } else {
                    let mut p = prefix.clone();
                    p.push(word.to_string());
                    (p, Some(word.to_string()))
                };
                if tokens.get(i).is_some_and(|t| t.text == "as") {
                    alias = tokens
                        .get(i + 1)
                        .map(|t| t.text.clone())
                        .filter(|a| a != "_");
                    i += 2;
                }
                out.push((path, alias, t.line));
                break;
            }
        }
    }
    if top {
        while tokens.get(i).is_some_and(|t| t.text != ";") {
            i += 1;
        }
        i += 1;
    }
    i
}
