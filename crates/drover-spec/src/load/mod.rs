//! Reading spec files: YAML parsing with budgets, cross-field validation, and the checks
//! that span a whole run (unique task names).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::{Budget, Error as YamlError, Location, Options};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

use super::types::TaskSpec;

/// Lowercase hex SHA-256 of `bytes`: the spec's hash as the transcript and reports carry
/// it, the same form as every other digest drover writes. Computed here with sha2 so the
/// spec needs nothing of the binary.
fn sha256_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(64);
    for byte in Sha256::digest(bytes) {
        // invariant: writing to a String cannot fail.
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// A spec that parsed and validated, with what the runner needs to know about its file.
#[derive(Debug, Clone)]
pub struct LoadedSpec {
    pub path: PathBuf,
    /// The file's text, recorded in the transcript so a replay runs the same task.
    pub text: String,
    pub sha256: String,
    pub spec: TaskSpec,
}

impl LoadedSpec {
    /// The workspace directory: `workspace:` relative to the spec file, else the current
    /// directory.
    pub fn workspace_dir(&self) -> PathBuf {
        match &self.spec.workspace {
            Some(dir) => {
                let base = self.path.parent().unwrap_or(Path::new("."));
                base.join(&dir.value)
            }
            None => PathBuf::from("."),
        }
    }

    /// The file or directory `name` names, relative to the spec file (`hooks_from:`,
    /// `permissions_from:`, `agents_from:`, `skills_from:`, …).
    pub fn beside_spec(&self, name: &str) -> PathBuf {
        self.path.parent().unwrap_or(Path::new(".")).join(name)
    }

    /// `permissions.additional_directories`, relative to the spec file, canonicalized.
    /// A directory that does not exist is left out: nothing can be touched there.
    pub fn additional_directories(&self) -> Vec<PathBuf> {
        let base = self.path.parent().unwrap_or(Path::new("."));
        self.spec
            .permissions
            .additional_directories
            .iter()
            .filter_map(|dir| base.join(dir).canonicalize().ok())
            .collect()
    }

    pub fn name(&self) -> &str {
        self.spec.name.value.as_str()
    }
}

/// A place in a spec file, printed `file:line:column`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub path: PathBuf,
    pub line: u64,
    pub column: u64,
}

impl Position {
    /// `location` in `path`; line and column 1 when the parser gave none.
    pub fn at(path: &Path, location: Option<Location>) -> Self {
        let (line, column) = location.map_or((1, 1), |l| (l.line().max(1), l.column().max(1)));
        Position {
            path: path.to_path_buf(),
            line,
            column,
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.path.display(), self.line, self.column)
    }
}

/// Why specs could not be loaded. Every variant is bad input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("{}: cannot read spec: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{position}: {message}")]
    Invalid { position: Position, message: String },
    #[error(
        "{second}: task name {name:?} is already used by {first}; task names must be unique within a run"
    )]
    DuplicateName {
        name: String,
        first: Position,
        second: Position,
    },
    #[error("{}: no task specs (*.yaml, *.yml) found", path.display())]
    NoSpecs { path: PathBuf },
}

const MAX_ALIASES: usize = 1_000;
const MAX_ANCHORS: usize = 1_000;
const MAX_NODES: usize = 100_000;
const MAX_EVENTS: usize = 200_000;
const MAX_DEPTH: usize = 64;
const MAX_SCALAR_BYTES: usize = 16 * 1024 * 1024;

/// Budgets for task specs: generous for real specs, tight enough that a YAML bomb is
/// refused in milliseconds instead of expanding into gigabytes.
fn options() -> Options {
    let mut budget = Budget::default();
    budget.max_aliases = MAX_ALIASES;
    budget.max_anchors = MAX_ANCHORS;
    budget.max_nodes = MAX_NODES;
    budget.max_events = MAX_EVENTS;
    budget.max_depth = MAX_DEPTH;
    budget.max_documents = 1;
    budget.max_total_scalar_bytes = MAX_SCALAR_BYTES;
    let mut options = Options::default();
    options.budget = Some(budget);
    options
}

/// Load and validate one spec file; the first problem is the error.
pub fn load(path: &Path) -> Result<LoadedSpec, SpecError> {
    parse(path, read::spec_text(path)?)
}

/// Parse and validate spec text that came from `path` (errors name that path); the first
/// problem is the error.
pub fn parse(path: &Path, text: String) -> Result<LoadedSpec, SpecError> {
    let mut file = parse_every(path, text);
    match (file.spec, file.errors.is_empty()) {
        (Some(spec), true) => Ok(spec),
        _ => Err(file.errors.swap_remove(0)),
    }
}

/// One spec file as far as it could be read: the spec, when the parser could make one of
/// it, and every problem found in it, in the order found.
#[derive(Debug)]
pub struct SpecFile {
    pub path: PathBuf,
    /// The spec as written; with unknown keys left out when `errors` names them. A spec
    /// with errors is for further checks only, never for a run.
    pub spec: Option<LoadedSpec>,
    /// Never empty when `spec` is None.
    pub errors: Vec<SpecError>,
}

/// Parse spec text that came from `path` and validate it, collecting every problem: a
/// syntax or type error is the parser's last word on a file (it cannot go on past one),
/// but every unknown key is named (see `unknown_keys`), and the spec that remains without
/// them is validated.
pub fn parse_every(path: &Path, text: String) -> SpecFile {
    let mut errors = Vec::new();
    let parsed = {
        let mut current = std::borrow::Cow::Borrowed(text.as_str());
        loop {
            match serde_saphyr::from_str_with_options::<TaskSpec>(&current, options()) {
                Ok(spec) => break Some(spec),
                Err(error) => {
                    errors.push(yaml_error(path, &current, &error));
                    let next = unknown_keys::unknown_key(&error)
                        .filter(|_| errors.len() < unknown_keys::MAX_ERRORS)
                        .and_then(|(field, line, column)| {
                            unknown_keys::without_entry(&current, field, line, column)
                        });
                    match next {
                        Some(next) => current = std::borrow::Cow::Owned(next),
                        None => break None,
                    }
                }
            }
        }
    };
    let spec = parsed.map(|spec| {
        errors.extend(cross_field::problems(path, &spec));
        let sha256 = sha256_hex(text.as_bytes());
        LoadedSpec {
            path: path.to_path_buf(),
            text,
            sha256,
            spec,
        }
    });
    SpecFile {
        path: path.to_path_buf(),
        spec,
        errors,
    }
}

/// A parser error at its `file:line:column`, in drover's words where the parser's name
/// library internals, and naming the key a value error is about.
fn yaml_error(path: &Path, text: &str, error: &YamlError) -> SpecError {
    let position = Position::at(path, error.location());
    // Budget and duplicate-key messages say what is wrong in their own words.
    let message = own_message(error).unwrap_or_else(|| {
        let message = plain_message(error);
        match key_before(text, &position) {
            Some(key) if !message.contains(&key) => format!("{key}: {message}"),
            _ => message,
        }
    });
    SpecError::Invalid { position, message }
}

/// drover's wording for parser errors whose own message names library internals (a
/// budget breach's Rust variant, the parser option that would allow duplicate keys).
fn own_message(error: &YamlError) -> Option<String> {
    let mut error = error;
    while let YamlError::AliasError { error: inner, .. }
    | YamlError::WithSnippet { error: inner, .. } = error
    {
        error = inner;
    }
    match error {
        YamlError::Budget { breach, .. } => Some(budget_message(breach)),
        YamlError::DuplicateMappingKey { key: Some(key), .. } => {
            Some(format!("key `{key}` appears twice in the same mapping"))
        }
        YamlError::DuplicateMappingKey { key: None, .. } => {
            Some("a key appears twice in the same mapping".to_string())
        }
        _ => None,
    }
}

fn budget_message(breach: &BudgetBreach) -> String {
    const WHY: &str = "drover caps specs so a YAML bomb cannot hang it";
    match breach {
        BudgetBreach::Nodes { .. } => {
            format!("the YAML expands to more than {MAX_NODES} nodes (aliases?); {WHY}")
        }
        BudgetBreach::Events { .. } => {
            format!("the YAML expands to more than {MAX_EVENTS} parser events (aliases?); {WHY}")
        }
        BudgetBreach::Aliases { .. } => {
            format!("the YAML uses more than {MAX_ALIASES} aliases (*name); {WHY}")
        }
        BudgetBreach::Anchors { .. } => {
            format!("the YAML defines more than {MAX_ANCHORS} anchors (&name); {WHY}")
        }
        BudgetBreach::Depth { .. } => {
            format!("the YAML nests deeper than {MAX_DEPTH} levels; {WHY}")
        }
        BudgetBreach::Documents { .. } => {
            "the file holds more than one YAML document (`---`); a spec is one document".to_string()
        }
        BudgetBreach::ScalarBytes { .. } => format!(
            "the YAML's strings add up to more than {} MiB; {WHY}",
            MAX_SCALAR_BYTES / (1024 * 1024)
        ),
        _ => format!("the YAML is too large or uses too many aliases; {WHY}"),
    }
}

/// The parser's message without its own location prefix or source snippet (we print the
/// position ourselves, in the `file:line:column` form editors understand).
pub(crate) fn plain_message(error: &serde_saphyr::Error) -> String {
    let rendered = error.without_snippet().to_string();
    let first = rendered.lines().next().unwrap_or_default().trim();
    // Drop a trailing " at line X column Y" the parser may add.
    match first.rfind(" at line ") {
        Some(index) => first[..index].to_string(),
        None => first.to_string(),
    }
}

/// The mapping key written just before `position` on its line (`max_turns: five` → the
/// error at `five` is about `max_turns`), so value errors name their key.
fn key_before(text: &str, position: &Position) -> Option<String> {
    let line = text
        .lines()
        .nth(usize::try_from(position.line).ok()?.checked_sub(1)?)?;
    let column = usize::try_from(position.column).ok()?.saturating_sub(1);
    let before: String = line.chars().take(column).collect();
    let before = before.trim_end().strip_suffix(':')?;
    let key: String = before
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    (!key.is_empty()).then_some(key)
}

/// The spec files of the CLI's SPEC|DIR arguments, and the YAML files of directories
/// that are not task specs (left out, with a note).
#[derive(Debug, Default)]
pub struct SpecFiles {
    pub files: Vec<PathBuf>,
    pub skipped: Vec<PathBuf>,
}

/// Expand the CLI's SPEC|DIR arguments into spec files: a directory contributes its
/// `*.yaml` and `*.yml` files, recursively, in path order (not `.git`, `node_modules`,
/// build output, nor through symlinked directories), except those that are plainly
/// something else — a GitHub workflow, dependabot's or compose's configuration: YAML
/// without `prompt:`, or `version:` and another key of a spec, at its top. A file named
/// as an argument is always taken as a spec.
pub fn collect_spec_files(inputs: &[PathBuf]) -> Result<SpecFiles, SpecError> {
    let mut collected = SpecFiles::default();
    for input in inputs {
        if input.is_dir() {
            let mut found = Vec::new();
            collect_dir(input, &mut found)?;
            found.sort();
            let (specs, others): (Vec<PathBuf>, Vec<PathBuf>) =
                found.into_iter().partition(|path| looks_like_a_spec(path));
            if specs.is_empty() {
                return Err(SpecError::NoSpecs {
                    path: input.clone(),
                });
            }
            collected.files.extend(specs);
            collected.skipped.extend(others);
        } else {
            collected.files.push(input.clone());
        }
    }
    Ok(collected)
}

/// Keys only a task spec has at its top, besides `version:` (which dependabot, compose
/// and many other files have too).
const SPEC_KEYS: &[&str] = &["prompt", "model", "workspace", "permissions", "checks"];

/// Whether a YAML file found in a directory is meant as a task spec: it has `prompt:`,
/// or `version:` with another key only a spec has, at its top level. One that cannot be
/// read or parsed is taken as a spec (its error is then reported) when a line starts
/// with `version` or `prompt`.
fn looks_like_a_spec(path: &Path) -> bool {
    let Ok(text) = read::spec_text(path) else {
        return true;
    };
    match serde_saphyr::from_str_with_options::<serde_json::Value>(&text, options()) {
        Ok(serde_json::Value::Object(map)) => {
            map.contains_key("prompt")
                || (map.contains_key("version") && SPEC_KEYS.iter().any(|k| map.contains_key(*k)))
        }
        Ok(_) => false,
        // YAML that does not parse is reported if it looks meant as a spec.
        Err(_) => text.lines().any(|line| {
            let line = line.trim_start_matches(['"', '\'']);
            line.starts_with("version") || line.starts_with("prompt")
        }),
    }
}

/// Directories a search for specs does not enter: git's, dependencies, build output
/// (a `CACHEDIR.TAG`, as cargo's `target/` has).
fn skipped_dir(dir: &Path, name: &std::ffi::OsStr) -> bool {
    name == ".git" || name == "node_modules" || dir.join("CACHEDIR.TAG").is_file()
}

fn collect_dir(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), SpecError> {
    let entries = std::fs::read_dir(dir).map_err(|source| SpecError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for entry in entries {
        let entry = entry.map_err(|source| SpecError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        // Not through a symlink: a link cycle must not send the search round forever.
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        if is_dir {
            if skipped_dir(&path, &entry.file_name()) {
                continue;
            }
            collect_dir(&path, found)?;
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        ) {
            found.push(path);
        }
    }
    Ok(())
}

/// Load every spec file, each as far as it can be read, and check what spans them: task
/// names are unique within a run (the second file of a name has the error). Every
/// problem of every file is kept, so a user fixes them in one pass.
pub fn load_every(files: &[PathBuf]) -> Vec<SpecFile> {
    let mut loaded: Vec<SpecFile> = files
        .iter()
        .map(|path| match read::spec_text(path) {
            Ok(text) => parse_every(path, text),
            Err(error) => SpecFile {
                path: path.clone(),
                spec: None,
                errors: vec![error],
            },
        })
        .collect();
    let mut names: HashMap<String, Position> = HashMap::new();
    for file in &mut loaded {
        let Some(spec) = &file.spec else { continue };
        let position = Position::at(&spec.path, Some(spec.spec.name.referenced));
        match names.get(spec.name()) {
            Some(first) => file.errors.push(SpecError::DuplicateName {
                name: spec.name().to_string(),
                first: first.clone(),
                second: position,
            }),
            None => {
                names.insert(spec.name().to_string(), position);
            }
        }
    }
    loaded
}

mod cross_field;
mod read;
mod unknown_keys;

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
