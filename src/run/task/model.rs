//! A task's model, built from where its turns come from: a script, a recording, or a
//! provider; a resumed task's plays its recorded turns back first.

use crate::model::Model;
use crate::model::replay::ReplayModel;
use crate::model::resumed::ResumedModel;
use crate::model::script::ScriptModel;
use crate::run::plan::{Mode, ModelSource, TaskPlan};

/// The task's model; a resumed task's plays its recorded turns back first.
pub(super) fn build_model(plan: &TaskPlan) -> Box<dyn Model> {
    let Mode::Resume(resume) = &plan.mode else {
        return model_of(&plan.model);
    };
    let live = match &plan.model {
        // A script goes on with the entry after the recorded turns and the summaries
        // asked for among them (each took an entry, as in a run never stopped).
        ModelSource::Script { name, turns } => Box::new(
            ScriptModel::new(name.as_deref(), turns.clone()).resumed_after(
                resume
                    .turns
                    .saturating_add(summary_requests(&resume.events)),
            ),
        ),
        source => model_of(source),
    };
    Box::new(ResumedModel::new(
        ReplayModel::from_events(&resume.events),
        resume.turns,
        live,
    ))
}

/// The summary requests a recording made (`limits.context` `summarize`): each is one
/// `compaction` event, written or not (a fallback), of drover's own (not the server's).
fn summary_requests(events: &[crate::record::Event]) -> u32 {
    let count = events
        .iter()
        .filter(|event| {
            matches!(event, crate::record::Event::Compaction(compaction)
                if compaction.strategy == "summarize" && compaction.trigger != "server")
        })
        .count();
    u32::try_from(count).unwrap_or(u32::MAX)
}

/// The model whose turns come from `source`.
pub(crate) fn model_of(source: &ModelSource) -> Box<dyn Model> {
    match source {
        ModelSource::Script { name, turns } => {
            Box::new(ScriptModel::new(name.as_deref(), turns.clone()))
        }
        ModelSource::Recorded(recording) => Box::new(ReplayModel::from_events(&recording.events)),
        ModelSource::Remote(config) => crate::model::remote_model::build(config.as_ref().clone()),
    }
}
