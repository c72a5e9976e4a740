//! Commands that only run another command: `timeout 5 rm x` runs `rm x`, so rules must
//! judge `rm x`. Also finds the script of `bash -c '…'` and friends.
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
}

/// Strip `timeout`, `time`, `nice`, `nohup`, `stdbuf`, `env`, `command`, `exec`,
/// `builtin` and `coproc`, repeatedly.
pub(super) fn strip(words: &[Word]) -> Stripped {
    let mut start = 0;
    loop {
        match step(&words[start..]) {
            Step::NotAWrapper => {
                return Stripped {
                    start,
                    problem: None,
                };
            }
            Step::Strip(count) => start += count,
            Step::Unknown(why) => {
                return Stripped {
                    start,
                    problem: Some(why),
                };
            }
        }
    }
}

enum Step {
    /// The first word is not a wrapper, or a wrapper with nothing left to run.
    NotAWrapper,
    /// Drop this many words (always at least one, and fewer than all).
    Strip(usize),
    Unknown(String),
}

/// The options a wrapper accepts before the command it runs.
struct Options {
    /// Short options without an argument.
    flags: &'static str,
    /// Short options taking an argument (attached or in the next word).
    with_arg: &'static str,
    long_flags: &'static [&'static str],
    /// Long options taking an argument (`--x=v` or `--x v`).
    long_with_arg: &'static [&'static str],
    /// `nice -5`: a dash followed by digits is an option.
    numeric: bool,
}

const NONE: Options = Options {
    flags: "",
    with_arg: "",
    long_flags: &[],
    long_with_arg: &[],
    numeric: false,
};

fn step(words: &[Word]) -> Step {
    let Some(first) = words.first() else {
        return Step::NotAWrapper;
    };
    if !first.is_literal() {
        return Step::NotAWrapper;
    }
    // `! ! rm x`: the parser takes the second `!` for a command name; bash negates again.
    if first.source == "!" && words.len() > 1 {
        return Step::Strip(1);
    }
    let name = first.text.as_str();
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
                return Step::NotAWrapper;
            }
            Options { flags: "p", ..NONE }
        }
        "exec" => Options {
            flags: "cl",
            with_arg: "a",
            ..NONE
        },
        "nohup" | "builtin" | "coproc" => NONE,
        _ => return Step::NotAWrapper,
    };
    let mut index = match skip_options(words, &options) {
        Ok(index) => index,
        Err(why) => return Step::Unknown(format!("{name}: {why}")),
    };
    match name {
        "timeout" => index += 1, // the duration
        "env" => {
            while words
                .get(index)
                .is_some_and(|w| w.is_literal() && is_assignment(&w.text))
            {
                index += 1;
            }
        }
        _ => {}
    }
    match words.get(index) {
        Some(_) => Step::Strip(index),
        // Nothing left to run: the wrapper is the command (`env`, `exec >log`, `nice`).
        None => Step::NotAWrapper,
    }
}

/// Index of the first word after the options (which start at index 1).
fn skip_options(words: &[Word], options: &Options) -> Result<usize, String> {
    let mut index = 1;
    while let Some(word) = words.get(index) {
        if !word.is_literal() {
            // `$OPTS` may expand to options, or to several words.
            if word.text.starts_with('-') || word.text.starts_with('$') {
                return Err(format!("cannot read `{}` statically", word.source));
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
            let (key, has_value) = match long.split_once('=') {
                Some((key, _)) => (key, true),
                None => (long, false),
            };
            let key = format!("--{key}");
            if options.long_flags.contains(&key.as_str()) && !has_value {
                index += 1;
            } else if options.long_with_arg.contains(&key.as_str()) {
                index += if has_value { 1 } else { 2 };
            } else {
                return Err(format!("unknown option `{text}`"));
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
            if options.with_arg.contains(c) {
                // The rest of the cluster is the argument, or else the next word.
                consumed_next = offset + c.len_utf8() == cluster.len();
                break;
            }
            return Err(format!("unknown option `-{c}`"));
        }
        index += if consumed_next { 2 } else { 1 };
    }
    Ok(index)
}

/// `NAME=value` as `env` reads it: a name that is not empty, then `=`.
fn is_assignment(text: &str) -> bool {
    text.split_once('=')
        .is_some_and(|(name, _)| !name.is_empty() && !name.starts_with('-'))
}

/// Shells whose `-c` script drover analyses in place of the shell command itself.
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash"];

/// What a command that may be a shell invocation runs.
pub(super) enum ShellScript {
    /// Not a `SHELL -c SCRIPT` invocation.
    No,
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
        (true, false) => ShellScript::No,
        (false, operand) if has_s || !operand => ShellScript::FromStdin,
        (false, _) => ShellScript::No, // `bash script.sh` runs a file, like `./script.sh`
    }
}
