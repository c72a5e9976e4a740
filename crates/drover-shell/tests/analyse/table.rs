//! Ordinary command lines: splitting, wrappers, redirections.

use super::{Case, check};

const SPLITTING: &[Case] = &[
    ("ls", &["ls"], &[], false),
    ("ls -la", &["ls -la"], &[], false),
    ("", &[], &[], false),
    ("   \n\t ", &[], &[], false),
    ("ls # rm x", &["ls"], &[], false),
    ("# rm -rf /", &[], &[], false),
    (
        "git status && rm -rf ~",
        &["git status", "rm -rf ~"],
        &[],
        false,
    ),
    ("ls; rm -rf .", &["ls", "rm -rf ."], &[], false),
    ("a || b | c |& d", &["a", "b", "c", "d"], &[], false),
    ("a & b", &["a", "b"], &[], false),
    ("nohup ./run &", &["./run"], &[], false),
    ("a\nb\n\nc", &["a", "b", "c"], &[], false),
    (
        "git status\nrm -rf /",
        &["git status", "rm -rf /"],
        &[],
        false,
    ),
    ("(cd sub && make)", &["cd sub", "make"], &[], false),
    ("{ echo; rm x; }", &["echo", "rm x"], &[], false),
    ("if true; then rm x; fi", &["true", "rm x"], &[], false),
    (
        "if a; then b; elif c; then d; else e; fi",
        &["a", "b", "c", "d", "e"],
        &[],
        false,
    ),
    (
        "while read l; do echo $l; done",
        &["read l", "echo $l"],
        &[],
        false,
    ),
    (
        "until false; do sleep 1; done",
        &["false", "sleep 1"],
        &[],
        false,
    ),
    ("for f in *; do rm \"$f\"; done", &["rm $f"], &[], false),
    (
        "for ((i=0;i<3;i++)); do echo $i; done",
        &["echo $i"],
        &[],
        false,
    ),
    (
        "case $x in a) rm a;; b|c) ls;; esac",
        &["rm a", "ls"],
        &[],
        false,
    ),
    ("f() { rm x; }; f", &["rm x", "f"], &[], false),
    ("function g { ls; }", &["ls"], &[], false),
    ("! rm x", &["rm x"], &[], false),
    ("cat .env", &["cat .env"], &[], false),
    ("cd .. && rm x", &["cd ..", "rm x"], &[], false),
    (
        "ls -la | grep foo | wc -l",
        &["ls -la", "grep foo", "wc -l"],
        &[],
        false,
    ),
    ("[[ -f x ]] && rm x", &["rm x"], &[], false),
    ("test -f x && rm x", &["test -f x", "rm x"], &[], false),
    ("[ -f x ] || touch x", &["touch x"], &[], false),
    (
        "cargo fmt --check && cargo clippy --all-targets -- -D warnings && cargo test",
        &[
            "cargo fmt --check",
            "cargo clippy --all-targets -- -D warnings",
            "cargo test",
        ],
        &[],
        false,
    ),
    ("ls \\\n  -la", &["ls -la"], &[], false),
    ("export FOO=/bin", &["export FOO=/bin"], &[], false),
    ("unset X", &["unset X"], &[], false),
    ("A=1", &[], &[], false),
    ("A=1 B=2 make", &["make"], &[], false),
    ("VAR=x rm -rf /", &["rm -rf /"], &[], false),
];

const QUOTING: &[Case] = &[
    ("echo 'a && b'", &["echo a && b"], &[], false),
    ("echo \"a; b\"", &["echo a; b"], &[], false),
    ("echo $HOME", &["echo $HOME"], &[], false),
    ("echo \"$HOME/x\"", &["echo $HOME/x"], &[], false),
    ("echo ${HOME}", &["echo ${HOME}"], &[], false),
    (
        "grep -r 'foo bar' src/",
        &["grep -r foo bar src/"],
        &[],
        false,
    ),
    (
        "git commit -m \"fix: a && b\"",
        &["git commit -m fix: a && b"],
        &[],
        false,
    ),
    ("echo a\\ b", &["echo a b"], &[], false),
    ("echo $'a\\tb'", &["echo a\tb"], &[], false),
    ("echo {a,b}", &["echo {a,b}"], &[], false),
    ("ls *.rs", &["ls *.rs"], &[], false),
    ("echo ~", &["echo ~"], &[], false),
    ("true", &["true"], &[], false),
    (
        "echo \"it's\" 'say \"hi\"'",
        &["echo it's say \"hi\""],
        &[],
        false,
    ),
];

const WRAPPERS: &[Case] = &[
    ("timeout 5 rm -rf /", &["rm -rf /"], &[], false),
    ("timeout -s KILL 5 rm x", &["rm x"], &[], false),
    (
        "timeout --signal=TERM -k 2 10s cargo test",
        &["cargo test"],
        &[],
        false,
    ),
    (
        "timeout -sKILL --preserve-status 1m ls",
        &["ls"],
        &[],
        false,
    ),
    ("time -p cargo build", &["cargo build"], &[], false),
    ("time cargo build", &["cargo build"], &[], false),
    ("nice -n 5 make", &["make"], &[], false),
    ("nice -5 make", &["make"], &[], false),
    ("nice --adjustment=3 make", &["make"], &[], false),
    ("nohup make", &["make"], &[], false),
    ("stdbuf -oL cargo test", &["cargo test"], &[], false),
    ("stdbuf -o L -e 0 ls", &["ls"], &[], false),
    ("env -i LANG=C nice -n 5 rm x", &["rm x"], &[], false),
    ("env A=1 timeout 5 nice rm x", &["rm x"], &[], false),
    ("env -u HOME ls", &["ls"], &[], false),
    ("env - ls", &["ls"], &[], false),
    ("env", &["env"], &[], false),
    ("command ls", &["ls"], &[], false),
    ("command -v git", &["command -v git"], &[], false),
    ("command -- rm x", &["rm x"], &[], false),
    (
        "command -v rm && rm x",
        &["command -v rm", "rm x"],
        &[],
        false,
    ),
    ("exec cargo run", &["cargo run"], &[], false),
    ("exec -a name rm x", &["rm x"], &[], false),
    ("builtin echo x", &["echo x"], &[], false),
    ("coproc rm x", &["rm x"], &[], false),
    ("timeout 5", &["timeout 5"], &[], false),
    ("nice", &["nice"], &[], false),
    ("sudo rm x", &["sudo rm x"], &[], false),
    ("sudo -u root rm x", &["sudo -u root rm x"], &[], false),
    ("xargs rm < list", &["xargs rm", "rm"], &[], false),
    (
        "xargs -0 rm -rf",
        &["xargs -0 rm -rf", "rm -rf"],
        &[],
        false,
    ),
    (
        "find . -name '*.o' -exec rm {} \\;",
        &["find . -name *.o -exec rm {} ;", "rm {}"],
        &[],
        false,
    ),
    (
        "find . -exec rm {} +",
        &["find . -exec rm {} +", "rm {}"],
        &[],
        false,
    ),
];

const REDIRECTIONS: &[Case] = &[
    (
        "cargo test > /etc/passwd",
        &["cargo test"],
        &["/etc/passwd"],
        false,
    ),
    (
        "cargo test 2>&1 | tee out.log",
        &["cargo test", "tee out.log"],
        &["out.log"],
        false,
    ),
    (
        "cargo build >> build.log 2>&1",
        &["cargo build"],
        &["build.log"],
        false,
    ),
    ("make &> all.log", &["make"], &["all.log"], false),
    ("make &>> all.log", &["make"], &["all.log"], false),
    ("echo x >| forced", &["echo x"], &["forced"], false),
    ("ls 2> err.txt", &["ls"], &["err.txt"], false),
    ("ls >& both.txt", &["ls"], &["both.txt"], false),
    ("ls > /dev/null 2> /dev/stderr", &["ls"], &[], false),
    ("ls >/dev/stdout", &["ls"], &[], false),
    ("cmd 2>&1 >&2", &["cmd"], &[], false),
    ("exec 3>&-", &["exec"], &[], false),
    ("exec > log.txt", &["exec"], &["log.txt"], false),
    (
        "tee -a a.log b.log < in",
        &["tee -a a.log b.log"],
        &["a.log", "b.log"],
        false,
    ),
    ("tee /dev/null", &["tee /dev/null"], &[], false),
    (
        "echo hi | tee -- -weird",
        &["echo hi", "tee -- -weird"],
        &["-weird"],
        false,
    ),
    ("cat < input.txt", &["cat"], &[], false),
    (
        "cat <<EOF > out.txt\nhi\nEOF",
        &["cat"],
        &["out.txt"],
        false,
    ),
    ("cat <<'EOF'\n$(rm y)\nEOF", &["cat"], &[], false),
    ("cat <<< 'hello'", &["cat"], &[], false),
    ("echo hi > 'my file'", &["echo hi"], &["my file"], false),
    ("echo hi > ~/x", &["echo hi"], &["~/x"], false),
    (
        "{ ls; pwd; } > listing",
        &["ls", "pwd"],
        &["listing"],
        false,
    ),
    ("(make) 2> errors", &["make"], &["errors"], false),
    (
        "ls | tee a | tee -a b > c",
        &["ls", "tee a", "tee -a b"],
        &["a", "b", "c"],
        false,
    ),
];

#[test]
fn splitting() {
    check(SPLITTING);
}

#[test]
fn quoting() {
    check(QUOTING);
}

#[test]
fn wrappers() {
    check(WRAPPERS);
}

#[test]
fn redirections() {
    check(REDIRECTIONS);
}
