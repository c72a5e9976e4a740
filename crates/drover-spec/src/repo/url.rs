//! A repository URL as drover lets git have it: one of five schemes, its credentials
//! taken out. git's `transport::address` syntax (`ext::sh -c …` runs a program,
//! `fd::…` reads a descriptor) and every other scheme are refused, and so is anything
//! git could read as an option.

use std::fmt;

/// The transports drover clones over; `ext::`, `fd::` and every helper scheme are not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepoScheme {
    File,
    Git,
    Http,
    Https,
    Ssh,
}

impl RepoScheme {
    /// The name in `GIT_ALLOW_PROTOCOL`.
    pub fn as_str(self) -> &'static str {
        match self {
            RepoScheme::File => "file",
            RepoScheme::Git => "git",
            RepoScheme::Http => "http",
            RepoScheme::Https => "https",
            RepoScheme::Ssh => "ssh",
        }
    }
}

/// A checked repository URL: what git is given (`clean`, no password and, over HTTP,
/// no user name either) and the credentials the URL carried, which go to git through a
/// credential helper instead.
#[derive(Clone, PartialEq, Eq)]
pub struct RepoUrl {
    pub scheme: RepoScheme,
    /// The URL without its password (and, for http(s), without its user name): what
    /// drover clones, records, keys its cache by and sets as the checkout's `origin`.
    pub clean: String,
    /// The user name an http(s) URL carried.
    pub username: Option<String>,
    /// The password (a token) an http(s) URL carried.
    pub password: Option<String>,
}

/// Never prints the password.
impl fmt::Debug for RepoUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RepoUrl")
            .field("scheme", &self.scheme)
            .field("clean", &self.clean)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "…"))
            .finish()
    }
}

/// Why a URL is refused, and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UrlProblem(String);

const SCHEMES: &str = "git://, https://, http://, ssh://, file:// or user@host:path";

impl RepoUrl {
    /// Check `text` and take its credentials out.
    pub fn parse(text: &str) -> Result<RepoUrl, UrlProblem> {
        let problem = |message: String| Err(UrlProblem(message));
        if text.is_empty() {
            return problem(format!("the URL is empty; write {SCHEMES}"));
        }
        let before_slash = text.split('/').next().unwrap_or_default();
        if let Some((transport, _)) = before_slash.split_once("::") {
            return problem(format!(
                "git's {transport}:: transport runs a program or reads a descriptor of drover's; drover clones only {SCHEMES}"
            ));
        }
        if text.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return problem(
                "the URL holds a space or a control character; write it without".into(),
            );
        }
        if text.starts_with('-') {
            return problem(format!(
                "{text:?} starts with '-', which git would read as an option; write {SCHEMES}"
            ));
        }
        if let Some((scheme, _)) = text.split_once("://") {
            return parse_with_scheme(text, scheme);
        }
        match before_slash.split_once(':') {
            Some((host, path)) => scp_like(text, host, path),
            None => problem(format!(
                "{text:?} is a local path; write file:///absolute/path for a local repository, or {SCHEMES}"
            )),
        }
    }
}

/// `[user@]host:path`: git's scp-like syntax, over ssh. The user name stays (it is
/// ssh's login, not a secret).
fn scp_like(text: &str, host: &str, path: &str) -> Result<RepoUrl, UrlProblem> {
    let name = host.rsplit_once('@').map_or(host, |(_, name)| name);
    if name.is_empty() || name.starts_with('-') || name.starts_with('[') {
        return Err(UrlProblem(format!(
            "{text:?} names no host before ':'; write user@host:path or ssh://user@host/path"
        )));
    }
    let after = &text[host.len() + 1..];
    if path.is_empty() && after.is_empty() {
        return Err(UrlProblem(format!(
            "{text:?} names no repository after ':'; write user@host:path"
        )));
    }
    Ok(RepoUrl {
        scheme: RepoScheme::Ssh,
        clean: text.to_string(),
        username: None,
        password: None,
    })
}

/// `scheme://…`, parsed by the `url` crate (the same as WebFetch's URLs).
fn parse_with_scheme(text: &str, scheme: &str) -> Result<RepoUrl, UrlProblem> {
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "file" => RepoScheme::File,
        "git" => RepoScheme::Git,
        "http" => RepoScheme::Http,
        "https" => RepoScheme::Https,
        "ssh" | "git+ssh" | "ssh+git" => RepoScheme::Ssh,
        other => {
            return Err(UrlProblem(format!(
                "the scheme {other}:// is not one drover clones over (git would hand it to a helper program); write {SCHEMES}"
            )));
        }
    };
    let mut url = ::url::Url::parse(text)
        .map_err(|error| UrlProblem(format!("{text:?} is no URL ({error}); write {SCHEMES}")))?;
    let decode = |part: &str| {
        percent_decoded(part).ok_or_else(|| {
            UrlProblem("the URL's user name or password is not UTF-8 once decoded".into())
        })
    };
    let username = Some(url.username())
        .filter(|u| !u.is_empty())
        .map(decode)
        .transpose()?;
    let password = url.password().map(decode).transpose()?;
    let on_this_machine = matches!(url.host_str(), None | Some("" | "localhost"));
    if scheme == RepoScheme::File && !on_this_machine {
        return Err(UrlProblem(format!(
            "{text:?} names a host; a file:// URL is a path on this machine (file:///absolute/path)"
        )));
    }
    if scheme != RepoScheme::File && url.host_str().is_none_or(str::is_empty) {
        return Err(UrlProblem(format!("{text:?} names no host")));
    }
    if url.host_str().is_some_and(|host| host.starts_with('-')) {
        return Err(UrlProblem(format!(
            "{text:?} names a host starting with '-', which ssh would read as an option"
        )));
    }
    let over_http = matches!(scheme, RepoScheme::Http | RepoScheme::Https);
    if !over_http && password.is_some() {
        return Err(UrlProblem(format!(
            "a {}:// URL carries no password git would use; take it out (repo.credentials, or ssh's own keys)",
            scheme.as_str()
        )));
    }
    if matches!(scheme, RepoScheme::Git | RepoScheme::File) && username.is_some() {
        return Err(UrlProblem(format!(
            "a {}:// URL has no user name; take it out",
            scheme.as_str()
        )));
    }
    if over_http {
        // Both go to git through a credential helper, never in a URL git stores.
        let _ = url.set_password(None);
        let _ = url.set_username("");
    }
    Ok(RepoUrl {
        scheme,
        clean: url.to_string(),
        username: username.filter(|_| over_http),
        password,
    })
}

/// `%XX` sequences decoded; None when the result is not UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&high), Some(&low)) if hex(high).is_some() && hex(low).is_some() => {
                let value = hex(high)? * 16 + hex(low)?;
                out.push(u8::try_from(value).ok()?);
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}
