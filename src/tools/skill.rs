//! Skill: the instructions of one Agent Skill the spec loaded (`skills_from:`), on
//! demand. The system prompt lists every skill's name and description; a call returns
//! the body of its `SKILL.md` and names the skill's directory, where the files its
//! instructions mention lie (read with the usual tools, under the usual rules).
//!
//! It reads nothing at call time: the skills were read when the task was planned (and a
//! replay's come from the recording), so the policy judges only which skill is asked for.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{About, ToolContext, ToolError, ToolInput, TypedTool};
use crate::policy::Subject;
use crate::spec::SkillSpec;

/// The tool's name (Claude Code's).
pub(crate) use crate::policy::SKILL_TOOL as SKILL;

/// The Skill tool over the task's skills, by name.
#[derive(Clone)]
pub(crate) struct SkillTool {
    skills: Arc<BTreeMap<String, SkillSpec>>,
}

impl SkillTool {
    pub(crate) fn new(skills: BTreeMap<String, SkillSpec>) -> SkillTool {
        SkillTool {
            skills: Arc::new(skills),
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The skill's name, as the list of skills gives it (e.g. "pdf").
    skill: String,
    /// Optional arguments for the skill: they fill $ARGUMENTS in its instructions.
    #[serde(default)]
    args: Option<String>,
}

impl ToolInput for Input {
    fn subject(&self) -> Subject {
        Subject::Skill(skill_name(&self.skill).to_string())
    }
}

/// The name a call asks for: as written, or as a slash command (`/pdf`).
fn skill_name(raw: &str) -> &str {
    let trimmed = raw.trim();
    trimmed.strip_prefix('/').unwrap_or(trimmed)
}

const DESCRIPTION: &str = "Loads a skill: the repository's instructions for one kind of work. The system prompt lists the skills with what each is for.

Usage:
- When a skill fits what you are about to do, call Skill with its name before you start, and follow the instructions it returns.
- args (optional) go to the skill: they fill $ARGUMENTS in its instructions.
- The result names the skill's directory: the scripts, references and templates its instructions mention lie there. Read or run them with the usual tools; the task's permissions apply.
- A skill loaded once stays in the conversation: do not load it again.";

impl TypedTool for SkillTool {
    type Input = Input;
    // It returns text the spec loaded and touches nothing: read-only, allowed unless a
    // `Skill` or `Skill(name)` deny rule says otherwise.
    const ABOUT: About = About::reads(SKILL, DESCRIPTION);

    async fn run(&self, input: Input, ctx: &ToolContext) -> Result<String, ToolError> {
        let name = skill_name(&input.skill);
        let Some(skill) = self.skills.get(name) else {
            let names: Vec<&str> = self.skills.keys().map(String::as_str).collect();
            return Err(ToolError::Failed(format!(
                "No skill named {name:?}. The skills are: {}.",
                names.join(", ")
            )));
        };
        let args = input.args.as_deref().map(str::trim).unwrap_or_default();
        if args.len() > MAX_ARGS_BYTES {
            return Err(ToolError::Failed(format!(
                "The args are {} bytes; a skill takes at most {MAX_ARGS_BYTES}. Give the skill short arguments and put the rest in a file it can read.",
                args.len()
            )));
        }
        loaded(name, skill, args, &ctx.workspace).map_err(|size| {
            ToolError::Failed(format!(
                "Skill {name} with these args would be {size} bytes of instructions, over the {MAX_LOADED_BYTES} a skill may give (its body places $ARGUMENTS many times); call it with shorter args."
            ))
        })
    }
}

/// The longest `args` a Skill call may give: a few words for `$ARGUMENTS`, never a
/// payload that a body naming `$ARGUMENTS` thousands of times would multiply.
const MAX_ARGS_BYTES: usize = 16 * 1024;

/// The most a Skill call returns: a SKILL.md's own bound, and some room for its
/// arguments.
const MAX_LOADED_BYTES: usize = 2 * crate::spec::MAX_SKILL_FILE_BYTES as usize;

/// What a call of `skill` returns: where its files are, then its instructions with
/// `${CLAUDE_SKILL_DIR}` (the directory, absolute) and `$ARGUMENTS` filled in;
/// arguments the body does not place follow it, as Claude Code adds them. The error is
/// the size the text would have, when that is over [`MAX_LOADED_BYTES`]: it is not built.
fn loaded(name: &str, skill: &SkillSpec, args: &str, workspace: &Path) -> Result<String, usize> {
    let absolute = if skill.dir.starts_with('/') {
        skill.dir.clone()
    } else {
        workspace.join(&skill.dir).display().to_string()
    };
    // Sized before anything is built: each placeholder may be written thousands of times.
    let dirs = skill.body.matches("${CLAUDE_SKILL_DIR}").count();
    let places = skill.body.matches("$ARGUMENTS").count();
    let size = skill
        .body
        .len()
        .saturating_add(dirs.saturating_mul(absolute.len()))
        .saturating_add(places.saturating_mul(args.len()))
        .saturating_add(args.len())
        .saturating_add(skill.dir.len());
    if size > MAX_LOADED_BYTES {
        return Err(size);
    }
    let mut body = skill.body.replace("${CLAUDE_SKILL_DIR}", &absolute);
    if places > 0 {
        body = body.replace("$ARGUMENTS", args);
    } else if !args.is_empty() {
        body.push_str(&format!("\n\nARGUMENTS: {args}"));
    }
    Ok(format!(
        "Skill {name}. Its directory (the files its instructions name lie there): {}\n\n{body}",
        skill.dir
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::CallJson;

    fn tool() -> SkillTool {
        let mut skills = BTreeMap::new();
        skills.insert(
            "pdf".to_string(),
            SkillSpec {
                description: "Fills PDF forms.".into(),
                body: "Run python ${CLAUDE_SKILL_DIR}/fill.py $ARGUMENTS".into(),
                dir: ".claude/skills/pdf".into(),
            },
        );
        skills.insert(
            "notes".to_string(),
            SkillSpec {
                description: "Writes notes.".into(),
                body: "Write short notes.".into(),
                dir: "/shared/skills/notes".into(),
            },
        );
        SkillTool::new(skills)
    }

    #[tokio::test]
    async fn a_call_returns_the_body_with_its_directory_and_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::in_temp(&dir);
        let output = tool()
            .call(json!({"skill": "pdf", "args": "form.pdf"}), &ctx)
            .await;
        assert!(!output.is_error, "{}", output.content);
        let fill = ctx.workspace.join(".claude/skills/pdf/fill.py");
        assert_eq!(
            output.content,
            format!(
                "Skill pdf. Its directory (the files its instructions name lie there): .claude/skills/pdf\n\nRun python {} form.pdf",
                fill.display()
            )
        );
        let output = tool()
            .call(json!({"skill": "/notes", "args": "on the API"}), &ctx)
            .await;
        assert!(
            output
                .content
                .ends_with("/shared/skills/notes\n\nWrite short notes.\n\nARGUMENTS: on the API"),
            "{}",
            output.content
        );
    }

    /// A body placing `$ARGUMENTS` thousands of times cannot turn a call into
    /// gigabytes: long args, and a result over the bound, are refused before it is built.
    #[tokio::test]
    async fn arguments_cannot_multiply_a_skill_into_an_unbounded_result() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::in_temp(&dir);
        let mut skills = BTreeMap::new();
        skills.insert(
            "amp".to_string(),
            SkillSpec {
                description: "d".into(),
                body: "$ARGUMENTS".repeat(25_600),
                dir: "amp".into(),
            },
        );
        let tool = SkillTool::new(skills);
        let long = tool
            .call(json!({"skill": "amp", "args": "A".repeat(20_000)}), &ctx)
            .await;
        assert!(
            long.is_error && long.content.contains("at most 16384"),
            "{}",
            &long.content[..200.min(long.content.len())]
        );
        let multiplied = tool
            .call(json!({"skill": "amp", "args": "A".repeat(100)}), &ctx)
            .await;
        assert!(multiplied.is_error, "{} bytes", multiplied.content.len());
        assert!(
            multiplied.content.contains("bytes of instructions"),
            "{}",
            multiplied.content
        );
        let fine = tool.call(json!({"skill": "amp", "args": "A"}), &ctx).await;
        assert!(
            !fine.is_error && fine.content.len() < 30_000,
            "{}",
            fine.content.len()
        );
    }

    #[tokio::test]
    async fn an_unknown_skill_names_the_skills() {
        let dir = tempfile::tempdir().unwrap();
        let output = tool()
            .call(json!({"skill": "deploy"}), &ToolContext::in_temp(&dir))
            .await;
        assert!(output.is_error);
        assert_eq!(
            output.content,
            "No skill named \"deploy\". The skills are: notes, pdf."
        );
    }

    #[test]
    fn the_policy_judges_the_skill_asked_for() {
        let facts = tool().judged(json!({"skill": " /pdf "}));
        assert_eq!(facts.subject, Subject::Skill("pdf".into()));
        assert!(facts.tool.read_only);
        assert_eq!(facts.tool.name, "Skill");
    }
}
