//! Where a run's lines go. Progress is on stderr (or nowhere with `--quiet`); the
//! human lines (each task's final line, the artifacts and outcome lines, GitHub
//! annotations) are on stdout, unless stdout is kept for machines: `--json`'s events
//! and result, or `drover exec`'s answer. Then they go to stderr, so stdout holds only
//! what a program reads.

use std::io::{ErrorKind, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::record::stream::event_line;
use crate::record::transcript::LineTap;

use super::progress::Channel;

/// How a run talks.
#[derive(Clone)]
pub(crate) struct Console {
    /// `--quiet`: no progress.
    pub quiet: bool,
    /// Where the human lines go.
    pub human: Channel,
    /// `--json`: the events and the result on stdout.
    events: Option<JsonEvents>,
}

impl Console {
    /// A run for people: progress on stderr, the human lines on stdout.
    pub(crate) fn for_people(quiet: bool) -> Console {
        Console {
            quiet,
            human: Channel::Stdout,
            events: None,
        }
    }

    /// `--json`: the events and the result on stdout, everything else on stderr.
    pub(crate) fn json(quiet: bool) -> Console {
        Console {
            quiet,
            human: Channel::Stderr,
            events: Some(JsonEvents::default()),
        }
    }

    /// Stdout kept for one answer the command prints at the end (`drover exec`):
    /// everything else on stderr.
    pub(crate) fn answer_only(quiet: bool) -> Console {
        Console {
            quiet,
            human: Channel::Stderr,
            events: None,
        }
    }

    /// A human line (see [`Channel::say`]).
    pub(crate) fn say(&self, text: &str) {
        self.human.say(text);
    }

    /// Where drover's GitHub workflow commands (annotations) are written: with the
    /// human lines (the runner reads both streams).
    pub(crate) fn annotations(&self) -> Box<dyn Write> {
        match self.human {
            Channel::Stdout => Box::new(crate::output::Stdout),
            Channel::Stderr => Box::new(std::io::stderr()),
        }
    }

    /// What follows the transcript of the task `task` with `--json`.
    pub(crate) fn tap(&self, task: &str) -> Option<LineTap> {
        let events = self.events.clone()?;
        let task = task.to_string();
        Some(Box::new(move |line: &str| {
            events.write(&event_line(&task, line));
        }))
    }

    /// The run's result, the last line of `--json` (nothing without it).
    pub(crate) fn result(&self, result: &str) {
        if let Some(events) = &self.events {
            events.write(result);
        }
    }
}

/// `--json`'s lines on stdout, one whole line at a time (tasks running at once take
/// turns). A reader that goes away (`| head -1`) ends the writing, not the run: the
/// tasks go on, their transcripts are written, the exit code is theirs.
#[derive(Clone, Default)]
struct JsonEvents {
    closed: Arc<AtomicBool>,
}

impl JsonEvents {
    fn write(&self, json: &str) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        let mut stdout = std::io::stdout().lock();
        if let Err(error) = crate::output::write_json_line(&mut stdout, json) {
            // Said once, then silence: the events are in each transcript anyway.
            if !self.closed.swap(true, Ordering::Relaxed) && error.kind() != ErrorKind::BrokenPipe {
                crate::esay!(
                    "drover: warning: cannot write the events on stdout ({error}); the run goes on, its transcripts are in the artifacts"
                );
            }
        }
    }
}
