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
        // A script goes on with the turn after the recorded ones.
        ModelSource::Script { name, turns } => {
            Box::new(ScriptModel::new(name.as_deref(), turns.clone()).resumed_after(resume.turns))
        }
        source => model_of(source),
    };
    Box::new(ResumedModel::new(
        ReplayModel::from_events(&resume.events),
        resume.turns,
        live,
    ))
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
