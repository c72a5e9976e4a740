//! The spec fields a matrix value goes into, in one place: the tree walk that finds
//! references (and refuses them anywhere else) and the substitution into the typed spec
//! both follow this list, and a test holds the two together.

use super::template::Insert;
use crate::types::TaskSpec;

/// The fields that take `${{ matrix.KEY }}`, as the walk names a field (`[]` for any
/// item of a list). `name` is substituted apart: it becomes a task name, checked.
pub(crate) const SUBSTITUTED: &[&str] = &[
    "name",
    "prompt",
    "system",
    "workspace",
    "setup[].name",
    "setup[].run",
    "checks[].name",
    "checks[].run",
    "repo.url",
    "repo.ref",
    "repo.path",
];

/// The fields of SUBSTITUTED that name a path: a value put into one must be a relative
/// path without `..` (see `expand::path_problems`), so no entry of a generated file can
/// point a task at `/etc` or out of the directory the spec writes.
pub(crate) const PATH_FIELDS: &[&str] = &["workspace", "repo.path"];

/// Where SUBSTITUTED's fields are listed for a person.
pub(crate) const SUBSTITUTED_IN_WORDS: &str = "name, prompt, system, workspace, repo's url, ref and path, and the name and run of setup steps and checks";

/// How a value is inserted into `field`: into a shell command as a reference to the
/// variable that holds it, anywhere else as is.
pub(crate) fn insert_into(field: &str) -> Insert {
    if field.ends_with(".run") {
        Insert::Shell
    } else {
        Insert::AsIs
    }
}

/// One string field of a typed spec that takes matrix values.
pub(crate) struct Field<'a> {
    /// As SUBSTITUTED names it.
    pub field: &'static str,
    pub value: &'a mut String,
}

/// Every string field of `spec` that takes matrix values but its name.
pub(crate) fn string_fields<M>(spec: &mut TaskSpec<M>) -> Vec<Field<'_>> {
    let field = |field, value| Field { field, value };
    let mut fields = vec![field("prompt", &mut spec.prompt)];
    fields.extend(spec.system.as_mut().map(|system| field("system", system)));
    fields.extend(
        spec.workspace
            .as_mut()
            .map(|dir| field("workspace", &mut dir.value)),
    );
    for step in &mut spec.setup {
        fields.push(field("setup[].name", &mut step.name));
        fields.push(field("setup[].run", &mut step.run));
    }
    for check in &mut spec.checks {
        fields.push(field("checks[].name", &mut check.name));
        fields.push(field("checks[].run", &mut check.run));
    }
    if let Some(repo) = &mut spec.repo {
        let repo = &mut repo.value;
        fields.push(field("repo.url", &mut repo.url.value));
        fields.extend(
            repo.git_ref
                .as_mut()
                .map(|git_ref| field("repo.ref", &mut git_ref.value)),
        );
        fields.extend(
            repo.path
                .as_mut()
                .map(|path| field("repo.path", &mut path.value)),
        );
    }
    fields
}
