//! Reading spec files: YAML parsing with budgets, the defaults file of each spec's
//! directory merged in (`defaults`), cross-field validation, and the checks that span a
//! whole run (unique task names).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_saphyr::Location;

use crate::defaults::{self, Defaults, Files, Node, apply, is_defaults_file, merge};
use crate::types::{SpecFile, TaskSpec};

pub(crate) mod checks;
pub(crate) mod error;
pub(crate) mod read;
pub(crate) mod yaml;

pub use error::{Position, SpecError};
pub(crate) use yaml::plain_message;
use yaml::{from_yaml, options};

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

/// Load and validate one spec file, with the defaults file of its directory.
pub fn load(path: &Path) -> Result<LoadedSpec, SpecError> {
    let text = read::spec_text(path)?;
    let defaults = defaults::defaults_of_spec(path)?;
    parse_with_defaults(path, text, defaults.as_ref())
}

/// Parse and validate spec text that came from `path` (errors name that path), alone.
pub fn parse(path: &Path, text: String) -> Result<LoadedSpec, SpecError> {
    parse_with_defaults(path, text, None)
}

/// Parse and validate spec text that came from `path`, merged with `defaults` (the
/// defaults file of its directory, or the one a recording holds). Errors name the file
/// that wrote the value.
pub fn parse_with_defaults(
    path: &Path,
    text: String,
    defaults: Option<&Defaults>,
) -> Result<LoadedSpec, SpecError> {
    let mut file: SpecFile = from_yaml(path, &text)?;
    if let Some(defaults) = defaults {
        let own: Node = from_yaml(path, &text)?;
        file = apply(file, &merge(&own, Some(&defaults.tree)), &defaults.settings);
    }
    let Some(model) = file.model.take() else {
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
    let spec = file.with_model(model);
    let files = Files {
        spec: path,
        defaults: defaults.map(|d| d.path.as_path()),
    };
    validate(&files, &spec)?;
    let sha256 = read::sha256_hex(text.as_bytes());
    Ok(LoadedSpec {
        path: path.to_path_buf(),
        text,
        sha256,
        spec,
        defaults: defaults.cloned(),
    })
}

/// Checks that span several fields.
fn validate(files: &Files, spec: &TaskSpec) -> Result<(), SpecError> {
    checks::model_and_limits(files, Some(&spec.model), &spec.limits)?;
    extensions_are_valid(files.spec, spec)?;
    for (list, what) in [(&spec.checks, "checks"), (&spec.setup, "setup steps")] {
        let mut seen = HashMap::new();
        for step in list {
            if seen.insert(step.name.as_str(), ()).is_some() {
                return Err(SpecError::Invalid {
                    position: files.at(None),
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

/// Load every spec and check what spans them: task names are unique within a run.
/// All errors are returned, so a user fixes them in one pass. Each directory's defaults
/// file is read once; when it has an error, that is reported once and the specs of its
/// directory are not loaded (each would fail with it).
pub fn load_all(files: &[PathBuf]) -> Result<Vec<LoadedSpec>, Vec<SpecError>> {
    let mut specs = Vec::new();
    let mut errors = Vec::new();
    // A directory's defaults: Some(None) when it has none, None when they failed.
    let mut by_dir: HashMap<PathBuf, Option<Option<Defaults>>> = HashMap::new();
    for file in files {
        let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
        let defaults =
            by_dir
                .entry(dir)
                .or_insert_with_key(|dir| match defaults::defaults_for_dir(dir) {
                    Ok(defaults) => Some(defaults),
                    Err(error) => {
                        errors.push(error);
                        None
                    }
                });
        let Some(defaults) = defaults else {
            continue;
        };
        let loaded = read::spec_text(file)
            .and_then(|text| parse_with_defaults(file, text, defaults.as_ref()));
        match loaded {
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

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
