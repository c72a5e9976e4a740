//! BashOutput: what a background shell printed since the last look, and whether it is
//! still running.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::bash::MAX_OUTPUT_CHARS;
use super::text::{cut_middle, parse_input};
use super::{Tool, ToolContext, ToolOutput};
use crate::policy::Subject;

pub struct BashOutputTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    bash_id: String,
}

const DESCRIPTION: &str = "Reads the output of a background shell started with Bash and run_in_background: true.

Usage:
- bash_id is the id Bash returned (bash_1, bash_2, ...).
- Returns only the output produced since the previous BashOutput call for that id (stdout and stderr merged), then the shell's status: running, exited with code N, terminated by a signal, or killed.
- Output is not waited for: if the command has printed nothing new yet, the result says so. Do other work, or run a short `sleep` with Bash, before checking again rather than calling BashOutput in a tight loop.
- New output longer than 30000 characters is cut in the middle; very large output between two calls keeps only its first and last megabyte.
- Stop a shell you no longer need with KillShell; every background shell is killed when the run ends.";

#[async_trait]
impl Tool for BashOutputTool {
    fn name(&self) -> &'static str {
        "BashOutput"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "bash_id": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The id of the background shell, as returned by Bash (e.g. bash_1)."
                }
            },
            "required": ["bash_id"],
            "additionalProperties": false
        })
    }

    /// Not read-only: reading consumes the output, and calls must stay in order with the
    /// Bash calls that start shells.
    fn is_read_only(&self) -> bool {
        false
    }

    fn subject(&self, _input: &Value) -> Subject {
        Subject::None
    }

    /// It serves Bash's shells: `deny: [Bash]` withholds it too.
    fn governed_by(&self) -> &'static str {
        "Bash"
    }

    /// Acts only on this run's own state: allowed by default.
    fn acts_on_run_state(&self) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: Input = match parse_input("BashOutput", input) {
            Ok(input) => input,
            Err(error) => return error,
        };
        let report = match ctx.background.read(&input.bash_id) {
            Ok(report) => report,
            Err(message) => return ToolOutput::error(message),
        };
        let output = report.new_output.trim_end_matches('\n');
        let mut text = format!("Shell {} {}.", input.bash_id, report.status);
        text.push_str(&format!(" Command: {}\n", report.command));
        if output.is_empty() {
            text.push_str("(no new output since the last check)");
        } else {
            text.push_str("New output:\n");
            text.push_str(&cut_middle(output, MAX_OUTPUT_CHARS));
        }
        ToolOutput::ok(text)
    }
}
