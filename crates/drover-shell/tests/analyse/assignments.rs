//! Assignments are stripped from the commands, but one that changes what a command runs
//! (`LD_PRELOAD=…`, `PATH=…`, `GIT_PAGER=…`, `export PATH=…`) makes the line opaque.

use super::{Case, Opaque, analyse, check};

const STRIPPED_BUT_OPAQUE: &[Case] = &[
    ("BASH_ENV=x.sh bash -c 'echo hi'", &["echo hi"], &[], true),
    (
        "LD_PRELOAD=./evil.so cargo test",
        &["cargo test"],
        &[],
        true,
    ),
    ("LD_LIBRARY_PATH=. cargo test", &["cargo test"], &[], true),
    ("PATH=.:$PATH cargo test", &["cargo test"], &[], true),
    ("PATH+=:. cargo test", &["cargo test"], &[], true),
    ("GIT_PAGER='rm x' git status", &["git status"], &[], true),
    ("GIT_EXTERNAL_DIFF=x git status", &["git status"], &[], true),
    ("GIT_SSH_COMMAND='sh x' git push", &["git push"], &[], true),
    ("GIT_CONFIG_COUNT=1 git status", &["git status"], &[], true),
    (
        "env GIT_PAGER='rm x' git status",
        &["git status"],
        &[],
        true,
    ),
    ("env -i PATH=. cargo test", &["cargo test"], &[], true),
    ("/usr/bin/env LD_PRELOAD=x ls", &["ls"], &[], true),
    ("env A=1 LD_AUDIT=x ls", &["ls"], &[], true),
    (
        "env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls",
        &["ls"],
        &[],
        true,
    ),
    ("PROMPT_COMMAND='rm x' echo hi", &["echo hi"], &[], true),
    ("CDPATH=/ cd tmp", &["cd tmp"], &[], true),
    ("IFS=/ ls", &["ls"], &[], true),
    ("PAGER='rm x' man ls", &["man ls"], &[], true),
    ("MANPAGER='rm x' man ls", &["man ls"], &[], true),
    ("EDITOR='rm x' git commit", &["git commit"], &[], true),
    ("PYTHONPATH=. python3 x.py", &["python3 x.py"], &[], true),
    ("PERL5OPT=-Mevil perl x", &["perl x"], &[], true),
    ("RUBYOPT=-revil ruby x", &["ruby x"], &[], true),
    (
        "NODE_OPTIONS='--require ./x' npm test",
        &["npm test"],
        &[],
        true,
    ),
    ("RUSTC_WRAPPER=./x cargo build", &["cargo build"], &[], true),
    (
        "RUSTFLAGS='-C linker=./x' cargo build",
        &["cargo build"],
        &[],
        true,
    ),
    (
        "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER=./x cargo test",
        &["cargo test"],
        &[],
        true,
    ),
    (
        "CARGO_BUILD_RUSTC_WRAPPER=./x cargo build",
        &["cargo build"],
        &[],
        true,
    ),
    ("CC=./x make", &["make"], &[], true),
    ("LESSOPEN='|rm %s' less f", &["less f"], &[], true),
    ("MAKEFLAGS='-f ./x' make", &["make"], &[], true),
    ("HOME=. git status", &["git status"], &[], true),
    ("PATH[0]=. cargo test", &["cargo test"], &[], true),
    (
        "xargs env PATH=. cargo test",
        &["xargs env PATH=. cargo test", "cargo test"],
        &[],
        true,
    ),
];

const AFFECTS_LATER_COMMANDS: &[Case] = &[
    ("PATH=/tmp/x; cargo test", &["cargo test"], &[], true),
    ("PATH=/tmp/x\ncargo test", &["cargo test"], &[], true),
    ("GIT_PAGER=x GIT_DIR=y; git log", &["git log"], &[], true),
    (
        "export PATH=.:$PATH; cargo test",
        &["export PATH=.:$PATH", "cargo test"],
        &[],
        true,
    ),
    (
        "export 'PATH=.'; cargo test",
        &["export PATH=.", "cargo test"],
        &[],
        true,
    ),
    (
        "export A=1 GIT_PAGER=x",
        &["export A=1 GIT_PAGER=x"],
        &[],
        true,
    ),
    (
        "declare -x LD_PRELOAD=./x.so",
        &["declare -x LD_PRELOAD=./x.so"],
        &[],
        true,
    ),
    ("typeset PATH=.", &["typeset PATH=."], &[], true),
    ("readonly BASH_ENV=x", &["readonly BASH_ENV=x"], &[], true),
    (
        "f() { local PATH=.; cargo test; }",
        &["local PATH=.", "cargo test"],
        &[],
        true,
    ),
    ("export \"$X\"", &["export $X"], &[], true),
    ("declare -n r=PATH; r=.", &["declare -n r=PATH"], &[], true),
    ("builtin export PATH=.", &["export PATH=."], &[], true),
    ("command export GIT_DIR=x", &["export GIT_DIR=x"], &[], true),
    (
        "read PATH < f; cargo test",
        &["read PATH", "cargo test"],
        &[],
        true,
    ),
    ("read -r -a PATH", &["read -r -a PATH"], &[], true),
    ("printf -v PATH %s .", &["printf -v PATH %s ."], &[], true),
    (
        "mapfile -t LD_PRELOAD < f",
        &["mapfile -t LD_PRELOAD"],
        &[],
        true,
    ),
    ("let IFS=1", &["let IFS=1"], &[], true),
    ("alias ls='rm -rf ~'", &["alias ls=rm -rf ~"], &[], true),
    ("bash -c 'PATH=.; cargo test'", &["cargo test"], &[], true),
    (
        "for ((PATH=0; PATH<1; PATH++)); do ls; done",
        &["ls"],
        &[],
        true,
    ),
];

const ORDINARY: &[Case] = &[
    ("RUST_LOG=debug cargo test", &["cargo test"], &[], false),
    ("RUST_BACKTRACE=1 cargo test", &["cargo test"], &[], false),
    ("CI=1 FOO=bar make", &["make"], &[], false),
    ("env RUST_LOG=info cargo run", &["cargo run"], &[], false),
    ("FOO=bar; echo $FOO", &["echo $FOO"], &[], false),
    (
        "export RUST_LOG=debug",
        &["export RUST_LOG=debug"],
        &[],
        false,
    ),
    ("export PATH", &["export PATH"], &[], false),
    ("export -n FOO", &["export -n FOO"], &[], false),
    ("local x=$PATH", &["local x=$PATH"], &[], false),
    ("echo PATH=x", &["echo PATH=x"], &[], false),
    ("read -r line", &["read -r line"], &[], false),
    ("printf '%s\\n' PATH", &["printf %s\\n PATH"], &[], false),
    ("alias", &["alias"], &[], false),
    ("alias ll", &["alias ll"], &[], false),
    ("MYPATH=x ls", &["ls"], &[], false),
    ("./env PATH=x ls", &["./env PATH=x ls"], &[], false),
];

#[test]
fn dangerous_assignments_are_stripped_but_opaque() {
    check(STRIPPED_BUT_OPAQUE);
}

#[test]
fn dangerous_assignments_affect_later_commands() {
    check(AFFECTS_LATER_COMMANDS);
}

#[test]
fn ordinary_assignments_stay_transparent() {
    check(ORDINARY);
}

#[test]
fn the_opaque_names_the_variable() {
    let names = |line: &str| -> Vec<String> {
        analyse(line)
            .opaque
            .into_iter()
            .filter_map(|o| match o {
                Opaque::DangerousAssignment(name) => Some(name),
                _ => None,
            })
            .collect()
    };
    assert_eq!(names("LD_PRELOAD=./evil.so cargo test"), ["LD_PRELOAD"]);
    assert_eq!(names("env GIT_PAGER='rm x' git status"), ["GIT_PAGER"]);
    assert_eq!(names("A=1 PATH=. B=2 ls"), ["PATH"]);
    assert_eq!(names("PATH[0]=. ls"), ["PATH"]);
    assert_eq!(names("export PATH=x"), ["PATH"]);
    assert_eq!(names("alias ls='rm x'"), ["alias ls"]);
    assert!(names("RUST_LOG=debug cargo test").is_empty());
    let shown = Opaque::DangerousAssignment("PATH".into()).to_string();
    assert_eq!(shown, "assignment that changes what runs: PATH");
}
