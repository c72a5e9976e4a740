//! KillShell: stop a background shell and every process it started.

use schemars::JsonSchema;
use serde::Deserialize;

use super::background::ShellStatus;
use super::{About, ToolContext, ToolError, ToolInput, TypedTool};

#[derive(Clone, Copy)]
pub(crate) struct KillShellTool;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The id of the background shell to kill, as returned by Bash (e.g. bash_1).
    #[schemars(length(min = 1))]
    shell_id: String,
}

impl ToolInput for Input {}

const DESCRIPTION: &str = "Kills a background shell started with Bash and run_in_background: true.

Usage:
- shell_id is the id Bash returned (bash_1, bash_2, ...).
- The shell and every process it started (its whole process group) are killed at once (SIGKILL): servers and watchers do not get a chance to clean up.
- Killing a shell that has already ended does nothing and says how it ended.
- Output printed before the kill can still be read once with BashOutput.
- You do not need to kill shells before finishing: every background shell is killed when the run ends.";

impl TypedTool for KillShellTool {
    type Input = Input;
    // It serves Bash's shells (`deny: [Bash]` withholds it too) and acts only on this
    // run's own state, which is allowed by default.
    const ABOUT: About = About::writes("KillShell", DESCRIPTION).on_run_state_of("Bash");

    async fn run(&self, input: Input, ctx: &ToolContext) -> Result<String, ToolError> {
        let id = &input.shell_id;
        match ctx.background.kill(id).await {
            Ok(ShellStatus::Running) => {
                Ok(format!("Killed shell {id} and every process it started."))
            }
            Ok(status) => Ok(format!(
                "Shell {id} is not running (it {status}); nothing to kill."
            )),
            Err(error) => Err(error),
        }
    }
}
