//! The layers of `lib.rs`'s table, kept: every top-level module is in one layer, uses only its own
//! layer or those below, and no two modules use each other, even by a detour. A failure names the
//! edge (the modules, the file and line) so the fix starts from it.
//!
//! Uses are read from the source: every path that starts at the crate root, in `use` trees (over
//! several lines too) and in code, outside comments, strings and `#[cfg(test)]` items (a test may
//! reach anywhere).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where a module uses another: `src/`-relative file and line.
type Edges = BTreeMap<String, BTreeMap<String, Vec<String>>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The crate's top-level modules, as `lib.rs` declares them (`pub mod name;`).
fn modules(lib: &str) -> BTreeSet<String> {
    lib.lines().filter_map(|l| l.trim().strip_prefix("pub mod ")?.strip_suffix(';').map(str::to_string)).collect()
}

/// The names `lib.rs` re-exports at the crate root (`pub use supervisor::{Supervisor, …};`), each
/// with the module it comes from: a use of `crate::Supervisor` is a use of `supervisor`.
fn reexports(lib: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for line in lib.lines() {
        let Some((module, rest)) = line.trim().strip_prefix("pub use ").and_then(|r| r.split_once("::")) else {
            continue;
        };
        if !modules.contains(module) {
            continue;
        }
        let list = rest.trim_end_matches(';').trim_start_matches('{').trim_end_matches('}');
        for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let name = item.rsplit_once(" as ").map_or(item, |(_, alias)| alias).trim();
            names.insert(name.to_string(), module.to_string());
        }
    }
    names
}

/// Every name a path from the crate root may start with, and the module it stands for: the
/// modules themselves and the crate root's re-exports.
fn names(lib: &str) -> BTreeMap<String, String> {
    let modules = modules(lib);
    let mut names = reexports(lib, &modules);
    names.extend(modules.into_iter().map(|m| (m.clone(), m)));
    names
}

/// The layer table of `lib.rs`'s doc: each `//! | N. name | `a`, `b` | … |` row, by number.
fn table(lib: &str) -> Vec<(u32, String, Vec<String>)> {
    lib.lines()
        .filter_map(|l| {
            let row = l.strip_prefix("//! | ")?;
            let mut cells = row.split(" | ");
            let (number, name) = cells.next()?.split_once(". ")?;
            let number = number.parse().ok()?;
            let members = cells.next()?.split(", ").map(|m| m.trim().trim_matches('`').to_string()).collect();
            Some((number, name.to_string(), members))
        })
        .collect()
}

/// The source with comments, string and character literals blanked (newlines kept, so lines still
/// count), and each `#[cfg(test)]` item blanked with them.
fn code(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string(rest) {
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            let open = rest.iter().position(|&c| c == b'"').unwrap_or(0) + 1;
            for _ in 0..open {
                blank(&mut out, b[i]);
                i += 1;
            }
            while i < b.len() && !b[i..].starts_with(&close) {
                blank(&mut out, b[i]);
                i += 1;
            }
            for _ in 0..close.len().min(b.len() - i) {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if b[i] == b'"' {
            blank(&mut out, b[i]);
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                blank(&mut out, b[i]);
                i += 1;
            }
            if i < b.len() {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if b[i] == b'\'' && char_literal_len(rest) > 0 {
            for _ in 0..char_literal_len(rest) {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    let mut code = String::from_utf8_lossy(&out).into_owned();
    while let Some(at) = code.find("#[cfg(test)]") {
        let end = item_end(&code, at + "#[cfg(test)]".len());
        let blanked: String = code[at..end].chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect();
        code.replace_range(at..end, &blanked);
    }
    code
}

/// `r"…"`, `r#"…"#`, `br"…"`: how many `#`s close it (identifiers ending in `r` are not strings).
fn raw_string(rest: &[u8]) -> Option<usize> {
    let rest = rest.strip_prefix(b"b").unwrap_or(rest).strip_prefix(b"r")?;
    let hashes = rest.iter().take_while(|&&c| c == b'#').count();
    (rest.get(hashes) == Some(&b'"')).then_some(hashes)
}

/// The length of a character literal at the start (`'a'`, `'\n'`, `'é'`), or 0 for a lifetime.
fn char_literal_len(rest: &[u8]) -> usize {
    if rest.get(1) == Some(&b'\\') {
        return rest.iter().skip(2).position(|&c| c == b'\'').map_or(0, |p| p + 3);
    }
    let ch = std::str::from_utf8(&rest[1..rest.len().min(5)])
        .or_else(|e| std::str::from_utf8(&rest[1..1 + e.valid_up_to()]))
        .ok()
        .and_then(|s| s.chars().next());
    match ch {
        Some(c) if rest.get(1 + c.len_utf8()) == Some(&b'\'') => c.len_utf8() + 2,
        _ => 0,
    }
}

/// Where the item after an attribute ends: its `;` or its closing brace.
fn item_end(code: &str, from: usize) -> usize {
    let mut depth = 0usize;
    for (i, c) in code[from..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return from + i + 1;
                }
            }
            ';' if depth == 0 => return from + i + 1,
            _ => {}
        }
    }
    code.len()
}

/// The top-level modules a file's code names from the crate root (by their names or the names
/// they re-export there, `known`), each with the line it is on.
fn uses(code: &str, known: &BTreeMap<String, String>) -> Vec<(String, usize)> {
    let root = ["crate", "::"].concat();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut found = Vec::new();
    for (at, _) in code.match_indices(&root) {
        let after = &code[at + root.len()..];
        if let Some(group) = after.strip_prefix('{') {
            // A use tree: the first name of each of its branches.
            let mut depth = 0usize;
            let mut branch_start = true;
            let offset = at + root.len() + 1;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => branch_start = true,
                    c if branch_start && (c.is_alphanumeric() || c == '_') => {
                        let name: String =
                            group[i..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                        if let Some(module) = known.get(&name) {
                            found.push((module.clone(), line_of(offset + i)));
                        }
                        branch_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if let Some(module) = known.get(&name) {
                found.push((module.clone(), line_of(at)));
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The files `text` (the source of `file`) declares as `#[cfg(test)]` modules of their own, by a
/// `#[path = "…"]` or by name: test code, like a `#[cfg(test)]` item.
fn test_files(file: &Path, text: &str) -> Vec<PathBuf> {
    let dir = file.parent().unwrap();
    let stem = file.file_stem().unwrap().to_string_lossy();
    // A `mod x;` in src/a.rs is src/a/x.rs; in a mod.rs (or lib.rs), beside it.
    let own = if stem == "mod" || stem == "lib" { dir.to_path_buf() } else { dir.join(&*stem) };
    let mut found = Vec::new();
    for (at, _) in text.match_indices("#[cfg(test)]") {
        let rest = text[at + "#[cfg(test)]".len()..].trim_start();
        let (path, rest) = match rest.strip_prefix("#[path = \"") {
            Some(p) => match p.split_once("\"]") {
                Some((path, rest)) => (Some(path), rest.trim_start()),
                None => continue,
            },
            None => (None, rest),
        };
        let Some(name) = rest.strip_prefix("mod ").and_then(|r| r.split_once(';')).map(|(n, _)| n.trim()) else {
            continue;
        };
        found.push(match path {
            // A path attribute in src/a.rs is relative to src/; in a mod.rs, to its folder.
            Some(path) => dir.join(path),
            None if own.join(format!("{name}.rs")).is_file() => own.join(format!("{name}.rs")),
            None => own.join(name).join("mod.rs"),
        });
    }
    found
}

/// Every edge between the crate's top-level modules, with where it is.
fn edges(src: &Path, modules: &BTreeSet<String>, known: &BTreeMap<String, String>) -> Edges {
    let mut edges = Edges::new();
    for module in modules {
        let mut files = Vec::new();
        let file = src.join(format!("{module}.rs"));
        if file.is_file() {
            files.push(file);
        }
        if src.join(module).is_dir() {
            rust_files(&src.join(module), &mut files);
        }
        files.sort();
        let texts: Vec<(PathBuf, String)> =
            files.into_iter().map(|f| (f.clone(), std::fs::read_to_string(&f).unwrap())).collect();
        let tests: BTreeSet<PathBuf> = texts.iter().flat_map(|(f, text)| test_files(f, text)).collect();
        for (file, text) in texts.iter().filter(|(f, _)| !tests.contains(f)) {
            let at = file.strip_prefix(src).unwrap().display().to_string();
            for (to, line) in uses(&code(text), known) {
                if &to != module {
                    edges.entry(module.clone()).or_default().entry(to).or_default().push(format!("{at}:{line}"));
                }
            }
        }
    }
    edges
}

/// One circle among the modules, as its edges in order, if there is any.
fn circle(edges: &Edges) -> Option<Vec<(String, String)>> {
    fn visit(
        m: &str,
        edges: &Edges,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<(String, String)>> {
        if let Some(start) = path.iter().position(|p| p == m) {
            let mut ring: Vec<String> = path[start..].to_vec();
            ring.push(m.to_string());
            return Some(ring.windows(2).map(|w| (w[0].clone(), w[1].clone())).collect());
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for to in edges.get(m).into_iter().flat_map(|t| t.keys()) {
            if let Some(ring) = visit(to, edges, path, done) {
                return Some(ring);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges.keys().find_map(|m| visit(m, edges, &mut Vec::new(), &mut done))
}

#[test]
fn the_modules_keep_their_layers() {
    let src = src();
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let known = modules(&lib);
    let table = table(&lib);
    assert!(table.len() > 1, "lib.rs's doc has no layer table (rows `//! | N. name | `module`, … | … |`)");
    let mut layer = BTreeMap::new();
    for (number, name, members) in &table {
        for m in members {
            assert!(
                known.contains(m),
                "lib.rs's layer table names `{m}` (layer {number}, {name}), which lib.rs does not declare"
            );
            assert!(
                layer.insert(m.clone(), (*number, name.clone())).is_none(),
                "`{m}` is in two layers of lib.rs's table"
            );
        }
    }
    let unplaced: Vec<_> = known.iter().filter(|m| !layer.contains_key(*m)).collect();
    assert!(unplaced.is_empty(), "{unplaced:?} in no layer: add each to lib.rs's layer table");

    let edges = edges(&src, &known, &names(&lib));
    let mut up = Vec::new();
    for (from, tos) in &edges {
        for (to, at) in tos {
            let ((f, fname), (t, tname)) = (&layer[from], &layer[to]);
            if t > f {
                up.push(format!("{from} (layer {f}, {fname}) uses {to} (layer {t}, {tname}) at {}", at.join(", ")));
            }
        }
    }
    assert!(up.is_empty(), "a module uses one above it; move what it needs down, or it up:\n{}", up.join("\n"));

    if let Some(ring) = circle(&edges) {
        let said: Vec<_> = ring.iter().map(|(a, b)| format!("{a} -> {b} ({})", edges[a][b].join(", "))).collect();
        panic!("the modules use each other in a circle; cut one of these edges:\n{}", said.join("\n"));
    }
}

#[test]
fn uses_are_read_from_code_only() {
    let known: BTreeMap<String, String> =
        ["event", "store", "agent", "session"].map(|m| (m.to_string(), m.to_string())).into();
    let root = ["crate", "::"].concat();
    let text = format!(
        "use {root}{{\n    event::Event,\n    store::{{Store, Row}},\n}};\n\
         // {root}agent in a comment\n\
         let s = \"{root}agent in a string\";\n\
         let r = r#\"{root}agent\"#; let c = '\"'; let l: &'static str = \"\";\n\
         fn f<'a>() {{ {root}session::run() }}\n\
         #[cfg(test)]\nmod tests {{ use {root}agent; }}\n"
    );
    let found = uses(&code(&text), &known);
    assert_eq!(found, [("event".into(), 2), ("store".into(), 3), ("session".into(), 8)]);
}

#[test]
fn test_modules_of_their_own_are_test_code() {
    let src = src();
    let declared = |file: &str| test_files(&src.join(file), &std::fs::read_to_string(src.join(file)).unwrap());
    assert_eq!(declared("fence/npm.rs"), [src.join("fence/npm/tests.rs")]);
    assert_eq!(declared("digest/ledger.rs"), [src.join("digest/ledger/tests.rs")]);
    assert_eq!(declared("store/mod.rs"), [src.join("store/tests.rs")]);
    for files in [declared("fence/npm.rs"), declared("digest/ledger.rs"), declared("store/mod.rs")] {
        assert!(files.iter().all(|f| f.is_file()), "{files:?}");
    }
}

#[test]
fn a_circle_is_found_and_told_by_its_edges() {
    let mut edges = Edges::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        edges.entry(a.into()).or_default().insert(b.into(), vec![format!("{a}.rs:1")]);
    }
    let ring = circle(&edges).unwrap();
    assert_eq!(ring, [("a".into(), "b".into()), ("b".into(), "c".into()), ("c".into(), "a".into())]);
    edges.get_mut("c").unwrap().remove("a");
    assert_eq!(circle(&edges), None);
}

/// The production files (test modules of their own aside) of the core and the app's shell, with
/// their line counts, longest first.
fn production_lengths() -> Vec<(usize, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [root.join("src"), root.join("crates/nightshift-model/src"), root.join("src-tauri/src")] {
        rust_files(&dir, &mut files);
    }
    let tests: BTreeSet<PathBuf> =
        files.iter().flat_map(|f| test_files(f, &std::fs::read_to_string(f).unwrap_or_default())).collect();
    let mut lengths: Vec<(usize, PathBuf)> = files
        .into_iter()
        .filter(|f| !tests.contains(f))
        .map(|f| (std::fs::read_to_string(&f).unwrap().lines().count(), f))
        .collect();
    lengths.sort_by(|a, b| b.cmp(a));
    lengths
}

/// Past this a file holds more than one concern: split it by concern.
const MOST_LINES: usize = 700;

#[test]
fn no_production_file_is_past_700_lines() {
    let lengths = production_lengths();
    assert!(lengths.len() > 100 && lengths.iter().any(|(_, f)| f.ends_with("src-tauri/src/main.rs")), "{lengths:?}");
    assert!(!lengths.iter().any(|(_, f)| f.ends_with("detect/tests.rs")), "test modules are not counted");
    let long: Vec<String> =
        lengths.iter().filter(|(n, _)| *n > MOST_LINES).map(|(n, f)| format!("{} ({n})", f.display())).collect();
    assert!(long.is_empty(), "production files past {MOST_LINES} lines, to split by concern: {long:?}");
}

#[test]
fn a_use_through_the_crate_roots_reexports_is_a_use_of_its_module() {
    let lib = "pub mod event;\npub mod push;\npub mod supervisor;\n\
               pub use event::{Event, EventKind as Kind};\npub use supervisor::Supervisor;\n";
    let known = names(lib);
    assert_eq!(known.get("Supervisor").map(String::as_str), Some("supervisor"));
    assert_eq!(known.get("Kind").map(String::as_str), Some("event"));
    let root = ["crate", "::"].concat();
    let text = format!("pub fn follow(s: &{root}Supervisor, e: {root}Kind) {{}}\nuse {root}{{Event, push}};\n");
    let found = uses(&code(&text), &known);
    assert_eq!(found, [("supervisor".into(), 1), ("event".into(), 1), ("event".into(), 2), ("push".into(), 2)]);
}
