//! The Read deny rules the OS sandbox can enforce too: those naming a fixed absolute
//! path. The sandbox takes plain paths; this is where rules become those paths.

use std::path::{Component, Path, PathBuf};

use super::{Rule, Specifier};

/// The fixed paths among `deny` that the sandbox should make unreadable (see
/// [`expressible_read_denial`]); `home` is where `~/` points (None: such rules are left
/// to the permission check alone).
pub fn read_denials(deny: &[Rule], home: Option<&Path>) -> Vec<PathBuf> {
    deny.iter()
        .filter_map(|rule| expressible_read_denial(rule, home))
        .collect()
}

/// The absolute path a deny rule of the Read family names, when Landlock can express it:
/// `Read(//abs/path)` or `Read(~/path)` with no glob characters (a trailing `/**` or `/`
/// names the directory itself). None for every other rule.
pub(super) fn expressible_read_denial(rule: &Rule, home: Option<&Path>) -> Option<PathBuf> {
    if rule.tool() != "Read" {
        return None;
    }
    let Some(Specifier::Path(pattern)) = rule.specifier() else {
        return None;
    };
    let trimmed = pattern.as_str().trim_end_matches("/**");
    let trimmed = trimmed.trim_end_matches('/');
    if trimmed.contains(['*', '?', '[', ']', '{', '}', '\\']) {
        return None;
    }
    let path = if let Some(abs) = trimmed.strip_prefix("//") {
        PathBuf::from(format!("/{abs}"))
    } else if let Some(rest) = trimmed.strip_prefix("~/") {
        home?.join(rest)
    } else {
        return None;
    };
    // `..` would make the path mean something else once symlinks are resolved.
    if path.components().any(|c| c == Component::ParentDir) {
        return None;
    }
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(texts: &[&str]) -> Vec<Rule> {
        texts
            .iter()
            .map(|t| Rule::try_from(t.to_string()).unwrap())
            .collect()
    }

    #[test]
    fn only_fixed_absolute_read_denials_are_expressible() {
        let home = Path::new("/home/me");
        let denial = |text: &str| expressible_read_denial(&rules(&[text])[0], Some(home));
        assert_eq!(
            denial("Read(//etc/shadow)"),
            Some(PathBuf::from("/etc/shadow"))
        );
        assert_eq!(denial("Read(~/.ssh)"), Some(PathBuf::from("/home/me/.ssh")));
        assert_eq!(
            denial("Read(~/.aws/**)"),
            Some(PathBuf::from("/home/me/.aws"))
        );
        assert_eq!(
            denial("Read(//srv/keys/)"),
            Some(PathBuf::from("/srv/keys"))
        );
        for inexpressible in [
            "Read(.env)",
            "Read(secrets/**)",
            "Read(//etc/*.key)",
            "Read(~/.ssh/id_*)",
            "Read",
            "Edit(//etc/passwd)",
            "Grep(//etc/shadow)",
            "Bash(cat *)",
        ] {
            assert_eq!(denial(inexpressible), None, "{inexpressible}");
        }
        assert_eq!(
            expressible_read_denial(&rules(&["Read(~/.ssh)"])[0], None),
            None
        );
        // A path with `..` is refused when the rule is parsed: it never gets this far.
        assert!(Rule::try_from("Read(//a/../b)".to_string()).is_err());
    }
}
