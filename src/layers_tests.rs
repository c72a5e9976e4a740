// Test-only module: its parent includes it under #[cfg(test)].
//! The module layering of docs/architecture.md, checked: a top-level module may use only
//! modules of a lower layer, so no import cycle can form and a lower layer never learns
//! of a higher one. Test code (`tests.rs`, `*_tests.rs`, `#[cfg(test)]` modules) may
//! cross layers: it builds whole pieces to exercise one.
//!
//! The lower layers that became workspace crates keep their layers here (`CRATES`): the
//! binary's modules still name them (`crate::policy::…` through lib.rs's re-exports, or
//! `drover_paths::…` directly), and a crate's own dependencies must point down too. That
//! no crate uses the binary the compiler already ensures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every top-level module and its layer. A new module must be placed here (and in
/// docs/architecture.md) before it compiles into a passing test run.
const LAYERS: &[(&str, u8)] = &[
    // Foundations: small, pure, used everywhere.
    ("digest", 0),
    ("exit", 0),
    ("http_client", 0),
    // The machine: the OS sandbox and the workspace on disk.
    ("sandbox", 2),
    ("workspace", 2),
    // Talking: the model providers.
    ("model", 3),
    // The tools, which describe themselves to the policy.
    ("tools", 4),
    // Hooks: user commands at points of the loop, run like the agent's commands.
    ("hooks", 4),
    // The loop.
    ("agent", 5),
    ("mcp", 5),
    // The egress proxy of commands under rules naming hosts, behind the sandbox's
    // `NetworkOpener`.
    ("network", 5),
    // Tasks, batches, artifacts; the benchmark harness.
    ("run", 6),
    ("bench", 6),
    // After a run, outside it: pushes what a run's artifacts hold (git through
    // `workspace::repo`'s hardened runner, the spec's ref rules).
    ("publish", 6),
    // The command line.
    ("cli", 7),
    ("commands", 8),
];

/// Every workspace crate under crates/: its package name, the name lib.rs re-exports it
/// under as a top-level module (None: used by its own name, or through a module), and its
/// layer. A new crate must be placed here (and in docs/architecture.md).
const CRATES: &[(&str, Option<&str>, u8)] = &[
    // Foundations: pure, no drover type.
    ("drover-shell", None, 0),
    ("drover-paths", None, 0),
    ("drover-message", Some("message"), 0),
    ("drover-output", Some("output"), 0),
    // What a task is; what a run leaves behind.
    ("drover-spec", Some("spec"), 1),
    ("drover-record", Some("record"), 1),
    // Judging calls.
    ("drover-policy", Some("policy"), 3),
    // The egress proxy: judges by the policy's network rules.
    ("drover-proxy", None, 4),
];

/// The layer of every name a module of the binary may use: its top-level modules, the
/// crates' re-exported module names, and the crates' own names (`drover_paths`).
fn layers() -> BTreeMap<String, u8> {
    let mut layers: BTreeMap<String, u8> = LAYERS
        .iter()
        .map(|&(module, layer)| (module.to_string(), layer))
        .collect();
    for &(package, module, layer) in CRATES {
        layers.insert(package.replace('-', "_"), layer);
        if let Some(module) = module {
            layers.insert(module.to_string(), layer);
        }
    }
    layers
}

#[test]
fn top_level_modules_use_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layers = layers();
    let modules = top_level_modules(&src);
    let mut problems = Vec::new();
    for (module, _) in LAYERS {
        if !modules.iter().any(|m| m == module) {
            problems.push(format!(
                "{module}: in LAYERS in src/layers_tests.rs but no module of src/"
            ));
        }
    }
    for module in modules {
        let Some(&layer) = layers.get(module.as_str()) else {
            problems.push(format!(
                "src/{module}: a top-level module missing from LAYERS in src/layers_tests.rs"
            ));
            continue;
        };
        for file in module_files(&src, &module) {
            let text = std::fs::read_to_string(&file).unwrap();
            let code = non_test_part(&text);
            let mut used_names = crate_modules_used(code);
            used_names.extend(workspace_crates_used(code));
            for used in used_names {
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
fn each_crate_is_re_exported_and_depends_only_on_lower_crates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let layers: BTreeMap<&str, u8> = CRATES
        .iter()
        .map(|&(package, _, layer)| (package, layer))
        .collect();
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let mut problems = Vec::new();
    let mut dirs: Vec<String> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    for dir in dirs {
        let Some(&layer) = layers.get(dir.as_str()) else {
            problems.push(format!(
                "crates/{dir}: a crate missing from CRATES in src/layers_tests.rs"
            ));
            continue;
        };
        let module = CRATES.iter().find(|c| c.0 == dir).and_then(|c| c.1);
        let crate_name = dir.replace('-', "_");
        if let Some(module) = module
            && !lib.contains(&format!("use {crate_name} as {module};"))
        {
            problems.push(format!(
                "src/lib.rs: {dir} is not re-exported as `{module}`"
            ));
        }
        let manifest =
            std::fs::read_to_string(root.join("crates").join(&dir).join("Cargo.toml")).unwrap();
        for used in drover_dependencies(&manifest) {
            match layers.get(used.as_str()) {
                Some(&used_layer) if used_layer < layer => {}
                Some(&used_layer) => problems.push(format!(
                    "crates/{dir} (layer {layer}) depends on {used} (layer {used_layer})"
                )),
                None => problems.push(format!(
                    "crates/{dir} depends on {used}, which is no crate of CRATES (the binary?)"
                )),
            }
        }
    }
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
    let text = "use drover_paths as paths;\nfn f() { drover_spec::load(p); drover_alive(1); }\n";
    assert_eq!(workspace_crates_used(text), ["drover_paths", "drover_spec"]);
    let manifest = "[dependencies]\ndrover-spec = { path = \"../drover-spec\" }\nregex = \"1\"\n\n[dev-dependencies]\ndrover = { path = \"../..\" }\n";
    assert_eq!(drover_dependencies(manifest), ["drover-spec"]);
}

/// The workspace crates of `CRATES` that `text` names by their own name (`drover_paths::`,
/// `use drover_paths as …`).
fn workspace_crates_used(text: &str) -> Vec<String> {
    CRATES
        .iter()
        .map(|&(package, _, _)| package.replace('-', "_"))
        .filter(|name| {
            text.contains(&format!("{name}::"))
                || text.contains(&format!("use {name} as "))
                || text.contains(&format!("use {name};"))
        })
        .collect()
}

/// The `drover…` packages of a manifest's `[dependencies]` table (not dev-dependencies:
/// test code may cross layers).
fn drover_dependencies(manifest: &str) -> Vec<String> {
    let mut in_dependencies = false;
    let mut used = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
        } else if in_dependencies
            && let Some((name, _)) = line.split_once('=')
            && name.trim().starts_with("drover")
        {
            used.push(name.trim().to_string());
        }
    }
    used
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
