//! The code's layout as docs/architecture.md promises it: no module of any crate uses,
//! directly or through others, a module that uses it back (a cycle makes a module
//! impossible to read, test or move alone).

#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a failed unwrap is a failed test, and a scenario reads best whole"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path inside its crate (`["scenarios", "driver"]`; empty for the crate root).
type Module = Vec<String>;

fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel = path.strip_prefix(src).expect("prefix").with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            out.insert(parts, path);
        }
    }
    out
}

/// The text of a file without comments and without its unit tests.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("read");
    let text = text
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default()
        .to_owned();
    text.lines()
        .map(|l| match l.find("//") {
            Some(at) => &l[..at],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path written after `start` in `text`: `crate::a::b` gives `[a, b]`, and
/// `crate::{a::b, c}` gives `[a, b]` and `[c]`.
fn paths_after(text: &str, start: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(start) {
        let begin = from + at;
        from = begin + start.len();
        if text[..begin].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let rest = &text[from..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find("};").or_else(|| group.find('}')).unwrap_or(0);
            for item in group[..end].split(',') {
                let segs: Vec<String> = item
                    .split("::")
                    .map(|s| s.trim().trim_matches(|c| c == '{' || c == '}').trim())
                    .take_while(|s| !s.is_empty() && s.chars().all(is_ident))
                    .map(str::to_owned)
                    .collect();
                if !segs.is_empty() {
                    out.push(segs);
                }
            }
            continue;
        }
        let mut segs = Vec::new();
        let mut rest = rest;
        loop {
            let ident: String = rest.chars().take_while(|c| is_ident(*c)).collect();
            if ident.is_empty() {
                break;
            }
            rest = &rest[ident.len()..];
            segs.push(ident);
            match rest.strip_prefix("::") {
                Some(r) => rest = r,
                None => break,
            }
        }
        if !segs.is_empty() {
            out.push(segs);
        }
    }
    out
}

/// The module a path names: its longest prefix that is a module of the crate.
fn resolve(all: &BTreeMap<Module, PathBuf>, path: &[String]) -> Option<Module> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|m| all.contains_key(m))
}

fn dependencies(all: &BTreeMap<Module, PathBuf>) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut deps = BTreeMap::new();
    for (module, file) in all {
        let text = code(file);
        let parent: Module = module[..module.len().saturating_sub(1)].to_vec();
        let mut targets: Vec<Vec<String>> = paths_after(&text, "crate::");
        for p in paths_after(&text, "super::") {
            targets.push(parent.iter().cloned().chain(p).collect());
        }
        // A parent naming a child (`child::item`).
        for line in text.lines() {
            let line = line.trim();
            let Some(child) = line
                .strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("pub(crate) mod "))
                .or_else(|| line.strip_prefix("mod "))
                .and_then(|r| r.strip_suffix(';'))
            else {
                continue;
            };
            for p in paths_after(&text, &format!("{child}::")) {
                let mut full = module.clone();
                full.push(child.to_owned());
                full.extend(p);
                targets.push(full);
            }
        }
        let set: BTreeSet<Module> = targets
            .iter()
            .filter_map(|t| resolve(all, t))
            .filter(|t| t != module && !t.is_empty())
            .collect();
        deps.insert(module.clone(), set);
    }
    deps
}

/// A cycle through `start`, if there is one.
fn cycle_through(deps: &BTreeMap<Module, BTreeSet<Module>>, start: &Module) -> Option<Vec<Module>> {
    let mut stack: Vec<(Module, Vec<Module>)> = vec![(start.clone(), vec![start.clone()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in deps.get(&at).into_iter().flatten() {
            if next == start {
                return Some(path);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

#[test]
fn no_crate_has_module_cycles() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for krate in std::fs::read_dir(&crates).expect("crates").flatten() {
        let src = krate.path().join("src");
        if !src.is_dir() {
            continue;
        }
        let all = modules(&src);
        assert!(all.len() > 1, "{}: no modules found", src.display());
        let deps = dependencies(&all);
        for module in all.keys() {
            if let Some(cycle) = cycle_through(&deps, module) {
                let names: Vec<String> = cycle.iter().map(|m| m.join("::")).collect();
                found.push(format!(
                    "{}: {} -> {}",
                    krate.file_name().to_string_lossy(),
                    names.join(" -> "),
                    names[0]
                ));
            }
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

#[test]
fn the_checker_sees_a_cycle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).expect("mkdir");
    std::fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\n").expect("write");
    std::fs::write(src.join("a/mod.rs"), "pub mod c;\nuse crate::b::X;\n").expect("write");
    std::fs::write(src.join("a/c.rs"), "use super::super::b::Y;\n").expect("write");
    std::fs::write(src.join("b.rs"), "use crate::{a::c::Z, a};\n").expect("write");
    let all = modules(src);
    let deps = dependencies(&all);
    let a = vec!["a".to_owned()];
    let b = vec!["b".to_owned()];
    assert!(deps[&a].contains(&b), "{deps:?}");
    assert!(cycle_through(&deps, &a).is_some(), "{deps:?}");
    let ac = vec!["a".to_owned(), "c".to_owned()];
    assert!(cycle_through(&deps, &ac).is_some(), "{deps:?}");
}
