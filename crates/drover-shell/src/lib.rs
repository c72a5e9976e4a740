//! Static analysis of a shell command line, so that the rule "a shell command is allowed
//! only if every simple command in it is allowed" can be checked.
//!
//! [`analyse`] parses the line with tree-sitter-bash and lists every simple command that
//! would run (through `&&`, `|`, `;`, subshells, groups, `if`/`for`/`while`/`case`,
//! functions, `bash -c '…'` …) after stripping wrappers such as `timeout 5` or `env A=1`,
//! together with the commands that `xargs CMD`, `find -exec CMD ;` and `busybox APPLET`
//! run (listed after the outer command, which stays listed), every file written through
//! a redirection, `tee` or `find -fprint`, and every reason why part of the line cannot
//! be known before it runs (`$(…)`, `eval`, `source`, `$CMD args`, syntax errors, an
//! assignment such as `LD_PRELOAD=…` or `export PATH=…` that changes what runs). The
//! caller decides what an opaque part means; the analyser never guesses.
//!
//! It never panics and is bounded: lines over [`MAX_INPUT`] bytes, nesting deeper than
//! [`MAX_DEPTH`] and parses slower than [`PARSE_TIME_LIMIT`] are reported as opaque.

mod assignments;
mod output_options;
mod runners;
mod walk;
mod words;
mod wrappers;

use std::fmt;
use std::time::Duration;

/// Longer command lines are not analysed (reported as [`Opaque::TooComplex`]).
pub const MAX_INPUT: usize = 100 * 1024;
/// Deeper syntactic nesting (subshells, substitutions, `bash -c` levels …) is not
/// followed, so that hostile input cannot exhaust the stack.
pub const MAX_DEPTH: usize = 100;
/// Parsing is abandoned after this long (tree-sitter's error recovery can be slow on
/// pathological input).
pub(crate) const PARSE_TIME_LIMIT: Duration = Duration::from_secs(2);

/// What a command line would do, as far as can be known without running it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Every simple command that would run, in source order, after stripping wrappers.
    /// Commands inside substitutions, `bash -c` scripts and literal `eval` arguments are
    /// listed too, so deny rules can see them.
    pub commands: Vec<SimpleCommand>,
    /// Files the line writes through redirections (`>`, `>>`, `2>`, `&>`, `>|`, `<>`) and
    /// `tee FILE` arguments, as written (quotes removed, nothing expanded). `/dev/null`,
    /// `/dev/stdout`, `/dev/stderr` and fd duplications (`2>&1`) are not included.
    pub writes: Vec<String>,
    /// Why (parts of) the line cannot be analysed statically; empty when fully analysed.
    pub opaque: Vec<Opaque>,
}

impl Analysis {
    /// Fully analysed: the commands and writes are all the line can do.
    pub fn is_transparent(&self) -> bool {
        self.opaque.is_empty()
    }
}

/// One simple command: a program (or builtin) and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The command words after wrappers and assignments were stripped, after quote
    /// removal (`'a b'` is `a b`). Expansions in arguments are kept as written
    /// (`echo $HOME` is `["echo", "$HOME"]`); argv[0] is always a static literal.
    pub argv: Vec<String>,
    /// The text `Bash(...)` patterns are matched against: argv joined by single spaces.
    pub text: String,
    /// The original source text of this simple command, for messages.
    pub source: String,
}

/// A reason why part of a command line cannot be known statically. Each carries the
/// source text concerned (shortened), for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opaque {
    /// `$(…)` or `` `…` ``: its output becomes part of a command.
    CommandSubstitution(String),
    /// `<(…)` or `>(…)`.
    ProcessSubstitution(String),
    /// `eval …` or `trap CODE SIGNAL`: arguments run as shell code.
    Eval(String),
    /// `source FILE`, `. FILE`, or a shell reading its script from standard input
    /// (`curl … | sh`): runs a script drover cannot see.
    Source(String),
    /// A command name that is not a static literal (`$CMD args`, `${X}`, `"$(…)"`, a glob
    /// or brace expansion), or a `bash -c` script that is not one.
    DynamicCommand(String),
    /// A file written through a redirection or `tee` whose name is not a static
    /// literal (`> $OUT`, `> *.log`).
    DynamicWrite(String),
    /// A wrapper (`env`, `timeout`, `xargs` …) with options drover does not follow
    /// (`env -C dir`).
    Wrapper(String),
    /// An assignment to a variable that makes commands run other code or find programs
    /// and files elsewhere (`LD_PRELOAD=x cmd`, `PATH=.:$PATH cmd`, `GIT_PAGER=… git`,
    /// `export PATH=…`, `env RUSTC_WRAPPER=… cargo`), or an alias definition; carries
    /// the variable's name.
    DangerousAssignment(String),
    /// A path through `/proc` or `/dev/fd` (`/proc/self/cwd/.env`, `/dev/fd/../cwd`):
    /// it names the command's own process, so drover cannot tell what it reaches.
    ProcessPath(String),
    /// The line does not parse as bash.
    ParseError(String),
    /// Too long, too deeply nested or too slow to parse.
    TooComplex(String),
}

impl fmt::Display for Opaque {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, text) = match self {
            Opaque::CommandSubstitution(t) => ("command substitution", t),
            Opaque::ProcessSubstitution(t) => ("process substitution", t),
            Opaque::Eval(t) => ("eval", t),
            Opaque::Source(t) => ("sourced script", t),
            Opaque::DynamicCommand(t) => ("command not known statically", t),
            Opaque::DynamicWrite(t) => ("write target not known statically", t),
            Opaque::Wrapper(t) => ("wrapper options not understood", t),
            Opaque::DangerousAssignment(t) => ("assignment that changes what runs", t),
            Opaque::ProcessPath(t) => (
                "a path through /proc or /dev/fd, which means the command's own process",
                t,
            ),
            Opaque::ParseError(t) => ("syntax error", t),
            Opaque::TooComplex(t) => ("too complex", t),
        };
        write!(f, "{what}: {text}")
    }
}

/// Analyse a shell command line (bash syntax). Never panics.
pub fn analyse(command_line: &str) -> Analysis {
    let mut analysis = Analysis::default();
    walk::analyse_into(command_line, &mut analysis, 0, walk::Deadline::start());
    analysis
}
