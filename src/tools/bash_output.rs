//! BashOutput: what a background shell printed since the last look, and whether it is
//! still running.

use schemars::JsonSchema;
use serde::Deserialize;

use super::bash::MAX_OUTPUT_CHARS;
use super::text::cut_middle;
use super::{About, ToolContext, ToolError, ToolInput, TypedTool};

#[derive(Clone, Copy)]
pub(crate) struct BashOutputTool;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The id of the background shell, as returned by Bash (e.g. bash_1).
    #[schemars(length(min = 1))]
    bash_id: String,
}

impl ToolInput for Input {}

const DESCRIPTION: &str = "Reads the output of a background shell started with Bash and run_in_background: true.

Usage:
- bash_id is the id Bash returned (bash_1, bash_2, ...).
- Returns only the output produced since the previous BashOutput call for that id (stdout and stderr merged), then the shell's status: running, exited with code N, terminated by a signal, or killed.
- Output is not waited for: if the command has printed nothing new yet, the result says so. Do other work, or run a short `sleep` with Bash, before checking again rather than calling BashOutput in a tight loop.
- New output longer than 30000 characters is cut in the middle; very large output between two calls keeps only its first and last megabyte.
- Stop a shell you no longer need with KillShell; every background shell is killed when the run ends.";

impl TypedTool for BashOutputTool {
    type Input = Input;
    // Not read-only: reading consumes the output, and calls must stay in order with the
    // Bash calls that start shells.
    // It serves Bash's shells (`deny: [Bash]` withholds it too) and acts only on this
    // run's own state, which is allowed by default.
    const ABOUT: About = About::writes("BashOutput", DESCRIPTION).on_run_state_of("Bash");

    async fn run(&self, input: Input, ctx: &ToolContext) -> Result<String, ToolError> {
        let report = ctx.background.read(&input.bash_id)?;
        let output = report.new_output.trim_end_matches('\n');
        let mut text = format!("Shell {} {}.", input.bash_id, report.status);
        text.push_str(&format!(" Command: {}\n", report.command));
        if output.is_empty() {
            text.push_str("(no new output since the last check)");
        } else {
            text.push_str("New output:\n");
            text.push_str(&cut_middle(output, MAX_OUTPUT_CHARS));
        }
        Ok(text)
    }
}
