//! The little shell expansion the policy can do statically: `~`, `$HOME`, and the
//! spellings of the working directory (`$PWD`, `~+`, `/proc/self/cwd`). Anything else
//! with a `$` cannot be known before the command runs. Also the small word helpers every
//! part of the shell policy reads words with.

use std::path::{Path, PathBuf};

/// `word` with a leading `~`, `$HOME` or `${HOME}` replaced by `home`; None when the word
/// still holds an expansion drover cannot resolve (or `~` with no home known).
pub(super) fn expand_home(word: &str, home: Option<&Path>) -> Option<PathBuf> {
    let rest = ["~", "$HOME", "${HOME}"].iter().find_map(|prefix| {
        word.strip_prefix(prefix)
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    match rest {
        Some(rest) => {
            let rest = rest.trim_start_matches('/');
            if rest.contains('$') {
                return None;
            }
            let home = home?;
            Some(if rest.is_empty() {
                home.to_path_buf()
            } else {
                home.join(rest)
            })
        }
        None if word.contains('$') || word.starts_with('~') => None,
        None => Some(PathBuf::from(word)),
    }
}

/// `word` as a path, with the home and working-directory spellings resolved (the working
/// directory is `cwd`); None when it holds an expansion drover cannot resolve.
pub(super) fn expand_word(word: &str, home: Option<&Path>, cwd: &Path) -> Option<PathBuf> {
    for prefix in ["$PWD", "${PWD}", "~+", "/proc/self/cwd"] {
        if let Some(rest) = word.strip_prefix(prefix)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            let rest = rest.trim_start_matches('/');
            if rest.contains('$') {
                return None;
            }
            return Some(if rest.is_empty() {
                cwd.to_path_buf()
            } else {
                cwd.join(rest)
            });
        }
    }
    expand_home(word, home)
}

/// The program a command word names, without its directory (`/usr/bin/git` → `git`).
pub(super) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The line with single-quoted text blanked out (bash expands nothing there), so
/// textual checks see only what the shell interprets.
pub(super) fn blank_single_quotes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in line.chars() {
        if single {
            single = c != '\'';
            out.push(if single { ' ' } else { c });
            continue;
        }
        if escaped {
            escaped = false;
            out.push(c);
            continue;
        }
        match c {
            '\\' => escaped = true,
            '\'' if !double => single = true,
            '"' => double = !double,
            _ => {}
        }
        out.push(c);
    }
    out
}

/// The home directory drover runs with.
pub(super) fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_forms_expand_and_other_expansions_do_not() {
        let home = Some(Path::new("/home/u"));
        assert_eq!(expand_home("~", home), Some(PathBuf::from("/home/u")));
        assert_eq!(expand_home("~/x", home), Some(PathBuf::from("/home/u/x")));
        assert_eq!(
            expand_home("$HOME/.ssh", home),
            Some(PathBuf::from("/home/u/.ssh"))
        );
        assert_eq!(expand_home("${HOME}", home), Some(PathBuf::from("/home/u")));
        assert_eq!(expand_home("$HOMEX", home), None);
        assert_eq!(expand_home("$TARGET/x", home), None);
        assert_eq!(expand_home("~other/x", home), None);
        assert_eq!(
            expand_home("src/a.rs", home),
            Some(PathBuf::from("src/a.rs"))
        );
        assert_eq!(expand_home("~", None), None);
    }

    #[test]
    fn working_directory_spellings_expand_to_cwd() {
        let cwd = Path::new("/ws/sub");
        for word in ["$PWD/x", "${PWD}/x", "~+/x", "/proc/self/cwd/x"] {
            assert_eq!(
                expand_word(word, None, cwd),
                Some(PathBuf::from("/ws/sub/x")),
                "{word}"
            );
        }
        assert_eq!(
            expand_word("$PWD", None, cwd),
            Some(PathBuf::from("/ws/sub"))
        );
        assert_eq!(expand_word("$PWD/$X", None, cwd), None);
        assert_eq!(expand_word("$PWDX", None, cwd), None);
    }

    #[test]
    fn single_quoted_text_is_blanked() {
        assert_eq!(blank_single_quotes("a '$x' \"'$y'\""), "a '  ' \"'$y'\"");
        assert_eq!(basename("/usr/bin/git"), "git");
    }
}
