//! HARNESS-8: the module graph is layered. Every `crate::<module>` path in a top-level module's code (comments and
//! unit-test modules aside) is an edge; the graph of top-level modules has no cycle, so each folder only reaches
//! the ones below it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeMap<String, Vec<String>>>;

fn scan(dir: &Path, src: &Path, graph: &mut Graph) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            scan(&path, src, graph);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(src).unwrap().to_string_lossy().into_owned();
        let top = rel.split('/').next().unwrap().trim_end_matches(".rs").to_owned();
        if top == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
        for (n, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            for (i, _) in line.match_indices("crate::") {
                let name: String = line[i + 7..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
                if name.is_empty() || name == top || name == "error" {
                    continue;
                }
                let at = graph.entry(top.clone()).or_default().entry(name).or_default();
                at.push(format!("{rel}:{}", n + 1));
            }
        }
    }
}

/// A cycle through `from`, as the modules on it, when there is one.
fn cycle(graph: &Graph, from: &str) -> Option<Vec<String>> {
    fn walk(graph: &Graph, at: &str, from: &str, path: &mut Vec<String>, seen: &mut BTreeSet<String>) -> bool {
        for next in graph.get(at).map(|e| e.keys()).into_iter().flatten() {
            if next == from {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, next, from, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![from.to_owned()];
    walk(graph, from, from, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn harness_8_no_import_cycle_crosses_top_level_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph = Graph::new();
    scan(&src, &src, &mut graph);
    assert!(graph.get("agent").is_some_and(|e| e.contains_key("select")), "the scan sees imports: {graph:?}");
    let mut found = Vec::new();
    for module in graph.keys() {
        if let Some(path) = cycle(&graph, module) {
            let hops: Vec<String> = path
                .iter()
                .zip(path.iter().skip(1).chain([&path[0]]))
                .map(|(a, b)| format!("{a} -> {b} ({})", graph[a][b][0]))
                .collect();
            found.push(hops.join(", "));
        }
    }
    assert!(found.is_empty(), "import cycles between top-level modules:\n{}", found.join("\n"));
}
