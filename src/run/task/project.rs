//! What the project brings to a task: its instruction files (read from the task's own
//! workspace when it starts, or a recording's), and the part of each agent's system
//! prompt made of them and of the skills its tools let it load.

use std::collections::BTreeMap;
use std::path::Path;

use crate::agent::project_prompt;
use crate::policy::{CallFacts, Policy, Subject};
use crate::record::transcript::InstructionFile;
use crate::run::plan::{InstructionsPlan, TaskPlan};
use crate::spec::SkillSpec;
use crate::tools::Registry;
use crate::tools::skill::SKILL;
use crate::workspace::instructions::read_instructions;

/// The task's instruction files as its agents are given them.
#[derive(Debug, Default)]
pub(super) struct ProjectFiles {
    pub files: Vec<InstructionFile>,
    /// What was cut, skipped or refused (printed, and kept in `run_start`'s `notes`).
    pub notes: Vec<String>,
    /// A file the spec names that the task's workspace does not hold (or drover will
    /// not read): the task ends before its loop (`setup_failed`), saying so.
    pub missing: Option<String>,
}

/// The task's instruction files: read from `workspace` (the task's own copy, worktree
/// or checkout) as `instructions:` asks, or the recording's for a replay or a resume.
pub(super) fn task_instructions(
    plan: &TaskPlan,
    workspace: &Path,
    policy: &Policy,
) -> ProjectFiles {
    let wanted = match &plan.instructions {
        InstructionsPlan::Recorded(files) => {
            return ProjectFiles {
                files: files.clone(),
                ..ProjectFiles::default()
            };
        }
        InstructionsPlan::Read(wanted) => wanted,
    };
    // A file the agent may not Read is not given to it as instructions either.
    let denied = |relative: &str| match policy.decide(&CallFacts {
        tool: crate::policy::ToolFacts::reading_files(),
        subject: Subject::Path(relative.to_string()),
    }) {
        crate::policy::Decision::Deny(grounds) => Some(format!(
            "the task's policy denies reading it ({})",
            grounds.rule.as_deref().unwrap_or("default")
        )),
        crate::policy::Decision::Allow(_) => None,
    };
    match read_instructions(workspace, wanted, &denied) {
        Ok(read) => {
            let notes: Vec<String> = read
                .notes
                .into_iter()
                .map(|note| format!("instructions: {note}"))
                .collect();
            for note in &notes {
                crate::esay!("drover: note: {}: {note}", plan.spec.name());
            }
            ProjectFiles {
                files: read.files,
                notes,
                missing: None,
            }
        }
        Err(error) => ProjectFiles {
            missing: Some(format!(
                "{error}; the agent never ran (name files the task's workspace holds, relative to its root)"
            )),
            ..ProjectFiles::default()
        },
    }
}

/// The project's part of the system prompt of an agent offered `registry`'s tools: the
/// instruction files, and the catalog of the skills it may load (none without the Skill
/// tool; a skill a `Skill(name)` deny rule stops is not listed).
pub(super) fn project_context(
    files: &[InstructionFile],
    skills: &BTreeMap<String, SkillSpec>,
    registry: &Registry,
    policy: &Policy,
) -> String {
    let offered: Vec<(&str, &str)> = match registry.facts(SKILL) {
        Some(facts) => skills
            .iter()
            .filter(|(name, _)| {
                policy
                    .decide(&CallFacts {
                        tool: facts.clone(),
                        subject: Subject::Skill(name.to_string()),
                    })
                    .allowed()
            })
            .map(|(name, skill)| (name.as_str(), skill.description.as_str()))
            .collect(),
        None => Vec::new(),
    };
    project_prompt(files, &offered)
}
