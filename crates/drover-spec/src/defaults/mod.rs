//! The defaults file of a directory of specs: `drover.yaml` (or `.drover/defaults.yaml`)
//! beside them, holding the `model`, `permissions`, `limits`, `sandbox`, `env`,
//! `isolation` and `diff` every spec of that directory inherits, the spec's own value winning
//! (`merged` states the rules; docs/defaults.md). It is read like a spec (the same
//! budgets, `version: 1`, unknown keys refused) and its errors name its own file; the
//! values a spec takes from it keep their positions there (`located`).
//!
//! The file is as trusted as the specs beside it: the user's own, even where a spec
//! directory lies inside the repository under test (the specs there are then just as
//! much the repository's).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::diff::DiffSpec;
use crate::load::checks::model_and_limits;
use crate::load::error::SpecError;
use crate::load::read::{sha256_hex, spec_text};
use crate::load::yaml::from_yaml_every;
use crate::matrix::walk::{Document, walk};
use crate::sandbox::SandboxSpec;
use crate::types::{EnvSpec, Isolation, Limits, ModelSpec, Permissions, SpecVersion};

mod apply;
mod located;
mod merged;
mod shown;
pub(crate) mod tree;

pub(crate) use apply::apply;
pub(crate) use located::Files;
pub(crate) use merged::merge;
pub use shown::merged_view;
pub(crate) use tree::Node;

/// The defaults file beside the specs.
pub const DEFAULTS_FILE: &str = "drover.yaml";
/// The other place for it: `.drover/defaults.yaml`, for a directory that keeps drover's
/// files out of sight.
const HIDDEN_DIR: &str = ".drover";
const HIDDEN_FILE: &str = "defaults.yaml";

/// What the defaults file may hold, besides its own `version:`.
const SETTINGS: &str = "model, permissions, limits, sandbox, env, isolation and diff";

/// A defaults file, read and checked.
#[derive(Debug, Clone)]
pub struct Defaults {
    pub path: PathBuf,
    /// The file's text, recorded in `run_start` so a replay makes the same spec without it.
    pub text: String,
    pub sha256: String,
    /// Its values, their locations marked as the defaults file's.
    pub(crate) settings: DefaultsSpec,
    /// Its document, for the merge.
    pub(crate) tree: Node,
}

impl Defaults {
    /// Whether the file writes the setting at `path` (`["permissions", "allow"]`): what
    /// a command that builds its spec from flags (`drover exec`) leaves out of that spec
    /// when no flag sets it, so the default applies as it would to a spec file.
    pub fn writes(&self, path: &[&str]) -> bool {
        let mut node = &self.tree;
        for key in path {
            let Node::Map(entries) = node else {
                return false;
            };
            match entries.iter().find(|entry| entry.key.value == *key) {
                Some(entry) => node = &entry.value.value,
                None => return false,
            }
        }
        true
    }
}

/// The defaults file as typed: the spec's own types, each setting optional.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DefaultsSpec {
    /// Required and checked, as a spec's.
    #[serde(rename = "version")]
    _version: SpecVersion,
    #[serde(default)]
    pub model: Option<Spanned<ModelSpec>>,
    #[serde(default)]
    pub permissions: Option<Permissions>,
    #[serde(default)]
    pub limits: Option<Limits>,
    #[serde(default)]
    pub sandbox: Option<SandboxSpec>,
    #[serde(default)]
    pub env: Option<EnvSpec>,
    #[serde(default)]
    pub isolation: Option<Spanned<Isolation>>,
    #[serde(default)]
    pub diff: Option<Spanned<DiffSpec>>,
}

/// The defaults file of the specs in `dir`: `dir/drover.yaml` or
/// `dir/.drover/defaults.yaml`, read and checked; None when there is neither. Both there
/// is an error, as is a name that is there but not a readable file (a dangling link, a
/// directory): a defaults file never fails open. Only `dir` itself is looked in, never
/// its parents. The error is the file's first problem.
pub fn defaults_for_dir(dir: &Path) -> Result<Option<Defaults>, SpecError> {
    defaults_in(dir).map_err(|(_, mut errors)| errors.swap_remove(0))
}

/// [`defaults_for_dir`] with every problem of the file.
pub fn defaults_for_dir_every(dir: &Path) -> Result<Option<Defaults>, Vec<SpecError>> {
    defaults_in(dir).map_err(|(_, errors)| errors)
}

/// [`defaults_for_dir`] with every problem of the file, and the file they are in.
pub(crate) fn defaults_in(dir: &Path) -> Result<Option<Defaults>, (PathBuf, Vec<SpecError>)> {
    let plain = dir.join(DEFAULTS_FILE);
    let hidden = dir.join(HIDDEN_DIR).join(HIDDEN_FILE);
    let there = |path: &Path| path.symlink_metadata().is_ok();
    let path = match (there(&plain), there(&hidden)) {
        (true, true) => {
            let error = SpecError::TwoDefaults {
                first: plain,
                second: hidden.clone(),
            };
            return Err((hidden, vec![error]));
        }
        (true, false) => plain,
        (false, true) => hidden,
        (false, false) => return Ok(None),
    };
    let text = spec_text(&path).map_err(|error| (path.clone(), vec![error]))?;
    parse_defaults_every(&path, text)
        .map(Some)
        .map_err(|errors| (path, errors))
}

/// The defaults file of the spec at `spec`: that of the spec file's own directory.
pub fn defaults_of_spec(spec: &Path) -> Result<Option<Defaults>, SpecError> {
    defaults_for_dir(spec.parent().unwrap_or(Path::new("")))
}

/// Whether `path` is named as a defaults file (`drover.yaml`, `.drover/defaults.yaml`):
/// such a file is never a task spec.
pub fn is_defaults_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|name| name.to_str());
    let parent = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|name| name.to_str());
    name == Some(DEFAULTS_FILE) || (name == Some(HIDDEN_FILE) && parent == Some(HIDDEN_DIR))
}

/// Parse and check defaults text that came from `path` (errors name that path); the
/// first problem is the error.
pub fn parse_defaults(path: &Path, text: String) -> Result<Defaults, SpecError> {
    parse_defaults_every(path, text).map_err(|mut errors| errors.swap_remove(0))
}

/// Parse and check defaults text that came from `path`, with every problem: each
/// unknown key, then the model's and the limits' (as a spec's are found).
fn parse_defaults_every(path: &Path, text: String) -> Result<Defaults, Vec<SpecError>> {
    let (parsed, errors) = from_yaml_every::<DefaultsSpec>(path, &text);
    let mut errors: Vec<SpecError> = errors.into_iter().map(with_hint).collect();
    let Some((mut settings, read)) = parsed else {
        return Err(errors);
    };
    let files = Files {
        spec: path,
        defaults: None,
    };
    let limits = settings.limits.clone().unwrap_or_default();
    errors.extend(model_and_limits(&files, settings.model.as_ref(), &limits));
    let tree = match tree::read_tree(path, &read) {
        Ok(tree) => tree,
        Err(error) => {
            errors.push(error);
            return Err(errors);
        }
    };
    errors.extend(walk(path, &tree, Document::Defaults).errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    mark(&mut settings);
    Ok(Defaults {
        path: path.to_path_buf(),
        sha256: sha256_hex(text.as_bytes()),
        text,
        settings,
        tree,
    })
}

/// A key the defaults file may not hold (at its top: the column is 1) is refused
/// saying which it may.
fn with_hint(error: SpecError) -> SpecError {
    match error {
        SpecError::Invalid { position, message }
            if position.column == 1 && message.contains("unknown field `matrix`") =>
        {
            SpecError::Invalid {
                message: "matrix: belongs in a spec, not in a defaults file (whose settings every spec beside it inherits): write matrix: in the spec it expands into tasks".to_string(),
                position,
            }
        }
        SpecError::Invalid { position, message }
            if position.column == 1 && message.contains("unknown field") =>
        {
            SpecError::Invalid {
                message: format!(
                    "{message}; a defaults file holds only {SETTINGS} for the specs beside it (docs/defaults.md): write the others in each spec"
                ),
                position,
            }
        }
        other => other,
    }
}

/// Mark every located value of the defaults as the defaults file's. Each type is taken
/// apart whole, so a located field added later cannot be left unmarked.
fn mark(settings: &mut DefaultsSpec) {
    let DefaultsSpec {
        _version: _,
        model,
        permissions,
        limits,
        sandbox: _,
        env: _,
        isolation,
        diff,
    } = settings;
    if let Some(model) = model {
        mark_one(model);
    }
    isolation.iter_mut().for_each(mark_one);
    diff.iter_mut().for_each(mark_one);
    if let Some(Permissions {
        allow,
        deny,
        mode: _,
        additional_directories: _,
        guardrails: _,
    }) = permissions
    {
        allow.iter_mut().chain(deny.iter_mut()).for_each(mark_one);
    }
    if let Some(Limits {
        max_turns,
        timeout: _,
        max_cost_usd,
        max_tokens,
        max_agent_depth,
        context: _,
        max_identical_calls: _,
        wrap_up: _,
    }) = limits
    {
        max_turns.iter_mut().for_each(mark_one);
        max_cost_usd.iter_mut().for_each(mark_one);
        max_tokens.iter_mut().for_each(mark_one);
        max_agent_depth.iter_mut().for_each(mark_one);
    }
}

fn mark_one<T>(value: &mut Spanned<T>) {
    value.referenced = located::in_defaults(value.referenced);
    value.defined = located::in_defaults(value.defined);
}

#[cfg(test)]
#[path = "defaults_tests.rs"]
mod tests;
