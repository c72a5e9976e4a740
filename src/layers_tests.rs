//! The module layering of docs/architecture.md, checked: a top-level module may use only
//! modules of a lower layer, so no import cycle can form and a lower layer never learns
//! of a higher one. Test code (`tests.rs`, `*_tests.rs`, `#[cfg(test)]` modules) may
//! cross layers: it builds whole pieces to exercise one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every top-level module and its layer. A new module must be placed here (and in
/// docs/architecture.md) before it compiles into a passing test run.
const LAYERS: &[(&str, u8)] = &[
    // Foundations: small, pure, used everywhere.
    ("digest", 0),
    ("exit", 0),
    ("http_client", 0),
    ("output", 0),
    ("message", 0),
    ("secret_names", 0),
    // Plain data at the bottom: what a task is, what a run leaves behind.
    ("spec", 1),
    ("record", 1),
    // The machine: the OS sandbox and the workspace on disk.
    ("sandbox", 2),
    ("workspace", 2),
    // Judging and talking: the permission policy, the model providers.
    ("policy", 3),
    ("model", 3),
    // The tools, which describe themselves to the policy.
    ("tools", 4),
    // Hooks: user commands at points of the loop, run like the agent's commands.
    ("hooks", 4),
    // The loop.
    ("agent", 5),
    ("mcp", 5),
    // Tasks, batches, artifacts; the benchmark harness.
    ("run", 6),
    ("bench", 6),
    // The command line.
    ("cli", 7),
    ("commands", 8),
];

#[test]
fn top_level_modules_use_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let mut problems = Vec::new();
    for module in top_level_modules(&src) {
        let Some(&layer) = layers.get(module.as_str()) else {
            problems.push(format!(
                "src/{module}: a top-level module missing from LAYERS in src/layers_tests.rs"
            ));
            continue;
        };
        for file in module_files(&src, &module) {
            let text = std::fs::read_to_string(&file).unwrap();
            for used in crate_modules_used(non_test_part(&text)) {
                let Some(&used_layer) = layers.get(used.as_str()) else {
                    continue; // a macro (`crate::say!`) or an item of lib.rs
                };
                if used != module && used_layer >= layer {
                    problems.push(format!(
                        "{}: {module} (layer {layer}) uses {used} (layer {used_layer})",
                        file.strip_prefix(&src).unwrap().display()
                    ));
                }
            }
        }
    }
    problems.sort();
    problems.dedup();
    assert!(
        problems.is_empty(),
        "layering broken (see docs/architecture.md):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checker_sees_each_form_of_import() {
    let text = "use crate::policy::Rule;\nuse crate::{record::{Event, Redactor}, spec};\nfn f() { crate::workspace::diff::quote_path(b\"\"); }\n#[cfg(test)]\nmod tests { use crate::agent::x; }\n";
    let used = crate_modules_used(non_test_part(text));
    assert_eq!(used, ["policy", "record", "spec", "workspace"]);
}

fn top_level_modules(src: &Path) -> Vec<String> {
    let mut modules: Vec<String> = std::fs::read_dir(src)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_string();
            if path.is_dir() {
                Some(name)
            } else {
                name.strip_suffix(".rs").map(str::to_string)
            }
        })
        // The crate roots, and test files such as this one.
        .filter(|name| !matches!(name.as_str(), "lib" | "main") && !name.ends_with("_tests"))
        .collect();
    modules.sort();
    modules.dedup();
    modules
}

/// The source files of `module` that are not test files.
fn module_files(src: &Path, module: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let file = src.join(format!("{module}.rs"));
    if file.is_file() {
        files.push(file);
    }
    let mut dirs = vec![src.join(module)];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "tests" {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") && name != "tests.rs" && !name.ends_with("_tests.rs") {
                files.push(path);
            }
        }
    }
    files
}

/// The file up to its first `#[cfg(test)]` (test modules sit at the end of a file).
fn non_test_part(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |at| &text[..at])
}

/// The top-level modules named by `crate::…` paths and `use crate::{…}` groups in `text`.
fn crate_modules_used(text: &str) -> Vec<String> {
    let mut used = Vec::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Only the first segment of each comma-separated path: `{a::{b, c}, d}`.
            let mut depth = 0;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && (c.is_ascii_alphabetic() || c == '_') => {
                        used.push(ident(&group[i..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident(rest);
            // `$crate::` in macros and `crate::say!` name no module.
            if !name.is_empty() && !rest[name.len()..].starts_with('!') {
                used.push(name);
            }
        }
    }
    used.sort();
    used.dedup();
    used
}
