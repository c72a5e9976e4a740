//! `tools:` — settings of drover's built-in tools:
//!
//! ```yaml
//! tools:
//!   web_fetch:
//!     model: { provider: anthropic, name: claude-haiku-4-5 }   # answers `prompt` over the page
//!   web_search:
//!     max_uses: 8                # searches per request (Anthropic's server tool)
//! ```

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::ModelSpec;

/// `tools:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsSpec {
    #[serde(default)]
    pub web_fetch: Option<WebFetchSpec>,
    #[serde(default)]
    pub web_search: Option<WebSearchSpec>,
}

/// `tools.web_search:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSearchSpec {
    /// Searches the model may make per request (1 or more; default 8).
    #[serde(default)]
    pub max_uses: Option<Spanned<u32>>,
}

/// `tools.web_fetch:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebFetchSpec {
    /// The (small) model that answers WebFetch's `prompt` over the fetched page, as in
    /// Claude Code; the same fields as `model:`. Without it the page itself is returned.
    #[serde(default)]
    pub model: Option<Spanned<ModelSpec>>,
}

impl ToolsSpec {
    /// The page model, if one is set.
    pub fn web_fetch_model(&self) -> Option<&Spanned<ModelSpec>> {
        self.web_fetch.as_ref().and_then(|w| w.model.as_ref())
    }
}

/// What is wrong with `tools:`, if anything.
pub(super) fn tools_problem(tools: &ToolsSpec) -> Option<String> {
    if let Some(max_uses) = tools.web_search.as_ref().and_then(|w| w.max_uses.as_ref())
        && max_uses.value == 0
    {
        return Some(
            "tools.web_search.max_uses is 0: give at least 1, or deny WebSearch to turn it off"
                .into(),
        );
    }
    let model = tools.web_fetch_model()?;
    if model.value.provider == super::Provider::Replay {
        return Some(
            "tools.web_fetch.model: provider replay is not supported; use script, anthropic or openai".into(),
        );
    }
    super::model_check::model_problem(&model.value, "tools.web_fetch.model")
        .map(|problem| format!("tools.web_fetch.model: {problem}"))
}
