//! The little shell expansion the policy can do statically: `~` and `$HOME`. Anything
//! else with a `$` cannot be known before the command runs.

use std::path::{Path, PathBuf};

/// `word` with a leading `~`, `$HOME` or `${HOME}` replaced by `home`; None when the word
/// still holds an expansion drover cannot resolve (or `~` with no home known).
pub fn expand_home(word: &str, home: Option<&Path>) -> Option<PathBuf> {
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

/// The home directory drover runs with.
pub fn home_dir() -> Option<PathBuf> {
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
}
