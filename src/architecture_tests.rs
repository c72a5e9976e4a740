// Test-only module: its parent includes it under #[cfg(test)].
//! The house rules of docs/architecture.md ("House rules"), checked on every `cargo test`
//! over the source of every crate of the workspace (`src/` and `crates/*/src/`):
//!
//! - no import cycle of more than two files (two files may use each other, as a module and
//!   its child do; no group of files tied in a loop may hold a third);
//! - no `Result` whose error is a `String` in library code but the command line's value parsers;
//! - no function body longer than 80 lines without a `// Long: <why>` comment;
//! - no `use` inside a function body in library code;
//! - a module with children is a folder with `mod.rs`;
//! - no `tests.rs`: unit tests sit beside their code.
//!
//! Test code (files reached through a `#[cfg(test)]` module, `#[cfg(test)]` items) is
//! exempt from the rules on code. The scanner is std only and reads the source as text: it
//! blanks comments and literals, follows `mod` declarations from each crate root to the
//! files (`foo.rs`, `foo/mod.rs`, `#[path]`), and reads the paths each file names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The longest function body (in lines, braces included) that needs no reason.
const LONG: usize = 80;

/// Functions over `LONG` lines without a `// Long:` reason. Each entry is a debt: split
/// the function (or say why it is long), then drop it here; the test fails on an entry
/// that is no longer long.
const LONG_ALLOWED: &[(&str, &str)] = &[];

/// The command line's clap value parsers: clap takes `fn(&str) -> Result<T, E>` with any
/// displayable `E`, and a `String` is what it prints as the argument's error.
const STRING_ERRORS_ALLOWED: &[(&str, &str)] = &[
    ("src/cli/mod.rs", "parse_timeout"),
    ("src/cli/mod.rs", "parse_usd"),
    ("src/cli/mod.rs", "parse_mcp_url"),
    ("src/cli/exec.rs", "parse_task_name"),
];

/// Files allowed a `use` inside a function body: none.
const USE_IN_BODY_ALLOWED_UNDER: &[&str] = &[];

/// Folders allowed a `tests.rs` or a `foo.rs` beside `foo/`: none.
const OLD_LAYOUT_ALLOWED_UNDER: &[&str] = &[];

#[test]
fn no_import_cycle_of_more_than_two_files() {
    let tree = Tree::read(&source_files());
    assert_no_long_cycle(&tree, |_| true);
}

#[test]
fn no_string_errors_in_library_code() {
    let files = source_files();
    let tree = Tree::read(&files);
    let mut problems = tree.problems.clone();
    for (file, source) in tree.library_files() {
        for (at, function) in string_errors(source) {
            let key = (file.as_str(), function.as_deref().unwrap_or(""));
            if STRING_ERRORS_ALLOWED.contains(&key) {
                continue;
            }
            problems.push(format!(
                "{file}:{}: Result<_, String> in {}",
                line_of(&source.text, at),
                function.as_deref().unwrap_or("a type")
            ));
        }
    }
    for &(file, function) in STRING_ERRORS_ALLOWED {
        let text = files.get(file).map_or("", String::as_str);
        if !text.contains(&format!("value_parser = {function}")) {
            problems.push(format!(
                "{file}: {function} is allowed a String error as a clap value parser, but no \
                 argument uses it as one"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "library errors are thiserror types (docs/architecture.md, Errors):\n{}",
        problems.join("\n")
    );
}

#[test]
fn long_functions_say_why() {
    let tree = Tree::read(&source_files());
    let mut problems = tree.problems.clone();
    let mut long = BTreeSet::new();
    for (file, source) in tree.library_files() {
        for function in long_functions(source) {
            long.insert((file.clone(), function.name.clone()));
            if function.reason || LONG_ALLOWED.contains(&(file.as_str(), function.name.as_str())) {
                continue;
            }
            problems.push(format!(
                "{file}:{}: fn {} spans {} lines: split it, or say why not in a `// Long: …` \
                 comment above it",
                function.line, function.name, function.lines
            ));
        }
    }
    for &(file, name) in LONG_ALLOWED {
        if !long.contains(&(file.to_string(), name.to_string())) {
            problems.push(format!(
                "{file}: fn {name} is no longer over {LONG} lines: drop it from LONG_ALLOWED"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn use_declarations_sit_at_the_top_of_a_module() {
    let tree = Tree::read(&source_files());
    let mut problems = tree.problems.clone();
    for (file, source) in tree.library_files() {
        if USE_IN_BODY_ALLOWED_UNDER
            .iter()
            .any(|allowed| file.starts_with(allowed))
        {
            continue;
        }
        for (at, function) in uses_in_function_bodies(source) {
            problems.push(format!(
                "{file}:{}: `use` inside fn {function}: move it to the top of the module",
                line_of(&source.text, at)
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn unit_tests_sit_beside_their_code() {
    let files = source_files();
    let problems: Vec<String> = files
        .keys()
        .filter(|file| *file == "tests.rs" || file.ends_with("/tests.rs"))
        .filter(|file| {
            !OLD_LAYOUT_ALLOWED_UNDER
                .iter()
                .any(|dir| file.starts_with(dir))
        })
        .map(|file| {
            format!(
                "{file}: unit tests go at the end of the file they test, or, when long, in a \
                 sibling `<file>_tests.rs` declared with #[cfg(test)] #[path = \"…\"] mod tests;"
            )
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_module_with_children_is_a_folder_with_mod_rs() {
    let files = source_files();
    let problems: Vec<String> = files
        .keys()
        .filter(|file| !OLD_LAYOUT_ALLOWED_UNDER.iter().any(|dir| file.starts_with(dir)))
        .filter_map(|file| {
            let folder = file.strip_suffix(".rs")?;
            let prefix = format!("{folder}/");
            files.keys().any(|f| f.starts_with(&prefix)).then(|| {
                format!("{file} beside {folder}/: move it to {folder}/mod.rs (or the folder's files into it)")
            })
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_source_file_is_reached_from_a_crate_root() {
    let files = source_files();
    let tree = Tree::read(&files);
    let mut problems = tree.problems.clone();
    for file in files.keys() {
        if !tree.files.contains_key(file) {
            problems.push(format!("{file}: no `mod` declaration reaches it"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn assert_no_long_cycle(tree: &Tree, keep: impl Fn(&str) -> bool) {
    let edges = tree.edges();
    let cycles = long_cycles(&edges, &keep);
    let mut report = tree.problems.clone();
    for component in &cycles {
        report.push(describe_cycle(component, &edges));
    }
    assert!(
        report.is_empty(),
        "import cycles of more than two files (a parent and its child may use each other, \
         nothing longer):\n{}",
        report.join("\n")
    );
}

// The source tree.

/// Every `.rs` file of the workspace's crates, by its path from the repository root with
/// `/` between parts (`src/agent/mod.rs`), and its text.
fn source_files() -> BTreeMap<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("src")];
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            dirs.push(src);
        }
    }
    let mut files = BTreeMap::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(root).unwrap();
                let name = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                files.insert(name, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    files
}

/// One source file as the checks see it.
struct Source {
    text: String,
    /// `text` with comments, literals and `#[cfg(test)]` items blanked: byte offsets and
    /// lines still match `text`.
    library: String,
    /// Reached through a `#[cfg(test)]` module: all of it is test code.
    test: bool,
    /// Which crate (its root file) and which module the file is.
    krate: String,
    module: Vec<String>,
    /// Inline modules (`mod name { … }`) of the library part: name path and body.
    inline: Vec<(Vec<String>, usize, usize)>,
}

/// The files of the workspace as modules: which file each module is, and what stood in
/// the checker's way (a declared module without a file).
struct Tree {
    files: BTreeMap<String, Source>,
    /// (crate root, module path) → file.
    modules: BTreeMap<(String, Vec<String>), String>,
    problems: Vec<String>,
}

impl Tree {
    fn read(files: &BTreeMap<String, String>) -> Tree {
        let mut tree = Tree {
            files: BTreeMap::new(),
            modules: BTreeMap::new(),
            problems: Vec::new(),
        };
        let roots = files
            .keys()
            .filter(|f| f.ends_with("src/lib.rs") || f.ends_with("src/main.rs"))
            .cloned()
            .collect::<Vec<_>>();
        for root in roots {
            let dir = parent_dir(&root).to_string();
            tree.add(files, &root, &root, Vec::new(), false, dir);
        }
        tree
    }

    /// Adds `file` as module `module` of `krate`, and the files its `mod` declarations name.
    fn add(
        &mut self,
        files: &BTreeMap<String, String>,
        file: &str,
        krate: &str,
        module: Vec<String>,
        test: bool,
        child_dir: String,
    ) {
        let text = files[file].clone();
        let code = code_only(&text);
        let library = if test {
            " ".repeat(code.len())
        } else {
            without_tests(&code)
        };
        let mut declared = Vec::new();
        let mut inline = Vec::new();
        module_declarations(&code, &text, 0, code.len(), &[], &mut declared, &mut inline);
        for (names, _, _) in &inline {
            let mut path = module.clone();
            path.extend(names.iter().cloned());
            self.modules
                .insert((krate.to_string(), path), file.to_string());
        }
        self.modules
            .insert((krate.to_string(), module.clone()), file.to_string());
        let inline_library = inline
            .iter()
            .filter(|(_, start, _)| library.as_bytes()[*start] != b' ')
            .cloned()
            .collect();
        self.files.insert(
            file.to_string(),
            Source {
                text,
                library,
                test,
                krate: krate.to_string(),
                module: module.clone(),
                inline: inline_library,
            },
        );
        for declaration in declared {
            let mut dir = child_dir.clone();
            for name in &declaration.within {
                dir = format!("{dir}/{name}");
            }
            let candidates = match &declaration.path {
                Some(path) => vec![normalise(&format!("{}/{path}", parent_dir(file)))],
                None => vec![
                    format!("{dir}/{}.rs", declaration.name),
                    format!("{dir}/{}/mod.rs", declaration.name),
                ],
            };
            let Some(found) = candidates.iter().find(|c| files.contains_key(*c)) else {
                self.problems.push(format!(
                    "{file}: cannot find the file of `mod {}` (tried {})",
                    declaration.name,
                    candidates.join(", ")
                ));
                continue;
            };
            let mut child = module.clone();
            child.extend(declaration.within.iter().cloned());
            child.push(declaration.name.clone());
            let own_dir = if declaration.path.is_some() || found.ends_with("/mod.rs") {
                parent_dir(found).to_string()
            } else {
                found.trim_end_matches(".rs").to_string()
            };
            self.add(
                files,
                found,
                krate,
                child,
                test || declaration.test,
                own_dir,
            );
        }
    }

    /// The library files (not test code), by path.
    fn library_files(&self) -> impl Iterator<Item = (&String, &Source)> {
        self.files.iter().filter(|(_, source)| !source.test)
    }

    /// file → file it names → where (`path:line`, the path named), for the library part of
    /// every file. A `mod` declaration is no edge: a parent owning a child does not use it.
    fn edges(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (file, source) in self.library_files() {
            let from = edges.entry(file.clone()).or_default();
            for (at, path) in named_paths(&source.library) {
                let mut scope = source.module.clone();
                // The innermost inline module around `at` is the scope of `self`/`super`.
                if let Some((names, _, _)) = source
                    .inline
                    .iter()
                    .filter(|(_, start, end)| *start <= at && at < *end)
                    .max_by_key(|(names, _, _)| names.len())
                {
                    scope.extend(names.iter().cloned());
                }
                let Some(target) = self.resolve(&source.krate, &scope, &path) else {
                    continue;
                };
                if &target != file {
                    from.entry(target).or_insert_with(|| {
                        format!("{file}:{} {}", line_of(&source.text, at), path.join("::"))
                    });
                }
            }
        }
        edges
    }

    /// The file of the deepest module `path` names from module `scope` of `krate`.
    fn resolve(&self, krate: &str, scope: &[String], path: &[String]) -> Option<String> {
        let mut module: Vec<String> = match path.first()?.as_str() {
            "crate" => Vec::new(),
            "self" | "super" => scope.to_vec(),
            _ => return None,
        };
        let mut rest = &path[1..];
        if path[0] == "super" {
            module.pop()?;
        }
        while rest.first().is_some_and(|s| s == "super") {
            module.pop()?;
            rest = &rest[1..];
        }
        for segment in rest {
            let mut deeper = module.clone();
            deeper.push(segment.clone());
            if !self
                .modules
                .contains_key(&(krate.to_string(), deeper.clone()))
            {
                break;
            }
            module = deeper;
        }
        self.modules.get(&(krate.to_string(), module)).cloned()
    }
}

/// A `mod name;` declaration: inside which inline modules, with which `#[path]`, and
/// whether under `#[cfg(test)]`.
struct Declaration {
    within: Vec<String>,
    name: String,
    path: Option<String>,
    test: bool,
}

/// The `mod` declarations and inline modules in `code[start..end]` at brace depth 0,
/// recursing into inline modules.
fn module_declarations(
    code: &str,
    text: &str,
    start: usize,
    end: usize,
    within: &[String],
    declared: &mut Vec<Declaration>,
    inline: &mut Vec<(Vec<String>, usize, usize)>,
) {
    let bytes = code.as_bytes();
    let mut depth = 0usize;
    let mut i = start;
    while i < end {
        match bytes[i] {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            _ if depth == 0 && word_at(code, i, "mod") => {
                let mut j = skip_space(code, i + 3);
                let name = ident_at(code, j);
                j = skip_space(code, j + name.len());
                if name.is_empty() {
                    i += 3;
                    continue;
                }
                let prefix = &code[item_start(code, i)..i];
                let raw_prefix = &text[item_start(code, i)..i];
                let test = prefix.contains("cfg(test)") || prefix.contains("cfg(all(test");
                match bytes.get(j) {
                    Some(b';') => {
                        declared.push(Declaration {
                            within: within.to_vec(),
                            name: name.to_string(),
                            path: path_attribute(raw_prefix),
                            test,
                        });
                        i = j;
                    }
                    Some(b'{') => {
                        let close = matching(code, j);
                        let mut names = within.to_vec();
                        names.push(name.to_string());
                        inline.push((names.clone(), j, close));
                        if !test {
                            module_declarations(code, text, j + 1, close, &names, declared, inline);
                        }
                        i = close;
                    }
                    _ => i += 3,
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// The value of a `#[path = "…"]` attribute in the text before an item.
fn path_attribute(prefix: &str) -> Option<String> {
    let at = prefix.find("#[path")?;
    let rest = &prefix[at..];
    let open = rest.find('"')? + 1;
    let close = open + rest[open..].find('"')?;
    Some(rest[open..close].to_string())
}

/// Where the item around `at` starts: after the previous `;`, `{` or `}`.
fn item_start(code: &str, at: usize) -> usize {
    code[..at]
        .rfind([';', '{', '}'])
        .map_or(0, |previous| previous + 1)
}

fn parent_dir(file: &str) -> &str {
    file.rfind('/').map_or("", |at| &file[..at])
}

/// `a/b/../c` → `a/c`.
fn normalise(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            _ => parts.push(part),
        }
    }
    parts.join("/")
}

// Lexing.

/// `text` with comments, string and character literals replaced by spaces (line breaks
/// kept), so that offsets and line numbers still match `text`.
fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut blank = |from: usize, to: usize| {
        for byte in &mut out[from..to.min(bytes.len())] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    };
    let ident_before = |i: usize| i > 0 && is_ident(bytes[i - 1]);
    let mut i = 0;
    while i < bytes.len() {
        let next = bytes.get(i + 1).copied();
        match bytes[i] {
            b'/' if next == Some(b'/') => {
                let end = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                blank(i, end);
                i = end;
            }
            b'/' if next == Some(b'*') => {
                let mut depth = 0;
                let mut j = i;
                while j < bytes.len() {
                    if bytes[j..].starts_with(b"/*") {
                        depth += 1;
                        j += 2;
                    } else if bytes[j..].starts_with(b"*/") {
                        depth -= 1;
                        j += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        j += 1;
                    }
                }
                blank(i, j);
                i = j;
            }
            b'r' if !ident_before(i)
                || (i >= 1 && bytes[i - 1] == b'b' && !ident_before(i - 1)) =>
            {
                let hashes = bytes[i + 1..].iter().take_while(|b| **b == b'#').count();
                if bytes.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let closing = format!("\"{}", "#".repeat(hashes));
                let body = i + 2 + hashes;
                let end = text[body..]
                    .find(&closing)
                    .map_or(bytes.len(), |n| body + n + closing.len());
                blank(i + 1, end);
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                blank(i, j + 1);
                i = j + 1;
            }
            b'\'' => {
                if next == Some(b'\\') {
                    let end = text[i + 3..]
                        .find('\'')
                        .map_or(bytes.len(), |n| i + 3 + n + 1);
                    blank(i, end);
                    i = end;
                } else if let Some(c) = text[i + 1..].chars().next()
                    && bytes.get(i + 1 + c.len_utf8()) == Some(&b'\'')
                {
                    let end = i + 2 + c.len_utf8();
                    blank(i, end);
                    i = end;
                } else {
                    i += 1; // a lifetime
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).unwrap()
}

/// `code` with every `#[cfg(test)]` item (a test module, a test-only function) blanked.
fn without_tests(code: &str) -> String {
    let mut out = code.as_bytes().to_vec();
    let mut from = 0;
    while let Some(found) = ["#[cfg(test)]", "#[cfg(all(test"]
        .iter()
        .filter_map(|attribute| code[from..].find(attribute))
        .min()
    {
        let start = from + found;
        let end = item_end(code, start);
        for byte in &mut out[start..end] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
        from = end;
    }
    String::from_utf8(out).unwrap()
}

/// The end of the item whose attributes start at `at`: after its `;` or its closing brace.
fn item_end(code: &str, at: usize) -> usize {
    let bytes = code.as_bytes();
    let mut i = at;
    let mut depth = 0usize;
    while i < bytes.len() {
        match bytes[i] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b';' if depth == 0 => return i + 1,
            b'{' if depth == 0 => return matching(code, i) + 1,
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

/// The offset of the brace closing the one at `open`.
fn matching(code: &str, open: usize) -> usize {
    let mut depth = 0usize;
    for (i, byte) in code.bytes().enumerate().skip(open) {
        match byte {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    code.len()
}

fn is_ident(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Whether the word `word` stands at `at` (not inside a longer identifier).
fn word_at(code: &str, at: usize, word: &str) -> bool {
    let bytes = code.as_bytes();
    code[at..].starts_with(word)
        && (at == 0 || !is_ident(bytes[at - 1]))
        && bytes.get(at + word.len()).is_none_or(|b| !is_ident(*b))
}

fn ident_at(code: &str, at: usize) -> &str {
    let len = code[at..].bytes().take_while(|b| is_ident(*b)).count();
    &code[at..at + len]
}

fn skip_space(code: &str, at: usize) -> usize {
    at + code[at..]
        .bytes()
        .take_while(u8::is_ascii_whitespace)
        .count()
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

// Paths.

/// Every path that starts with `crate`, `self` or `super` in `code`, with `use` groups
/// spread out (`use crate::{a::b, c}` is `crate::a::b` and `crate::c`), and where it stands.
/// Macro calls (`crate::say!`) and `pub(in crate::…)` name nothing used.
fn named_paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let bytes = code.as_bytes();
    let mut paths = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = ["crate", "self", "super"]
            .into_iter()
            .find(|word| word_at(code, i, word));
        let Some(word) = starts else {
            i += 1;
            continue;
        };
        let before = code[..i].trim_end();
        let after = skip_space(code, i + word.len());
        if before.ends_with("::")
            || before.ends_with('$')
            || before.ends_with("(in")
            || !code[after..].starts_with("::")
        {
            i += word.len();
            continue;
        }
        let (found, end) = use_tree(code, i, Vec::new());
        let is_macro = code[skip_space(code, end)..].starts_with('!');
        if !is_macro {
            paths.extend(found.into_iter().map(|path| (i, path)));
        }
        i = end.max(i + word.len());
    }
    paths
}

/// The paths of the use tree (or plain path) at `at`, each after `prefix`, and where the
/// tree ends.
fn use_tree(code: &str, at: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix;
    let mut i = skip_space(code, at);
    loop {
        match code.as_bytes().get(i) {
            Some(b'{') => {
                let mut paths = Vec::new();
                i += 1;
                loop {
                    i = skip_space(code, i);
                    match code.as_bytes().get(i) {
                        Some(b'}') | None => return (paths, i + 1),
                        Some(b',') => i += 1,
                        _ => {
                            let (inner, end) = use_tree(code, i, path.clone());
                            paths.extend(inner);
                            i = end.max(i + 1);
                        }
                    }
                }
            }
            Some(b'*') => return (vec![path], i + 1),
            _ => {
                let name = ident_at(code, i);
                if name.is_empty() {
                    return (vec![path], i);
                }
                path.push(name.to_string());
                i += name.len();
                let next = skip_space(code, i);
                if !code[next..].starts_with("::") {
                    return (vec![path], i);
                }
                i = skip_space(code, next + 2);
            }
        }
    }
}

// Cycles.

/// The strongly connected components of more than two files among the files `keep`
/// accepts (Tarjan's algorithm), each sorted.
fn long_cycles(
    edges: &BTreeMap<String, BTreeMap<String, String>>,
    keep: &impl Fn(&str) -> bool,
) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        edges: BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        components: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, node: &'a str) {
            let index = self.index.len();
            self.index.insert(node, index);
            self.low.insert(node, index);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.edges.get(node).cloned().unwrap_or_default() {
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    component.push(top.to_string());
                    if top == node {
                        break;
                    }
                }
                component.sort();
                self.components.push(component);
            }
        }
    }
    let mut tarjan = Tarjan {
        edges: edges
            .iter()
            .filter(|(from, _)| keep(from))
            .map(|(from, to)| {
                let to = to.keys().filter(|t| keep(t)).map(String::as_str).collect();
                (from.as_str(), to)
            })
            .collect(),
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    let nodes: Vec<&str> = tarjan.edges.keys().copied().collect();
    for node in nodes {
        if !tarjan.index.contains_key(node) {
            tarjan.visit(node);
        }
    }
    let mut components: Vec<_> = tarjan
        .components
        .into_iter()
        .filter(|component| component.len() > 2)
        .collect();
    components.sort();
    components
}

/// A component and the arrows inside it, one per line.
fn describe_cycle(
    component: &[String],
    edges: &BTreeMap<String, BTreeMap<String, String>>,
) -> String {
    let mut lines = vec![format!(
        "{} files: {}",
        component.len(),
        component.join(", ")
    )];
    for from in component {
        for (to, at) in &edges[from] {
            if component.contains(to) {
                lines.push(format!("  {from} → {to}   ({at})"));
            }
        }
    }
    lines.join("\n")
}

// Functions.

/// A function item with a body.
struct Function {
    name: String,
    /// Where the `fn` keyword and the body's braces stand.
    keyword: usize,
    open: usize,
    close: usize,
}

/// Every function with a body in `code` (nested ones too), in order.
fn functions(code: &str) -> Vec<Function> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !word_at(code, i, "fn") {
            i += 1;
            continue;
        }
        let name_at = skip_space(code, i + 2);
        let name = ident_at(code, name_at);
        if name.is_empty() {
            i += 2; // a function pointer type
            continue;
        }
        let mut depth = 0usize;
        let mut j = name_at + name.len();
        while j < bytes.len() {
            match bytes[j] {
                b'(' | b'[' => depth += 1,
                b')' | b']' => depth = depth.saturating_sub(1),
                b';' if depth == 0 => break,
                b'{' if depth == 0 => {
                    found.push(Function {
                        name: name.to_string(),
                        keyword: i,
                        open: j,
                        close: matching(code, j),
                    });
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        i = name_at + name.len();
    }
    found
}

/// A function over `LONG` lines: its name, line, length and whether a `// Long:` comment
/// says why.
struct LongFunction {
    name: String,
    line: usize,
    lines: usize,
    reason: bool,
}

fn long_functions(source: &Source) -> Vec<LongFunction> {
    let lines: Vec<&str> = source.text.lines().collect();
    functions(&source.library)
        .into_iter()
        .filter_map(|function| {
            let first = line_of(&source.text, function.open);
            let last = line_of(&source.text, function.close);
            let length = last - first + 1;
            if length <= LONG {
                return None;
            }
            let keyword = line_of(&source.text, function.keyword);
            // Above it: its comments and attributes, up to the previous item.
            let above = lines[..keyword - 1]
                .iter()
                .rev()
                .map(|line| line.trim())
                .take_while(|line| line.starts_with("//") || line.starts_with("#["));
            // Inside: the first lines of the body.
            let inside = lines[first - 1..(first + 3).min(lines.len())]
                .iter()
                .map(|line| line.trim());
            let reason = above.chain(inside).any(|line| line.starts_with("// Long:"));
            Some(LongFunction {
                name: function.name,
                line: keyword,
                lines: length,
                reason,
            })
        })
        .collect()
}

/// The innermost function whose signature or body holds `at`.
fn function_around(functions: &[Function], at: usize) -> Option<&Function> {
    functions
        .iter()
        .filter(|f| f.keyword <= at && at <= f.close)
        .min_by_key(|f| f.close - f.keyword)
}

/// Every `Result<_, String>` in the library part, with the function it is in.
fn string_errors(source: &Source) -> Vec<(usize, Option<String>)> {
    let code = &source.library;
    let functions = functions(code);
    let mut found = Vec::new();
    for (at, _) in code.match_indices("Result") {
        if !word_at(code, at, "Result") {
            continue;
        }
        let open = skip_space(code, at + "Result".len());
        if !code[open..].starts_with('<') {
            continue;
        }
        let arguments = generic_arguments(code, open);
        let is_string = |t: &str| matches!(t, "String" | "std::string::String" | "string::String");
        if arguments.len() == 2 && is_string(&arguments[1]) {
            found.push((at, function_around(&functions, at).map(|f| f.name.clone())));
        }
    }
    found
}

/// The generic arguments of the `<…>` opening at `open`, whitespace removed.
fn generic_arguments(code: &str, open: usize) -> Vec<String> {
    let bytes = code.as_bytes();
    let mut arguments = vec![String::new()];
    let mut depth = 0usize;
    for i in open..bytes.len() {
        let byte = bytes[i];
        match byte {
            b'<' | b'(' | b'[' => depth += 1,
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b'>' | b')' | b']' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            b',' if depth == 1 => {
                arguments.push(String::new());
                continue;
            }
            _ => {}
        }
        if depth >= 1
            && !(depth == 1 && byte == b'<' && i == open)
            && !byte.is_ascii_whitespace()
            && let Some(last) = arguments.last_mut()
        {
            last.push(byte as char);
        }
    }
    arguments.retain(|argument| !argument.is_empty()); // a trailing comma
    arguments
}

/// Every `use` inside a function body of the library part, with the function's name.
fn uses_in_function_bodies(source: &Source) -> Vec<(usize, String)> {
    let code = &source.library;
    let functions = functions(code);
    let mut found = Vec::new();
    for (at, _) in code.match_indices("use") {
        if !word_at(code, at, "use") || code[at + 3..].starts_with('<') {
            continue;
        }
        if let Some(function) = functions.iter().find(|f| f.open < at && at < f.close) {
            found.push((at, function.name.clone()));
        }
    }
    found
}

// The checker's own tests.

mod checker {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> Tree {
        let files = files
            .iter()
            .map(|(path, text)| (path.to_string(), text.to_string()))
            .collect();
        Tree::read(&files)
    }

    fn arrows(tree: &Tree) -> Vec<(String, String)> {
        let mut arrows = Vec::new();
        for (from, to) in tree.edges() {
            for to in to.keys() {
                arrows.push((from.clone(), to.clone()));
            }
        }
        arrows
    }

    fn arrow(from: &str, to: &str) -> (String, String) {
        (from.to_string(), to.to_string())
    }

    #[test]
    fn each_form_of_import_is_an_arrow_and_a_mod_declaration_is_not() {
        let tree = tree(&[
            ("src/lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\n"),
            // crate:: paths in code, to a module file and to an item of one.
            (
                "src/a/mod.rs",
                "mod child;\nmod other;\nfn f() { crate::b::g(); }\n",
            ),
            // A child's `super::` is an arrow to its parent; `self::` to its own child.
            (
                "src/a/child.rs",
                "use super::Thing;\nmod grand;\nuse self::grand::X;\n",
            ),
            ("src/a/child/grand.rs", "pub struct X;\n"),
            // `use super::{…}` groups, spread; `super::super::`.
            (
                "src/a/other.rs",
                "use super::{child::Y, Z};\nfn g() { super::super::c::h() }\n",
            ),
            // `use crate::{…}` groups with nested groups.
            ("src/b.rs", "use crate::{c::{self, x}, d::y};\n"),
            // #[path] attributes and foo.rs + foo/ children.
            (
                "src/c.rs",
                "#[path = \"elsewhere.rs\"]\nmod moved;\nmod kid;\n",
            ),
            ("src/elsewhere.rs", "use crate::d;\n"),
            ("src/c/kid.rs", "use crate::b;\n"),
            // Test code, comments, strings, macros and pub(in …) name nothing.
            (
                "src/d.rs",
                "// crate::a::f\npub(in crate::b) fn f() { let _ = \"crate::c\"; crate::say!(); }\n#[cfg(test)]\nmod tests { use crate::a; }\n",
            ),
        ]);
        assert!(tree.problems.is_empty(), "{:?}", tree.problems);
        assert_eq!(
            arrows(&tree),
            [
                arrow("src/a/child.rs", "src/a/child/grand.rs"),
                arrow("src/a/child.rs", "src/a/mod.rs"),
                arrow("src/a/mod.rs", "src/b.rs"),
                arrow("src/a/other.rs", "src/a/child.rs"),
                arrow("src/a/other.rs", "src/a/mod.rs"),
                arrow("src/a/other.rs", "src/c.rs"),
                arrow("src/b.rs", "src/c.rs"),
                arrow("src/b.rs", "src/d.rs"),
                arrow("src/c/kid.rs", "src/b.rs"),
                arrow("src/elsewhere.rs", "src/d.rs"),
            ]
        );
    }

    #[test]
    fn inline_modules_are_scopes_of_their_file() {
        let tree = tree(&[
            ("src/lib.rs", "mod a;\nmod b;\n"),
            (
                "src/a.rs",
                "mod inner {\n    use super::super::b::X;\n    use super::Y;\n}\n",
            ),
            ("src/b.rs", "pub struct X;\n"),
        ]);
        assert_eq!(arrows(&tree), [arrow("src/a.rs", "src/b.rs")]);
    }

    #[test]
    fn a_planted_cycle_of_three_is_found_and_a_pair_is_not() {
        let tree = tree(&[
            ("src/lib.rs", "mod a;\nmod b;\nmod c;\nmod p;\n"),
            ("src/a.rs", "use crate::b::X;\n"),
            ("src/b.rs", "fn f() { super::c::g() }\n"),
            ("src/c.rs", "use crate::{a::Z};\n"),
            ("src/p/mod.rs", "mod q;\nuse self::q::Q;\n"),
            ("src/p/q.rs", "use super::P;\n"),
        ]);
        let edges = tree.edges();
        let cycles = long_cycles(&edges, &|_: &str| true);
        assert_eq!(cycles, [["src/a.rs", "src/b.rs", "src/c.rs"]]);
        let described = describe_cycle(&cycles[0], &edges);
        assert!(
            described.contains("src/b.rs → src/c.rs   (src/b.rs:1 super::c::g)"),
            "{described}"
        );
        assert!(long_cycles(&edges, &|f: &str| f != "src/b.rs").is_empty());
    }

    #[test]
    fn a_pair_is_no_long_cycle_but_pairs_around_one_file_are() {
        let pair = tree(&[
            ("src/lib.rs", "mod a;\nmod b;\n"),
            ("src/a.rs", "use crate::b::B;\n"),
            ("src/b.rs", "use crate::a::A;\n"),
        ]);
        assert!(long_cycles(&pair.edges(), &|_: &str| true).is_empty());
        // A hub that uses two files which use it ties all three together: one of them
        // changed can ripple through the hub to the other.
        let star = tree(&[
            ("src/lib.rs", "mod hub;\nmod a;\nmod b;\n"),
            ("src/hub.rs", "use crate::a::A;\nuse crate::b::B;\n"),
            ("src/a.rs", "use crate::hub::H;\n"),
            ("src/b.rs", "use crate::hub::H;\n"),
        ]);
        assert_eq!(long_cycles(&star.edges(), &|_: &str| true).len(), 1);
        let ring = tree(&[
            ("src/lib.rs", "mod a;\nmod b;\nmod c;\n"),
            ("src/a.rs", "use crate::{b::B, c::C};\n"),
            ("src/b.rs", "use crate::{a::A, c::C};\n"),
            ("src/c.rs", "use crate::{a::A, b::B};\n"),
        ]);
        assert_eq!(long_cycles(&ring.edges(), &|_: &str| true).len(), 1);
    }

    #[test]
    fn a_missing_module_file_is_a_problem() {
        let tree = tree(&[("src/lib.rs", "mod gone;\n")]);
        assert_eq!(tree.problems.len(), 1, "{:?}", tree.problems);
    }

    fn source(text: &str) -> Source {
        let tree = tree(&[("src/lib.rs", text)]);
        tree.files.into_values().next().unwrap()
    }

    #[test]
    fn string_errors_are_found_over_several_lines_and_nowhere_else() {
        let found = string_errors(&source(
            "fn a() -> Result<(), String> {}\n\
             fn b(\n    x: u8,\n) -> Result<\n    Vec<(u8, String)>,\n    String,\n> {}\n\
             fn c() -> io::Result<String> {}\n\
             fn d() -> Result<String, Error> {}\n\
             fn e(f: impl Fn() -> u8) -> Result<Box<dyn Fn(u8) -> String>, E> {}\n\
             // fn f() -> Result<(), String>\n\
             #[cfg(test)]\nmod tests { fn g() -> Result<(), String> {} }\n",
        ));
        let names: Vec<_> = found.into_iter().map(|(_, f)| f.unwrap()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn long_functions_are_measured_from_brace_to_brace_and_may_say_why() {
        let body = "    x();\n".repeat(LONG - 2);
        let text = format!(
            "fn short() {{\n{body}}}\n\
             fn long() {{\n{body}    x();\n}}\n\
             /// Docs.\n// Long: a table.\n#[inline]\nfn excused() {{\n{body}    x();\n}}\n\
             fn inside() {{\n    // Long: one match.\n{body}}}\n"
        );
        let found = long_functions(&source(&text));
        let summary: Vec<_> = found
            .iter()
            .map(|f| (f.name.as_str(), f.lines, f.reason))
            .collect();
        assert_eq!(
            summary,
            [
                ("long", LONG + 1, false),
                ("excused", LONG + 1, true),
                ("inside", LONG + 1, true)
            ]
        );
    }

    #[test]
    fn uses_in_bodies_are_found() {
        let found = uses_in_function_bodies(&source(
            "use a::b;\nfn f() {\n    use c::d;\n    let user = 1;\n}\nfn g() -> impl Sized + use<> {}\n",
        ));
        let names: Vec<_> = found.into_iter().map(|(_, f)| f).collect();
        assert_eq!(names, ["f"]);
    }

    #[test]
    fn comments_and_literals_are_blanked_in_place() {
        let text =
            "let a = 'x'; let b: &'static str = r#\"crate::\"#; /* c /* d */ */ let e = b'\\'';\n";
        let code = code_only(text);
        assert_eq!(code.len(), text.len());
        assert!(!code.contains("crate"));
        assert!(code.contains("&'static str"));
        assert!(code.contains("let e"));
        assert!(!code.contains("/*"));
    }
}
