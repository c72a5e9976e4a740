//! Reading recordings: a transcript split by agent, the recorded results a replay
//! compares with (`RecordedResults`, the loop's `agent::ReplayCheck`) and answers from, the recorded diff, and where a recording's artifacts
//! lie. It knows nothing of planning or running a task.

mod by_agent;
mod comparison;
mod locations;
mod recorded_patch;
mod results;
mod steering;

pub(crate) use by_agent::Recording;
pub(crate) use comparison::RecordedResults;
pub(crate) use locations::{artifacts_of, same_path, transcript_of};
pub(crate) use recorded_patch::RecordedPatch;
pub(crate) use results::{answers, recorded_results};
pub(crate) use steering::Steering;
