//! The environment the agent's commands see: drover's own, minus anything that looks
//! like a secret. A model-written command that prints `env` (or a script that uploads
//! it) must not carry API keys and tokens out; a spec that needs one passes it by name
//! with `env.pass`.

use std::ffi::OsString;

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

/// `vars` without the secret-looking ones, except those named in `pass` (exact names),
/// and never those in `withheld` (the variable holding the model's API key, whatever its
/// name looks like: the agent's commands have no business with it).
pub fn scrub(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    pass: &[String],
    withheld: &[String],
) -> Vec<(OsString, OsString)> {
    vars.into_iter()
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            if withheld.iter().any(|w| *w == name) {
                return false;
            }
            !looks_secret(&name) || pass.iter().any(|p| *p == name)
        })
        .collect()
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

    #[test]
    fn scrub_removes_secrets_unless_passed() {
        let vars = [
            ("PATH", "/bin"),
            ("FAKE_API_KEY", "k"),
            ("NPM_TOKEN", "t"),
            ("MY_SECRET", "s"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let kept = scrub(vars.clone(), &["NPM_TOKEN".to_string()], &[]);
        let names: Vec<_> = kept.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        assert_eq!(names, vec!["PATH", "NPM_TOKEN"]);
    }

    #[test]
    fn the_model_key_variable_is_withheld_whatever_its_name() {
        let vars = [("PATH", "/bin"), ("LLM_KEY", "k"), ("NPM_TOKEN", "t")]
            .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let withheld = ["LLM_KEY".to_string(), "NPM_TOKEN".to_string()];
        let kept = scrub(vars, &["NPM_TOKEN".to_string()], &withheld);
        let names: Vec<_> = kept.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        assert_eq!(names, vec!["PATH"]);
    }
}
