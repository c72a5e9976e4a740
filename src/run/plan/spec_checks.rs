//! The checks of a loaded spec that need more than the spec's own grammar: its
//! permission rules parse (the policy's grammar) and a cost budget has a price (the
//! model layer's table). `spec` holds plain data and knows neither, so every command
//! that loads specs runs these next; the errors still name the file, line and column.

use std::collections::BTreeMap;

use super::referenced_file::{read_referenced, unlinked_beside};
use crate::model::pricing;
use crate::policy::RuleSet;
use serde_json::Value;

use super::spec_agents::task_agents_every;
pub(crate) use super::spec_agents::{agent_tools_naming_no_server, task_agents};
use super::spec_rules::rule_errors;
pub(crate) use super::spec_rules::task_rules;
pub(crate) use super::spec_skills::{missing_instructions, task_skills, wanted_instructions};
use crate::spec::{
    HooksSpec, LoadedSpec, McpServerSpec, Position, SandboxSpec, SpecError,
    hooks_of_claude_settings, hooks_problem, server_problem, servers_of_claude_config,
};

/// The first problem of `loaded`, if any.
pub(crate) fn check(loaded: &LoadedSpec) -> Result<(), SpecError> {
    match check_every(loaded).into_iter().next() {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// Every problem these checks find in `loaded`. Each check runs whatever the others
/// found, since each reads its own part of the spec; within a check, every bad entry of
/// a list is reported (each permission rule, MCP server, sub-agent, `replay.ignore`
/// pattern), while a check of a file the spec names (`hooks_from:`, `skills_from:`,
/// a settings file) stops at that file's first problem. A part the spec's own checks
/// already refused (`output:` giving both or neither schema) is not checked again.
pub(crate) fn check_every(loaded: &LoadedSpec) -> Vec<SpecError> {
    let mut errors = rule_errors(loaded);
    errors.extend(mcp_servers_every(loaded).err().unwrap_or_default());
    errors.extend(task_hooks(loaded).err());
    errors.extend(task_agents_every(loaded).err().unwrap_or_default());
    errors.extend(task_skills(loaded, &loaded.workspace_dir()).err());
    errors.extend(replay_mask_errors(loaded));
    if loaded
        .spec
        .output
        .as_ref()
        .is_none_or(|output| crate::spec::output_problem(&output.value).is_none())
    {
        errors.extend(output_schema(loaded).err());
    }
    errors.extend(budget_is_priced(loaded).err());
    errors
}

/// The task's hooks: `hooks:` and those of the settings file `hooks_from:` names (each
/// event's entries after the spec's own), with notes on what a settings file had that
/// does not run headless.
pub(crate) fn task_hooks(loaded: &LoadedSpec) -> Result<(HooksSpec, Vec<String>), SpecError> {
    let mut hooks = loaded
        .spec
        .hooks
        .as_ref()
        .map(|h| h.value.clone())
        .unwrap_or_default();
    let Some(from) = &loaded.spec.hooks_from else {
        return Ok((hooks, Vec::new()));
    };
    let invalid = |message: String| SpecError::Invalid {
        position: Position::at(&loaded.path, Some(from.referenced)),
        message,
    };
    let text = unlinked_beside(loaded, &from.value)
        .and_then(|path| read_referenced(&path))
        .map_err(|e| invalid(format!("hooks_from: {e}")))?;
    let path = loaded.beside_spec(&from.value);
    let (from_file, notes) = hooks_of_claude_settings(&text)
        .map_err(|e| invalid(format!("hooks_from {}:{e}", path.display())))?;
    if let Some(problem) = hooks_problem(&from_file) {
        return Err(invalid(format!("hooks_from {}: {problem}", path.display())));
    }
    for (event, entries) in from_file {
        hooks.entry(event).or_default().extend(entries);
    }
    let notes = notes
        .into_iter()
        .map(|note| format!("hooks_from {}: {note}", path.display()))
        .collect();
    Ok((hooks, notes))
}

/// `output:`'s schema (inline or from `schema_file`), compiled once to prove it is a
/// schema; None when the task has no `output:`.
pub(crate) fn output_schema(loaded: &LoadedSpec) -> Result<Option<Value>, SpecError> {
    let Some(output) = &loaded.spec.output else {
        return Ok(None);
    };
    let invalid = |message: String| SpecError::Invalid {
        position: Position::at(&loaded.path, Some(output.referenced)),
        message,
    };
    let schema = match (&output.value.schema, &output.value.schema_file) {
        (Some(schema), _) => schema.clone(),
        (None, Some(file)) => {
            let path = loaded.beside_spec(file);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                invalid(format!(
                    "output.schema_file: cannot read {}: {e}",
                    path.display()
                ))
            })?;
            serde_json::from_str(&text).map_err(|e| {
                invalid(format!(
                    "output.schema_file {}: not valid JSON: {e}",
                    path.display()
                ))
            })?
        }
        (None, None) => return Err(invalid("output: give `schema` or `schema_file`".into())),
    };
    if !(schema.is_object() || schema.is_boolean()) {
        return Err(invalid(
            "output: the schema must be a JSON object (or true/false)".into(),
        ));
    }
    crate::tools::schema_validator(&schema)
        .map_err(|e| invalid(format!("output: the schema does not compile: {e}")))?;
    Ok(Some(schema))
}

/// The task's MCP servers: those of `mcp.servers` and of the `.mcp.json` that
/// `mcp.config` names, each checked, with notes on what the file holds that drover does
/// not use; errors are at `mcp:`'s position and name the server.
pub(crate) fn mcp_servers(
    loaded: &LoadedSpec,
) -> Result<(BTreeMap<String, McpServerSpec>, Vec<String>), SpecError> {
    mcp_servers_every(loaded).map_err(|mut errors| errors.swap_remove(0))
}

/// A task's MCP servers by name, and the notes on what its config file held.
type ServersAndNotes = (BTreeMap<String, McpServerSpec>, Vec<String>);

/// [`mcp_servers`], or every problem: each server's (a config file that cannot be read
/// is one).
fn mcp_servers_every(loaded: &LoadedSpec) -> Result<ServersAndNotes, Vec<SpecError>> {
    let Some(mcp) = &loaded.spec.mcp else {
        return Ok((BTreeMap::new(), Vec::new()));
    };
    let mut notes = Vec::new();
    let invalid = |message: String| SpecError::Invalid {
        position: Position::at(&loaded.path, Some(mcp.referenced)),
        message,
    };
    let mut servers = mcp.value.servers.clone();
    if let Some(config) = &mcp.value.config {
        let one = |message: String| vec![invalid(message)];
        let path = unlinked_beside(loaded, config).map_err(|e| one(format!("mcp.config: {e}")))?;
        let text = read_referenced(&path).map_err(|e| one(format!("mcp.config: {e}")))?;
        let (from_config, config_notes) = servers_of_claude_config(&text)
            .map_err(|e| one(format!("mcp.config {}", e.in_file(&path))))?;
        notes.extend(
            config_notes
                .into_iter()
                .map(|note| format!("mcp.config {}: {note}", path.display())),
        );
        let network = SandboxSpec::has_network(loaded.spec.sandbox.as_ref());
        let shown = path.display();
        for (name, server) in from_config {
            let left_out = if servers.contains_key(&name) {
                Some("the spec's mcp.servers has a server of that name, which is used".to_string())
            } else if server.url.is_some() && !network {
                // drover connects to a url: server from its own process, outside the
                // sandbox: a file from the repository under test does not get to choose
                // where, while the task's commands have no network.
                Some("it is a url: server, which drover reaches from outside the sandbox, and this task's commands have no network: a file the spec loads by reference cannot choose where drover connects; declare the server in the spec's mcp.servers, or give the task sandbox: { network: true }".to_string())
            } else {
                server
                    .url
                    .as_ref()
                    .and_then(|url| crate::mcp::endpoint_problem(url, &server.headers))
            };
            match left_out {
                Some(why) => {
                    notes.push(format!("mcp.config {shown}: server {name} left out: {why}"))
                }
                None => {
                    servers.insert(name, server);
                }
            }
        }
    }
    let mut errors = Vec::new();
    for (name, server) in &servers {
        if let Some(message) = server_problem(name, server) {
            errors.push(invalid(message));
        } else if let Some(url) = &server.url
            && let Some(message) = crate::mcp::endpoint_problem(url, &server.headers)
        {
            errors.push(invalid(format!("mcp.servers.{name}: {message}")));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok((servers, notes))
}

/// The task's permission rules (the spec's and its settings files'), parsed; a rule
/// that does not parse is an error at its line and column.
pub(crate) fn rule_set(loaded: &LoadedSpec) -> Result<RuleSet, SpecError> {
    task_rules(loaded).map(|task| task.rules)
}

/// Every `replay.ignore` pattern that is not a regular expression, at `replay:`'s
/// position.
fn replay_mask_errors(loaded: &LoadedSpec) -> Vec<SpecError> {
    let Some(replay) = &loaded.spec.replay else {
        return Vec::new();
    };
    replay
        .value
        .ignore
        .iter()
        .filter_map(|pattern| crate::record::volatile::Masks::compile(pattern).err())
        .map(|error| SpecError::Invalid {
            position: Position::at(&loaded.path, Some(replay.referenced)),
            message: format!("replay.ignore: {error}"),
        })
        .collect()
}

/// The masks a replay of this task uses: drover's built-in ones, `replay.ignore`'s and
/// `extra` (`--ignore`); a pattern that is not a regular expression is an error at
/// `replay:`'s position.
pub(crate) fn replay_masks_with(
    loaded: &LoadedSpec,
    extra: &[String],
) -> Result<crate::record::volatile::Masks, SpecError> {
    let (own, position) = match &loaded.spec.replay {
        Some(replay) => (replay.value.ignore.clone(), Some(replay.referenced)),
        None => (Vec::new(), None),
    };
    let masks = crate::record::volatile::Masks::new(&own).map_err(|error| SpecError::Invalid {
        position: Position::at(&loaded.path, position),
        message: format!("replay.ignore: {error}"),
    })?;
    let mut all = own;
    all.extend(extra.iter().cloned());
    if extra.is_empty() {
        return Ok(masks);
    }
    crate::record::volatile::Masks::new(&all).map_err(|error| SpecError::Invalid {
        position: Position::at(&loaded.path, None),
        message: format!("--ignore: {error}"),
    })
}

/// `limits.max_cost_usd` needs the model's price: a budget drover cannot measure would
/// never stop anything.
fn budget_is_priced(loaded: &LoadedSpec) -> Result<(), SpecError> {
    let Some(limit) = &loaded.spec.limits.max_cost_usd else {
        return Ok(());
    };
    // The page model spends the task's budget too.
    if let Some(page) = loaded
        .spec
        .tools
        .as_ref()
        .and_then(|tools| tools.value.web_fetch_model())
    {
        let model = &page.value;
        let name = model.name.as_deref().unwrap_or_default();
        if pricing::resolve(model.provider.as_str(), name, model.pricing.as_ref()).is_none() {
            return Err(SpecError::Invalid {
                position: Position::at(&loaded.path, Some(page.referenced)),
                message: format!(
                    "limits.max_cost_usd needs every model's price, but drover has no price for the page model {name:?}; add tools.web_fetch.model.pricing"
                ),
            });
        }
    }
    let model = &loaded.spec.model.value;
    let name = model.name.as_deref().unwrap_or_default();
    if pricing::resolve(model.provider.as_str(), name, model.pricing.as_ref()).is_some() {
        return Ok(());
    }
    let which = if name.is_empty() {
        "no model.name is given".to_string()
    } else {
        format!("drover's pricing table has no price for model {name:?}")
    };
    Err(SpecError::Invalid {
        // The budget may be one the spec inherits from its defaults file.
        position: loaded.position(Some(limit.referenced)),
        message: format!(
            "limits.max_cost_usd needs the model's price, but {which}; add model.pricing: {{ input: …, output: …, cache_write: …, cache_read: … }} (USD per million tokens)"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(text: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.yaml");
        std::fs::write(&path, text).unwrap();
        let loaded = crate::spec::load(&path).unwrap();
        check(&loaded).unwrap_err().to_string()
    }

    const PRICED: &str = "version: 1
name: budgeted
prompt: p
model:
  provider: anthropic
  name: MODEL
limits:
  max_turns: 5
  max_cost_usd: 2.5
";

    /// Every bad entry of each list is an error, and one check's errors hide no other's.
    #[test]
    fn every_bad_rule_server_agent_and_pattern_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.yaml");
        std::fs::write(
            &path,
            r#"version: 1
name: t
prompt: p
model: { provider: script, script: [{ text: hi }] }
permissions:
  allow: ["Edt(x)", "mcp__*"]
  deny: ["Bash(rm"]
mcp:
  servers:
    a: { command: "" }
    b: { command: x, url: "http://127.0.0.1:9/mcp" }
agents:
  one: { description: d, prompt: p, max_turns: 0 }
  two: { description: d, prompt: p, tools: ["not a tool"] }
replay:
  ignore: ["(", "[", "fine"]
"#,
        )
        .unwrap();
        let errors: Vec<String> = check_every(&crate::spec::load(&path).unwrap())
            .iter()
            .map(ToString::to_string)
            .collect();
        let found = |place: &str, what: &str| {
            errors
                .iter()
                .filter(|e| e.contains(place) && e.contains(what))
                .count()
        };
        assert_eq!(found("bad.yaml:6:11:", "unknown tool"), 1, "{errors:#?}");
        assert_eq!(
            found("bad.yaml:6:21:", "is for deny: only"),
            1,
            "{errors:#?}"
        );
        assert_eq!(found("bad.yaml:7:10:", "malformed"), 1, "{errors:#?}");
        assert_eq!(found("bad.yaml:9:", "mcp.servers.a"), 1, "{errors:#?}");
        assert_eq!(found("bad.yaml:9:", "mcp.servers.b"), 1, "{errors:#?}");
        assert_eq!(
            found("bad.yaml:13:", "agents.one.max_turns"),
            1,
            "{errors:#?}"
        );
        assert_eq!(found("bad.yaml:13:", "agents.two.tools"), 1, "{errors:#?}");
        assert_eq!(found("bad.yaml:16:", "replay.ignore"), 2, "{errors:#?}");
        assert_eq!(errors.len(), 9, "{errors:#?}");
    }

    #[test]
    fn a_budget_for_an_unpriced_model_is_an_error_at_the_budget() {
        let error = error_of(&PRICED.replace("MODEL", "my-private-model"));
        assert!(error.contains("bad.yaml:9:17"), "{error}");
        assert!(
            error.contains("limits.max_cost_usd needs the model's price"),
            "{error}"
        );
        assert!(error.contains("\"my-private-model\""), "{error}");
        assert!(error.contains("model.pricing"), "{error}");
        let error = error_of(&PRICED.replace("  name: MODEL\n", ""));
        assert!(error.contains("bad.yaml:8:17"), "{error}");
        assert!(error.contains("no model.name"), "{error}");
    }

    #[test]
    fn an_inherited_budget_or_rule_is_an_error_at_the_defaults_files_position() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("drover.yaml"),
            "version: 1\nlimits:\n  max_cost_usd: 2.5\npermissions:\n  deny: [\"Bash(rm\"]\n",
        )
        .unwrap();
        let path = dir.path().join("t.yaml");
        std::fs::write(&path, PRICED.replace("MODEL", "my-private-model")).unwrap();
        let defaults = dir.path().join("drover.yaml").display().to_string();
        let error = check(&crate::spec::load(&path).unwrap())
            .unwrap_err()
            .to_string();
        assert!(error.starts_with(&format!("{defaults}:5:10: ")), "{error}");
        // With the rule put right, the spec's own budget is the spec's; without it, the
        // inherited one is the defaults file's.
        std::fs::write(
            dir.path().join("drover.yaml"),
            "version: 1\nlimits:\n  max_cost_usd: 2.5\n",
        )
        .unwrap();
        let error = check(&crate::spec::load(&path).unwrap())
            .unwrap_err()
            .to_string();
        assert!(error.contains("t.yaml:9:17: "), "{error}");
        std::fs::write(
            &path,
            PRICED
                .replace("MODEL", "my-private-model")
                .replace("  max_cost_usd: 2.5\n", ""),
        )
        .unwrap();
        let error = check(&crate::spec::load(&path).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(&format!(
                "{defaults}:3:17: limits.max_cost_usd needs the model's price"
            )),
            "{error}"
        );
    }

    #[test]
    fn a_budget_is_fine_for_known_or_explicitly_priced_models() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            crate::spec::load(&path).unwrap()
        };
        let known = write(
            "a.yaml",
            &PRICED.replace("MODEL", "claude-sonnet-4-5-20250929"),
        );
        assert!(check(&known).is_ok());
        let priced = write(
            "b.yaml",
            &PRICED.replace(
                "  name: MODEL\n",
                "  name: my-private-model\n  pricing: { input: 1, output: 2 }\n",
            ),
        );
        assert!(check(&priced).is_ok());
    }

    #[test]
    fn a_rule_that_does_not_parse_is_an_error_at_its_line_and_column() {
        let spec = "version: 1\nname: t\nprompt: p\nmodel: { provider: script, script: [{ text: hi }] }\npermissions:\n  allow: [Read]\n  deny:\n    - Bash(git push *)\n    - \"Bash(rm -rf\"\n";
        let error = error_of(spec);
        assert!(error.contains("bad.yaml:9:7"), "{error}");
        assert!(error.contains("malformed permission rule"), "{error}");
        let error = error_of(
            &spec
                .replace("\"Bash(rm -rf\"", "\"Bash(ok)\"")
                .replace("[Read]", "[Read, \"Edt(src/**)\"]"),
        );
        assert!(error.contains("bad.yaml:6:17"), "{error}");
        assert!(error.contains("unknown tool"), "{error}");
    }

    #[test]
    fn a_config_files_url_server_needs_the_tasks_network() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"docs": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}"#,
        )
        .unwrap();
        let spec = "version: 1\nname: t\nprompt: p\nmodel: { provider: script, script: [{ text: hi }] }\nmcp: { config: .mcp.json }\n";
        let load = |text: &str| {
            let path = dir.path().join("t.yaml");
            std::fs::write(&path, text).unwrap();
            crate::spec::load(&path).unwrap()
        };
        let (servers, notes) = mcp_servers(&load(spec)).unwrap();
        assert!(servers.is_empty());
        assert!(
            notes[0].contains("server docs left out: it is a url: server"),
            "{notes:?}"
        );
        for network in ["sandbox: { network: true }\n", "sandbox: off\n"] {
            let (servers, _) = mcp_servers(&load(&format!("{spec}{network}"))).unwrap();
            assert!(servers["docs"].from_config, "{network}");
        }
    }

    #[test]
    fn every_mcp_tool_may_be_denied_but_not_allowed_in_one_rule() {
        let spec = "version: 1\nname: t\nprompt: p\nmodel: { provider: script, script: [{ text: hi }] }\npermissions:\n  allow: [mcp__docs]\n  deny: [mcp__*]\n";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ok.yaml");
        std::fs::write(&path, spec).unwrap();
        let rules = rule_set(&crate::spec::load(&path).unwrap()).unwrap();
        let policy = crate::policy::Policy::new(&rules, dir.path(), &[]);
        for name in ["mcp__docs__search", "ReadMcpResource"] {
            let facts = crate::mcp::facts_of(name);
            let withheld = policy.withholds(&facts).unwrap();
            assert_eq!(withheld.rule(), Some("mcp__*"), "{name}");
            let call = crate::policy::CallFacts::without_subject(facts);
            assert!(!policy.decide(&call).allowed(), "{name}");
        }
        let error = error_of(&spec.replace("allow: [mcp__docs]", "allow: [Read, mcp__*]"));
        assert!(error.contains("bad.yaml:6:17"), "{error}");
        assert!(error.contains("is for deny: only"), "{error}");
    }
}
