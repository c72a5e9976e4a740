//! Why the sandbox could not be set up or enforced. The task reports it as
//! `sandbox_unavailable` (or an internal error when drover itself is broken), with the
//! step that failed and the system's reason.

/// The sandbox could not be set up or enforced.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A step of setting it up failed: `doing` says which ("apply the Landlock ruleset").
    #[error("cannot {doing}: {source}")]
    Failed {
        doing: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// This kernel cannot enforce what the policy asks for; the text says what is
    /// missing and what to do.
    #[error("{0}")]
    Unenforceable(String),
}

impl SandboxError {
    /// The step `doing` failed with `source`.
    pub(crate) fn failed(
        doing: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        SandboxError::Failed {
            doing: doing.into(),
            source: source.into(),
        }
    }
}
