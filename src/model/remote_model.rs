//! The model a resolved provider config stands for. Apart from `remote`, so the
//! providers may read their config without the config knowing the providers.

use super::Model;
use super::anthropic::AnthropicModel;
use super::openai::OpenAiModel;
use super::remote::RemoteConfig;
use crate::spec::Provider;

/// The model for `config`.
pub(crate) fn build(config: RemoteConfig) -> Box<dyn Model> {
    match config.provider {
        Provider::Openai => Box::new(OpenAiModel::new(config)),
        _ => Box::new(AnthropicModel::new(config)),
    }
}
