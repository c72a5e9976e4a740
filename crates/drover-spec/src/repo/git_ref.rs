//! `repo.ref`: a branch, a tag or a commit, checked by `git check-ref-format`'s rules
//! before git sees it, and never an option or revision syntax (`HEAD~1`, `main@{1}`).

/// What a `ref:` is asked as, once checked: a name (a branch or tag, `refs/…`) or,
/// when it is all hex, possibly a commit (full or abbreviated); which it is is decided
/// against the remote's refs, a name winning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitRef(String);

impl GitRef {
    /// `text` checked ([`ref_problem`]).
    pub fn new(text: &str) -> Option<GitRef> {
        ref_problem(text)
            .is_none()
            .then(|| GitRef(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// All hex and at least 4 digits: it may name a commit.
    pub fn may_be_commit(&self) -> bool {
        (4..=64).contains(&self.0.len()) && self.0.bytes().all(|b| b.is_ascii_hexdigit())
    }

    /// A full object id (40 or 64 hex digits).
    pub fn is_full_commit(&self) -> bool {
        self.may_be_commit() && matches!(self.0.len(), 40 | 64)
    }
}

/// What is wrong with `text` as a ref, or None: `git check-ref-format`'s rules for a
/// branch name, and no leading '-'.
pub fn ref_problem(text: &str) -> Option<String> {
    let bad = |why: &str| {
        Some(format!(
            "{text:?} is no branch, tag or commit: {why}; write a branch name, a tag or a commit id"
        ))
    };
    if text.is_empty() {
        return bad("it is empty");
    }
    if text.len() > 1024 {
        return bad("it is longer than 1024 bytes");
    }
    if text.starts_with('-') {
        return bad("it starts with '-', which git would read as an option");
    }
    if text.contains("..") {
        return bad("it holds '..'");
    }
    if text.contains("@{") || text == "@" {
        return bad("it holds '@{' or is '@' (revision syntax)");
    }
    if let Some(c) = text
        .chars()
        .find(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(*c))
    {
        return bad(&format!("it holds {c:?}"));
    }
    if text.starts_with('/') || text.ends_with('/') || text.contains("//") {
        return bad("it starts or ends with '/' or holds '//'");
    }
    if text.ends_with('.') {
        return bad("it ends with '.'");
    }
    for part in text.split('/') {
        if part.starts_with('.') {
            return bad("a part of it starts with '.'");
        }
        if part.ends_with(".lock") {
            return bad("a part of it ends with '.lock'");
        }
    }
    None
}
