//! `${VAR}` in a server's `env:` and `headers:`: where the values come from (drover's
//! environment, or in a replay only the variables allowed), and the expansion. Both the
//! stdio servers and the HTTP connections expand with it.

/// The variables `value` takes from drover's environment (`${VAR}`, `${VAR:-default}`).
pub(crate) fn referenced_vars(value: &str) -> Vec<String> {
    let names = std::cell::RefCell::new(Vec::new());
    expand_with(value, &|name| {
        names.borrow_mut().push(name.to_string());
        None
    });
    names.into_inner()
}

/// Where `${VAR}` in a server's `env:` and `headers:` takes its values from.
#[derive(Debug, Clone, Default)]
pub(crate) enum VarSource {
    /// drover's environment (a run: the spec is the task author's).
    #[default]
    Environment,
    /// Only these variables of drover's environment; the rest are unset (a replay: the
    /// spec comes from a transcript, which must not pick what to send where).
    Only(std::collections::BTreeSet<String>),
}

impl VarSource {
    /// The same source, less the variables `keep` refuses.
    pub(crate) fn narrowed(&self, keep: impl Fn(&str) -> bool) -> VarSource {
        let names: std::collections::BTreeSet<String> = match self {
            VarSource::Environment => std::env::vars_os()
                .filter_map(|(name, _)| name.into_string().ok())
                .collect(),
            VarSource::Only(allowed) => allowed.clone(),
        };
        VarSource::Only(names.into_iter().filter(|name| keep(name)).collect())
    }

    fn get(&self, name: &str) -> Option<String> {
        match self {
            VarSource::Environment => std::env::var(name).ok(),
            VarSource::Only(allowed) if allowed.contains(name) => std::env::var(name).ok(),
            VarSource::Only(_) => None,
        }
    }
}

/// `${VAR}` and `${VAR:-default}` replaced from `vars`; anything else kept.
pub(crate) fn expand(value: &str, vars: &VarSource) -> String {
    expand_with(value, &|name| vars.get(name))
}

fn expand_with(value: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        let found = env(name).filter(|v| !v.is_empty());
        out.push_str(&found.or(default.map(str::to_string)).unwrap_or_default());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_expand_with_defaults() {
        let env = |name: &str| (name == "TOKEN").then(|| "t0k".to_string());
        assert_eq!(expand_with("Bearer ${TOKEN}", &env), "Bearer t0k");
        assert_eq!(expand_with("${MISSING:-warn}", &env), "warn");
        assert_eq!(expand_with("${MISSING}x", &env), "x");
        assert_eq!(expand_with("a ${TOKEN:-d} b", &env), "a t0k b");
        assert_eq!(expand_with("no ${close", &env), "no ${close");
    }

    #[test]
    fn a_narrowed_source_gives_only_what_it_keeps() {
        // PATH is in every test environment; the other name in none.
        let all = VarSource::Environment.narrowed(|name| name != "PATH");
        assert_eq!(expand("${PATH}", &all), "");
        let only = VarSource::Only(["PATH".to_string(), "HOME".to_string()].into());
        let narrowed = only.narrowed(|name| name == "PATH");
        assert_eq!(expand("${PATH}", &narrowed), std::env::var("PATH").unwrap());
        assert_eq!(expand("${HOME:-none}", &narrowed), "none");
    }

    #[test]
    fn the_variables_a_value_takes_are_named() {
        assert_eq!(
            referenced_vars("Bearer ${TOKEN} ${ORG:-x}"),
            ["TOKEN", "ORG"]
        );
        assert!(referenced_vars("plain").is_empty());
    }
}
