//! Environment variables whose assignment changes what runs.
//!
//! `LD_PRELOAD=x cmd`, `export PATH=…` or `env GIT_PAGER=… git` make a command run code
//! other than its own, or find programs, files and configuration elsewhere, so the walk
//! reports such an assignment as opaque wherever it sees one.

/// Does assigning the variable `name` (`NAME=v cmd`, `export NAME=v`, `env NAME=v cmd`)
/// let the command run code other than its own, or change where it finds programs, files
/// or configuration? (`LD_PRELOAD`, `PATH`, `GIT_PAGER`, `RUSTC_WRAPPER`, `HOME` …)
pub(super) fn changes_what_runs(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "ENV",
        "PATH",
        "CDPATH",
        "IFS",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PROMPT_COMMAND",
        "SHELL",
        "ZDOTDIR",
        "HOME",
        "XDG_CONFIG_HOME",
        "EDITOR",
        "VISUAL",
        "BROWSER",
        "NODE_OPTIONS",
        "NODE_PATH",
        "RUSTC",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTDOC",
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
        "CC",
        "CXX",
        "LESSOPEN",
        "LESSCLOSE",
        "MAKEFLAGS",
        "MFLAGS",
        "MAKEFILES",
        "PERLLIB",
        "GOFLAGS",
        "GCONV_PATH",
        "OPENSSL_CONF",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
    ];
    const PREFIXES: &[&str] = &[
        "LD_", // LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT …
        "DYLD_",
        "BASH_", // BASH_ENV, BASH_FUNC_name%% …
        "GIT_",
        "PYTHON",
        "PERL5",
        "RUBY",
        "CARGO_",
        "NPM_CONFIG_",
        "npm_config_",
    ];
    const SUFFIXES: &[&str] = &["PAGER", "ASKPASS"];
    NAMES.contains(&name)
        || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
        || SUFFIXES.iter().any(|suffix| name.ends_with(suffix))
}
