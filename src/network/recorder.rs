//! Where a task's connection attempts go: its transcript, as `network` events, and its
//! tally for the report. Attempts come from the proxies' tasks at any time, so the
//! recorder is shared; attempts made before the task's `run_start` is written (an MCP
//! server connecting while it starts) are held and written right after it.

use std::sync::{Arc, Mutex, MutexGuard};

use super::replayed::{REPLAY_REASON, RecordedNetwork, origin_key};
use crate::record::DriftReport;
use crate::record::network::{NetworkAttempt, NetworkOrigin, NetworkTally};
use crate::record::transcript::{Event, TranscriptWriter};

/// A task's network record, shared by every proxy of the task.
#[derive(Clone, Default)]
pub(crate) struct NetworkRecorder {
    inner: Arc<Mutex<Recording>>,
}

#[derive(Default)]
struct Recording {
    /// A replay: the recorded attempts its commands' are compared with, and the
    /// commands found to differ.
    replay: Option<(RecordedNetwork, Option<DriftReport>)>,
    transcript: Option<TranscriptWriter>,
    held: Vec<Event>,
    /// The transcript has ended: attempts are only counted.
    stopped: bool,
    tally: NetworkTally,
}

/// The most events held before `run_start` (a server that loops on connecting while
/// it starts): the rest are counted only.
const MAX_HELD: usize = 1000;

impl NetworkRecorder {
    /// The recorder of a replay, whose commands' attempts are compared with `recorded`.
    pub(crate) fn replaying(recorded: RecordedNetwork) -> NetworkRecorder {
        let recorder = NetworkRecorder::default();
        recorder.lock().replay = Some((recorded, None));
        recorder
    }

    /// Whether this is a replay's (every connection is refused).
    pub(crate) fn is_replay(&self) -> bool {
        self.lock().replay.is_some()
    }

    fn lock(&self) -> MutexGuard<'_, Recording> {
        // Each write leaves the recording consistent: a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Write events to `transcript` from now on, the ones held so far first (those of
    /// MCP servers starting before `run_start`). Returns the recorder, shared.
    pub(crate) fn record_to(&self, transcript: TranscriptWriter) -> NetworkRecorder {
        let mut recording = self.lock();
        let mut transcript = transcript;
        for event in std::mem::take(&mut recording.held) {
            let _ = transcript.write(event);
        }
        recording.transcript = Some(transcript);
        self.clone()
    }

    /// Stop writing (the task's transcript is ending); later attempts are only counted.
    pub(crate) fn stop(&self) {
        let mut recording = self.lock();
        recording.transcript = None;
        recording.stopped = true;
    }

    /// Count one attempt in the task's tally (every attempt is, recorded or not).
    pub(crate) fn count(&self, attempt: &NetworkAttempt) {
        self.lock().tally.count(attempt);
    }

    /// Write one attempt as a `network` event.
    pub(crate) fn write_attempt(&self, mut attempt: NetworkAttempt) {
        let mut recording = self.lock();
        if recording.replay.is_some() && attempt.protocol != "direct" {
            attempt.rule = None;
            attempt.reason = Some(REPLAY_REASON.to_string());
        }
        recording.write(Event::Network(Box::new(attempt)));
    }

    /// Record an event that is no attempt of its own (`network_omitted`).
    pub(crate) fn event(&self, event: Event) {
        self.lock().write(event);
    }

    /// In a replay, compare the targets the command of `origin` tried (distinct, in
    /// order) with the recorded command's; a difference is a `replay_drift` event.
    pub(crate) fn compare(&self, origin: &NetworkOrigin, tried: &[String]) {
        let mut recording = self.lock();
        let Some((recorded, drift)) = &mut recording.replay else {
            return;
        };
        let expected = recorded.tried_by(origin).join("\n");
        let actual = tried.join("\n");
        if expected == actual {
            return;
        }
        let diff = crate::record::drift::short_diff(&expected, &actual);
        let id = origin_key(origin);
        let report = drift.get_or_insert_with(|| DriftReport {
            count: 0,
            call: 0,
            tool: "network".to_string(),
            tool_use_id: id.clone(),
            diff: diff.clone(),
        });
        report.count += 1;
        recording.write(Event::ReplayDrift {
            tool_use_id: id,
            expected,
            actual,
            call: 0,
            tool: "network".to_string(),
            diff,
        });
    }

    /// A replay's commands that tried other hosts than recorded: how many, and the first.
    pub(crate) fn drift(&self) -> Option<DriftReport> {
        self.lock()
            .replay
            .as_ref()
            .and_then(|(_, drift)| drift.clone())
    }

    /// The task's connections so far.
    pub(crate) fn tally(&self) -> NetworkTally {
        self.lock().tally.clone()
    }
}

impl Recording {
    fn write(&mut self, event: Event) {
        match &mut self.transcript {
            // A transcript that cannot be written fails the task where the task writes;
            // an attempt is still counted in the tally.
            Some(transcript) => {
                let _ = transcript.write(event);
            }
            None if !self.stopped && self.held.len() < MAX_HELD => self.held.push(event),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &std::path::Path) -> Vec<Event> {
        crate::record::TranscriptReader::read_scoped(path)
            .unwrap()
            .into_iter()
            .map(|scoped| scoped.event)
            .collect()
    }

    fn bash(id: &str) -> NetworkOrigin {
        NetworkOrigin {
            source: "bash".to_string(),
            tool_use_id: Some(id.to_string()),
            name: None,
        }
    }

    fn recorded(id: &str, host: &str) -> Event {
        Event::Network(Box::new(NetworkAttempt {
            origin: bash(id),
            host: host.to_string(),
            port: 443,
            protocol: "connect".to_string(),
            decision: "allowed".to_string(),
            rule: None,
            reason: None,
            address: None,
            bytes_up: 0,
            bytes_down: 0,
            duration_ms: 0,
        }))
    }

    #[test]
    fn a_replayed_command_trying_other_hosts_is_a_network_drift() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transcript.jsonl");
        let recording = [recorded("a", "x.example"), recorded("b", "y.example")];
        let recorder =
            NetworkRecorder::replaying(RecordedNetwork::of(&recording).expect("rules recorded"));
        recorder.record_to(TranscriptWriter::create(&path).unwrap());
        // The same targets as recorded: nothing to report.
        recorder.compare(&bash("a"), &["x.example:443".to_string()]);
        assert_eq!(recorder.drift(), None);
        // Another host: a drift naming the command, counted.
        recorder.compare(&bash("b"), &["z.example:443".to_string()]);
        let drift = recorder.drift().expect("a drift");
        assert_eq!((drift.count, drift.tool.as_str()), (1, "network"));
        assert_eq!(drift.tool_use_id, "bash b");
        let events = read(&path);
        let written: Vec<_> = events
            .iter()
            .filter_map(|event| match event {
                Event::ReplayDrift {
                    expected,
                    actual,
                    tool,
                    ..
                } => Some((expected.as_str(), actual.as_str(), tool.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(written, [("y.example:443", "z.example:443", "network")]);
    }

    #[test]
    fn a_replay_refuses_with_its_own_reason_and_a_live_run_compares_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transcript.jsonl");
        let recorder = NetworkRecorder::replaying(RecordedNetwork::default());
        recorder.record_to(TranscriptWriter::create(&path).unwrap());
        let Event::Network(mut denied) = recorded("a", "x.example") else {
            unreachable!("recorded() makes a network event");
        };
        denied.decision = "denied".to_string();
        denied.reason = Some("no allow rule".to_string());
        recorder.write_attempt(*denied);
        let events = read(&path);
        let Some(Event::Network(written)) = events.first() else {
            panic!("{events:?}");
        };
        assert_eq!(written.reason.as_deref(), Some(REPLAY_REASON));
        let live = NetworkRecorder::default();
        live.compare(&bash("a"), &["anything:1".to_string()]);
        assert_eq!(live.drift(), None);
    }
}
