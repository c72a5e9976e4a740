//! Reading spec files: YAML parsing with budgets, the defaults file of each spec's
//! directory merged in (`defaults`), cross-field validation, and the checks that span a
//! whole run (unique task names).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_saphyr::Location;

use crate::defaults::{self, Defaults, Files, Node, apply, is_defaults_file, merge};
use crate::matrix::{self, Expansion, MatrixValues};
use crate::types::{TaskSpec, WrittenSpec};

pub(crate) mod checks;
mod cross_field;
pub(crate) mod error;
pub(crate) mod read;
mod unknown_keys;
pub(crate) mod yaml;

pub use error::{Position, SpecError};
pub(crate) use yaml::plain_message;
use yaml::{from_yaml, from_yaml_every, options};

/// A spec that parsed and validated, with what the runner needs to know about its file.
#[derive(Debug, Clone)]
pub struct LoadedSpec {
    pub path: PathBuf,
    /// The file's text, recorded in the transcript so a replay runs the same task.
    pub text: String,
    pub sha256: String,
    /// The spec as it runs: the file's, with what it inherits from `defaults`.
    pub spec: TaskSpec,
    /// The defaults file of the spec's directory, merged into `spec` (recorded in the
    /// transcript beside the spec's text).
    pub defaults: Option<Defaults>,
    /// The matrix entry this task was expanded from, its values as substituted
    /// (recorded in the transcript, so a replay expands the same task again).
    pub matrix: Option<MatrixValues>,
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

    /// Where `location` lies: in the spec, or in its defaults file for a value it took
    /// from there. Every error about a value of `spec` is reported at this position.
    pub fn position(&self, location: Option<Location>) -> Position {
        self.files().at(location)
    }

    fn files(&self) -> Files<'_> {
        Files {
            spec: &self.path,
            defaults: self.defaults.as_ref().map(|d| d.path.as_path()),
        }
    }
}

/// Load and validate the spec file of one task, with the defaults file of its
/// directory; the first problem is the error (a matrix of several tasks is one).
pub fn load(path: &Path) -> Result<LoadedSpec, SpecError> {
    load_recorded(path, Expansion::Written)
}

/// [`load`], the spec's matrix (if any) expanded as `expansion` says: with a recorded
/// entry, the matrix's own entries are not read.
pub fn load_recorded(path: &Path, expansion: Expansion) -> Result<LoadedSpec, SpecError> {
    let text = read::spec_text(path)?;
    let defaults = defaults::defaults_of_spec(path)?;
    parse_with_defaults(path, text, defaults.as_ref(), expansion)
}

/// Parse and validate the spec text of one task that came from `path` (errors name
/// that path), alone; the first problem is the error.
pub fn parse(path: &Path, text: String) -> Result<LoadedSpec, SpecError> {
    parse_with_defaults(path, text, None, Expansion::Written)
}

/// Parse and validate the spec text of one task that came from `path`, merged with
/// `defaults` (the defaults file of its directory, or the one a recording holds), its
/// matrix expanded as `expansion` says; the first problem is the error, at the file
/// that wrote the value. A matrix that makes several tasks is an error: the caller
/// wants one.
pub fn parse_with_defaults(
    path: &Path,
    text: String,
    defaults: Option<&Defaults>,
    expansion: Expansion,
) -> Result<LoadedSpec, SpecError> {
    let mut file = parse_file(path, text, defaults, expansion);
    if !file.errors.is_empty() {
        return Err(file.errors.swap_remove(0));
    }
    let count = file.specs.len();
    match file.specs.pop() {
        Some(spec) if count == 1 => Ok(spec),
        _ => Err(SpecError::Invalid {
            position: Position::at(path, file.matrix_at),
            message: format!(
                "this spec's matrix makes {count} tasks, and this command takes the spec of one task: run them with drover run, list them with drover plan"
            ),
        }),
    }
}

/// One spec file as far as it could be read: its tasks, when the parser could make them
/// of it, and every problem found in it, in the order found.
#[derive(Debug)]
pub struct SpecFile {
    pub path: PathBuf,
    /// The spec's tasks, merged with its defaults: one, or one per entry of its matrix
    /// (in the matrix's order). With errors, the spec as written, with unknown keys left
    /// out when `errors` names them: for further checks only, never for a run.
    pub specs: Vec<LoadedSpec>,
    /// Never empty when `specs` is.
    pub errors: Vec<SpecError>,
    /// Where `matrix:` is written, when it is.
    pub matrix_at: Option<Location>,
}

/// Parse spec text that came from `path` and validate it alone, collecting every
/// problem (see [`parse_every_with_defaults`]).
pub fn parse_every(path: &Path, text: String) -> SpecFile {
    parse_every_with_defaults(path, text, None)
}

/// Parse spec text that came from `path`, merge `defaults` into it, and validate it,
/// collecting every problem: a syntax or type error is the parser's last word on a file
/// (it cannot go on past one), but every unknown key is named (see `unknown_keys`), and
/// the spec that remains without them is merged and validated. A problem with a value
/// the spec took from `defaults` is reported at the defaults file's line and column.
pub fn parse_every_with_defaults(
    path: &Path,
    text: String,
    defaults: Option<&Defaults>,
) -> SpecFile {
    parse_file(path, text, defaults, Expansion::Written)
}

/// [`parse_every_with_defaults`], the matrix expanded as `expansion` says. A problem
/// every task of a matrix has (a check of a field no value reaches) is said once.
fn parse_file(
    path: &Path,
    text: String,
    defaults: Option<&Defaults>,
    expansion: Expansion,
) -> SpecFile {
    let (parsed, mut errors) = from_yaml_every::<WrittenSpec>(path, &text);
    let mut specs = Vec::new();
    let mut matrix_at = None;
    if let Some((written, read)) = parsed {
        match merged(path, written, &read, defaults) {
            Ok(spec) => {
                matrix_at = spec.matrix.as_ref().map(|matrix| matrix.referenced);
                let tasks = matrix::tasks(path, &read, spec, expansion);
                errors.extend(tasks.errors);
                let files = Files {
                    spec: path,
                    defaults: defaults.map(|d| d.path.as_path()),
                };
                let sha256 = read::sha256_hex(text.as_bytes());
                for (spec, values) in tasks.tasks {
                    for problem in cross_field::problems(&files, &spec) {
                        let said = problem.to_string();
                        if !errors.iter().any(|error| error.to_string() == said) {
                            errors.push(problem);
                        }
                    }
                    specs.push(LoadedSpec {
                        path: path.to_path_buf(),
                        text: text.clone(),
                        sha256: sha256.clone(),
                        spec,
                        defaults: defaults.cloned(),
                        matrix: values,
                    });
                }
            }
            Err(error) => errors.push(error),
        }
    }
    SpecFile {
        path: path.to_path_buf(),
        specs,
        errors,
        matrix_at,
    }
}

/// The spec `written` (read from `read`, the text without its unknown keys) with what it
/// inherits from `defaults`; an error when neither gives a model.
fn merged(
    path: &Path,
    mut written: WrittenSpec,
    read: &str,
    defaults: Option<&Defaults>,
) -> Result<TaskSpec, SpecError> {
    if let Some(defaults) = defaults {
        let own: Node = from_yaml(path, read)?;
        written = apply(
            written,
            &merge(&own, Some(&defaults.tree)),
            &defaults.settings,
        );
    }
    let Some(model) = written.model.take() else {
        let message = match defaults {
            Some(defaults) => format!(
                "missing field `model`: neither the spec nor the defaults file {} gives one",
                defaults.path.display()
            ),
            None => "missing field `model`: give it here, or in a drover.yaml beside the spec for every spec there (docs/defaults.md)".to_string(),
        };
        return Err(SpecError::Invalid {
            position: Position::at(path, None),
            message,
        });
    };
    Ok(written.with_model(model))
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
/// without `prompt:`, or `version:` and another key of a spec, at its top — and never
/// the defaults file of a directory (`drover.yaml`, `.drover/defaults.yaml`), which is
/// merged into the specs beside it. A file named as an argument is taken as a spec,
/// unless it is named as a defaults file: that is refused, saying what it is.
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
        } else if is_defaults_file(input) {
            return Err(SpecError::DefaultsNotATask {
                path: input.clone(),
            });
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
        ) && !is_defaults_file(&path)
        {
            found.push(path);
        }
    }
    Ok(())
}

/// Load every spec file, each as far as it can be read and merged with the defaults file
/// of its directory, and check what spans them: task names are unique within a run (the
/// second file of a name has the error). Every problem of every file is kept, so a user
/// fixes them in one pass. Each directory's defaults file is read once; when it has
/// errors, they are reported once, as a file of their own before the first spec of its
/// directory, and the specs of that directory are not loaded (each would fail with them).
pub fn load_every(files: &[PathBuf]) -> Vec<SpecFile> {
    let mut loaded: Vec<SpecFile> = Vec::new();
    // A directory's defaults: Some(None) when it has none, None when they failed.
    let mut by_dir: HashMap<PathBuf, Option<Option<Defaults>>> = HashMap::new();
    for path in files {
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let defaults =
            by_dir
                .entry(dir)
                .or_insert_with_key(|dir| match defaults::defaults_in(dir) {
                    Ok(defaults) => Some(defaults),
                    Err((path, errors)) => {
                        loaded.push(SpecFile {
                            path,
                            specs: Vec::new(),
                            errors,
                            matrix_at: None,
                        });
                        None
                    }
                });
        let Some(defaults) = defaults else {
            continue;
        };
        loaded.push(match read::spec_text(path) {
            Ok(text) => parse_every_with_defaults(path, text, defaults.as_ref()),
            Err(error) => SpecFile {
                path: path.clone(),
                specs: Vec::new(),
                errors: vec![error],
                matrix_at: None,
            },
        });
    }
    let mut names: HashMap<String, Position> = HashMap::new();
    for file in &mut loaded {
        for spec in &file.specs {
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
    }
    loaded
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
