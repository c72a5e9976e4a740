//! Guardrails: commands no allow rule lifts, because no task needs them and one slip
//! would be unrecoverable. Only `permissions.guardrails: off` disables them.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use super::expand::{basename, expand_word};

mod look_through;
use look_through::GuardForm;

/// Where the guardrails judge paths from.
pub struct GuardContext<'a> {
    pub workspace: &'a Path,
    /// Where the command runs: relative arguments resolve against it.
    pub cwd: &'a Path,
    pub home: Option<&'a Path>,
}

/// Why a command line trips a guardrail, or None. `commands` are the argv of every
/// simple command in it (wrappers stripped); `line` is the command line as written.
pub fn check(commands: &[Vec<String>], line: &str, ctx: &GuardContext<'_>) -> Option<String> {
    if is_fork_bomb(line) {
        return Some("a fork bomb".into());
    }
    let names: Vec<&str> = commands.iter().map(|argv| program(argv)).collect();
    let downloads = names
        .iter()
        .any(|n| matches!(*n, "curl" | "wget" | "fetch"));
    let shells = names.iter().any(|n| {
        matches!(
            *n,
            "sh" | "bash"
                | "zsh"
                | "dash"
                | "ksh"
                | "fish"
                | "python"
                | "python3"
                | "perl"
                | "ruby"
                | "node"
        )
    });
    if downloads && shells {
        return Some(
            "running a download with a shell or interpreter (piped, or saved and run)".into(),
        );
    }
    if downloads && runs_a_local_file(commands) {
        return Some("running a downloaded file (saved, made executable and run)".into());
    }
    commands
        .iter()
        .flat_map(|argv| look_through::forms(argv))
        .find_map(|form| check_form(&form, ctx))
}

/// `./i.sh`, `/tmp/x`, `chmod +x f`: a line that downloads and runs or makes
/// executable a file of its own.
fn runs_a_local_file(commands: &[Vec<String>]) -> bool {
    commands.iter().any(|argv| {
        let first = argv.first().map(String::as_str).unwrap_or_default();
        first.contains('/')
            || (program(argv) == "chmod"
                && argv
                    .iter()
                    .skip(1)
                    .any(|a| a.contains('x') || a.chars().all(|c| c.is_ascii_digit())))
    })
}

/// One command as the guardrails see it, wrappers looked through.
fn check_form(form: &GuardForm, ctx: &GuardContext<'_>) -> Option<String> {
    if let Some(why) = check_one(&form.argv, ctx) {
        return Some(why);
    }
    let name = program(&form.argv);
    let args = &form.argv[1.min(form.argv.len())..];
    let destroys = (name == "rm" && is_recursive_rm(args))
        || (matches!(name, "chmod" | "chown" | "chgrp") && is_recursive(args))
        || name == "shred";
    if form.input_targets && destroys {
        if let Some(root) = form.walked.iter().find(|root| is_precious(root, ctx)) {
            return Some(format!(
                "find over {root} running {name} on everything it finds"
            ));
        }
        if form.walked.is_empty() {
            return Some(format!(
                "{name} -r of targets read from input, not known before the command runs"
            ));
        }
    }
    None
}

fn program(argv: &[String]) -> &str {
    basename(argv.first().map(String::as_str).unwrap_or_default())
}

fn check_one(argv: &[String], ctx: &GuardContext<'_>) -> Option<String> {
    let name = program(argv);
    let args = &argv[1.min(argv.len())..];
    match name {
        "sudo" | "su" | "doas" | "pkexec" | "runuser" | "run0" | "sg" | "newgrp" => Some(format!(
            "{name}: drover never runs commands as another user"
        )),
        "blkdiscard" | "mkswap" | "swapon" | "sfdisk" | "fdisk" | "cfdisk" | "gdisk" | "sgdisk"
        | "parted" | "partprobe" | "losetup" | "cryptsetup" | "mdadm" | "pvcreate" | "pvremove"
        | "vgremove" | "lvremove" | "zpool" | "hdparm" | "nvme" | "badblocks" | "blockdev"
        | "kexec" => Some(format!(
            "{name}: partitioning, erasing or reconfiguring disks and the machine"
        )),
        "killall5" => Some("killall5: signalling every process".into()),
        "kill" | "pkill" if kills_everything(name, args) => {
            Some(format!("{name} of every process (-1)"))
        }
        "perl" | "python" | "python3" | "python2" | "ruby" | "node" | "nodejs" | "php" | "bun"
        | "deno"
            if inline_fork_loop(args) =>
        {
            Some(format!("a fork bomb ({name} forking in a loop)"))
        }
        "cp" | "mv" | "install" | "tee" | "rsync" | "ln"
            if args
                .iter()
                .filter(|a| !a.starts_with('-'))
                .skip(usize::from(!matches!(name, "tee")))
                .any(|a| is_block_device(a)) =>
        {
            Some(format!("{name} writing to a disk device"))
        }
        "shutdown" | "reboot" | "halt" | "poweroff" => Some(format!("{name} of the machine")),
        "init" | "telinit" if args.iter().any(|a| a == "0" || a == "6") => {
            Some(format!("{name} to halt or reboot the machine"))
        }
        "systemctl"
            if args.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "poweroff" | "reboot" | "halt" | "kexec" | "suspend"
                )
            }) =>
        {
            Some("systemctl halting or rebooting the machine".into())
        }
        _ if name.starts_with("mkfs") || name == "mke2fs" || name == "wipefs" => {
            Some(format!("{name}: formatting a file system"))
        }
        "dd" => args
            .iter()
            .filter_map(|a| a.strip_prefix("of="))
            .find(|target| is_device(target))
            .map(|target| format!("dd writing to the device {target}")),
        "rm" => check_rm(args, ctx),
        "shred" => args
            .iter()
            .find(|a| is_device(a))
            .map(|target| format!("shred of the device {target}")),
        "chmod" | "chown" | "chgrp" if is_recursive(args) => args
            .iter()
            .filter(|a| !a.starts_with('-'))
            .find(|a| resolves_to_root(a, ctx))
            .map(|target| format!("{name} -R of {target}")),
        "find" if args.iter().any(|a| a == "-delete") && !has_find_filter(args) => args
            .iter()
            .take_while(|a| !a.starts_with('-'))
            .find(|a| is_precious(a, ctx))
            .map(|target| format!("find -delete over {target}")),
        _ => None,
    }
}

fn check_rm(args: &[String], ctx: &GuardContext<'_>) -> Option<String> {
    let mut options_done = false;
    for arg in args {
        if !options_done && arg == "--" {
            options_done = true;
            continue;
        }
        if !options_done && arg.starts_with('-') && arg.len() > 1 {
            continue;
        }
        if is_precious(arg, ctx) {
            return Some(format!(
                "rm of {arg}, which would delete the root, the home directory or the workspace"
            ));
        }
        // `rm -rf `pwd``, `rm -rf $(dirname x)`: a command's output is never known;
        // `rm -rf $DIR` is when the variable resolves.
        let substituted = arg.contains('`') || arg.contains("$(");
        if is_recursive_rm(args)
            && (substituted || (arg.contains('$') && resolve(arg, ctx).is_none()))
        {
            return Some(format!(
                "rm -r of {arg}, a target not known before the command runs (it could be the root, the home directory or the workspace)"
            ));
        }
    }
    None
}

/// A `find` test that narrows what `-delete` removes (without one, everything goes).
pub(super) fn has_find_filter(args: &[String]) -> bool {
    args.iter().any(|a| {
        matches!(
            a.as_str(),
            "-name"
                | "-iname"
                | "-path"
                | "-ipath"
                | "-wholename"
                | "-regex"
                | "-iregex"
                | "-newer"
                | "-mtime"
                | "-mmin"
                | "-atime"
                | "-size"
                | "-type"
                | "-empty"
                | "-user"
                | "-group"
                | "-perm"
                | "-links"
        )
    })
}

/// `rm -r`, `-R`, `-rf`, `--recursive`.
fn is_recursive_rm(args: &[String]) -> bool {
    args.iter().any(|a| {
        a == "--recursive"
            || (a.starts_with('-') && !a.starts_with("--") && (a.contains('r') || a.contains('R')))
    })
}

fn is_recursive(args: &[String]) -> bool {
    args.iter().any(|a| {
        a == "--recursive" || (a.starts_with('-') && !a.starts_with("--") && a.contains('R'))
    })
}

/// `kill -9 -1`, `kill -s KILL -1`, `kill -- -1`: -1 as a target is every process the
/// user may signal. (`kill -1 PID` is SIGHUP to PID: the first option is the signal.)
fn kills_everything(name: &str, args: &[String]) -> bool {
    if name == "pkill" {
        return false;
    }
    let mut index = 0;
    if let Some(first) = args.first() {
        if first == "-s" || first == "-n" {
            index = 2;
        } else if first.starts_with('-') && first != "--" && first != "-1" {
            index = 1;
        } else if first == "-1" && args.len() > 1 {
            index = 1; // `-1` is the signal (SIGHUP) when targets follow
        }
    }
    args.iter().skip(index).any(|a| a == "-1")
}

/// Inline code (`-e`, `-c`, `-E`, `-r`) that forks inside a loop.
fn inline_fork_loop(args: &[String]) -> bool {
    args.iter().any(|code| {
        code.contains("fork")
            && [
                "while",
                "loop",
                "for ",
                "for(",
                "until",
                "repeat",
                "setInterval",
            ]
            .iter()
            .any(|looping| code.contains(looping))
    })
}

/// A disk (not `/dev/null` and friends): what writing to destroys a file system.
fn is_block_device(target: &str) -> bool {
    let Some(name) = target.strip_prefix("/dev/") else {
        return false;
    };
    [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "loop", "dm-", "md", "mapper/", "disk/", "sr",
    ]
    .iter()
    .any(|prefix| name.starts_with(prefix))
}

fn is_device(target: &str) -> bool {
    target.starts_with("/dev/")
        && !matches!(
            target,
            "/dev/null" | "/dev/zero" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
        )
}

/// Resolve an argument as a path the way the shell would hand it to the command, as far
/// as it can be known statically (`~`, `$HOME`, relative to the workspace).
fn resolve(arg: &str, ctx: &GuardContext<'_>) -> Option<PathBuf> {
    let trimmed = arg.trim_end_matches("/*").trim_end_matches('*');
    let trimmed = if trimmed.is_empty() && arg.starts_with('/') {
        "/"
    } else {
        trimmed
    };
    let expanded = expand_word(trimmed, ctx.home, ctx.cwd)?;
    // As the kernel resolves it: `rm -rf link/..` removes the parent of the link's target.
    drover_paths::resolve_physical(ctx.cwd, &expanded.to_string_lossy())
        .ok()
        .map(|p| p.path)
}

fn resolves_to_root(arg: &str, ctx: &GuardContext<'_>) -> bool {
    resolve(arg, ctx).is_some_and(|p| p == Path::new("/"))
}

/// The root, the home directory, the workspace root, or an ancestor of the workspace.
fn is_precious(arg: &str, ctx: &GuardContext<'_>) -> bool {
    // `~user` is another user's home directory.
    if let Some(user) = arg.strip_prefix('~') {
        let name = user.trim_end_matches(['/', '*', '.']);
        if !name.is_empty() && !name.contains('/') {
            return true;
        }
    }
    // `rm -rf /dev/fd/../cwd/`: what a path through /proc or /dev/fd reaches is the
    // command's business; a destructive command on one is refused.
    let trimmed = arg.trim_end_matches("/*").trim_end_matches('*');
    if let Some(expanded) = expand_word(trimmed, ctx.home, ctx.cwd)
        && drover_paths::resolve_physical(ctx.cwd, &expanded.to_string_lossy())
            .is_ok_and(|p| p.through_process)
    {
        return true;
    }
    let Some(path) = resolve(arg, ctx) else {
        return false;
    };
    path == Path::new("/")
        || ctx.home.is_some_and(|home| path == home)
        || ctx.workspace.starts_with(&path)
}

/// `:(){ :|:& };:` and its renamings: a function that pipes itself into itself in the
/// background.
fn is_fork_bomb(line: &str) -> bool {
    #[expect(
        clippy::expect_used,
        reason = "invariant: a constant pattern, compiled by the tests"
    )]
    static PATTERN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"([\w:.]+)\s*\(\)\s*\{[^}]*?([\w:.]+)\s*\|\s*([\w:.]+)\s*&")
            // invariant: a constant pattern, compiled by the tests.
            .expect("invariant: a constant pattern that compiles")
    });
    PATTERN.captures_iter(line).any(|c| {
        let (name, left, right) = (&c[1], &c[2], &c[3]);
        name == left && name == right
    })
}

#[cfg(test)]
#[path = "guardrails_tests.rs"]
mod tests;
