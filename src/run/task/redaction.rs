//! What a task keeps secret: the values redacted from everything it records, the
//! variables its commands never see, and the one warning about values too short or too
//! common to redact.

use std::collections::BTreeMap;

use crate::record::{Redactor, TaskReport};
use crate::spec::McpServerSpec;

use crate::run::plan::{ModelSource, TaskPlan};

/// The secret values this task must never record or show the model: the model's API
/// key, and drover's own secret-looking variables that the spec does not pass on.
pub(super) fn task_redactor(plan: &TaskPlan) -> Redactor {
    let api_key = match &plan.model {
        ModelSource::Remote(config) => config.api_key.as_ref().map(|key| {
            let variable = config.key_env.as_deref().unwrap_or("the model's API key");
            (variable, key.expose())
        }),
        ModelSource::Script { .. } | ModelSource::Recorded(_) => None,
    };
    let redactor = redactor_with_mcp(
        api_key,
        &plan.spec.spec.env.pass,
        withheld_vars(plan),
        &plan.mcp_servers,
    );
    let skipped = redactor.add(repo_url_secrets(plan));
    for secret in skipped {
        crate::esay!("drover: warning: {}", secret.warning());
    }
    redactor
}

/// The password (a token) `repo.url` carries, decoded and as written: the spec's text,
/// recorded in `run_start`, holds the one, git's messages the other.
fn repo_url_secrets(plan: &TaskPlan) -> Vec<(String, String)> {
    let mut secrets = Vec::new();
    let label = || "the password in repo.url".to_string();
    if let Some(repo) = &plan.spec.spec.repo
        && let Ok(url) = url::Url::parse(&repo.value.url.value)
        && let Some(written) = url.password()
    {
        secrets.push((label(), written.to_string()));
    }
    if let Some(request) = &plan.workspace.repo
        && let Some(token) = &request.url.password
    {
        secrets.push((label(), token.clone()));
    }
    secrets
}

/// The redactor of drover's environment (less what `pass` passes on, plus `withheld`)
/// and of the MCP servers' credential headers.
pub(super) fn redactor_with_mcp(
    api_key: Option<(&str, &str)>,
    pass: &[String],
    mut withheld: Vec<String>,
    servers: &BTreeMap<String, McpServerSpec>,
) -> Redactor {
    let headers = credential_headers(servers);
    withheld.extend(headers.iter().map(|(label, _)| label.clone()));
    let header_values = headers
        .into_iter()
        .map(|(label, value)| (label.into(), value.into()));
    Redactor::for_task(
        api_key,
        std::env::vars_os().chain(header_values),
        pass,
        &withheld,
    )
}

/// The values of MCP servers' credential headers (`Authorization`, `Cookie`, a
/// secret-looking name such as `X-Api-Key`) as they are sent, even when written
/// literally in a `.mcp.json`; a `Bearer <token>`'s token on its own too. Each is
/// labelled `mcp.servers.<server>.headers.<name>` for warnings.
fn credential_headers(servers: &BTreeMap<String, McpServerSpec>) -> Vec<(String, String)> {
    let mut values = Vec::new();
    // A `.mcp.json`'s servers get only what the task's commands get: their headers hold
    // nothing secret of drover's, and the file must not choose what is redacted.
    for (server, spec) in servers.iter().filter(|(_, spec)| !spec.from_config) {
        for (name, value) in &spec.headers {
            if !crate::mcp::credential_header(name) {
                continue;
            }
            let label = format!("mcp.servers.{server}.headers.{name}");
            let sent = crate::mcp::expand(value, &crate::mcp::VarSource::Environment);
            if let Some((_, token)) = sent.trim().rsplit_once(' ') {
                values.push((format!("{label} (its last word)"), token.to_string()));
            }
            values.push((label, sent));
        }
    }
    values
}

/// Say on stderr, once per drover process whatever the number of tasks, which secrets are
/// left unredacted (by variable name, never the value).
pub(super) fn warn_unredacted(redactor: &Redactor) {
    static WARNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    // A poisoned lock only means another task panicked while warning; warn anyway.
    let mut warned = WARNED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for skipped in redactor.skipped() {
        if !warned.contains(&skipped.variable) {
            crate::esay!("drover: warning: {}", skipped.warning());
            warned.push(skipped.variable.clone());
        }
    }
}

/// The variables no command of the task may see, whatever `env.pass` says: the one
/// holding the model's API key (the spec's `model.api_key_env`, or the provider's default
/// that the key was read from), and those MCP servers take credentials from.
pub(super) fn withheld_vars(plan: &TaskPlan) -> Vec<String> {
    let mut names: Vec<String> = plan
        .spec
        .spec
        .model
        .value
        .api_key_env
        .iter()
        .filter(|name| name.as_str() != crate::model::remote::NO_KEY)
        .cloned()
        .collect();
    if let ModelSource::Remote(config) = &plan.model
        && let Some(name) = &config.key_env
        && !names.contains(name)
    {
        names.push(name.clone());
    }
    if let Some(ModelSource::Remote(config)) = &plan.web_fetch_model
        && let Some(name) = &config.key_env
        && !names.contains(name)
    {
        names.push(name.clone());
    }
    // `repo.credentials.env`: the clone's token, whatever the variable is called.
    let repo_token = plan.spec.spec.repo.as_ref().and_then(|repo| {
        let credentials = repo.value.credentials.as_ref()?;
        credentials.value.env.clone()
    });
    if let Some(name) = repo_token
        && !names.contains(&name)
    {
        names.push(name);
    }
    for name in mcp_credential_vars(&plan.mcp_servers) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The variables MCP servers take credentials from: every one a `headers:` value names,
/// and those an `env:` entry with a secret-looking name takes (`GITHUB_TOKEN: ${GH_PAT}`),
/// whatever the variables themselves are called.
pub(super) fn mcp_credential_vars(servers: &BTreeMap<String, McpServerSpec>) -> Vec<String> {
    // A `.mcp.json`'s `${VAR}`s take only what the commands get already: the file does
    // not get to take a variable (PATH, PWD) from every command, nor to have it redacted.
    let servers: Vec<&McpServerSpec> = servers.values().filter(|s| !s.from_config).collect();
    let secret_env = servers.iter().flat_map(|server| {
        server
            .env
            .iter()
            .filter(|(key, _)| crate::record::secret_names::looks_secret(key))
            .map(|(_, value)| value)
    });
    let mut names: Vec<String> = servers
        .iter()
        .flat_map(|server| server.headers.values())
        .chain(secret_env)
        .flat_map(|value| crate::mcp::referenced_vars(value))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The report's free text (what junit.xml, the summaries and annotations show) with
/// secret values replaced, whatever put them there.
pub(super) fn redact_report(report: &mut TaskReport, redactor: &Redactor) {
    if redactor.is_empty() {
        return;
    }
    report.message = redactor.redact_owned(std::mem::take(&mut report.message));
    report.final_text = redactor.redact_owned(std::mem::take(&mut report.final_text));
    if let Some(wrap_up) = report.wrap_up.take() {
        report.wrap_up = Some(redactor.redact_owned(wrap_up));
    }
    for check in &mut report.checks {
        check.output_tail = redactor.redact_owned(std::mem::take(&mut check.output_tail));
        check.command = redactor.redact_owned(std::mem::take(&mut check.command));
    }
    for denial in &mut report.denials {
        denial.reason = redactor.redact_owned(std::mem::take(&mut denial.reason));
        redactor.redact_json(&mut denial.input);
    }
    if let Some(output) = &mut report.output {
        redactor.redact_json(output);
    }
    for todo in &mut report.todos {
        todo.content = redactor.redact_owned(std::mem::take(&mut todo.content));
        todo.active_form = redactor.redact_owned(std::mem::take(&mut todo.active_form));
    }
    // A replay's recorded message, repeated in its report.
    if let Some(recorded) = report.replay.as_mut().and_then(|r| r.recorded.as_mut()) {
        recorded.message = redactor.redact_owned(std::mem::take(&mut recorded.message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_credential_headers_are_secrets_too() {
        let text = "servers:\n  docs:\n    url: http://h/mcp\n    headers: { Authorization: \"Bearer ghp_literal0123456789\", X-Api-Key: k3y-literal-value, Accept-Language: en }\n";
        let mcp: crate::spec::McpSpec = serde_saphyr::from_str(text).unwrap();
        let values: Vec<String> = credential_headers(&mcp.servers)
            .into_iter()
            .map(|(_, value)| value)
            .collect();
        assert_eq!(
            values,
            [
                "ghp_literal0123456789",
                "Bearer ghp_literal0123456789",
                "k3y-literal-value"
            ]
        );
    }

    #[test]
    fn mcp_credentials_are_the_variables_headers_and_secret_env_entries_name() {
        let text = "servers:\n  docs:\n    url: http://h/mcp\n    headers: { Authorization: \"Bearer ${DOCS_BEARER}\", X-Org: \"${ORG_NAME:-x}\" }\n  gh:\n    command: server\n    env: { GITHUB_TOKEN: \"${GH_PAT}\", LOG_LEVEL: \"${LEVEL:-warn}\" }\n";
        let mcp: crate::spec::McpSpec = serde_saphyr::from_str(text).unwrap();
        assert_eq!(
            mcp_credential_vars(&mcp.servers),
            ["DOCS_BEARER", "GH_PAT", "ORG_NAME"]
        );
    }
}
