//! Printing drover's lines to stdout and stderr: each call one line, safe to show, and
//! without panicking when nobody reads it any more.
//!
//! `println!` panics when stdout is a closed pipe (`drover run … | head -1`), which
//! would turn the run's exit code into 101. drover's lines are information, never the
//! outcome: the exit code is, so a line nobody can read is dropped.
//!
//! A line often carries text a model, a recording or a server chose; [`say!`] and
//! [`esay!`] print every line through [`printed_line`], so no such text starts a line
//! of its own, drives the terminal or becomes a GitHub workflow command (see
//! [`line`]). `println!`/`eprintln!` are refused by clippy (clippy.toml) so no line
//! goes around them.
//!
//! Its own crate so that the crates below the binary (the record's warnings) print
//! through the same lines: drover re-exports it as `crate::output` and the macros at
//! its root, so `crate::say!` and `crate::esay!` read as before.

use std::fmt;
use std::io::Write;

mod line;

use line::{json_text, printed_line};
pub use line::{one_line, text_block};

/// Write one line to stdout, ignoring write errors (a closed pipe above all).
pub fn say(args: fmt::Arguments<'_>) {
    let text = args.to_string();
    // Ignored on purpose: the reader went away (BrokenPipe) or stdout is unusable; either
    // way the run's outcome is its exit code, not this line.
    let _ = writeln!(std::io::stdout().lock(), "{}", printed_line(&text));
}

/// Write one line to stderr, ignoring write errors as [`say`] does.
pub fn esay(args: fmt::Arguments<'_>) {
    let text = args.to_string();
    let _ = writeln!(std::io::stderr().lock(), "{}", printed_line(&text));
}

/// Write a JSON document to stdout for machines, as it is but for [`json_text`]'s
/// escapes (its lines are JSON's own: pretty-printed JSON keeps its layout).
pub fn say_json(json: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{}", json_text(json));
}

/// Write text of several lines to stdout (`drover exec`'s answer) as [`text_block`]
/// shows it, ending with a line break, ignoring write errors as [`say`] does.
pub fn say_text(text: &str) {
    let mut block = text_block(text);
    if !block.ends_with('\n') {
        block.push('\n');
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(block.as_bytes()).and_then(|()| out.flush());
}

/// Write one JSON document as one line to `out` for machines (`--json`'s events), made
/// safe as [`say_json`] makes it, and flush it. Errors are returned: a closed pipe tells
/// the caller to stop writing.
pub fn write_json_line(out: &mut dyn Write, json: &str) -> std::io::Result<()> {
    out.write_all(json_text(json).as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// `println!` that never panics and always prints one safe line: see [`say`].
#[macro_export]
macro_rules! say {
    () => {
        $crate::say(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::say(format_args!($($arg)*))
    };
}

/// `eprintln!` that never panics and always prints one safe line: see [`esay`].
#[macro_export]
macro_rules! esay {
    ($($arg:tt)*) => {
        $crate::esay(format_args!($($arg)*))
    };
}

/// Stdout as a writer for code that takes `&mut dyn Write`: what a closed pipe cannot
/// take is dropped, like [`say`]'s lines, so writing on (a step summary after the
/// annotations) is not cut short. Other errors are returned.
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::io::stdout().lock().write(buf) {
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(buf.len()),
            other => other,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match std::io::stdout().lock().flush() {
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        }
    }
}

/// `count` and the noun, singular or plural as the count wants: `1 turn`, `3 turns`,
/// `1 file changed` (`plural` is the plural of `singular`).
pub fn counted(count: impl Into<u64>, singular: &str, plural: &str) -> String {
    let count = count.into();
    format!("{count} {}", if count == 1 { singular } else { plural })
}

#[cfg(test)]
mod counted_tests {
    use super::counted;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(counted(1u32, "turn", "turns"), "1 turn");
        assert_eq!(counted(0u32, "turn", "turns"), "0 turns");
        assert_eq!(
            counted(2u64, "file changed", "files changed"),
            "2 files changed"
        );
    }
}
