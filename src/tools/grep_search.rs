//! The search behind Grep: ripgrep's libraries in-process (never a spawned `rg`), with
//! ignore rules, file types and globs, collected and sorted for deterministic output.

use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use grep::regex::{RegexMatcher, RegexMatcherBuilder};
use grep::searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::WalkState;

use super::search_walk::{Batch, collected, regular_file, walker};
use crate::workspace::Roots;

/// One line of content-mode output: its number and where its text is in
/// [`FileHits::text`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Line {
    Match(u64, Range<usize>),
    Context(u64, Range<usize>),
    /// Non-adjacent groups of lines in one file.
    Break,
}

/// What one file yielded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FileHits {
    pub path: PathBuf,
    /// Matching lines (or match regions in multiline mode).
    pub count: u64,
    /// Filled only when lines were asked for.
    pub lines: Vec<Line>,
    /// The text of every line, one after another (one allocation per file, not per line).
    pub text: String,
    /// Why the file could not be searched (then nothing else is filled): the model is
    /// told, rather than shown a silent "no match".
    pub skipped: Option<String>,
}

impl FileHits {
    fn skipped(path: &Path, why: String) -> FileHits {
        FileHits {
            path: path.to_path_buf(),
            count: 0,
            lines: Vec::new(),
            text: String::new(),
            skipped: Some(why),
        }
    }

    /// The text of a line of [`FileHits::lines`].
    pub(super) fn line_text(&self, range: &Range<usize>) -> &str {
        self.text.get(range.clone()).unwrap_or_default()
    }
}

/// How to search.
#[derive(Debug, Clone, Default)]
pub(super) struct Options {
    pub case_insensitive: bool,
    pub multiline: bool,
    pub before: usize,
    pub after: usize,
    /// Collect lines (content mode); otherwise only counts.
    pub want_lines: bool,
    /// Stop at a file's first match (files_with_matches mode).
    pub first_only: bool,
}

/// Compile `pattern` as ripgrep would: `^`/`$` anchor lines; `.` crosses newlines and
/// matches may span lines only in multiline mode. The error is the regex parser's, about
/// the pattern exactly as written: the matcher builder parses it wrapped as `(?:…)`,
/// which would show in its messages (and would accept an unbalanced `a)(b`).
pub(super) fn build_matcher(pattern: &str, opts: &Options) -> Result<RegexMatcher, PatternError> {
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .case_insensitive(opts.case_insensitive)
        .multi_line(true)
        .crlf(!opts.multiline)
        .dot_matches_new_line(opts.multiline)
        .build()
        .parse(pattern)
        .map_err(Box::new)?;
    let mut builder = RegexMatcherBuilder::new();
    builder
        .case_insensitive(opts.case_insensitive)
        .multi_line(true)
        // `$` before `\r\n`, like ripgrep's --crlf; in multiline mode crlf handling keeps
        // `.` from crossing line ends, which multiline exists to allow.
        .crlf(!opts.multiline);
    if opts.multiline {
        builder.dot_matches_new_line(true);
    } else {
        builder.line_terminator(Some(b'\n'));
    }
    Ok(builder.build(pattern)?)
}

/// Why a Grep pattern is not a regex ripgrep would run.
#[derive(Debug, thiserror::Error)]
pub(super) enum PatternError {
    /// The parser's message about the pattern exactly as written.
    #[error(transparent)]
    Syntax(#[from] Box<regex_syntax::Error>),
    /// The matcher refused it (too large a program, a disallowed construct).
    #[error(transparent)]
    Matcher(#[from] grep::regex::Error),
}

/// The most one file's search may hold in memory.
pub(super) const MAX_SEARCH_HEAP: usize = 64 * 1024 * 1024;

fn searcher(opts: &Options) -> Searcher {
    let mut builder = SearcherBuilder::new();
    builder
        // Counting lines costs a pass over every byte; only content mode shows them.
        .line_number(opts.want_lines)
        .binary_detection(BinaryDetection::quit(b'\0'))
        // Streaming keeps memory flat; a single line (or, in multiline mode, a whole
        // file) larger than this is skipped rather than loaded.
        .heap_limit(Some(MAX_SEARCH_HEAP))
        .multi_line(opts.multiline);
    if opts.want_lines {
        builder
            .before_context(opts.before)
            .after_context(opts.after);
    }
    builder.build()
}

/// Receives one file's matches. Reused across files: nothing is allocated for a file
/// without matches.
struct Collect<'a> {
    count: u64,
    lines: Vec<Line>,
    text: String,
    opts: &'a Options,
    binary: bool,
}

/// Append a line without its line ending to `text` (invalid UTF-8 replaced); where it is.
fn append(text: &mut String, bytes: &[u8]) -> Range<usize> {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let start = text.len();
    text.push_str(&String::from_utf8_lossy(bytes));
    start..text.len()
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.count += 1;
        if self.opts.want_lines {
            let first = m.line_number().unwrap_or(0);
            for (i, line) in m.lines().enumerate() {
                let range = append(&mut self.text, line);
                self.lines.push(Line::Match(first + i as u64, range));
            }
        }
        Ok(!self.opts.first_only)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.opts.want_lines && !matches!(c.kind(), SinkContextKind::Other) {
            let n = c.line_number().unwrap_or(0);
            let range = append(&mut self.text, c.bytes());
            self.lines.push(Line::Context(n, range));
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.opts.want_lines {
            self.lines.push(Line::Break);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Search one file, opened beneath the task's roots (so a directory swapped for a symlink
/// mid-walk is not followed); None when it has no match, is binary or cannot be read.
pub(super) fn search_file(
    matcher: &RegexMatcher,
    searcher: &mut Searcher,
    opts: &Options,
    roots: &Roots,
    path: &Path,
) -> Option<FileHits> {
    // A file that cannot be opened beneath the roots is passed over without a word: the
    // walk may have listed it through a symlink swapped in since (its name is then not
    // the workspace's to show), or it is gone, or not a regular file.
    let file = roots.open_file(path).ok()?;
    let mut sink = Collect {
        count: 0,
        lines: Vec::new(),
        text: String::new(),
        opts,
        binary: false,
    };
    if let Err(error) = searcher.search_file(matcher, &file, &mut sink) {
        let why = if error.to_string().contains("allocation limit") {
            format!(
                "it needs more than {} MiB of memory to search (one very long line, or a large file in multiline mode)",
                MAX_SEARCH_HEAP / (1024 * 1024)
            )
        } else {
            error.to_string()
        };
        return Some(FileHits::skipped(path, why));
    }
    if sink.binary || sink.count == 0 {
        return None;
    }
    Some(FileHits {
        path: path.to_path_buf(),
        count: sink.count,
        lines: sink.lines,
        text: sink.text,
        skipped: None,
    })
}

/// Search `root` (a file, or a directory walked with ignore rules, on every core) and
/// return the files with matches, sorted by path.
pub(super) fn search(
    root: &Path,
    matcher: &RegexMatcher,
    opts: &Options,
    types: Option<ignore::types::Types>,
    overrides: Option<ignore::overrides::Override>,
    hidden: Arc<crate::policy::HiddenFilter>,
    roots: &Roots,
) -> Vec<FileHits> {
    if roots.metadata(root).is_ok_and(|meta| meta.is_file()) {
        let mut searcher = searcher(opts);
        return search_file(matcher, &mut searcher, opts, roots, root)
            .into_iter()
            .collect();
    }
    let mut walk = walker(root, hidden);
    if let Some(types) = types {
        walk.types(types);
    }
    if let Some(overrides) = overrides {
        walk.overrides(overrides);
    }
    let shared: Arc<Mutex<Vec<FileHits>>> = Arc::default();
    // The parallel walker's default is one thread per core (at most 12), as ripgrep's.
    walk.build_parallel().run(|| {
        // The compiled regex is shared (the clone is a handle); each thread keeps its
        // own searcher and its own buffers.
        let matcher = matcher.clone();
        let mut searcher = searcher(opts);
        let mut batch = Batch::new(&shared);
        Box::new(move |entry| {
            let Some(entry) = regular_file(entry) else {
                return WalkState::Continue;
            };
            if let Some(hits) = search_file(&matcher, &mut searcher, opts, roots, entry.path()) {
                batch.found.push(hits);
            }
            WalkState::Continue
        })
    });
    let mut results = collected(shared);
    results.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    results
}
