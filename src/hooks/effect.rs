//! What a hook's exit code and output mean, by Claude Code's rules: exit 0 with stdout
//! starting with `{` is a JSON answer; exit 2 blocks, stderr being the reason; any other
//! code is a non-blocking error. And what several hooks of one event mean together.

use serde_json::Value;

/// A PreToolUse hook's permission answer, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Permission {
    Deny,
    /// Leave it to the policy (as if the hook had said nothing).
    Defer,
    /// Nobody can be asked headless: drover treats it as a deny, with the reason.
    Ask,
    Allow,
}

impl Permission {
    fn parse(value: &str) -> Option<Permission> {
        match value {
            "deny" => Some(Permission::Deny),
            "ask" => Some(Permission::Ask),
            "allow" => Some(Permission::Allow),
            "defer" => Some(Permission::Defer),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Permission::Deny => "deny",
            Permission::Ask => "ask",
            Permission::Allow => "allow",
            Permission::Defer => "defer",
        }
    }
}

/// The effect of one hook run.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Effect {
    /// Exit 2 (stderr) or `decision: "block"` (`reason`).
    pub block: Option<String>,
    /// `continue: false`: the run stops, with `stopReason`.
    pub stop: Option<String>,
    pub system_message: Option<String>,
    pub permission: Option<Permission>,
    pub permission_reason: Option<String>,
    pub updated_input: Option<Value>,
    pub additional_context: Option<String>,
    pub updated_tool_output: Option<Value>,
    /// A non-blocking failure: exit code other than 0 and 2, output that is not the JSON
    /// it claims to be, a timeout. Recorded, never blocking.
    pub error: Option<String>,
}

impl Effect {
    /// The effect of a hook that ended with `exit_code` (None: killed, timed out).
    /// `plain_is_context`: plain stdout (not JSON) is context for the model, as for
    /// SessionStart and UserPromptSubmit; elsewhere it is ignored.
    pub(crate) fn of(
        exit_code: Option<i32>,
        timed_out: bool,
        stdout: &str,
        stderr: &str,
        plain_is_context: bool,
    ) -> Effect {
        if timed_out {
            return Effect {
                error: Some("timed out; it was killed and does not block".into()),
                ..Effect::default()
            };
        }
        match exit_code {
            Some(0) => parse_answer(stdout, plain_is_context),
            Some(2) => {
                let reason = stderr.trim();
                Effect {
                    block: Some(if reason.is_empty() {
                        "blocked by a hook (exit code 2, no reason on stderr)".into()
                    } else {
                        reason.to_string()
                    }),
                    ..Effect::default()
                }
            }
            Some(code) => Effect {
                error: Some(format!("exit code {code}: {}", first_line(stderr))),
                ..Effect::default()
            },
            None => Effect {
                error: Some("killed by a signal".into()),
                ..Effect::default()
            },
        }
    }

    /// One word for the transcript: what this run decided.
    pub(crate) fn decision(&self) -> &'static str {
        if self.stop.is_some() {
            "stop"
        } else if self.block.is_some() {
            "block"
        } else if let Some(permission) = self.permission {
            permission.as_str()
        } else if self.error.is_some() {
            "error"
        } else {
            "none"
        }
    }
}

fn first_line(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or("").trim();
    let short: String = line.chars().take(300).collect();
    if short.is_empty() {
        "(no stderr)".into()
    } else {
        short
    }
}

/// Exit 0: stdout is a JSON answer when it starts with `{`, else plain output (for
/// SessionStart and UserPromptSubmit, added to the context, as Claude Code does).
fn parse_answer(stdout: &str, plain_is_context: bool) -> Effect {
    let trimmed = stdout.trim_start();
    if !trimmed.starts_with('{') {
        let text = stdout.trim();
        return Effect {
            additional_context: (plain_is_context && !text.is_empty()).then(|| text.to_string()),
            ..Effect::default()
        };
    }
    let answer: Value = match serde_json::from_str(trimmed) {
        Ok(answer) => answer,
        Err(error) => {
            return Effect {
                error: Some(format!("stdout starts with '{{' but is not JSON: {error}")),
                ..Effect::default()
            };
        }
    };
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_string);
    let specific = answer.get("hookSpecificOutput");
    let field = |name: &str| {
        specific
            .and_then(|s| s.get(name))
            .or_else(|| answer.get(name))
    };
    let mut effect = Effect {
        system_message: text(answer.get("systemMessage")),
        additional_context: text(field("additionalContext")),
        updated_input: field("updatedInput").filter(|v| !v.is_null()).cloned(),
        updated_tool_output: field("updatedToolOutput").filter(|v| !v.is_null()).cloned(),
        permission_reason: text(field("permissionDecisionReason")),
        ..Effect::default()
    };
    if answer.get("continue") == Some(&Value::Bool(false)) {
        effect.stop = Some(
            text(answer.get("stopReason")).unwrap_or_else(|| "a hook said continue: false".into()),
        );
    }
    if answer.get("decision").and_then(Value::as_str) == Some("block") {
        effect.block = Some(
            text(answer.get("reason"))
                .unwrap_or_else(|| "blocked by a hook (no reason given)".into()),
        );
    }
    if let Some(value) = field("permissionDecision").and_then(Value::as_str) {
        match Permission::parse(value) {
            Some(permission) => effect.permission = Some(permission),
            // An answer drover cannot read is not taken as consent.
            None => {
                effect.permission = Some(Permission::Deny);
                effect.permission_reason = Some(format!(
                    "the hook answered permissionDecision {value:?}, which is not allow, deny, ask or defer"
                ));
            }
        }
    }
    // Claude Code's older PreToolUse spelling: decision "approve"/"block".
    if effect.permission.is_none()
        && answer.get("decision").and_then(Value::as_str) == Some("approve")
    {
        effect.permission = Some(Permission::Allow);
    }
    effect
}

/// What all the hooks of one event said, together.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Combined {
    pub stop: Option<String>,
    /// Every blocking reason, in configuration order.
    pub blocks: Vec<String>,
    /// The strongest permission answer and its reason.
    pub permission: Option<(Permission, Option<String>)>,
    /// The first hook's `updatedInput` (configuration order).
    pub updated_input: Option<Value>,
    pub additional_context: Vec<String>,
    pub updated_tool_output: Option<Value>,
    pub system_messages: Vec<String>,
}

impl Combined {
    pub(crate) fn of<'a>(effects: impl IntoIterator<Item = &'a Effect>) -> Combined {
        let mut combined = Combined::default();
        for effect in effects {
            if combined.stop.is_none() {
                combined.stop.clone_from(&effect.stop);
            }
            combined.blocks.extend(effect.block.clone());
            if let Some(permission) = effect.permission {
                let stronger = combined
                    .permission
                    .as_ref()
                    .is_none_or(|(current, _)| permission < *current);
                if stronger {
                    combined.permission = Some((permission, effect.permission_reason.clone()));
                }
            }
            if combined.updated_input.is_none() {
                combined.updated_input.clone_from(&effect.updated_input);
            }
            combined
                .additional_context
                .extend(effect.additional_context.clone());
            if combined.updated_tool_output.is_none() {
                combined
                    .updated_tool_output
                    .clone_from(&effect.updated_tool_output);
            }
            combined
                .system_messages
                .extend(effect.system_message.clone());
        }
        combined
    }

    /// The blocking reasons as one message, if any hook blocked.
    pub(crate) fn block_reason(&self) -> Option<String> {
        (!self.blocks.is_empty()).then(|| self.blocks.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_mean_what_claude_code_says() {
        assert_eq!(
            Effect::of(Some(2), false, "", "no rm\n", true)
                .block
                .as_deref(),
            Some("no rm")
        );
        let error = Effect::of(Some(1), false, "{\"decision\":\"block\"}", "boom", true);
        assert!(error.block.is_none() && error.error.unwrap().contains("exit code 1"));
        let timed = Effect::of(None, true, "", "", true);
        assert!(timed.block.is_none() && timed.error.unwrap().contains("timed out"));
        let plain = Effect::of(Some(0), false, "remember the tests\n", "", true);
        assert_eq!(
            plain.additional_context.as_deref(),
            Some("remember the tests")
        );
        let broken = Effect::of(Some(0), false, "{not json", "", true);
        assert!(broken.error.is_some() && broken.block.is_none());
    }

    #[test]
    fn json_answers_are_read_from_both_levels() {
        let out = r#"{"continue": true, "systemMessage": "hi", "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "not on main", "updatedInput": {"command": "ls"}}}"#;
        let effect = Effect::of(Some(0), false, out, "", true);
        assert_eq!(effect.permission, Some(Permission::Deny));
        assert_eq!(effect.permission_reason.as_deref(), Some("not on main"));
        assert_eq!(
            effect.updated_input,
            Some(serde_json::json!({"command": "ls"}))
        );
        assert_eq!(effect.system_message.as_deref(), Some("hi"));
        let stop = Effect::of(
            Some(0),
            false,
            r#"{"continue": false, "stopReason": "enough"}"#,
            "",
            true,
        );
        assert_eq!(stop.stop.as_deref(), Some("enough"));
        let block = Effect::of(
            Some(0),
            false,
            r#"{"decision": "block", "reason": "run the tests"}"#,
            "",
            true,
        );
        assert_eq!(block.block.as_deref(), Some("run the tests"));
        let odd = Effect::of(
            Some(0),
            false,
            r#"{"hookSpecificOutput": {"permissionDecision": "yes please"}}"#,
            "",
            true,
        );
        assert_eq!(
            odd.permission,
            Some(Permission::Deny),
            "an unreadable answer is no consent"
        );
    }

    #[test]
    fn plain_output_is_context_only_where_claude_code_says() {
        assert!(
            Effect::of(Some(0), false, "lint ok\n", "", false)
                .additional_context
                .is_none()
        );
    }

    #[test]
    fn the_strongest_permission_wins_deny_over_ask_over_allow() {
        let allow = Effect {
            permission: Some(Permission::Allow),
            ..Effect::default()
        };
        let ask = Effect {
            permission: Some(Permission::Ask),
            permission_reason: Some("check".into()),
            ..Effect::default()
        };
        let defer = Effect {
            permission: Some(Permission::Defer),
            ..Effect::default()
        };
        let combined = Combined::of([&allow, &ask]);
        assert_eq!(
            combined.permission,
            Some((Permission::Ask, Some("check".into())))
        );
        // Claude Code's order: deny > defer > ask > allow.
        let deferred = Combined::of([&allow, &ask, &defer]);
        assert_eq!(deferred.permission.unwrap().0, Permission::Defer);
        let deny = Effect {
            permission: Some(Permission::Deny),
            ..Effect::default()
        };
        assert_eq!(
            Combined::of([&ask, &deny]).permission.unwrap().0,
            Permission::Deny
        );
    }
}
