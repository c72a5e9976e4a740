//! Where a task's connection attempts go: its transcript, as `network` events, and its
//! tally for the report. Attempts come from the proxies' tasks at any time, so the
//! recorder is shared; attempts made before the task's `run_start` is written (an MCP
//! server connecting while it starts) are held and written right after it.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::record::network::{NetworkAttempt, NetworkTally};
use crate::record::transcript::{Event, TranscriptWriter};

/// A task's network record, shared by every proxy of the task.
#[derive(Clone, Default)]
pub(crate) struct NetworkRecorder {
    inner: Arc<Mutex<Recording>>,
}

#[derive(Default)]
struct Recording {
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
    fn lock(&self) -> MutexGuard<'_, Recording> {
        // Each write leaves the recording consistent: a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Write events to `transcript` from now on, the ones held so far first.
    pub(crate) fn record_to(&self, transcript: TranscriptWriter) {
        let mut recording = self.lock();
        let mut transcript = transcript;
        for event in std::mem::take(&mut recording.held) {
            let _ = transcript.write(event);
        }
        recording.transcript = Some(transcript);
    }

    /// Stop writing (the task's transcript is ending); later attempts are only counted.
    pub(crate) fn stop(&self) {
        let mut recording = self.lock();
        recording.transcript = None;
        recording.stopped = true;
    }

    /// Record one attempt.
    pub(crate) fn attempt(&self, attempt: NetworkAttempt) {
        let mut recording = self.lock();
        recording.tally.count(&attempt);
        recording.write(Event::Network(Box::new(attempt)));
    }

    /// Count one attempt without writing it (a command's attempts past the ones it
    /// records one by one, which its `network_omitted` event counts): the task's
    /// report still counts every attempt.
    pub(crate) fn count(&self, attempt: &NetworkAttempt) {
        self.lock().tally.count(attempt);
    }

    /// Record an event that is no attempt of its own (`network_omitted`).
    pub(crate) fn event(&self, event: Event) {
        self.lock().write(event);
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
