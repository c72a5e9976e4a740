//! KillShell: stop a background shell and every process it started.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::background::ShellStatus;
use super::text::parse_input;
use super::{Tool, ToolContext, ToolOutput};
use crate::policy::Subject;

pub struct KillShellTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    shell_id: String,
}

const DESCRIPTION: &str = "Kills a background shell started with Bash and run_in_background: true.

Usage:
- shell_id is the id Bash returned (bash_1, bash_2, ...).
- The shell and every process it started (its whole process group) are killed at once (SIGKILL): servers and watchers do not get a chance to clean up.
- Killing a shell that has already ended does nothing and says how it ended.
- Output printed before the kill can still be read once with BashOutput.
- You do not need to kill shells before finishing: every background shell is killed when the run ends.";

#[async_trait]
impl Tool for KillShellTool {
    fn name(&self) -> &'static str {
        "KillShell"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "shell_id": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The id of the background shell to kill, as returned by Bash (e.g. bash_1)."
                }
            },
            "required": ["shell_id"],
            "additionalProperties": false
        })
    }

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
        let input: Input = match parse_input("KillShell", input) {
            Ok(input) => input,
            Err(error) => return error,
        };
        let id = &input.shell_id;
        match ctx.background.kill(id).await {
            Ok(ShellStatus::Running) => {
                ToolOutput::ok(format!("Killed shell {id} and every process it started."))
            }
            Ok(status) => ToolOutput::ok(format!(
                "Shell {id} is not running (it {status}); nothing to kill."
            )),
            Err(message) => ToolOutput::error(message),
        }
    }
}
