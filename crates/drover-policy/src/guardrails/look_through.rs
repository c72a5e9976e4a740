//! What the guardrails look through: a command that runs another one given as its
//! arguments (`flock f rm -rf /`, `chroot / rm -rf /`, `watch …`, `setsid …`,
//! `xargs rm -rf`, `find / -exec rm -rf {} +`, `busybox rm …`, `nice`, `timeout`,
//! `env` …) is judged as itself and as every command it runs, however deep.

use std::collections::VecDeque;

/// A command the guardrails judge, with where its last arguments come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct GuardForm {
    pub argv: Vec<String>,
    /// Arguments are appended or filled in when it runs (`xargs CMD`, `find -exec CMD
    /// {}`): its targets are not known before it runs.
    pub input_targets: bool,
    /// For `find -exec`: the directories find walks, whose contents become targets.
    pub walked: Vec<String>,
}

/// A wrapper: how many positional arguments it takes before the command, and which of
/// its options take a value.
struct Wrapper {
    names: &'static [&'static str],
    positional: usize,
    with_value: &'static [&'static str],
}

const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        names: &["flock"],
        positional: 1,
        with_value: &["-w", "--timeout", "-E", "--conflict-exit-code"],
    },
    Wrapper {
        names: &["chroot"],
        positional: 1,
        with_value: &[],
    },
    Wrapper {
        names: &["watch"],
        positional: 0,
        with_value: &["-n", "--interval", "-q", "--equexit"],
    },
    Wrapper {
        names: &[
            "setsid",
            "nohup",
            "time",
            "command",
            "exec",
            "builtin",
            "busybox",
            "unshare",
            "catchsegv",
            "fakeroot",
            "proot",
            "firejail",
            "bwrap",
            "nsenter",
            "systemd-run",
        ],
        positional: 0,
        with_value: &[
            "-t",
            "--target",
            "-u",
            "--unit",
            "-p",
            "--property",
            "--bind",
            "--ro-bind",
        ],
    },
    Wrapper {
        names: &["nice", "ionice", "renice"],
        positional: 0,
        with_value: &["-n", "--adjustment", "-c", "--class", "--classdata"],
    },
    Wrapper {
        names: &["timeout"],
        positional: 1,
        with_value: &["-s", "--signal", "-k", "--kill-after"],
    },
    Wrapper {
        names: &["stdbuf"],
        positional: 0,
        with_value: &["-i", "-o", "-e"],
    },
    Wrapper {
        names: &["env"],
        positional: 0,
        with_value: &["-u", "--unset", "-C", "--chdir"],
    },
    Wrapper {
        names: &["taskset", "chrt"],
        positional: 1,
        with_value: &[],
    },
    Wrapper {
        names: &["strace", "ltrace"],
        positional: 0,
        with_value: &["-o", "-e", "-p", "-s", "-u", "-E"],
    },
    Wrapper {
        names: &["xargs"],
        positional: 0,
        with_value: &[
            "-a",
            "-d",
            "-E",
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
            "--max-chars",
        ],
    },
];

/// Bound on how deep wrappers are followed (`nice nice nice … rm`).
const MAX_FORMS: usize = 64;

/// `argv` and every command it runs through the wrappers above.
pub(super) fn forms(argv: &[String]) -> Vec<GuardForm> {
    let mut out = Vec::new();
    let mut queue = VecDeque::from([GuardForm {
        argv: argv.to_vec(),
        input_targets: false,
        walked: Vec::new(),
    }]);
    while let Some(form) = queue.pop_front() {
        if out.len() >= MAX_FORMS {
            break;
        }
        queue.extend(inner(&form));
        out.push(form);
    }
    out
}

fn program(argv: &[String]) -> &str {
    let first = argv.first().map(String::as_str).unwrap_or_default();
    first.rsplit('/').next().unwrap_or(first)
}

/// The commands `form` runs directly.
fn inner(form: &GuardForm) -> Vec<GuardForm> {
    let argv = &form.argv;
    let name = program(argv);
    if name == "find" {
        return find_exec(argv);
    }
    // `flock f -c 'rm -rf /'`, `watch 'rm -rf /'`: a command string; judged by its words.
    if name == "flock"
        && let Some(index) = argv.iter().position(|a| a == "-c" || a == "--command")
        && let Some(script) = argv.get(index + 1)
    {
        return vec![GuardForm {
            argv: script.split_whitespace().map(str::to_string).collect(),
            input_targets: form.input_targets,
            walked: Vec::new(),
        }];
    }
    let Some(wrapper) = WRAPPERS.iter().find(|w| w.names.contains(&name)) else {
        return Vec::new();
    };
    let mut index = 1;
    while index < argv.len() {
        let arg = &argv[index];
        if arg == "--" {
            index += 1;
            break;
        }
        if name == "env" && arg.contains('=') && !arg.starts_with('-') {
            index += 1;
            continue;
        }
        if !arg.starts_with('-') || arg == "-" {
            break;
        }
        let takes_value = wrapper.with_value.contains(&arg.as_str());
        index += if takes_value { 2 } else { 1 };
    }
    index += wrapper.positional;
    let Some(rest) = argv.get(index..).filter(|rest| !rest.is_empty()) else {
        return Vec::new();
    };
    let mut words: Vec<String> = rest.to_vec();
    // `watch 'rm -rf /'` and `timeout 5 'rm -rf /'`-style single strings.
    if words.len() == 1 && words[0].contains(' ') {
        words = words[0].split_whitespace().map(str::to_string).collect();
    }
    vec![GuardForm {
        argv: words,
        input_targets: form.input_targets || name == "xargs",
        walked: form.walked.clone(),
    }]
}

/// `find ROOTS… -exec CMD … ;` (`-execdir`, `-ok`, `-okdir`, `{} +`).
fn find_exec(argv: &[String]) -> Vec<GuardForm> {
    let roots: Vec<String> = argv
        .iter()
        .skip(1)
        .take_while(|a| !a.starts_with('-') && !matches!(a.as_str(), "(" | "!"))
        .cloned()
        .collect();
    // A find narrowed by a test (`-name '*.o'`) removes what it matches, not everything:
    // its targets are then not treated as unknown.
    let narrowed = super::has_find_filter(argv);
    let walked = if roots.is_empty() {
        vec![".".to_string()]
    } else {
        roots
    };
    let mut out = Vec::new();
    let mut index = 1;
    while index < argv.len() {
        if matches!(
            argv[index].as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        ) {
            let start = index + 1;
            let end = argv[start..]
                .iter()
                .position(|a| a == ";" || a == "+")
                .map_or(argv.len(), |offset| start + offset);
            if start < end {
                out.push(GuardForm {
                    argv: argv[start..end].to_vec(),
                    input_targets: !narrowed,
                    walked: walked.clone(),
                });
            }
            index = end;
        }
        index += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    fn inner_argvs(line: &str) -> Vec<String> {
        forms(&words(line))
            .into_iter()
            .skip(1)
            .map(|f| f.argv.join(" "))
            .collect()
    }

    #[test]
    fn wrappers_are_looked_through() {
        assert_eq!(inner_argvs("flock f rm -rf /"), ["rm -rf /"]);
        assert_eq!(inner_argvs("flock -w 3 f rm -rf /"), ["rm -rf /"]);
        assert_eq!(inner_argvs("chroot / rm -rf /"), ["rm -rf /"]);
        assert_eq!(inner_argvs("watch -n 1 rm -rf /"), ["rm -rf /"]);
        assert_eq!(inner_argvs("setsid -f rm -rf /w"), ["rm -rf /w"]);
        assert_eq!(
            inner_argvs("nice -n 5 timeout -s KILL 10 rm x"),
            ["timeout -s KILL 10 rm x", "rm x"]
        );
        assert_eq!(inner_argvs("env -u X A=b rm -rf /"), ["rm -rf /"]);
        assert_eq!(inner_argvs("busybox rm -rf /"), ["rm -rf /"]);
        assert_eq!(inner_argvs("ls -la"), Vec::<String>::new());
    }

    #[test]
    fn runners_mark_their_targets_as_input() {
        let xargs = forms(&words("xargs -n 1 rm -rf"));
        assert_eq!(xargs[1].argv, words("rm -rf"));
        assert!(xargs[1].input_targets);
        let find = forms(&words("find / -exec rm -rf {} +"));
        assert_eq!(find[1].argv, words("rm -rf {}"));
        assert_eq!(find[1].walked, ["/"]);
        let narrowed = forms(&words("find / -name x -exec rm -rf {} +"));
        assert!(!narrowed[1].input_targets);
        let nested = forms(&words("find . -exec nice rm -rf {} ;"));
        assert_eq!(nested.last().unwrap().argv, words("rm -rf {}"));
        assert!(nested.last().unwrap().input_targets);
        assert_eq!(nested.last().unwrap().walked, ["."]);
    }
}
