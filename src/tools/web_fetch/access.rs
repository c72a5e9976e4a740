//! What a run gives WebFetch: the rules' grant for each host (filled from the policy by
//! the run), the model that answers prompts over pages (when `tools.web_fetch.model` is
//! set), and the run's page cache. The tool knows the policy only through this.

use std::sync::Arc;

use async_trait::async_trait;

use super::cache::PageCache;
use crate::policy::{HostGrant, WebGrants};
use crate::tools::recorded::RecordedAnswers;

/// Answers a prompt over one fetched page: Claude Code's small-model step. Implemented
/// by the run with the model `tools.web_fetch.model` names.
#[async_trait]
pub(crate) trait PageAnswerer: Send + Sync {
    /// The answer to `prompt` from `page` (Markdown fetched from `url`), or why there is
    /// none (the provider failed).
    async fn answer(&self, prompt: &str, url: &str, page: &str) -> Result<String, NoAnswer>;
}

/// Why the page model gave no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoAnswer {
    /// The provider failed (its error, as it says it).
    #[error("{0}")]
    Provider(String),
    #[error("the page model gave no answer")]
    Empty,
}

/// Web access for one run. Cloning a [`crate::tools::ToolContext`] shares it, so every
/// call of the run sees the same cache.
pub(crate) struct WebAccess {
    /// The rules' grant for a host; consulted for the first URL and every redirect hop,
    /// and by the resolver for every name it resolves.
    pub grants: Arc<WebGrants>,
    /// The model answering `prompt`; None: the page itself is returned.
    pub answerer: Option<Arc<dyn PageAnswerer>>,
    pub cache: PageCache,
    /// A replay: the recorded results by call id. A replayed call is judged by the
    /// rules as any other, then answered from the recording: a replay reaches no
    /// network, and gives the model what the recorded run gave it.
    pub recorded: Option<Arc<RecordedAnswers>>,
}

impl WebAccess {
    /// Access as the rules grant it.
    pub(crate) fn new(grants: Arc<WebGrants>, answerer: Option<Arc<dyn PageAnswerer>>) -> Self {
        WebAccess {
            grants,
            answerer,
            cache: PageCache::default(),
            recorded: None,
        }
    }

    /// The same access answering from a recording (see [`WebAccess::recorded`]).
    pub(crate) fn replaying(mut self, answers: Arc<RecordedAnswers>) -> Self {
        self.recorded = Some(answers);
        self
    }
}

impl Default for WebAccess {
    /// No host is granted: a context built without a policy (unit tests, `drover tool`)
    /// fetches nothing.
    fn default() -> Self {
        WebAccess::new(Arc::new(|_: &str| HostGrant::default()), None)
    }
}
