//! The long run's script, played by the mock model by a turn counter of its own: which
//! file each turn reads, which turns write a note, when the task ends, and what the
//! mock answers a request for a summary. It holds no conversation, so what drover sends
//! (a whole conversation, a compacted one, a summary) never changes what it plays, and
//! every run of the same scenario asks for the same calls.

use std::path::Path;

/// The files the workspace holds, `src/f00.txt` … `src/f49.txt`.
pub(crate) const FILES: u32 = 50;
/// Every this many turns the turn writes a note rather than reading a file.
const WRITE_EVERY: u32 = 10;
/// The r-th read reads file r × this (coprime to [`FILES`]): never the same file twice
/// in a row, every file once in [`FILES`] reads.
const STRIDE: u32 = 7;
/// The width of each line of a file, its line break included.
const LINE_BYTES: usize = 128;

/// What the model does at one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Call `Read` on a workspace file.
    Read { path: String },
    /// Call `Write` to create a small new file.
    Write { path: String, content: String },
    /// End the turn with a text: the task is done.
    Finish { text: String },
}

/// A scenario of `turns` model turns over files of `result_bytes` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scenario {
    pub turns: u32,
    pub result_bytes: usize,
}

impl Scenario {
    /// What turn `turn` (from 1) does: turns before the last read or write, the last
    /// (and any after it, should drover ask again) finishes.
    pub(crate) fn step(&self, turn: u32) -> Step {
        if turn >= self.turns {
            return Step::Finish {
                text: format!(
                    "Done: {} reads of the {FILES} files under src/ and {} notes written under notes/.",
                    reads_through(self.turns.saturating_sub(1)),
                    writes_through(self.turns.saturating_sub(1))
                ),
            };
        }
        if turn.is_multiple_of(WRITE_EVERY) {
            return Step::Write {
                path: note_path(turn),
                content: format!(
                    "Notes after turn {turn}: the files read so far hold numbered filler lines; nothing to change yet.\n"
                ),
            };
        }
        Step::Read {
            path: file_path(reads_through(turn) * STRIDE % FILES),
        }
    }

    /// The answer to a request without tools (a summary or a wrap-up) after `done`
    /// turns: where the work stands, short, as a model would put it.
    pub(crate) fn progress(&self, done: u32) -> String {
        let reads = reads_through(done);
        let notes = writes_through(done);
        let wrote = match notes {
            0 => "no notes yet".to_string(),
            1 => format!("wrote {}", note_path(WRITE_EVERY)),
            n => format!(
                "wrote {} notes, {} … {}",
                n,
                note_path(WRITE_EVERY),
                note_path(n * WRITE_EVERY)
            ),
        };
        format!(
            "Summary after turn {done} of {}: read {} of the {FILES} files under src/ ({reads} reads), {wrote}; next: keep reading from turn {}.",
            self.turns,
            reads.min(FILES),
            done + 1
        )
    }

    /// Write the scenario's files into `dir`: `src/fNN.txt`, each `result_bytes` long.
    pub(crate) fn write_files(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir.join("src"))?;
        for n in 0..FILES {
            std::fs::write(dir.join(file_path(n)), file_text(n, self.result_bytes))?;
        }
        Ok(())
    }
}

/// The workspace path of file `n`.
pub(crate) fn file_path(n: u32) -> String {
    format!("src/f{n:02}.txt")
}

/// The note turn `turn` writes.
fn note_path(turn: u32) -> String {
    format!("notes/{turn:03}.txt")
}

/// Reads among turns 1..=`done`.
fn reads_through(done: u32) -> u32 {
    done - writes_through(done)
}

/// Writes among turns 1..=`done`.
fn writes_through(done: u32) -> u32 {
    done / WRITE_EVERY
}

/// File `n`'s text: numbered lines of filler, `bytes` in all, ending with a line break.
pub(crate) fn file_text(n: u32, bytes: usize) -> String {
    let mut text = String::with_capacity(bytes);
    let mut line = 1;
    while text.len() < bytes {
        let left = bytes - text.len();
        let mut row = format!("file {n:02} line {line:03}: ");
        let width = LINE_BYTES.min(left);
        while row.len() + 1 < width {
            row.push(char::from(b'a' + ((row.len() + line) % 26) as u8));
        }
        row.truncate(width.saturating_sub(1));
        row.push('\n');
        text.push_str(&row);
        line += 1;
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: Scenario = Scenario {
        turns: 300,
        result_bytes: 4096,
    };

    #[test]
    fn turns_read_then_write_every_tenth_then_finish() {
        assert_eq!(
            SCENARIO.step(1),
            Step::Read {
                path: "src/f07.txt".into()
            }
        );
        assert!(matches!(SCENARIO.step(10), Step::Write { path, .. } if path == "notes/010.txt"));
        assert!(matches!(SCENARIO.step(299), Step::Read { .. }));
        let Step::Finish { text } = SCENARIO.step(300) else {
            panic!("turn 300 finishes");
        };
        assert_eq!(
            text,
            "Done: 270 reads of the 50 files under src/ and 29 notes written under notes/."
        );
        assert!(matches!(SCENARIO.step(301), Step::Finish { .. }));
    }

    #[test]
    fn no_file_is_read_twice_in_a_row_and_every_file_is_read() {
        let reads: Vec<String> = (1..300)
            .filter_map(|turn| match SCENARIO.step(turn) {
                Step::Read { path } => Some(path),
                _ => None,
            })
            .collect();
        assert_eq!(reads.len(), 270);
        assert!(reads.windows(2).all(|pair| pair[0] != pair[1]));
        let distinct: std::collections::BTreeSet<_> = reads.iter().collect();
        assert_eq!(distinct.len(), FILES as usize);
        assert!(distinct.iter().all(|path| path.as_str() < "src/f50.txt"));
    }

    #[test]
    fn the_files_have_the_asked_size_and_lines() {
        for bytes in [4096, 1000, 129, 1] {
            let text = file_text(3, bytes);
            assert_eq!(text.len(), bytes, "{bytes}");
            assert!(text.ends_with('\n'));
            assert!(text.lines().all(|line| line.len() < LINE_BYTES));
        }
        assert!(file_text(3, 4096).starts_with("file 03 line 001: "));
        assert_ne!(file_text(3, 4096), file_text(4, 4096));
        let dir = tempfile::tempdir().unwrap();
        SCENARIO.write_files(dir.path()).unwrap();
        let written = std::fs::read_to_string(dir.path().join("src/f49.txt")).unwrap();
        assert_eq!(written, file_text(49, 4096));
    }

    #[test]
    fn the_progress_says_what_was_read_and_written() {
        assert_eq!(
            SCENARIO.progress(0),
            "Summary after turn 0 of 300: read 0 of the 50 files under src/ (0 reads), no notes yet; next: keep reading from turn 1."
        );
        assert_eq!(
            SCENARIO.progress(17),
            "Summary after turn 17 of 300: read 16 of the 50 files under src/ (16 reads), wrote notes/010.txt; next: keep reading from turn 18."
        );
        assert_eq!(
            SCENARIO.progress(120),
            "Summary after turn 120 of 300: read 50 of the 50 files under src/ (108 reads), wrote 12 notes, notes/010.txt … notes/120.txt; next: keep reading from turn 121."
        );
    }
}
