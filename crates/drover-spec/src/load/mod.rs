//! Reading spec files: YAML parsing with budgets, cross-field validation, and the checks
//! that span a whole run (unique task names).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::{Budget, Error as YamlError, Location, Options, Spanned};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

use super::model_check::model_problem;
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
                base.join(dir)
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

/// Load and validate one spec file.
pub fn load(path: &Path) -> Result<LoadedSpec, SpecError> {
    parse(path, read::spec_text(path)?)
}

/// Parse and validate spec text that came from `path` (errors name that path).
pub fn parse(path: &Path, text: String) -> Result<LoadedSpec, SpecError> {
    let spec: TaskSpec =
        serde_saphyr::from_str_with_options(&text, options()).map_err(|error| {
            let position = Position::at(path, error.location());
            // Budget and duplicate-key messages say what is wrong in their own words.
            let message = own_message(&error).unwrap_or_else(|| {
                let message = plain_message(&error);
                match key_before(&text, &position) {
                    Some(key) if !message.contains(&key) => format!("{key}: {message}"),
                    _ => message,
                }
            });
            SpecError::Invalid { position, message }
        })?;
    validate(path, &spec)?;
    let sha256 = sha256_hex(text.as_bytes());
    Ok(LoadedSpec {
        path: path.to_path_buf(),
        text,
        sha256,
        spec,
    })
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

/// Checks that span several fields.
fn validate(path: &Path, spec: &TaskSpec) -> Result<(), SpecError> {
    let model = &spec.model;
    let at_model = || Position::at(path, Some(model.referenced));
    let invalid = |message: String| SpecError::Invalid {
        position: at_model(),
        message,
    };
    if let Some(message) = model_problem(&model.value, "model") {
        return Err(invalid(message));
    }
    if let Some(limit) = &spec.limits.max_cost_usd {
        budget_is_positive(path, limit)?;
    }
    if let Some(limit) = spec.limits.max_tokens.as_ref().filter(|l| l.value == 0) {
        return Err(SpecError::Invalid {
            position: Position::at(path, Some(limit.referenced)),
            message: "limits.max_tokens must be at least 1".into(),
        });
    }
    if let Some(limit) = spec.limits.max_turns.as_ref().filter(|l| l.value == 0) {
        return Err(SpecError::Invalid {
            position: Position::at(path, Some(limit.referenced)),
            message: "limits.max_turns must be at least 1".into(),
        });
    }
    extensions_are_valid(path, spec)?;
    for (list, what) in [(&spec.checks, "checks"), (&spec.setup, "setup steps")] {
        let mut seen = HashMap::new();
        for step in list {
            if seen.insert(step.name.as_str(), ()).is_some() {
                return Err(SpecError::Invalid {
                    position: Position::at(path, None),
                    message: format!(
                        "two {what} are named {:?}; their names must be unique within a task",
                        step.name
                    ),
                });
            }
        }
    }
    Ok(())
}

/// `retry:`, `output:` and `hooks:` say something drover can do.
fn extensions_are_valid(path: &Path, spec: &TaskSpec) -> Result<(), SpecError> {
    let at = |location| Position::at(path, Some(location));
    if let Some(retry) = &spec.retry {
        let attempts = retry.value.max_attempts;
        if !(1..=super::MAX_ATTEMPTS).contains(&attempts) {
            return Err(SpecError::Invalid {
                position: at(retry.referenced),
                message: format!(
                    "retry.max_attempts must be between 1 and {}, not {attempts}",
                    super::MAX_ATTEMPTS
                ),
            });
        }
    }
    if let Some(output) = &spec.output
        && let Some(message) = super::output::output_problem(&output.value)
    {
        return Err(SpecError::Invalid {
            position: at(output.referenced),
            message,
        });
    }
    if let Some(hooks) = &spec.hooks
        && let Some(message) = super::hooks_problem(&hooks.value)
    {
        return Err(SpecError::Invalid {
            position: at(hooks.referenced),
            message,
        });
    }
    if let Some(tools) = &spec.tools
        && let Some(message) = super::tools::tools_problem(&tools.value)
    {
        let location = tools.value.web_fetch_model().map(|m| m.referenced);
        return Err(SpecError::Invalid {
            position: at(location.unwrap_or(tools.referenced)),
            message,
        });
    }
    Ok(())
}

/// `limits.max_cost_usd` is a positive amount. (That the runner can price the model is
/// checked by `run::plan::spec_checks`, which knows the price table.)
fn budget_is_positive(path: &Path, limit: &Spanned<f64>) -> Result<(), SpecError> {
    if !(limit.value.is_finite() && limit.value > 0.0) {
        return Err(SpecError::Invalid {
            position: Position::at(path, Some(limit.referenced)),
            message: format!(
                "limits.max_cost_usd must be a positive number, not {}",
                limit.value
            ),
        });
    }
    Ok(())
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

/// Load every spec and check what spans them: task names are unique within a run.
/// All errors are returned, so a user fixes them in one pass.
pub fn load_all(files: &[PathBuf]) -> Result<Vec<LoadedSpec>, Vec<SpecError>> {
    let mut specs = Vec::new();
    let mut errors = Vec::new();
    for file in files {
        match load(file) {
            Ok(spec) => specs.push(spec),
            Err(error) => errors.push(error),
        }
    }
    let mut names: HashMap<String, Position> = HashMap::new();
    for spec in &specs {
        let position = Position::at(&spec.path, Some(spec.spec.name.referenced));
        if let Some(first) = names.get(spec.name()) {
            errors.push(SpecError::DuplicateName {
                name: spec.name().to_string(),
                first: first.clone(),
                second: position,
            });
        } else {
            names.insert(spec.name().to_string(), position);
        }
    }
    if errors.is_empty() {
        Ok(specs)
    } else {
        Err(errors)
    }
}

mod read;

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
