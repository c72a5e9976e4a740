//! What `repo.ref` names on the remote, from one `git ls-remote --symref`: a branch
//! (first) or a tag, the remote's HEAD when no ref is given, else a commit id.

use crate::spec::GitRef;

/// What the checkout fetches and checks out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Target {
    /// A ref of the remote: its full name (`HEAD`, `refs/heads/x`, `refs/tags/x`), the
    /// commit it names there (peeled for a tag), and the local branch it becomes (a
    /// branch, or the branch the remote's HEAD points at).
    Ref {
        name: String,
        commit: String,
        branch: Option<String>,
    },
    /// A full commit id, fetched by id.
    Commit(String),
    /// An abbreviated commit id: the branches and tags are fetched and it is looked up.
    Abbreviated(String),
}

/// Why a ref names nothing on the remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Unresolved {
    /// The remote has no ref at all.
    Empty,
    /// No branch or tag of that name; some of the branches there.
    NoSuchRef {
        asked: String,
        branches: Vec<String>,
    },
}

/// The ref lines of `git ls-remote --symref`: (`name`, `id`), and HEAD's target.
struct Listing {
    refs: Vec<(String, String)>,
    head_target: Option<String>,
}

fn listing(output: &str) -> Listing {
    let mut refs = Vec::new();
    let mut head_target = None;
    for line in output.lines() {
        if let Some(rest) = line.strip_prefix("ref: ") {
            if let Some((target, "HEAD")) = rest.split_once('\t') {
                head_target = Some(target.to_string());
            }
            continue;
        }
        if let Some((id, name)) = line.split_once('\t') {
            refs.push((name.to_string(), id.to_string()));
        }
    }
    Listing { refs, head_target }
}

/// What `asked` (None: the remote's HEAD) names in `ls_remote`'s output.
pub(super) fn resolve(ls_remote: &str, asked: Option<&GitRef>) -> Result<Target, Unresolved> {
    let listing = listing(ls_remote);
    if listing.refs.is_empty() {
        return Err(Unresolved::Empty);
    }
    let id_of = |name: &str| {
        let peeled = format!("{name}^{{}}");
        let find = |wanted: &str| {
            listing
                .refs
                .iter()
                .find(|(n, _)| n == wanted)
                .map(|(_, id)| id.clone())
        };
        find(&peeled).or_else(|| find(name))
    };
    let Some(asked) = asked else {
        let commit = id_of("HEAD").ok_or(Unresolved::Empty)?;
        let branch = listing
            .head_target
            .as_deref()
            .and_then(|target| target.strip_prefix("refs/heads/"))
            .map(str::to_string);
        return Ok(Target::Ref {
            name: "HEAD".into(),
            commit,
            branch,
        });
    };
    let text = asked.as_str();
    let candidates = [
        (format!("refs/heads/{text}"), true),
        (format!("refs/tags/{text}"), false),
        (text.to_string(), text.starts_with("refs/heads/")),
    ];
    for (name, is_branch) in candidates {
        if !name.starts_with("refs/") {
            continue;
        }
        if let Some(commit) = id_of(&name) {
            let branch = is_branch.then(|| name.trim_start_matches("refs/heads/").to_string());
            return Ok(Target::Ref {
                name,
                commit,
                branch,
            });
        }
    }
    if asked.is_full_commit() {
        return Ok(Target::Commit(text.to_ascii_lowercase()));
    }
    if asked.may_be_commit() {
        return Ok(Target::Abbreviated(text.to_ascii_lowercase()));
    }
    Err(Unresolved::NoSuchRef {
        asked: text.to_string(),
        branches: listing
            .refs
            .iter()
            .filter_map(|(name, _)| name.strip_prefix("refs/heads/"))
            .take(10)
            .map(str::to_string)
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "ref: refs/heads/main\tHEAD\n\
        1111111111111111111111111111111111111111\tHEAD\n\
        1111111111111111111111111111111111111111\trefs/heads/main\n\
        2222222222222222222222222222222222222222\trefs/heads/dev\n\
        3333333333333333333333333333333333333333\trefs/tags/v1\n\
        4444444444444444444444444444444444444444\trefs/tags/v1^{}\n";

    fn asked(text: &str) -> GitRef {
        GitRef::new(text).unwrap()
    }

    #[test]
    fn branches_tags_head_and_commits_are_told_apart() {
        assert_eq!(
            resolve(LISTING, None).unwrap(),
            Target::Ref {
                name: "HEAD".into(),
                commit: "1".repeat(40),
                branch: Some("main".into())
            }
        );
        assert_eq!(
            resolve(LISTING, Some(&asked("dev"))).unwrap(),
            Target::Ref {
                name: "refs/heads/dev".into(),
                commit: "2".repeat(40),
                branch: Some("dev".into())
            }
        );
        // An annotated tag's commit is the peeled one.
        assert_eq!(
            resolve(LISTING, Some(&asked("v1"))).unwrap(),
            Target::Ref {
                name: "refs/tags/v1".into(),
                commit: "4".repeat(40),
                branch: None
            }
        );
        assert_eq!(
            resolve(LISTING, Some(&asked(&"a".repeat(40)))).unwrap(),
            Target::Commit("a".repeat(40))
        );
        assert_eq!(
            resolve(LISTING, Some(&asked("abc1234"))).unwrap(),
            Target::Abbreviated("abc1234".into())
        );
    }

    #[test]
    fn a_missing_ref_names_the_branches_there() {
        let Err(Unresolved::NoSuchRef { asked: a, branches }) =
            resolve(LISTING, Some(&asked("nope")))
        else {
            panic!("resolved");
        };
        assert_eq!(a, "nope");
        assert_eq!(branches, ["main", "dev"]);
        assert_eq!(resolve("", None), Err(Unresolved::Empty));
    }
}
