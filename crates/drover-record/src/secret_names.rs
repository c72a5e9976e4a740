//! Which environment variable names look like they hold secrets. Two layers ask: the
//! sandbox, which keeps such variables from the agent's commands, and the record, which
//! redacts their values from everything drover writes. One list, so the two agree; it
//! lives in the record, the lower of the two, and the sandbox asks it here.

/// Name endings of variables that hold secrets (case-insensitive).
const SECRET_SUFFIXES: &[&str] = &[
    "_API_KEY",
    "_APIKEY",
    "_TOKEN",
    "_PASS",
    "_PASSWD",
    "_PWD",
    "_PASSPHRASE",
    "_CREDENTIALS",
    "_CREDENTIAL",
    "_CREDS",
    "_PRIVATE_KEY",
    "_ACCESS_KEY",
    "_ACCESS_KEY_ID",
    "_SIGNING_KEY",
    "_ENCRYPTION_KEY",
    "_AUTH",
    "_COOKIE",
    "_DSN",
    "_CONNECTION_STRING",
];

/// Words that make any variable a secret wherever they appear in its name.
const SECRET_WORDS: &[&str] = &["SECRET", "PASSWORD", "PRIVATE_KEY", "CREDENTIAL"];

/// Whole names of variables that give access without looking like it: the SSH agent's
/// socket signs as the user, the others are well-known credential carriers.
const SECRET_NAMES: &[&str] = &[
    "TOKEN",
    "API_KEY",
    "APIKEY",
    "PASSWD",
    "PASSPHRASE",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "KUBECONFIG",
    "DOCKER_AUTH_CONFIG",
    "NETRC",
    "PGPASS",
    "PGPASSFILE",
    "VAULT_ADDR",
    "ACTIONS_RUNTIME_URL",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "ACTIONS_CACHE_URL",
    "ACTIONS_RESULTS_URL",
];

/// Does the variable's name look like it holds a secret? See [`SECRET_SUFFIXES`],
/// [`SECRET_WORDS`] and [`SECRET_NAMES`]; case-insensitive. docs/sandbox.md lists them.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_SUFFIXES.iter().any(|suffix| upper.ends_with(suffix))
        || SECRET_WORDS.iter().any(|word| upper.contains(word))
        || SECRET_NAMES.contains(&upper.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_names() {
        for name in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "openai_api_key",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "client_secret",
            "DB_PASSWORD",
            "PGPASSWORD",
            "SMTP_PASS",
            "FTP_PASSWD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "DEPLOY_PRIVATE_KEY",
            "SSH_AUTH_SOCK",
            "AWS_SESSION_TOKEN",
            "AWS_ACCESS_KEY_ID",
            "TOKEN",
            "NPM_CONFIG__AUTH",
            "SENTRY_DSN",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "TOKENIZERS_PARALLELISM",
            "CARGO_HOME",
            "KEYBOARD",
            "PWD",
            "OLDPWD",
            "PASSAGE",
            "COMPASS",
            "AUTHOR",
        ] {
            assert!(!looks_secret(name), "{name}");
        }
    }
}
