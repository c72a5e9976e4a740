//! `drover plan SPEC… [--json]`: the tasks the specs hold, as a run would take them,
//! without running or planning them (no key, no workspace is needed): what a CI job that
//! fans out one task per matrix cell or pod reads first. The list is sorted by name, and
//! a task's place in it is its `--task-index`.

use serde_json::json;

use crate::exit;

use super::runs::load_specs;

/// One task as listed: sorted by name, then by spec.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Listed {
    name: String,
    spec: String,
    /// The values of its matrix entry, for an engine's matrix to fan out on.
    matrix: Option<crate::spec::MatrixValues>,
}

/// List the tasks of `inputs`; exit 2 when a spec has errors (two tasks sharing a
/// name among them).
pub(super) fn plan_command(inputs: &[std::path::PathBuf], as_json: bool) -> i32 {
    let Some(files) = load_specs(inputs) else {
        return exit::BAD_INPUT;
    };
    let mut bad = false;
    let mut tasks: Vec<Listed> = Vec::new();
    for file in &files {
        for error in &file.errors {
            crate::esay!("drover: {error}");
            bad = true;
        }
        if file.errors.is_empty() {
            tasks.extend(file.specs.iter().map(|spec| Listed {
                name: spec.name().to_string(),
                spec: file.path.display().to_string(),
                matrix: spec.matrix.clone(),
            }));
        }
    }
    // Loading names a task two specs share as an error of the second.
    tasks.sort();
    if bad {
        return exit::BAD_INPUT;
    }
    if as_json {
        let listed: Vec<_> = tasks
            .iter()
            .enumerate()
            .map(|(index, task)| {
                let mut listed = json!({"index": index, "name": task.name, "spec": task.spec});
                if let Some(values) = &task.matrix {
                    listed["matrix"] = json!(values);
                }
                listed
            })
            .collect();
        let names: Vec<&str> = tasks.iter().map(|task| task.name.as_str()).collect();
        let plan = json!({"count": tasks.len(), "names": names, "tasks": listed});
        crate::say!("{plan}");
    } else {
        for (index, task) in tasks.iter().enumerate() {
            crate::say!("{index}\t{}\t{}", task.name, task.spec);
        }
    }
    exit::PASSED
}
