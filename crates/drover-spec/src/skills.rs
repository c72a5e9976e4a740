//! `skills_from:` — Agent Skills (`<dir>/<name>/SKILL.md`, the format of
//! anthropics/skills and Claude Code's `.claude/skills/`) the model loads on demand with
//! the `Skill` tool. Plain data: the front matter's `name` and `description` (what the
//! model sees up front) and the body (what a `Skill` call returns); which directories
//! are read, and how, is the run's job.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The largest `SKILL.md` drover reads (the format asks for bodies under 500 lines).
pub const MAX_SKILL_FILE_BYTES: u64 = 256 * 1024;

/// The longest description the catalog shows (the format's limit); longer ones are cut.
pub const MAX_SKILL_DESCRIPTION: usize = 1024;

/// The longest skill name (the format's limit).
pub(crate) const MAX_SKILL_NAME: usize = 64;

/// `skills_from:`: one directory or a list, relative to the spec file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillsFrom(pub Vec<String>);

impl<'de> Deserialize<'de> for SkillsFrom {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum OneOrMany {
            One(String),
            Many(Vec<String>),
        }
        let dirs = match OneOrMany::deserialize(deserializer).map_err(|_| {
            serde::de::Error::custom(
                "skills_from: give a directory (relative to the spec file) or a list of them, such as .claude/skills",
            )
        })? {
            OneOrMany::One(dir) => vec![dir],
            OneOrMany::Many(dirs) => dirs,
        };
        if dirs.iter().any(|dir| dir.trim().is_empty()) {
            return Err(serde::de::Error::custom(
                "skills_from: an empty directory name; name a directory such as .claude/skills",
            ));
        }
        Ok(SkillsFrom(dirs))
    }
}

/// One skill as the run offers it. Recorded in `run_start` so a replay offers the same
/// catalog and answers `Skill` calls with the same bodies, reading no file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillSpec {
    /// What the model reads when it chooses a skill (at most [`MAX_SKILL_DESCRIPTION`]
    /// characters).
    pub description: String,
    /// The instructions after the front matter, returned by a `Skill` call.
    pub body: String,
    /// The skill's directory, where the body's other files are: relative to the
    /// workspace root when it lies inside the workspace (so it names the task's own copy
    /// or worktree), else absolute.
    pub dir: String,
}

/// A `SKILL.md` read: the skill's name and what it offers, with notes on what the file
/// held that drover does not use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    pub name: String,
    pub description: String,
    pub body: String,
    /// `disable-model-invocation: true`: only a person may invoke it (`/name`), and no
    /// person takes part in a headless run: it is left out.
    pub model_invocation_disabled: bool,
    pub notes: Vec<String>,
}

/// What is wrong with a `SKILL.md`.
#[derive(Debug, thiserror::Error)]
pub enum SkillFileError {
    #[error(transparent)]
    Split(#[from] super::front_matter::FrontMatterError),
    /// Where (1-based line and column in the file, when known) and what.
    #[error("{}{message}", at.map(|(line, column)| format!("{line}:{column}: ")).unwrap_or_default())]
    FrontMatter {
        at: Option<(u64, u64)>,
        message: String,
    },
    #[error("the file has no instructions after its front matter")]
    NoBody,
}

/// The front matter of a `SKILL.md`: the format's keys; every other is kept to be named.
#[derive(Debug, Deserialize)]
struct FrontMatter {
    name: String,
    description: String,
    /// The format's informational keys: read, and without effect on a run.
    #[serde(default, rename = "license")]
    _license: Option<Value>,
    #[serde(default, rename = "compatibility")]
    _compatibility: Option<Value>,
    #[serde(default, rename = "metadata")]
    _metadata: Option<Value>,
    #[serde(default, rename = "disable-model-invocation")]
    disable_model_invocation: Option<bool>,
    /// A skill's commands run in the task's sandbox: the file chooses none.
    #[serde(default, rename = "sandbox")]
    _sandbox: super::referenced::NoSandbox,
    #[serde(flatten)]
    other: BTreeMap<String, Value>,
}

/// Parse one `SKILL.md`. A name the format does not allow, a missing `name` or
/// `description`, a front matter that does not parse or an empty body is an error; keys
/// drover does not use are named in the notes.
pub fn skill_of_file(text: &str) -> Result<SkillFile, SkillFileError> {
    let (yaml, body) = super::front_matter::split(text)?;
    let (front, lenient): (FrontMatter, bool) =
        super::front_matter::parse_lenient(yaml).map_err(|invalid| {
            SkillFileError::FrontMatter {
                at: invalid.at,
                message: invalid.message,
            }
        })?;
    if let Some(problem) = skill_name_problem(&front.name) {
        return Err(SkillFileError::FrontMatter {
            at: None,
            message: format!("name: {problem}"),
        });
    }
    if front.description.trim().is_empty() {
        return Err(SkillFileError::FrontMatter {
            at: None,
            message: "description is empty: say what the skill does and when to use it".into(),
        });
    }
    if body.is_empty() {
        return Err(SkillFileError::NoBody);
    }
    let mut notes: Vec<String> = front.other.keys().map(|key| key_note(key)).collect();
    if lenient {
        notes.push(super::front_matter::READ_LINE_BY_LINE.to_string());
    }
    let mut description = front.description.trim().to_string();
    if description.chars().count() > MAX_SKILL_DESCRIPTION {
        notes.push(format!(
            "description cut to its first {MAX_SKILL_DESCRIPTION} characters (the format's limit)"
        ));
        description = description.chars().take(MAX_SKILL_DESCRIPTION).collect();
    }
    if body.contains("!`") {
        notes.push(
            "`!`command`` lines are not run: the model sees them as text (drover runs no command a repository file names outside the policy)".into(),
        );
    }
    Ok(SkillFile {
        name: front.name,
        description,
        body: body.to_string(),
        model_invocation_disabled: front.disable_model_invocation == Some(true),
        notes,
    })
}

/// Why a front matter key drover does not use is ignored.
fn key_note(key: &str) -> String {
    let why = match key {
        "allowed-tools" => {
            "a skill grants no permission in drover: the spec's permissions decide every call (write the rules it needs in permissions.allow)"
        }
        "model" | "effort" => "the skill's instructions go to the agent that asked, on its model",
        "context" | "agent" => {
            "the skill's instructions go to the agent that asked; they do not start a sub-agent"
        }
        "hooks" => "hooks come from the spec (hooks:, hooks_from:)",
        "paths" => "the skill is offered whatever files the agent works on",
        "user-invocable" | "argument-hint" => {
            "no person invokes skills in a headless run; the model does"
        }
        _ => "drover does not know this key",
    };
    format!("`{key}` ignored: {why}")
}

/// What is wrong with `name` as a skill's name: the format's lowercase letters, digits
/// and hyphens (upper case and `_` are taken too, as Claude Code takes them), at most
/// [`MAX_SKILL_NAME`] characters.
pub fn skill_name_problem(name: &str) -> Option<String> {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() {
        Some("a skill's name is empty; use lowercase letters, digits and hyphens".into())
    } else if !name.chars().all(valid) {
        Some(format!(
            "{name:?} is not a skill name: use lowercase letters, digits and hyphens (as in pdf-forms)"
        ))
    } else if name.len() > MAX_SKILL_NAME {
        Some(format!(
            "the skill name {name:?} has {} characters, more than {MAX_SKILL_NAME}",
            name.len()
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_file_reads_as_its_name_description_and_body() {
        let text = "---\nname: pdf-forms\ndescription: Fills PDF forms. Use when a form must be filled.\nlicense: Apache-2.0\nmetadata: { version: 2 }\n---\n\n# PDF forms\n\nRun `scripts/fill.py`.\n";
        let skill = skill_of_file(text).unwrap();
        assert_eq!(skill.name, "pdf-forms");
        assert_eq!(
            skill.description,
            "Fills PDF forms. Use when a form must be filled."
        );
        assert_eq!(skill.body, "# PDF forms\n\nRun `scripts/fill.py`.");
        assert!(!skill.model_invocation_disabled);
        assert!(skill.notes.is_empty(), "{:?}", skill.notes);
    }

    #[test]
    fn keys_drover_does_not_use_are_named_and_grant_nothing() {
        let text = "---\nname: ship\ndescription: Ships.\nallowed-tools: Bash(git push *)\ncontext: fork\ncolour: red\ndisable-model-invocation: true\n---\nShip it: !`git push`\n";
        let skill = skill_of_file(text).unwrap();
        assert!(skill.model_invocation_disabled);
        let notes = skill.notes.join("\n");
        assert!(
            notes.contains("`allowed-tools` ignored: a skill grants no permission"),
            "{notes}"
        );
        assert!(notes.contains("`context` ignored"), "{notes}");
        assert!(
            notes.contains("`colour` ignored: drover does not know"),
            "{notes}"
        );
        assert!(notes.contains("are not run"), "{notes}");
    }

    #[test]
    fn a_long_description_is_cut() {
        let text = format!(
            "---\nname: long\ndescription: {}\n---\nBody",
            "x".repeat(2000)
        );
        let skill = skill_of_file(&text).unwrap();
        assert_eq!(skill.description.len(), MAX_SKILL_DESCRIPTION);
        assert!(skill.notes[0].contains("cut"), "{:?}", skill.notes);
    }

    #[test]
    fn broken_files_say_what_is_wrong_and_where() {
        for (text, wanted) in [
            (
                "no front matter",
                "does not start with a `---` front matter",
            ),
            ("---\nname: x\ndescription: y\n", "no closing"),
            ("---\nname: x\n---\nbody", "description"),
            ("---\ndescription: y\n---\nbody", "name"),
            (
                "---\nname: a b\ndescription: y\n---\nbody",
                "not a skill name",
            ),
            (
                "---\nname: x\ndescription: \"  \"\n---\nbody",
                "description is empty",
            ),
            ("---\nname: x\ndescription: y\n---\n", "no instructions"),
            ("---\nname: x\ndescription: [y\n---\nbody", "3:"),
            (
                "---\nname: x\ndescription: y\nsandbox: off\n---\nbody",
                "4:10: `sandbox` cannot be set",
            ),
        ] {
            let error = skill_of_file(text).unwrap_err().to_string();
            assert!(error.contains(wanted), "{text:?}: {error}");
        }
    }

    #[test]
    fn skills_from_takes_one_directory_or_a_list() {
        #[derive(Debug, Deserialize)]
        struct Holder {
            skills_from: SkillsFrom,
        }
        let parse = |yaml: &str| serde_saphyr::from_str::<Holder>(yaml).map(|h| h.skills_from.0);
        assert_eq!(
            parse("skills_from: .claude/skills").unwrap(),
            [".claude/skills"]
        );
        assert_eq!(parse("skills_from: [a, b]").unwrap(), ["a", "b"]);
        assert!(parse("skills_from: [\"\"]").is_err());
        assert!(parse("skills_from: { a: 1 }").is_err());
    }
}
