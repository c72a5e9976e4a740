//! `instructions:` — the files of the workspace the model gets as project instructions:
//! Claude Code's `CLAUDE.md` (and `.claude/CLAUDE.md`), Codex's `AGENTS.md`. Plain data;
//! reading them (beneath the task's own workspace, when it starts) is the run's job.

use serde::Deserialize;
use serde_saphyr::Spanned;

/// The files read when the spec says nothing, in this order: Claude Code's project
/// memory files, then Codex's. A missing one is skipped.
pub const DEFAULT_INSTRUCTIONS: &[&str] = &["CLAUDE.md", ".claude/CLAUDE.md", "AGENTS.md"];

/// `instructions: none` (or `false`), or a list of files relative to the workspace
/// root. Absent (or `true`): [`DEFAULT_INSTRUCTIONS`].
#[derive(Debug, Clone, PartialEq)]
pub enum InstructionsSpec {
    /// `true`: the default files, as if the key were absent.
    Default,
    /// `none`, `false`: no instructions.
    Off,
    /// The files named, in order; each must exist. Spanned so that one missing from the
    /// workspace is reported at its own line and column.
    Files(Vec<Spanned<String>>),
}

impl<'de> Deserialize<'de> for InstructionsSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = InstructionsSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("none, or a list of files relative to the workspace root such as [CLAUDE.md, docs/agents.md]")
            }
            fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<Self::Value, E> {
                Ok(if value {
                    InstructionsSpec::Default
                } else {
                    InstructionsSpec::Off
                })
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
                match value {
                    "none" => Ok(InstructionsSpec::Off),
                    other => Err(E::custom(format!(
                        "instructions: {other:?} is not a list; write none, or a list such as [{other}]"
                    ))),
                }
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut files = Vec::new();
                while let Some(file) = seq.next_element::<Spanned<String>>()? {
                    if let Some(problem) = instruction_path_problem(&file.value) {
                        return Err(serde::de::Error::custom(problem));
                    }
                    files.push(file);
                }
                Ok(InstructionsSpec::Files(files))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// What is wrong with `path` as a file `instructions:` names (or a file imports): it
/// must name a file inside the workspace, relative to its root.
pub fn instruction_path_problem(path: &str) -> Option<String> {
    if path.trim().is_empty() {
        return Some("instructions: an empty file name; name a file relative to the workspace root, such as CLAUDE.md".into());
    }
    if path.starts_with('/') || path.starts_with('~') {
        return Some(format!(
            "instructions: {path:?} is not relative to the workspace root; drover reads instructions only from inside the workspace (write e.g. docs/agents.md)"
        ));
    }
    if path.contains('\0') || path.split('/').any(|part| part == "..") {
        return Some(format!(
            "instructions: {path:?} leaves the workspace; name a file inside it, relative to its root"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Holder {
        instructions: InstructionsSpec,
    }

    fn parse(yaml: &str) -> Result<InstructionsSpec, String> {
        serde_saphyr::from_str::<Holder>(yaml)
            .map(|h| h.instructions)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn none_false_true_and_lists() {
        assert_eq!(parse("instructions: none").unwrap(), InstructionsSpec::Off);
        assert_eq!(parse("instructions: false").unwrap(), InstructionsSpec::Off);
        assert_eq!(
            parse("instructions: true").unwrap(),
            InstructionsSpec::Default
        );
        let InstructionsSpec::Files(files) =
            parse("instructions:\n  - CLAUDE.md\n  - docs/agents.md\n").unwrap()
        else {
            panic!("a list")
        };
        let names: Vec<&str> = files.iter().map(|f| f.value.as_str()).collect();
        assert_eq!(names, ["CLAUDE.md", "docs/agents.md"]);
        assert_eq!(files[1].referenced.line(), 3, "each file has its position");
    }

    #[test]
    fn a_file_outside_the_workspace_or_a_bare_word_is_refused() {
        for (yaml, wanted) in [
            ("instructions: [/etc/passwd]", "not relative"),
            ("instructions: [\"~/notes.md\"]", "not relative"),
            ("instructions: [../x.md]", "leaves the workspace"),
            ("instructions: [a/../../x.md]", "leaves the workspace"),
            ("instructions: [\"\"]", "empty"),
            ("instructions: CLAUDE.md", "not a list"),
        ] {
            let error = parse(yaml).unwrap_err();
            assert!(error.contains(wanted), "{yaml}: {error}");
        }
    }
}
