//! What a task's web tools may reach: WebFetch's grants from the policy, its page model
//! (`tools.web_fetch.model`) and a replay's recorded pages; Anthropic's web search when
//! the rules allow it.

use crate::model::Model;
use crate::model::pricing;
use crate::run::plan::TaskPlan;
use crate::tools::WebAccess;

use super::model::model_of;

/// What WebFetch may reach in this task: the policy's grants for it (none when the tool
/// is not offered), the page model of `tools.web_fetch.model`, and in a replay the
/// recorded results it answers with instead of fetching.
pub(super) fn web_access(
    plan: &TaskPlan,
    policy: &crate::policy::Policy,
    registry: &crate::tools::Registry,
    meter: &std::sync::Arc<crate::agent::Meter>,
) -> WebAccess {
    let Some(facts) = registry.facts("WebFetch") else {
        return WebAccess::default();
    };
    let answerer = plan.web_fetch_model.as_ref().map(|source| {
        let model = model_of(source);
        let spec = plan
            .spec
            .spec
            .tools
            .as_ref()
            .and_then(|tools| tools.value.web_fetch_model());
        let pricing = spec.and_then(|spec| {
            let spec = &spec.value;
            pricing::resolve(model.provider(), model.name(), spec.pricing.as_ref())
        });
        std::sync::Arc::new(super::page_model::PageModel::new(
            model,
            std::sync::Arc::clone(meter),
            pricing,
        )) as std::sync::Arc<dyn crate::tools::PageAnswerer>
    });
    let access = WebAccess::new(policy.web_grants(facts.clone()), answerer);
    match plan.mode.answers() {
        Some(answers) => access.replaying(std::sync::Arc::clone(answers)),
        None => access,
    }
}

/// Anthropic's web search, when the task's rules allow it and its model is Anthropic's.
pub(super) fn web_search(plan: &TaskPlan, model: &dyn Model) -> Option<crate::message::WebSearch> {
    super::tool_listing::offered_web_search(
        &plan.rules,
        model.provider(),
        plan.spec.spec.tools.as_ref().map(|tools| &tools.value),
    )
}
