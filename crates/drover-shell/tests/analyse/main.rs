//! Tests of the shell analyser: tables of command lines with what they run and write,
//! specific opaque reasons, pattern matching, and robustness against hostile input.

mod adversarial;
mod assignments;
mod inner;
mod robustness;

mod table;

use drover_shell::*;

/// A command line, the command texts it runs, the files it writes, and whether any
/// part of it is opaque.
type Case = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    bool,
);

fn check(cases: &[Case]) {
    let mut failures = Vec::new();
    for (line, commands, writes, opaque) in cases {
        let analysis = analyse(line);
        let got: Vec<&str> = analysis.commands.iter().map(|c| c.text.as_str()).collect();
        if got != *commands || analysis.writes != *writes || analysis.opaque.is_empty() == *opaque {
            failures.push(format!(
                "{line:?}\n    commands {got:?}\n    writes {:?}\n    opaque {:?}",
                analysis.writes, analysis.opaque
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn opaque_of(line: &str) -> Vec<Opaque> {
    analyse(line).opaque
}

#[test]
fn opaque_reasons_name_the_construct() {
    let has = |line: &str, want: fn(&Opaque) -> bool| {
        let opaque = opaque_of(line);
        assert!(opaque.iter().any(want), "{line:?}: {opaque:?}");
    };
    has(
        "echo $(id)",
        |o| matches!(o, Opaque::CommandSubstitution(t) if t == "$(id)"),
    );
    has("echo `id`", |o| matches!(o, Opaque::CommandSubstitution(_)));
    has("cat <(ls)", |o| matches!(o, Opaque::ProcessSubstitution(_)));
    has("eval \"rm x\"", |o| matches!(o, Opaque::Eval(_)));
    has("source ./x.sh", |o| matches!(o, Opaque::Source(_)));
    has(". ./x.sh", |o| matches!(o, Opaque::Source(_)));
    has(
        "$CMD a",
        |o| matches!(o, Opaque::DynamicCommand(t) if t == "$CMD"),
    );
    has("bash -c \"$X\"", |o| matches!(o, Opaque::DynamicCommand(_)));
    has(
        "ls > $OUT",
        |o| matches!(o, Opaque::DynamicWrite(t) if t == "$OUT"),
    );
    has("env -C /etc rm x", |o| matches!(o, Opaque::Wrapper(_)));
    has("echo 'open", |o| matches!(o, Opaque::ParseError(_)));
    has("if true; then ls", |o| matches!(o, Opaque::ParseError(_)));
}

#[test]
fn argv_is_the_text_after_quote_removal() {
    let analysis = analyse("git commit -m 'a b' \"c\\\"d\" e\\ f $'g\\nh' $HOME");
    assert_eq!(
        analysis.commands[0].argv,
        ["git", "commit", "-m", "a b", "c\"d", "e f", "g\nh", "$HOME"]
    );
    assert_eq!(
        analysis.commands[0].source,
        "git commit -m 'a b' \"c\\\"d\" e\\ f $'g\\nh' $HOME"
    );
    let wrapped = analyse("env A=1 timeout 5 rm -rf /");
    assert_eq!(wrapped.commands[0].argv, ["rm", "-rf", "/"]);
    assert_eq!(wrapped.commands[0].source, "env A=1 timeout 5 rm -rf /");
}

#[test]
fn opaque_is_displayed_with_its_reason() {
    let shown = Opaque::Eval("eval x".into()).to_string();
    assert_eq!(shown, "eval: eval x");
    assert!(analyse("ls").is_transparent());
}
