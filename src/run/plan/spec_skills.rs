//! A spec's skills and project instructions as planned: the `SKILL.md` files of the
//! directories `skills_from:` names (read now, recorded in `run_start`), and which files
//! of the workspace `instructions:` asks for (read when the task starts, from its own
//! copy or worktree).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::referenced_file::unlinked_beside;
use crate::spec::{
    DEFAULT_INSTRUCTIONS, InstructionsSpec, LoadedSpec, MAX_SKILL_FILE_BYTES, Position,
    SkillFileError, SkillSpec, SpecError, skill_of_file,
};
use crate::workspace::instructions::Wanted;
use crate::workspace::plain_file::read_plain_file;

/// The most skills a task offers: past it, skills are left out (in name order) with a
/// note, so a directory cannot grow the system prompt without bound.
pub(crate) const MAX_SKILLS: usize = 200;

/// The files `instructions:` asks for, in order: the default list when the key is
/// absent (or `true`), none for `none`, else the files named (each required).
pub(crate) fn wanted_instructions(loaded: &LoadedSpec) -> Vec<Wanted> {
    let default = || {
        DEFAULT_INSTRUCTIONS
            .iter()
            .map(|path| Wanted {
                path: path.to_string(),
                named_at: None,
            })
            .collect()
    };
    match loaded.spec.instructions.as_ref().map(|i| &i.value) {
        None | Some(InstructionsSpec::Default) => default(),
        Some(InstructionsSpec::Off) => Vec::new(),
        Some(InstructionsSpec::Files(files)) => files
            .iter()
            .map(|file| Wanted {
                path: file.value.clone(),
                named_at: Some(Position::at(&loaded.path, Some(file.referenced))),
            })
            .collect(),
    }
}

/// A file `instructions:` names that is not in `workspace` (where the task will start
/// from): an error at the file's line and column, before any task runs.
pub(crate) fn missing_instructions(loaded: &LoadedSpec, workspace: &Path) -> Result<(), SpecError> {
    for wanted in wanted_instructions(loaded) {
        let Some(named_at) = wanted.named_at else {
            continue;
        };
        if !workspace.join(&wanted.path).is_file() {
            return Err(SpecError::Invalid {
                position: named_at,
                message: format!(
                    "instructions: {} is not a file of the workspace {} (name files relative to the workspace root, or write instructions: none)",
                    wanted.path,
                    workspace.display()
                ),
            });
        }
    }
    Ok(())
}

/// The task's skills: each `SKILL.md` under the directories `skills_from:` names, by
/// name, with notes on what drover left out or does not use. `workspace`: where the
/// task's workspace starts from, so a skill inside it is named relative to its root.
pub(crate) fn task_skills(
    loaded: &LoadedSpec,
    workspace: &Path,
) -> Result<(BTreeMap<String, SkillSpec>, Vec<String>), SpecError> {
    let Some(from) = &loaded.spec.skills_from else {
        return Ok((BTreeMap::new(), Vec::new()));
    };
    let invalid = |message: String| SpecError::Invalid {
        position: Position::at(&loaded.path, Some(from.referenced)),
        message,
    };
    let workspace = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let mut skills = BTreeMap::new();
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut notes = Vec::new();
    // Past the bound, files are not even read: a checkout of thousands of skills costs
    // no more than the skills offered.
    let mut left_out: Vec<String> = Vec::new();
    for dir in &from.value.0 {
        let dir = unlinked_beside(loaded, dir).map_err(|e| invalid(format!("skills_from: {e}")))?;
        for file in skill_files(&dir, &invalid, &mut notes)? {
            if skills.len() >= MAX_SKILLS {
                left_out.push(file.display().to_string());
                continue;
            }
            let Some((name, skill)) = read_skill(&file, &workspace, &invalid, &mut notes)? else {
                continue;
            };
            if let Some(first) = seen.insert(name.clone(), file.clone()) {
                return Err(invalid(format!(
                    "skills_from: {} and {} both define the skill {name}; rename one",
                    first.display(),
                    file.display()
                )));
            }
            skills.insert(name, skill);
        }
    }
    if !left_out.is_empty() {
        notes.push(format!(
            "skills_from: {} skills left out, not read ({}{}): drover offers at most {MAX_SKILLS}",
            left_out.len(),
            left_out
                .iter()
                .take(10)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            if left_out.len() > 10 { ", …" } else { "" }
        ));
    }
    Ok((skills, notes))
}

/// The `SKILL.md` of each skill directory in `dir`, in name order. Plain files beside
/// them (a README) are not skills; a directory without `SKILL.md` is named in a note; a
/// symbolic link is refused, as `agents_from:` refuses one.
fn skill_files(
    dir: &Path,
    invalid: &dyn Fn(String) -> SpecError,
    notes: &mut Vec<String>,
) -> Result<Vec<PathBuf>, SpecError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        invalid(format!(
            "skills_from: cannot read the directory {}: {e}",
            dir.display()
        ))
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    paths.sort();
    let mut files = Vec::new();
    for path in paths {
        let meta = std::fs::symlink_metadata(&path)
            .map_err(|e| invalid(format!("skills_from: cannot read {}: {e}", path.display())))?;
        if meta.file_type().is_symlink() {
            return Err(invalid(format!(
                "skills_from: {} is a symbolic link (refused: it may lead out of the repository); put the skill's directory there, or name the directory it points to in skills_from",
                path.display()
            )));
        }
        if !meta.is_dir() {
            continue;
        }
        let file = path.join("SKILL.md");
        if std::fs::symlink_metadata(&file).is_err() {
            notes.push(format!(
                "skills_from: {} has no SKILL.md; it is not a skill",
                path.display()
            ));
            continue;
        }
        files.push(file);
    }
    Ok(files)
}

/// One skill from its `SKILL.md`: None when it is left out (with a note).
fn read_skill(
    file: &Path,
    workspace: &Path,
    invalid: &dyn Fn(String) -> SpecError,
    notes: &mut Vec<String>,
) -> Result<Option<(String, SkillSpec)>, SpecError> {
    let meta = std::fs::symlink_metadata(file)
        .map_err(|e| invalid(format!("skills_from: cannot read {}: {e}", file.display())))?;
    if !meta.file_type().is_file() {
        return Err(invalid(format!(
            "skills_from: {} is not a regular file (symbolic links and other kinds are refused)",
            file.display()
        )));
    }
    if meta.len() > MAX_SKILL_FILE_BYTES {
        return Err(invalid(format!(
            "skills_from: {} has {} bytes, more than the {MAX_SKILL_FILE_BYTES} a SKILL.md may have",
            file.display(),
            meta.len()
        )));
    }
    let bytes = read_plain_file(file, MAX_SKILL_FILE_BYTES)
        .map_err(|e| invalid(format!("skills_from: cannot read {}: {e}", file.display())))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| invalid(format!("skills_from: {} is not UTF-8 text", file.display())))?;
    // A SKILL.md drover cannot read as a skill is left out, the others work; one that
    // asks for a sandbox of its own is refused (see `referenced`).
    let skill = match skill_of_file(&text) {
        Ok(skill) => skill,
        Err(error) => {
            let shown = match &error {
                SkillFileError::FrontMatter {
                    at: Some((line, column)),
                    message,
                } => format!("{}:{line}:{column}: {message}", file.display()),
                other => format!("{}: {other}", file.display()),
            };
            if shown.contains("`sandbox` cannot be set") {
                return Err(invalid(format!("skills_from {shown}")));
            }
            notes.push(format!("skills_from {shown} (the skill is left out)"));
            return Ok(None);
        }
    };
    notes.extend(
        skill
            .notes
            .iter()
            .map(|note| format!("skills_from {}: {note}", file.display())),
    );
    let dir = file.parent().unwrap_or(Path::new("."));
    if skill.model_invocation_disabled {
        notes.push(format!(
            "skills_from {}: skill {} left out: disable-model-invocation: true means only a person invokes it, and no person takes part in a headless run",
            file.display(),
            skill.name
        ));
        return Ok(None);
    }
    if dir
        .file_name()
        .is_some_and(|name| name != skill.name.as_str())
    {
        notes.push(format!(
            "skills_from {}: the skill is named {} in its front matter, not after its directory; the model calls it {}",
            file.display(),
            skill.name,
            skill.name
        ));
    }
    let real = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let shown = match crate::workspace::paths::relative_to(workspace, &real) {
        Some(relative) if !relative.is_empty() => relative,
        _ => real.display().to_string(),
    };
    Ok(Some((
        skill.name,
        SkillSpec {
            description: skill.description,
            body: skill.body,
            dir: shown,
        },
    )))
}

#[cfg(test)]
#[path = "spec_skills_tests.rs"]
mod tests;
