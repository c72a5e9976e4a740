//! The variables that point a command's programs at its proxy. Most read the usual
//! proxy variables (curl, git over HTTPS, pip, cargo, Go, uv, Python's and Ruby's
//! libraries), in upper or lower case; some only their own (npm, pnpm and Yarn's
//! `npm_config_*` and `YARN_*`, Node's own `fetch` only with `NODE_USE_ENV_PROXY`), and
//! the JVM only system properties (Maven's and Gradle's `*_OPTS`). Nothing is exempt:
//! `NO_PROXY` is empty, so even `localhost` goes through the proxy, which judges it.

use std::ffi::OsString;

/// The variables for a proxy on 127.0.0.1:`port`, to set last (over anything the
/// command's environment says). `jvm_opts`: the current `MAVEN_OPTS` and
/// `GRADLE_OPTS`, which the proxy's properties are appended to.
pub(crate) fn proxy_environment(
    port: u16,
    jvm_opts: impl Fn(&str) -> Option<OsString>,
) -> Vec<(OsString, OsString)> {
    let url = format!("http://127.0.0.1:{port}");
    let mut vars: Vec<(OsString, OsString)> = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "npm_config_proxy",
        "npm_config_https_proxy",
        "YARN_HTTP_PROXY",
        "YARN_HTTPS_PROXY",
        "PIP_PROXY",
        "CARGO_HTTP_PROXY",
    ]
    .iter()
    .map(|name| (name.into(), url.as_str().into()))
    .collect();
    for name in ["NO_PROXY", "no_proxy", "npm_config_noproxy"] {
        vars.push((name.into(), OsString::new()));
    }
    vars.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
    let properties = format!(
        "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort={port} -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort={port} -Dhttp.nonProxyHosts="
    );
    for name in ["MAVEN_OPTS", "GRADLE_OPTS"] {
        let mut value = jvm_opts(name).unwrap_or_default();
        if !value.is_empty() {
            value.push(" ");
        }
        value.push(&properties);
        vars.push((name.into(), value));
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_is_pointed_at_the_proxy_and_nothing_is_exempt() {
        let vars = proxy_environment(3128, |name| {
            (name == "MAVEN_OPTS").then(|| OsString::from("-Xmx1g"))
        });
        let get = |name: &str| {
            vars.iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        for name in [
            "HTTPS_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "npm_config_https_proxy",
            "CARGO_HTTP_PROXY",
        ] {
            assert_eq!(
                get(name).as_deref(),
                Some("http://127.0.0.1:3128"),
                "{name}"
            );
        }
        assert_eq!(get("NO_PROXY").as_deref(), Some(""));
        assert!(
            get("MAVEN_OPTS")
                .unwrap()
                .starts_with("-Xmx1g -Dhttp.proxyHost=127.0.0.1")
        );
        assert!(get("GRADLE_OPTS").unwrap().starts_with("-Dhttp.proxyHost"));
    }
}
