//! One set of network rules of a task (the task's own, a setup step's, a check's…) and
//! the task's recorder: what opens a proxy for each command launched under them.

use std::sync::Arc;

use crate::policy::EgressRules;

use super::{LaunchNetwork, NetworkRecorder};
use crate::record::network::NetworkOrigin;
use crate::sandbox::launch_network::{LaunchedNetwork, NetworkOpener};

/// The rules a command's proxy judges by, and where its attempts are recorded.
#[derive(Clone)]
pub(crate) struct NetworkGate {
    rules: Arc<EgressRules>,
    recorder: NetworkRecorder,
}

impl std::fmt::Debug for NetworkGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NetworkGate")
    }
}

impl NetworkGate {
    pub(crate) fn new(rules: EgressRules, recorder: NetworkRecorder) -> NetworkGate {
        NetworkGate {
            rules: Arc::new(rules),
            recorder,
        }
    }
}

impl NetworkOpener for NetworkGate {
    fn open(&self, origin: NetworkOrigin) -> std::io::Result<Box<dyn LaunchedNetwork>> {
        let network = LaunchNetwork::open(
            EgressRules::clone(&self.rules),
            origin,
            self.recorder.clone(),
        )?;
        Ok(Box::new(network))
    }
}
