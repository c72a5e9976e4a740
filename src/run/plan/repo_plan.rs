//! A `repo:` task's clone, planned: the URL and ref checked (the spec's checks said
//! what is wrong with them; here they are taken), `path:` absent or an empty directory,
//! the token read from `credentials.env` (or taken out of the URL) now, so a missing
//! variable stops the run before any task starts, as a missing model key does.

use std::path::Path;

use crate::spec::{
    DEFAULT_TOKEN_USERNAME, GitRef, LoadedSpec, Position, RepoSpec, RepoUrl, SpecError,
};
use crate::workspace::repo::{Credential, RepoRequest};

/// The clone `spec`'s `repo:` asks for (None without one), or every reason it cannot be
/// made, at the line and column of what it is about.
pub(super) fn repo_request(
    spec: &LoadedSpec,
    cache: Option<&Path>,
    overlay: bool,
) -> Result<Option<RepoRequest>, Vec<SpecError>> {
    let Some(repo) = &spec.spec.repo else {
        return Ok(None);
    };
    let at = |location, message: String| SpecError::Invalid {
        position: Position::at(&spec.path, Some(location)),
        message,
    };
    let written = &repo.value;
    let mut errors = Vec::new();
    // The spec's own checks reported a bad URL or ref already; they are left out here.
    let url = RepoUrl::parse(&written.url.value).ok();
    let git_ref = match written.ref_name() {
        Some(text) => GitRef::new(text),
        None => None,
    };
    let path = written
        .path
        .as_ref()
        .map(|path| (spec.beside_spec(&path.value), path.referenced));
    if let Some((dir, location)) = &path
        && let Some(problem) = path_problem(dir)
    {
        errors.push(at(*location, problem));
    }
    let credential = match credential_of(written, url.as_ref()) {
        Ok(credential) => credential,
        Err(CredentialProblem(message)) => {
            let location = written
                .credentials
                .as_ref()
                .map_or(repo.referenced, |c| c.referenced);
            errors.push(at(location, message));
            Credential::GitConfig
        }
    };
    let Some(url) = url.filter(|_| errors.is_empty()) else {
        return Err(errors);
    };
    if written.git_ref.is_some() && git_ref.is_none() {
        return Err(errors);
    }
    // Made now, before any task's sandbox is drawn, so that each leaves it out.
    let checkouts = match &path {
        None => crate::workspace::repo::checkouts_dir().ok(),
        Some(_) => None,
    };
    Ok(Some(RepoRequest {
        url,
        git_ref,
        depth: written.depth.as_ref().map(|depth| depth.value),
        path: path.map(|(dir, _)| std::path::absolute(&dir).unwrap_or(dir)),
        credential,
        timeout: written.timeout(),
        cache: cache.map(|dir| std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())),
        overlay,
        checkouts,
        at_commit: None,
    }))
}

/// `path:` must be absent or an empty directory: drover never clobbers files.
fn path_problem(dir: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(dir).ok()?;
    let empty =
        meta.is_dir() && std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none());
    (!empty).then(|| {
        format!(
            "repo.path {} is there and not an empty directory; drover clones only into a new or empty directory and never clobbers files: empty or remove it, or name another path",
            dir.display()
        )
    })
}

/// Why the clone's credentials cannot be had, said at `credentials:`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct CredentialProblem(String);

/// Where the clone's credentials come from: `credentials.env`'s variable (read now),
/// a token in the URL, `credentials.helper`, or git's configuration.
fn credential_of(repo: &RepoSpec, url: Option<&RepoUrl>) -> Result<Credential, CredentialProblem> {
    let credentials = repo.credentials.as_ref().map(|c| &c.value);
    if let Some(helper) = credentials.and_then(|c| c.helper.as_ref()) {
        return Ok(Credential::Helper(helper.clone()));
    }
    if let Some(name) = credentials.and_then(|c| c.env.as_ref()) {
        let token = std::env::var(name).unwrap_or_default();
        if token.trim().is_empty() {
            return Err(CredentialProblem(format!(
                "repo.credentials.env names {name}, which is not set (or empty) in drover's environment; set it to the token, or leave credentials out for git's own configuration"
            )));
        }
        if token.chars().any(char::is_control) {
            return Err(CredentialProblem(format!(
                "the value of {name} (repo.credentials.env) holds a line break or control character; a token has none"
            )));
        }
        let username = credentials
            .and_then(|c| c.username.clone())
            .unwrap_or_else(|| DEFAULT_TOKEN_USERNAME.to_string());
        return Ok(Credential::Token { username, token });
    }
    if let Some(url) = url
        && let Some(token) = &url.password
    {
        if token.chars().any(char::is_control) {
            return Err(CredentialProblem(
                "repo.url's password holds a control character".into(),
            ));
        }
        let username = url
            .username
            .clone()
            .unwrap_or_else(|| DEFAULT_TOKEN_USERNAME.to_string());
        return Ok(Credential::Token {
            username,
            token: token.clone(),
        });
    }
    Ok(Credential::GitConfig)
}
