//! Commands that run other commands given as their arguments: `xargs rm`, `find -exec rm
//! {} ;`, `busybox rm`. Unlike wrappers they are not stripped: [`runs`] finds what they
//! run, and both the outer and the inner command must be allowed.

use std::ops::Range;

use super::words::Word;
use super::wrappers::{Options, parse_options};

/// GNU, BSD and busybox xargs.
const XARGS: Options = Options {
    flags: "0oprtx",
    with_arg: "adEILnPsJRS",
    attached: "eil",
    long_flags: &[
        "--null",
        "--open-tty",
        "--interactive",
        "--no-run-if-empty",
        "--verbose",
        "--exit",
        "--show-limits",
        "--help",
        "--version",
    ],
    long_with_arg: &[
        "--arg-file",
        "--delimiter",
        "--max-args",
        "--max-procs",
        "--max-chars",
        "--process-slot-var",
    ],
    long_optional: &["--replace", "--eof", "--max-lines"],
    numeric: false,
};

/// What a command runs besides itself, found in its arguments.
#[derive(Debug, Default)]
pub(super) struct Runs {
    /// Each command it runs (`xargs rm -f` runs `rm -f`).
    pub commands: Vec<Inner>,
    /// Words naming files it writes (`find -fprint FILE`).
    pub writes: Vec<usize>,
    /// Options that could not be followed.
    pub unknown: Option<String>,
    /// A word not known statically where it may change what runs.
    pub dynamic: Option<String>,
}

/// A command run by another one, which fills in some of its arguments when it runs.
#[derive(Debug)]
pub(super) struct Inner {
    /// Its words.
    pub words: Range<usize>,
    /// Replaced in its words by input when it runs (`{}` for `find -exec`, `R` for
    /// `xargs -I R`).
    pub placeholder: Option<String>,
    /// Input is appended to its words (`xargs CMD`).
    pub appended: bool,
}

/// The commands `xargs [OPTIONS] CMD ARGS…`, `find … -exec CMD ARGS… ;` (and `-execdir`,
/// `-ok`, `-okdir`, `{} +`) and `busybox APPLET ARGS…` run.
pub(super) fn runs(words: &[Word]) -> Runs {
    let mut runs = Runs::default();
    let Some(first) = words.first().filter(|w| w.is_literal()) else {
        return runs;
    };
    // The outer command stays listed, so a local `./xargs` is judged as itself as well.
    let name = first.text.rsplit('/').next().unwrap_or_default();
    match name {
        "xargs" => {
            let mut values = Vec::new();
            match parse_options(words, &XARGS, &mut values) {
                // With no command, xargs runs `echo`.
                Ok(start) if start < words.len() => {
                    let placeholder =
                        values
                            .into_iter()
                            .rev()
                            .find_map(|(key, value)| match key.as_str() {
                                "-I" | "-J" => Some(value.unwrap_or_default()),
                                "-i" | "--replace" => Some(value.unwrap_or_else(|| "{}".into())),
                                _ => None,
                            });
                    runs.commands.push(Inner {
                        words: start..words.len(),
                        appended: placeholder.is_none(),
                        placeholder,
                    });
                }
                Ok(_) => {}
                Err(why) => runs.unknown = Some(format!("xargs: {why}")),
            }
        }
        "find" => find(words, &mut runs),
        "busybox" => match words.get(1) {
            // `busybox --list`, `busybox --install DIR`
            Some(applet) if applet.is_literal() && applet.text.starts_with('-') => {}
            Some(_) => runs.commands.push(Inner {
                words: 1..words.len(),
                placeholder: None,
                appended: false,
            }),
            None => {}
        },
        _ => {}
    }
    runs
}

/// `find`'s actions that run commands or write files. Any word not known statically may
/// expand to `-exec` or end one early (`;`), so it is reported.
fn find(words: &[Word], runs: &mut Runs) {
    let dynamic = |runs: &mut Runs, word: &Word| {
        if !word.is_literal() && runs.dynamic.is_none() {
            runs.dynamic = Some(format!("find argument `{}`", word.source));
        }
    };
    let mut index = 1;
    while let Some(word) = words.get(index) {
        dynamic(runs, word);
        index += 1;
        match word.text.as_str() {
            _ if !word.is_literal() => {}
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let start = index;
                let mut end = words.len();
                while let Some(arg) = words.get(index) {
                    dynamic(runs, arg);
                    index += 1;
                    let placeholder_before =
                        index >= 2 && words.get(index - 2).is_some_and(|w| w.text == "{}");
                    if arg.is_literal()
                        && (arg.text == ";" || arg.text == "+" && placeholder_before)
                    {
                        end = index - 1;
                        break;
                    }
                }
                if start < end {
                    runs.commands.push(Inner {
                        words: start..end,
                        placeholder: Some("{}".into()),
                        appended: false,
                    });
                }
            }
            "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                if index < words.len() {
                    runs.writes.push(index);
                }
                index += if word.text == "-fprintf" { 2 } else { 1 };
            }
            _ => {}
        }
    }
}
