//! What `drover publish` was asked for, and what follows from it: where to push, with
//! which credential, which tasks share a branch, the commit message and author.

use std::path::PathBuf;
use std::time::Duration;

use crate::workspace::repo::Credential;

use super::artifacts::PublishedTask;
use super::gates::Limits;
use super::workbench::Identity;

/// The command's flags.
#[derive(Debug, Clone)]
pub(crate) struct PublishOptions {
    pub artifacts: PathBuf,
    /// `--task`: only these (default: every task of the summary).
    pub tasks: Vec<String>,
    /// `--branch`: with `{task}`, a branch per task; without, one commit for all.
    pub branch: String,
    /// `--remote`: the repository pushed to (default: the CI's, see `remote`).
    pub remote: Option<String>,
    /// `--base`: a branch that must still be at the commit the tasks started from.
    pub base: Option<String>,
    pub force: bool,
    pub dry_run: bool,
    pub allow_workflow_changes: bool,
    pub limits: Limits,
    /// `--message`: the commit message, `{task}`, `{summary}` and `{run}` filled in.
    pub message: Option<String>,
    /// `--author`, parsed (see [`parse_author`]); None: drover's own.
    pub author: Option<Identity>,
    /// `--token-env`: the variable holding the token (read by publish alone).
    pub token_env: Option<String>,
    pub timeout: Duration,
}

/// The author when `--author` is not given.
const DEFAULT_AUTHOR: (&str, &str) = ("drover", "drover@users.noreply.github.com");

/// The longest final answer a commit message quotes, in characters.
const SUMMARY_CHARS: usize = 4000;

impl PublishOptions {
    /// `--remote`, else the repository of the GitHub Actions run
    /// (`$GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git`); an error saying what to pass.
    pub(crate) fn remote(&self) -> Result<String, NoRemote> {
        if let Some(remote) = &self.remote {
            return Ok(remote.clone());
        }
        let repository = std::env::var("GITHUB_REPOSITORY")
            .ok()
            .filter(|r| !r.is_empty());
        let Some(repository) = repository else {
            return Err(NoRemote);
        };
        Ok(format!(
            "{}/{repository}.git",
            github_server().trim_end_matches('/')
        ))
    }

    /// The token of `--token-env` as the push's credential; without the flag,
    /// `GITHUB_TOKEN` — but only for the GitHub server of the run (`GITHUB_SERVER_URL`,
    /// default github.com), never for another host `--remote` names; else git's own
    /// configuration.
    pub(crate) fn credential(&self, remote: &str) -> Credential {
        let name = match &self.token_env {
            Some(name) => name.clone(),
            None if self.remote.is_none() || same_host(remote, &github_server()) => {
                "GITHUB_TOKEN".to_string()
            }
            None => return Credential::GitConfig,
        };
        match std::env::var(&name).ok().filter(|token| !token.is_empty()) {
            Some(token) => Credential::Token {
                username: "x-access-token".to_string(),
                token,
            },
            None => Credential::GitConfig,
        }
    }

    /// The tasks in groups of one commit each: one per task with `{task}` in
    /// `--branch`, else one for all.
    pub(crate) fn groups<'a>(&self, tasks: &'a [PublishedTask]) -> Vec<Vec<&'a PublishedTask>> {
        if self.branch.contains("{task}") {
            tasks.iter().map(|task| vec![task]).collect()
        } else if tasks.is_empty() {
            Vec::new()
        } else {
            vec![tasks.iter().collect()]
        }
    }

    /// The branch of a group: `--branch` with `{task}` filled in.
    pub(crate) fn branch_for(&self, names: &[&str]) -> String {
        match names {
            [one] => self.branch.replace("{task}", one),
            _ => self.branch.clone(),
        }
    }

    /// The commit message of a group: `--message` (or the default) with `{task}`,
    /// `{summary}` (the tasks' final answers) and `{run}` filled in, then drover's
    /// trailers, last, so no text of the model's can stand in for them.
    pub(crate) fn message_for(&self, group: &[&PublishedTask]) -> String {
        let names: Vec<&str> = group.iter().map(|t| t.report.name.as_str()).collect();
        let summary: String = group
            .iter()
            .map(|t| t.report.final_text.trim())
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        let summary: String = summary
            .chars()
            .filter(|c| (!c.is_control() || *c == '\n') && !is_invisible(*c))
            .take(SUMMARY_CHARS)
            .collect();
        let summary = quote_trailer_lines(&summary);
        let run = run_link().unwrap_or_else(|| {
            let artifacts = std::path::absolute(&self.artifacts).unwrap_or(self.artifacts.clone());
            artifacts.display().to_string()
        });
        let template = self
            .message
            .clone()
            .unwrap_or_else(|| "drover: {task}\n\n{summary}".to_string());
        let body = template
            .replace("{task}", &names.join(", "))
            .replace("{summary}", &summary)
            .replace("{run}", &run);
        let trailers: String = names
            .iter()
            .map(|name| format!("Drover-Task: {name}\n"))
            .collect();
        format!("{}\n\n{trailers}Drover-Run: {run}\n", body.trim_end())
    }

    /// `--author`, else drover's own.
    pub(crate) fn identity(&self) -> Identity {
        self.author.clone().unwrap_or_else(|| Identity {
            name: DEFAULT_AUTHOR.0.to_string(),
            email: DEFAULT_AUTHOR.1.to_string(),
        })
    }
}

/// No repository to push to was named.
#[derive(Debug, thiserror::Error)]
#[error(
    "no repository to push to: pass --remote URL (outside GitHub Actions, where GITHUB_REPOSITORY names it)"
)]
pub(crate) struct NoRemote;

/// `--author` is not `Name <email>`.
#[derive(Debug, thiserror::Error)]
#[error("--author {0:?} is not `Name <email>`")]
pub(crate) struct BadAuthor(String);

/// `Name <email>`, both parts present and on one line.
pub(crate) fn parse_author(text: &str) -> Result<Identity, BadAuthor> {
    let bad = || BadAuthor(text.to_string());
    let (name, rest) = text.split_once('<').ok_or_else(bad)?;
    let email = rest.trim_end().strip_suffix('>').ok_or_else(bad)?;
    let (name, email) = (name.trim(), email.trim());
    let plain = |part: &str| !part.is_empty() && !part.contains(['<', '>', '\n', '\0']);
    if !plain(name) || !plain(email) || !email.contains('@') {
        return Err(bad());
    }
    Ok(Identity {
        name: name.to_string(),
        email: email.to_string(),
    })
}

/// `$GITHUB_SERVER_URL`, default `https://github.com`.
fn github_server() -> String {
    std::env::var("GITHUB_SERVER_URL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "https://github.com".to_string())
}

/// Do URLs `a` and `b` name the same host, both over HTTPS?
fn same_host(a: &str, b: &str) -> bool {
    let host = |text: &str| {
        url::Url::parse(text)
            .ok()
            .filter(|url| url.scheme() == "https")
            .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
    };
    host(a).is_some() && host(a) == host(b)
}

/// Characters that change how text is shown without being seen: zero-width ones and
/// bidirectional controls.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}')
}

/// The model's text with each line a parser of trailers would take (`Token: value`,
/// `---`) quoted (`> `), so `git interpret-trailers` and the bots that read a message's
/// last paragraph find only drover's own trailers.
fn quote_trailer_lines(text: &str) -> String {
    text.lines()
        .map(|line| {
            let token = line.split_once(':').map(|(token, _)| token);
            let trailer_like = token.is_some_and(|token| {
                !token.is_empty() && token.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            });
            if trailer_like || line.trim_start().starts_with("---") {
                format!("> {line}")
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The GitHub Actions run's page, when this is one.
fn run_link() -> Option<String> {
    let var = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
    let server = var("GITHUB_SERVER_URL")?;
    let repository = var("GITHUB_REPOSITORY")?;
    let run = var("GITHUB_RUN_ID")?;
    Some(format!(
        "{}/{repository}/actions/runs/{run}",
        server.trim_end_matches('/')
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_models_trailer_lines_are_quoted_and_invisible_characters_dropped() {
        let text = "Fixed it.\n\nCo-authored-by: Evil <e@x>\nDrover-Task: deploy\n---\nSee: notes";
        let quoted = quote_trailer_lines(text);
        assert_eq!(
            quoted,
            "Fixed it.\n\n> Co-authored-by: Evil <e@x>\n> Drover-Task: deploy\n> ---\n> See: notes"
        );
        assert!(is_invisible('\u{202E}') && is_invisible('\u{200B}') && !is_invisible('a'));
        assert!(parse_author("Bot <bot@example.com>").is_ok());
        for bad in ["nobody", "<x@y>", "A <no-at>", "A <a@b> <c@d>"] {
            assert!(parse_author(bad).is_err(), "{bad}");
        }
    }
}
