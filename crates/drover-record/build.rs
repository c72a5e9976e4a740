//! What the test machine has, for the JUnit tests that read drover's junit.xml back with
//! the validators CI reports use: `drover_has_xmllint` and `drover_has_junitparser`
//! (Python's junitparser in `.ci/venv`, which `.ci/run` installs), each set when found or
//! under `CI=true`. See build/probes.rs at the workspace root.

#[path = "../../build/probes.rs"]
mod probes;

use std::path::Path;

use probes::{Probes, exists, in_venv, program_runs, runs};

fn main() {
    let mut probes = Probes::new(&["build.rs", "../../build/probes.rs"]);
    probes.set("drover_has_xmllint", program_runs("xmllint"));
    let venv = Path::new("../../.ci/venv");
    let python = venv.join("bin/python");
    let junitparser =
        exists(&python) && runs(&python, &["--version"]) && in_venv(venv, "junitparser");
    probes.set("drover_has_junitparser", junitparser);
    probes.finish();
}
