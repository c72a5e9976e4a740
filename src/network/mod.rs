//! The network of a task's sandboxed commands under rules naming hosts
//! (`sandbox.network: {allow, deny, registries}`). Each command launched under such a
//! policy gets an egress proxy of its own ([`LaunchNetwork`]): a listener on 127.0.0.1
//! that the sandbox lets the command reach, and nothing else (see
//! `sandbox::proxied`); the proxy judges every host by the rules, and every attempt —
//! through the proxy, or around it and refused by the launcher — is recorded as a
//! `network` transcript event naming the command that tried it ([`NetworkRecorder`]).

mod gate;
mod launch;
mod recorder;
mod replayed;
mod report_channel;

pub(crate) use gate::NetworkGate;
pub(crate) use launch::LaunchNetwork;
pub(crate) use recorder::NetworkRecorder;
pub(crate) use replayed::RecordedNetwork;
