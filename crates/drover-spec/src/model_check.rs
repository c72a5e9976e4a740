//! The checks of a model's settings, for `model:` and `tools.web_fetch.model` alike.

use super::types::{ModelSpec, Provider};

/// What is wrong with the model settings at `key` (`model`, `tools.web_fetch.model`):
/// the first problem.
pub(crate) fn model_problem(m: &ModelSpec, key: &str) -> Option<String> {
    model_problems(m, key).into_iter().next()
}

/// Every problem of the model settings at `key`, so a spec's author fixes them at once.
pub(crate) fn model_problems(m: &ModelSpec, key: &str) -> Vec<String> {
    let mut problems = Vec::new();
    match m.provider {
        Provider::Script => match &m.script {
            None => problems.push(
                "provider script needs `script:`, a list of assistant turns (text and tool_calls)"
                    .into(),
            ),
            Some(turns) if turns.is_empty() => {
                problems.push("`script:` is empty; give at least one assistant turn".into());
            }
            Some(_) => {}
        },
        Provider::Replay => {
            if m.transcript.is_none() {
                problems.push(
                    "provider replay needs `transcript:`, the path of a recorded transcript.jsonl"
                        .into(),
                );
            }
        }
        Provider::Anthropic | Provider::Openai => {}
    }
    if m.provider != Provider::Script && m.script.is_some() {
        problems.push(format!(
            "`script:` is only read by provider script, not {}",
            m.provider.as_str()
        ));
    }
    if matches!(m.provider, Provider::Script | Provider::Replay) {
        let remote_only = [
            ("base_url", m.base_url.is_some()),
            ("api_key_env", m.api_key_env.is_some()),
            ("max_tokens", m.max_tokens.is_some()),
            ("temperature", m.temperature.is_some()),
            ("path", m.path.is_some()),
            ("retry", m.retry.is_some()),
            ("timeouts", m.timeouts.is_some()),
        ];
        for (field, _) in remote_only.iter().filter(|(_, set)| *set) {
            problems.push(format!(
                "{key}.{field} is only read by providers anthropic and openai, not {}; remove it",
                m.provider.as_str()
            ));
        }
    }
    if m.provider == Provider::Script && m.transcript.is_some() {
        problems.push("`transcript:` is only read by provider replay, not script".into());
    }
    if let Some(temperature) = m.temperature
        && !(0.0..=2.0).contains(&temperature)
    {
        problems.push(format!(
            "{key}.temperature must be between 0 and 2, not {temperature}"
        ));
    }
    if m.max_tokens == Some(0) {
        problems.push(format!("{key}.max_tokens must be at least 1"));
    }
    problems
}
