//! Hostile and huge input: the analyser must answer, quickly, without panicking or
//! overflowing the stack (tests run on 2 MiB threads, like tokio's workers).

use std::time::{Duration, Instant};

use super::*;

fn too_complex(analysis: &Analysis) -> bool {
    analysis
        .opaque
        .iter()
        .any(|o| matches!(o, Opaque::TooComplex(_)))
}

#[test]
fn a_50_kb_command_line_is_analysed() {
    let line = "echo a && ".repeat(5_000) + "rm x";
    assert!(line.len() > 50_000);
    let analysis = analyse(&line);
    assert_eq!(analysis.commands.len(), 5_001);
    assert_eq!(analysis.commands[5_000].text, "rm x");
    assert!(analysis.is_transparent(), "{:?}", analysis.opaque);
}

#[test]
fn long_flat_scripts_are_not_deep() {
    let line = "a; b || c | d\n".repeat(2_000);
    let analysis = analyse(&line);
    assert_eq!(analysis.commands.len(), 8_000);
    assert!(analysis.is_transparent());
}

#[test]
fn long_chains_of_every_operator_are_not_deep() {
    for operator in ["|", "||", "&&", "&", ";", "|&", "\n"] {
        let line = format!("{}z", format!("a {operator} ").repeat(3_000));
        let analysis = analyse(&line);
        assert_eq!(analysis.commands.len(), 3_001, "{operator}");
        assert!(
            analysis.is_transparent(),
            "{operator}: {:?}",
            analysis.opaque
        );
    }
    let words = format!("echo {}", "x ".repeat(20_000));
    assert_eq!(analyse(&words).commands[0].argv.len(), 20_001);
}

#[test]
fn oversized_input_is_too_complex() {
    let line = "x".repeat(MAX_INPUT + 1);
    let analysis = analyse(&line);
    assert!(analysis.commands.is_empty());
    assert!(too_complex(&analysis));
}

#[test]
fn ten_thousand_nested_parentheses_do_not_crash() {
    let line = format!("{}rm x{}", "(".repeat(10_000), ")".repeat(10_000));
    let analysis = analyse(&line);
    assert!(too_complex(&analysis), "{:?}", analysis.opaque);
    let unbalanced = "(".repeat(10_000);
    assert!(!analyse(&unbalanced).is_transparent());
}

#[test]
fn deep_substitutions_groups_and_ifs_do_not_crash() {
    let lines = [
        format!("{}x{}", "echo $(".repeat(3_000), ")".repeat(3_000)),
        format!("{}x{}", "`".repeat(3_000), "`".repeat(3_000)),
        format!("{}ls;{}", "{ ".repeat(5_000), " }".repeat(5_000)),
        format!("{}ls;{}", "if a; then ".repeat(2_000), " fi;".repeat(2_000)),
        format!("{}x{}", "\"$(".repeat(3_000), ")\"".repeat(3_000)),
        format!("{}{}", "$((".repeat(5_000), "))".repeat(5_000)),
        "<(".repeat(10_000),
    ];
    for line in lines {
        let analysis = analyse(&line);
        assert!(!analysis.is_transparent(), "{}", &line[..20]);
    }
}

#[test]
fn stacked_negations_are_flat() {
    let analysis = analyse(&format!("{}rm x", "! ".repeat(10_000)));
    let texts: Vec<&str> = analysis.commands.iter().map(|c| c.text.as_str()).collect();
    assert!(
        texts == ["rm x"],
        "{:?}",
        texts.iter().map(|t| t.len()).collect::<Vec<_>>()
    );
}

#[test]
fn modestly_nested_shells_are_followed() {
    // bash -c 'bash -c '\''…'\''' ten levels deep.
    let mut line = "rm x".to_string();
    for _ in 0..10 {
        line = format!("bash -c '{}'", line.replace('\'', "'\\''"));
    }
    let analysis = analyse(&line);
    let texts: Vec<&str> = analysis.commands.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts, ["rm x"]);
    assert!(analysis.is_transparent(), "{:?}", analysis.opaque);
}

#[test]
fn deeply_nested_evals_stop_at_the_depth_limit() {
    // Each static `eval` is analysed as a nested line, one level deeper.
    let line = format!("{}rm x", "eval ".repeat(MAX_DEPTH * 2));
    let analysis = analyse(&line);
    assert!(too_complex(&analysis), "{:?}", analysis.opaque);
}

/// A deterministic linear congruential generator: no dependency, same cases every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as usize
    }
}

const PIECES: &[&str] = &[
    " ", " ", " ", "\n", ";", "&", "&&", "|", "||", "|&", "(", ")", "{", "}", "$(", "`", "<(",
    ">(", "'", "\"", "\\", "$", "${", "$((", "))", "<", ">", ">>", "2>&1", "&>", "<<", "<<<",
    "EOF", "#", "!", "*", "?", "[", "]", "[[", "]]", "=", "~", ",", "..", "$'", "-c", "bash", "sh",
    "env", "timeout", "5", "nice", "-n", "eval", "source", ".", "rm", "-rf", "/", "echo", "tee",
    "if", "then", "else", "fi", "for", "in", "do", "done", "while", "case", "esac", ";;",
    "function", "f()", "x", "A=1", "é", "ｍ", "\u{0}", "\t", "\r",
];

#[test]
fn pseudo_random_lines_never_panic_and_stay_fast() {
    let mut rng = Lcg(0x5eed_d20e);
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    for _ in 0..4_000 {
        let pieces = 1 + rng.next() % 60;
        let line: String = (0..pieces)
            .map(|_| PIECES[rng.next() % PIECES.len()])
            .collect();
        let one = Instant::now();
        let analysis = analyse(&line);
        slowest = slowest.max(one.elapsed());
        for command in &analysis.commands {
            assert!(!command.argv.is_empty(), "{line:?}");
            assert_eq!(command.text, command.argv.join(" "), "{line:?}");
        }
        assert!(analysis.opaque.len() <= 64, "{line:?}");
    }
    assert!(
        slowest < Duration::from_secs(1),
        "slowest line took {slowest:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(60));
}
