//! A task given on the command line (`drover exec`), written as the spec it amounts to.
//!
//! `drover exec` builds no second kind of task: its flags fill an [`ExecTask`], which is
//! rendered as spec YAML and loaded by [`parse`](crate::parse) like any spec file. So the
//! task runs by the same checks, plan and policy as a spec, and `run_start` records that
//! text (`spec_yaml`), from which a replay takes the task as it does a spec file's.
//! Every value is written as a double-quoted YAML scalar with everything but printable
//! characters escaped, so no prompt or rule can add a key or end the document.

use std::fmt::Write as _;

use serde_json::Value;

use super::network::{HostPattern, Registry};
use super::types::{Isolation, Provider};

/// The path an exec task's spec goes by (`run_start`'s `spec_path`, summary.json,
/// junit.xml). No file is read there; `drover exec … --print-spec > drover-exec.yaml`
/// writes the one `drover resume` then finds.
pub const EXEC_SPEC_PATH: &str = "drover-exec.yaml";

/// The settings an exec task leaves to the defaults file of its directory
/// (docs/defaults.md): those the file writes and no flag set. Each is left out of the
/// spec, so the default applies to it as to a spec file that does not write it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecInherits {
    /// `model:`, whole: no `--provider`, `--model`, `--base-url` or `--api-key-env`.
    pub model: bool,
    /// `isolation:`: no `--isolation`.
    pub isolation: bool,
    /// `permissions.allow`: no `--allow` or `--allowedTools`.
    pub allow: bool,
    /// `sandbox:`: no `--sandbox`, `--network`, `--allow-host` or `--registry`.
    pub sandbox: bool,
}

/// What `drover exec` runs: plain values, each as a spec would write it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecTask {
    pub name: String,
    pub prompt: String,
    /// `system:` (`--append-system-prompt`).
    pub system: Option<String>,
    /// The workspace, absolute.
    pub workspace: String,
    pub isolation: Isolation,
    pub provider: Provider,
    pub model: String,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    /// `permissions.mode: plan`: only read-only tools are offered.
    pub plan_mode: bool,
    /// Absolute directories outside the workspace tools may touch.
    pub additional_directories: Vec<String>,
    /// `sandbox: off` when false.
    pub sandbox: bool,
    /// `sandbox: { network: true }` (with the sandbox on).
    pub network: bool,
    /// `sandbox: { network: { allow: [...] } }` (with the sandbox on, without `network`).
    pub allow_hosts: Vec<HostPattern>,
    /// `sandbox: { network: { registries: [...] } }`, as `allow_hosts`.
    pub registries: Vec<Registry>,
    pub max_turns: Option<u32>,
    /// As a spec writes it (`30m`, `none`).
    pub timeout: Option<String>,
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    /// Check commands, each named by itself.
    pub checks: Vec<String>,
    /// `output.schema`.
    pub output_schema: Option<Value>,
    /// What is left to the defaults file (`provider`, `model`, `isolation`, `allow` and
    /// the sandbox values are then not written).
    pub inherits: ExecInherits,
}

impl ExecTask {
    /// The spec YAML of this task. The same task always gives the same text (its SHA-256
    /// is the spec's), so a spec saved from it (`--print-spec`) is the one a resume asks
    /// for.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        let mut line = |text: String| {
            out.push_str(&text);
            out.push('\n');
        };
        line("version: 1".into());
        line(format!("name: {}", quoted(&self.name)));
        line(format!("prompt: {}", quoted(&self.prompt)));
        if let Some(system) = &self.system {
            line(format!("system: {}", quoted(system)));
        }
        line(format!("workspace: {}", quoted(&self.workspace)));
        if !self.inherits.isolation {
            line(format!("isolation: {}", isolation_word(self.isolation)));
        }
        if !self.inherits.model {
            line("model:".into());
            line(format!("  provider: {}", self.provider.as_str()));
            line(format!("  name: {}", quoted(&self.model)));
            if let Some(base_url) = &self.base_url {
                line(format!("  base_url: {}", quoted(base_url)));
            }
            if let Some(variable) = &self.api_key_env {
                line(format!("  api_key_env: {}", quoted(variable)));
            }
        }
        line("permissions:".into());
        if !self.inherits.allow {
            line(format!("  allow: {}", list(&self.allow)));
        }
        line(format!("  deny: {}", list(&self.deny)));
        if self.plan_mode {
            line("  mode: plan".into());
        }
        if !self.additional_directories.is_empty() {
            line(format!(
                "  additional_directories: {}",
                list(&self.additional_directories)
            ));
        }
        if !self.inherits.sandbox {
            line(format!("sandbox: {}", self.sandbox_value()));
        }
        self.limits(&mut line);
        if !self.checks.is_empty() {
            line("checks:".into());
            for check in &self.checks {
                line(format!("  - name: {}", quoted(check)));
                line(format!("    run: {}", quoted(check)));
            }
        }
        if let Some(schema) = &self.output_schema {
            line("output:".into());
            line(format!("  schema: {}", flow(schema)));
        }
        out
    }

    fn sandbox_value(&self) -> String {
        let named = !self.allow_hosts.is_empty() || !self.registries.is_empty();
        match (self.sandbox, self.network, named) {
            (false, _, _) => "off".into(),
            (true, true, _) => "{ network: true }".into(),
            (true, false, false) => "on".into(),
            (true, false, true) => {
                let mut rules = Vec::new();
                if !self.allow_hosts.is_empty() {
                    rules.push(format!("allow: {}", list_of(&self.allow_hosts)));
                }
                if !self.registries.is_empty() {
                    rules.push(format!("registries: {}", list_of(&self.registries)));
                }
                format!("{{ network: {{ {} }} }}", rules.join(", "))
            }
        }
    }

    fn limits(&self, line: &mut impl FnMut(String)) {
        let mut limits = Vec::new();
        if let Some(turns) = self.max_turns {
            limits.push(format!("  max_turns: {turns}"));
        }
        if let Some(timeout) = &self.timeout {
            limits.push(format!("  timeout: {}", quoted(timeout)));
        }
        if let Some(usd) = self.max_cost_usd {
            limits.push(format!("  max_cost_usd: {}", Value::from(usd)));
        }
        if let Some(tokens) = self.max_tokens {
            limits.push(format!("  max_tokens: {tokens}"));
        }
        if !limits.is_empty() {
            line("limits:".into());
            limits.into_iter().for_each(line);
        }
    }
}

fn isolation_word(isolation: Isolation) -> &'static str {
    match isolation {
        Isolation::None => "none",
        Isolation::Copy => "copy",
        Isolation::Worktree => "worktree",
    }
}

/// A flow sequence of quoted strings: `["Read", "Bash(cargo test *)"]`.
fn list(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|item| quoted(item)).collect();
    format!("[{}]", items.join(", "))
}

/// [`list`] of values written as their text (hosts, registry names).
fn list_of<T: ToString>(items: &[T]) -> String {
    list(&items.iter().map(ToString::to_string).collect::<Vec<_>>())
}

/// A JSON value as YAML flow (JSON is YAML), its strings quoted by [`quoted`].
fn flow(value: &Value) -> String {
    match value {
        Value::String(text) => quoted(text),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(flow).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(fields) => {
            let fields: Vec<String> = fields
                .iter()
                .map(|(key, value)| format!("{}: {}", quoted(key), flow(value)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        // Numbers, booleans and null are written as JSON writes them, which YAML reads alike.
        other => other.to_string(),
    }
}

/// `text` as a YAML double-quoted scalar: `"` and `\` escaped, and every character that
/// is not printable in YAML's sense, or that a reader may take for a line break (NEL,
/// U+2028, U+2029), written as an escape, so the scalar is one line holding exactly
/// `text`. Bidirectional controls and the `[` of `##[` are escaped too, so the spec can
/// be printed as it is (`--print-spec`) without reordering a terminal's line or being a
/// GitHub workflow command.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '[' if out.ends_with("##") => out.push_str("\\x5b"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => {
                let code = u32::from(c);
                if code <= 0xffff {
                    let _ = write!(out, "\\u{code:04x}");
                } else {
                    let _ = write!(out, "\\U{code:08x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Characters written as escapes in [`quoted`]: controls (C0, DEL, C1), the line and
/// paragraph separators, the byte order mark, the non-characters YAML excludes and the
/// bidirectional controls.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
#[path = "exec_task_tests.rs"]
mod tests;
