//! The environment the agent's commands see: drover's own, minus anything that looks
//! like a secret. A model-written command that prints `env` (or a script that uploads
//! it) must not carry API keys and tokens out; a spec that needs one passes it by name
//! with `env.pass`.

use std::ffi::OsString;

use crate::record::secret_names::looks_secret;

/// `vars` without the secret-looking ones, except those named in `pass` (exact names),
/// and never those in `withheld` (the variable holding the model's API key, whatever its
/// name looks like: the agent's commands have no business with it).
pub(crate) fn scrub(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    pass: &[String],
    withheld: &[String],
) -> Vec<(OsString, OsString)> {
    vars.into_iter()
        .filter(|(name, _)| passes(&name.to_string_lossy(), pass, withheld))
        .collect()
}

/// Whether the variable `name` reaches commands, as [`scrub`] decides.
pub(crate) fn passes(name: &str, pass: &[String], withheld: &[String]) -> bool {
    if withheld.iter().any(|w| w == name) {
        return false;
    }
    !looks_secret(name) || pass.iter().any(|p| p == name)
}

#[cfg(test)]
mod tests {
    use super::*;

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
