//! Commands that only run another command: `timeout 5 rm x` runs `rm x`, so rules must
//! judge `rm x`. Also finds the script of `bash -c '…'` and friends.
//!
//! Commands that run other commands given as their arguments (`xargs rm`, `find -exec rm
//! {} ;`, `busybox rm`) are not stripped: [`runs`](super::runners::runs) finds what they
//! run, and both must be allowed. [`changes_what_runs`](super::assignments::changes_what_runs)
//! names the environment variables whose assignment makes a command run other code.
//!
//! Every wrapper's options are parsed strictly: an option we do not know (or a word we
//! cannot read statically where an option may stand) stops the stripping and is
//! reported, because guessing wrong would let `nice --weird rm x` pass as `nice`.

use super::words::Word;

/// The outcome of stripping wrappers from a command's words.
pub(super) struct Stripped {
    /// Index of the first word of the command that actually runs.
    pub start: usize,
    /// A wrapper whose options could not be followed, with the reason.
    pub problem: Option<String>,
    /// Variables assigned by `env NAME=value`, in order.
    pub assigned: Vec<String>,
}

/// Strip `timeout`, `time`, `nice`, `nohup`, `stdbuf`, `env`, `command`, `exec`,
/// `builtin` and `coproc`, repeatedly.
pub(super) fn strip(words: &[Word]) -> Stripped {
    let mut stripped = Stripped {
        start: 0,
        problem: None,
        assigned: Vec::new(),
    };
    loop {
        match step(words.get(stripped.start..).unwrap_or_default()) {
            Step::NotAWrapper => return stripped,
            Step::Strip(count, assigned) => {
                stripped.start += count;
                stripped.assigned.extend(assigned);
            }
            Step::Unknown(why) => {
                stripped.problem = Some(why);
                return stripped;
            }
        }
    }
}

enum Step {
    /// The first word is not a wrapper, or a wrapper with nothing left to run.
    NotAWrapper,
    /// Drop this many words (always at least one, and fewer than all), which assign these
    /// variables.
    Strip(usize, Vec<String>),
    Unknown(String),
}

/// The options a wrapper accepts before the command it runs.
pub(super) struct Options {
    /// Short options without an argument.
    pub flags: &'static str,
    /// Short options taking an argument (attached or in the next word).
    pub with_arg: &'static str,
    /// Short options taking an optional argument, attached only (`xargs -i{}`).
    pub attached: &'static str,
    pub long_flags: &'static [&'static str],
    /// Long options taking an argument (`--x=v` or `--x v`).
    pub long_with_arg: &'static [&'static str],
    /// Long options taking an optional argument, only as `--x=v`.
    pub long_optional: &'static [&'static str],
    /// `nice -5`: a dash followed by digits is an option.
    pub numeric: bool,
}

const NONE: Options = Options {
    flags: "",
    with_arg: "",
    attached: "",
    long_flags: &[],
    long_with_arg: &[],
    long_optional: &[],
    numeric: false,
};

/// Whether the first of `words` is a wrapper, and if so how many words it takes.
fn step(words: &[Word]) -> Step {
    let Some(first) = words.first() else {
        return Step::NotAWrapper;
    };
    if !first.is_literal() {
        return Step::NotAWrapper;
    }
    // `! ! rm x`: the parser takes the second `!` for a command name; bash negates again.
    if first.source == "!" && words.len() > 1 {
        return Step::Strip(1, Vec::new());
    }
    let Some(name) = standard_program(&first.text) else {
        return Step::NotAWrapper;
    };
    let Some(options) = wrapper_options(name, words) else {
        return Step::NotAWrapper;
    };
    let mut index = match skip_options(words, &options) {
        Ok(index) => index,
        Err(why) => return Step::Unknown(format!("{name}: {why}")),
    };
    let mut assigned = Vec::new();
    match name {
        "timeout" => index += 1, // the duration
        "env" => {
            while let Some(word) = words.get(index)
                && word.is_literal()
                && let Some(variable) = assignment_name(&word.text)
            {
                assigned.push(variable.to_string());
                index += 1;
            }
        }
        _ => {}
    }
    match words.get(index) {
        Some(_) => Step::Strip(index, assigned),
        // Nothing left to run: the wrapper is the command (`env`, `exec >log`, `nice`).
        None => Step::NotAWrapper,
    }
}

/// The options of wrapper `name` (a standard program's name), run as `words`; None when
/// it is no wrapper, or not one here (`command -v x` looks `x` up instead of running it).
fn wrapper_options(name: &str, words: &[Word]) -> Option<Options> {
    let options = match name {
        "timeout" => Options {
            flags: "v",
            with_arg: "sk",
            long_flags: &["--preserve-status", "--foreground", "--verbose"],
            long_with_arg: &["--signal", "--kill-after"],
            ..NONE
        },
        "time" => Options { flags: "p", ..NONE },
        "nice" => Options {
            with_arg: "n",
            long_with_arg: &["--adjustment"],
            numeric: true,
            ..NONE
        },
        "stdbuf" => Options {
            with_arg: "ioe",
            long_with_arg: &["--input", "--output", "--error"],
            ..NONE
        },
        "env" => Options {
            flags: "i0v",
            with_arg: "u",
            long_flags: &["--ignore-environment", "--null", "--debug"],
            long_with_arg: &["--unset"],
            ..NONE
        },
        "command" => {
            // `command -v x` looks `x` up instead of running it.
            let looks_up = words.iter().skip(1).take_while(|w| w.text.starts_with('-'));
            if looks_up
                .clone()
                .any(|w| w.text != "--" && w.text.contains(['v', 'V']))
            {
                return None;
            }
            Options { flags: "p", ..NONE }
        }
        "exec" => Options {
            flags: "cl",
            with_arg: "a",
            ..NONE
        },
        "nohup" | "builtin" | "coproc" => NONE,
        _ => return None,
    };
    Some(options)
}

/// Index of the first word after the options (which start at index 1).
fn skip_options(words: &[Word], options: &Options) -> Result<usize, Unreadable> {
    parse_options(words, options, &mut Vec::new())
}

/// Why a wrapper's options cannot be read, so what it runs cannot be told.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unreadable {
    /// A word whose value is known only when the shell runs (`$OPTS`).
    #[error("cannot read `{0}` statically")]
    Dynamic(String),
    #[error("unknown option `{0}`")]
    UnknownOption(String),
}

/// An option given with a value (`-I {}`, `--replace=R`), or with none where the value
/// is optional (`-i`, `--replace`).
pub(super) type OptionValue = (String, Option<String>);

/// [`skip_options`], also collecting the options that take a value into `values`.
pub(super) fn parse_options(
    words: &[Word],
    options: &Options,
    values: &mut Vec<OptionValue>,
) -> Result<usize, Unreadable> {
    let mut index = 1;
    while let Some(word) = words.get(index) {
        if !word.is_literal() {
            // `$OPTS` may expand to options, or to several words.
            if word.text.starts_with('-') || word.text.starts_with('$') {
                return Err(Unreadable::Dynamic(word.source.clone()));
            }
            return Ok(index);
        }
        let text = word.text.as_str();
        if text == "--" {
            return Ok(index + 1);
        }
        if text == "-" || !text.starts_with('-') {
            if text == "-" && options.flags.contains('i') {
                index += 1; // `env -` is `env -i`
                continue;
            }
            return Ok(index);
        }
        if let Some(long) = text.strip_prefix("--") {
            let (key, value) = match long.split_once('=') {
                Some((key, value)) => (key, Some(value.to_string())),
                None => (long, None),
            };
            let key = format!("--{key}");
            if options.long_flags.contains(&key.as_str()) && value.is_none() {
                index += 1;
            } else if options.long_optional.contains(&key.as_str()) {
                values.push((key, value));
                index += 1;
            } else if options.long_with_arg.contains(&key.as_str()) {
                let next = words.get(index + 1).map(|w| w.text.clone());
                index += if value.is_some() { 1 } else { 2 };
                values.push((key, value.or(next)));
            } else {
                return Err(Unreadable::UnknownOption(text.to_string()));
            }
            continue;
        }
        let cluster = &text[1..];
        if options.numeric && cluster.chars().all(|c| c.is_ascii_digit()) {
            index += 1;
            continue;
        }
        let mut consumed_next = false;
        for (offset, c) in cluster.char_indices() {
            if options.flags.contains(c) {
                continue;
            }
            let rest = &cluster[offset + c.len_utf8()..];
            if options.with_arg.contains(c) {
                // The rest of the cluster is the argument, or else the next word.
                consumed_next = rest.is_empty();
                let value = match consumed_next {
                    true => words.get(index + 1).map(|w| w.text.clone()),
                    false => Some(rest.to_string()),
                };
                values.push((format!("-{c}"), value));
                break;
            }
            if options.attached.contains(c) {
                // The rest of the cluster, if any, is the argument.
                let value = (!rest.is_empty()).then(|| rest.to_string());
                values.push((format!("-{c}"), value));
                break;
            }
            return Err(Unreadable::UnknownOption(format!("-{c}")));
        }
        index += if consumed_next { 2 } else { 1 };
    }
    Ok(index)
}

/// The name in `NAME=value` as `env` reads it: a name that is not empty, then `=`.
fn assignment_name(text: &str) -> Option<&str> {
    text.split_once('=')
        .map(|(name, _)| name)
        .filter(|name| !name.is_empty() && !name.starts_with('-'))
}

/// The name of a program that is a well-known wrapper wherever it is found: a bare name
/// (looked up in `PATH`) or a path in a system directory (`/usr/bin/env`). `./timeout` is
/// some local script, not `timeout`.
fn standard_program(text: &str) -> Option<&str> {
    const SYSTEM_DIRS: &[&str] = &[
        "/bin/",
        "/usr/bin/",
        "/usr/local/bin/",
        "/sbin/",
        "/usr/sbin/",
    ];
    if !text.contains('/') {
        return Some(text);
    }
    SYSTEM_DIRS
        .iter()
        .find_map(|dir| text.strip_prefix(dir))
        .filter(|name| !name.is_empty() && !name.contains('/'))
}

/// Shells whose `-c` script drover analyses in place of the shell command itself.
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "hush"];

/// What a command that may be a shell invocation runs.
pub(super) enum ShellScript {
    /// Not a `SHELL -c SCRIPT` invocation.
    No,
    /// `SHELL -c` with no script after it (an error, unless something appends one:
    /// `xargs sh -c`).
    MissingScript,
    /// The index of the script word.
    Script(usize),
    /// A shell with `-c` whose options could not be read statically.
    Unreadable(String),
    /// A shell reading its script from standard input (`curl … | sh`, `bash -s`).
    FromStdin,
}

/// Find the script of `bash -c SCRIPT`, `sh -euc SCRIPT`, `/bin/bash -o pipefail -c …`.
pub(super) fn shell_script(words: &[Word]) -> ShellScript {
    let Some(first) = words.first() else {
        return ShellScript::No;
    };
    let base = first.text.rsplit('/').next().unwrap_or("");
    if !first.is_literal() || !SHELLS.contains(&base) {
        return ShellScript::No;
    }
    let mut has_c = false;
    let mut has_s = false;
    let mut index = 1;
    while let Some(word) = words.get(index) {
        let text = word.text.as_str();
        if !word.is_literal() {
            if has_c {
                break; // the script, read by the caller
            }
            // `bash $X` may be `bash -c …` once expanded.
            return ShellScript::Unreadable(word.source.clone());
        }
        if text == "--" || text == "-" {
            index += 1;
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            index += if matches!(long, "rcfile" | "init-file") {
                2
            } else {
                1
            };
            continue;
        }
        if !(text.starts_with('-') || text.starts_with('+')) || text.len() == 1 {
            break;
        }
        let cluster = &text[1..];
        has_c |= cluster.contains('c');
        has_s |= cluster.contains('s');
        // `-o pipefail`, `-O extglob`: the option name is the next word.
        index += 1 + cluster.chars().filter(|c| matches!(c, 'o' | 'O')).count();
    }
    match (has_c, index < words.len()) {
        (true, true) => ShellScript::Script(index),
        (true, false) => ShellScript::MissingScript,
        (false, operand) if has_s || !operand => ShellScript::FromStdin,
        (false, _) => ShellScript::No, // `bash script.sh` runs a file, like `./script.sh`
    }
}
