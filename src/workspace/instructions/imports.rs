//! Claude Code's `@path` imports in a Markdown file of instructions: `See @README.md`,
//! `- git workflow @docs/git.md`. An import is an `@` at the start of a line or after
//! white space, followed by the path up to the next white space; none is taken inside a
//! code span or a fenced code block (`@scope/package` in code stays code), as Claude
//! Code's documentation says.

/// Trailing characters that end a sentence around an import (`see @README.md.`), not the
/// path.
const TRAILING: &[char] = &['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\'', '>'];

/// The paths `text` imports, in order of appearance, each once.
pub(super) fn imports(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(opened) = fence_of(trimmed) {
            fence = match fence {
                None => Some(opened),
                // A fence closes with at least as many of the same character.
                Some((c, n)) if opened.0 == c && opened.1 >= n => None,
                still => still,
            };
            continue;
        }
        if fence.is_some() {
            continue;
        }
        for path in in_prose(line) {
            if !found.contains(&path) {
                found.push(path);
            }
        }
    }
    found
}

/// A line opening or closing a fenced code block: its character and how many.
fn fence_of(trimmed: &str) -> Option<(char, usize)> {
    let c = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let count = trimmed.chars().take_while(|x| *x == c).count();
    (count >= 3).then_some((c, count))
}

/// The imports of one line outside its code spans (text between backticks).
fn in_prose(line: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for (index, segment) in line.split('`').enumerate() {
        if index % 2 == 1 {
            continue;
        }
        let mut previous = ' ';
        for (at, c) in segment.char_indices() {
            if c == '@' && previous.is_whitespace() {
                let rest = &segment[at + 1..];
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                let path = rest[..end].trim_end_matches(TRAILING);
                if !path.is_empty() && !path.starts_with('@') {
                    paths.push(path.to_string());
                }
            }
            previous = c;
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_are_found_in_prose_and_lists() {
        let text = "See @README.md for the overview and @package.json.\n\n# More\n- git workflow @docs/git-instructions.md\n@~/.claude/mine.md\nmail me@example.com, or ping @@x\n";
        assert_eq!(
            imports(text),
            [
                "README.md",
                "package.json",
                "docs/git-instructions.md",
                "~/.claude/mine.md"
            ]
        );
    }

    #[test]
    fn code_spans_and_fenced_blocks_are_not_imports() {
        let text = "Install `@anthropic-ai/claude-code` first.\n```sh\nnpm i @scope/pkg\n````\n~~~\n@inside.md\n~~~\nAfter @after.md and `@code.md` and @after.md again\n";
        assert_eq!(imports(text), ["after.md"]);
    }

    #[test]
    fn an_unclosed_fence_hides_the_rest() {
        assert!(imports("```\n@a.md\n").is_empty());
        assert_eq!(imports("```\n@a.md\n```\n@b.md"), ["b.md"]);
    }
}
