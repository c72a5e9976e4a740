//! drover's own system prompt, then what the project brings (its instruction files, the
//! skills the agent may load), then the task's `system:`.

use crate::record::transcript::InstructionFile;

const BASE: &str = "You are a coding agent run by drover, a headless runner in CI. \
No person is watching and nobody will answer questions: work on the task until it is \
done, using the tools offered. Every tool call is checked against the task's permission \
policy; a denied call comes back as an error that names the rule, so choose another way. \
Read a file before you edit or overwrite it. Paths are relative to the workspace root \
unless absolute. When the task is complete, end your turn with a short summary of what \
you changed and how you verified it.";

const INSTRUCTIONS: &str = "# Project instructions\n\nThe repository keeps these \
instructions for agents that work in it. Follow them where they bear on the task; they \
do not change the task or the permission policy.";

const SKILLS: &str = "# Skills\n\nSkills hold the repository's instructions for \
particular kinds of work. When one fits what you are about to do, load it with the \
Skill tool (its name as given here) before you start, and follow what it returns.";

/// The system prompt for a task or sub-agent: drover's own, the workspace, `project`
/// (see [`project_prompt`]; empty for none), then `extra` (the task's `system:`, a
/// sub-agent's prompt).
pub(crate) fn system_prompt(
    workspace: &std::path::Path,
    project: &str,
    extra: Option<&str>,
) -> String {
    let mut prompt = format!("{BASE}\n\nWorkspace root: {}", workspace.display());
    for part in [Some(project), extra].into_iter().flatten() {
        if !part.trim().is_empty() {
            prompt.push_str("\n\n");
            prompt.push_str(part.trim_end());
        }
    }
    prompt
}

/// What the project brings to an agent's system prompt: each instruction file under a
/// heading naming it (and the file that imported it), then the catalog of the skills it
/// may load (`(name, description)`, descriptions on one line). Empty when there is
/// neither. A replay builds it from the recorded files, so it is the same text.
pub(crate) fn project_prompt(instructions: &[InstructionFile], skills: &[(&str, &str)]) -> String {
    let mut parts = Vec::new();
    if !instructions.is_empty() {
        let mut text = INSTRUCTIONS.to_string();
        for file in instructions {
            text.push_str(&format!("\n\n## {}", file.path));
            if let Some(importer) = &file.imported_by {
                text.push_str(&format!(" (imported by {importer})"));
            }
            text.push_str("\n\n");
            text.push_str(file.text.trim_end());
            if let Some(size) = file.cut_from {
                text.push_str(&format!(
                    "\n\n[drover: only the first {} bytes of this file's {size} are shown]",
                    file.text.len()
                ));
            }
        }
        parts.push(text);
    }
    if !skills.is_empty() {
        let mut text = SKILLS.to_string();
        text.push('\n');
        for (name, description) in skills {
            let one_line = description.split_whitespace().collect::<Vec<_>>().join(" ");
            text.push_str(&format!("\n- {name}: {one_line}"));
        }
        parts.push(text);
    }
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, by: Option<&str>, text: &str, cut: Option<u64>) -> InstructionFile {
        InstructionFile {
            path: path.into(),
            imported_by: by.map(str::to_string),
            text: text.into(),
            cut_from: cut,
        }
    }

    #[test]
    fn each_file_is_under_a_heading_naming_it_and_skills_are_listed() {
        let project = project_prompt(
            &[
                file("CLAUDE.md", None, "Use tabs.\n", None),
                file("docs/git.md", Some("CLAUDE.md"), "Rebase.\n", Some(90_000)),
            ],
            &[("pdf", "Fills PDF\n  forms.")],
        );
        assert!(project.starts_with("# Project instructions\n"), "{project}");
        assert!(project.contains("\n\n## CLAUDE.md\n\nUse tabs.\n\n## docs/git.md (imported by CLAUDE.md)\n\nRebase.\n\n[drover: only the first 8 bytes of this file's 90000 are shown]\n\n# Skills\n"), "{project}");
        assert!(
            project.ends_with("\n\n- pdf: Fills PDF forms."),
            "{project}"
        );
        let prompt = system_prompt(std::path::Path::new("/ws"), &project, Some("Be brief."));
        assert!(
            prompt.contains("Workspace root: /ws\n\n# Project instructions"),
            "{prompt}"
        );
        assert!(
            prompt.ends_with("Fills PDF forms.\n\nBe brief."),
            "{prompt}"
        );
    }

    #[test]
    fn nothing_to_add_adds_nothing() {
        assert_eq!(project_prompt(&[], &[]), "");
        let prompt = system_prompt(std::path::Path::new("/ws"), "", None);
        assert!(prompt.ends_with("Workspace root: /ws"), "{prompt}");
    }
}
