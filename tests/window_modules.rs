//! The window's ES modules (`ui/js`) import in one direction: from the entry (`main.js`) down to the
//! views, then the core. No two import each other, even by a detour; a failure names the circle.

use std::collections::{BTreeMap, BTreeSet};

/// Each module's imports of its siblings (`import … from "./x.js"`), by file name.
fn imports(dir: &std::path::Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).filter(|n| n.ends_with(".js")) else { continue };
        let text = std::fs::read_to_string(&path).unwrap();
        let from: BTreeSet<String> = text
            .split("from \"./")
            .skip(1)
            .filter_map(|rest| rest.split_once('"').map(|(m, _)| m.to_string()))
            .collect();
        graph.insert(name.to_string(), from);
    }
    graph
}

/// A circle in `graph`, if any: the modules around it, the first repeated at the end.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn walk(
        at: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == at) {
            let mut found = path[i..].to_vec();
            found.push(at.to_string());
            return Some(found);
        }
        if !done.insert(at.to_string()) {
            return None;
        }
        path.push(at.to_string());
        for next in graph.get(at).into_iter().flatten() {
            if let Some(found) = walk(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|start| walk(start, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_windows_modules_import_in_one_direction() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/js");
    let graph = imports(&dir);
    assert!(graph.len() >= 10 && graph["main.js"].contains("core.js"), "{graph:?}");
    assert_eq!(circle(&graph), None, "the window's modules import each other");
    let importers: Vec<&String> = graph.iter().filter(|(_, to)| to.contains("main.js")).map(|(m, _)| m).collect();
    assert!(importers.is_empty(), "the entry is imported by {importers:?}");
}

#[test]
fn a_circle_by_a_detour_is_found() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    let found = circle(&graph(&[("main.js", "list.js"), ("list.js", "session.js"), ("session.js", "list.js")]));
    assert_eq!(found, Some(["list.js", "session.js", "list.js"].map(String::from).to_vec()));
    assert_eq!(circle(&graph(&[("main.js", "list.js"), ("main.js", "core.js"), ("list.js", "core.js")])), None);
}
