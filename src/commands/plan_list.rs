//! `drover plan SPEC… [--json]`: the tasks the specs hold, as a run would take them,
//! without running or planning them (no key, no workspace is needed): what a CI job that
//! fans out one task per matrix cell or pod reads first. The list is sorted by name, and
//! a task's place in it is its `--task-index`.

use serde_json::json;

use crate::exit;

use super::runs::load_specs;

/// List the tasks of `inputs`; exit 2 when a spec has errors (two tasks sharing a
/// name among them).
pub(super) fn plan_command(inputs: &[std::path::PathBuf], as_json: bool) -> i32 {
    let Some(files) = load_specs(inputs) else {
        return exit::BAD_INPUT;
    };
    let mut bad = false;
    let mut tasks: Vec<(String, String)> = Vec::new();
    for file in &files {
        for error in &file.errors {
            crate::esay!("drover: {error}");
            bad = true;
        }
        if let Some(spec) = file.spec.as_ref().filter(|_| file.errors.is_empty()) {
            tasks.push((spec.name().to_string(), file.path.display().to_string()));
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
            .map(|(index, (name, spec))| json!({"index": index, "name": name, "spec": spec}))
            .collect();
        let names: Vec<&str> = tasks.iter().map(|(name, _)| name.as_str()).collect();
        let plan = json!({"count": tasks.len(), "names": names, "tasks": listed});
        crate::say!("{plan}");
    } else {
        for (index, (name, spec)) in tasks.iter().enumerate() {
            crate::say!("{index}\t{name}\t{spec}");
        }
    }
    exit::PASSED
}
