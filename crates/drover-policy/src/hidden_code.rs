//! Places where bash runs code hidden inside a variable's *value*, which no parse of the
//! command line can see: prompt expansion (`${x@P}`), indirect expansion (`${!x}`), and
//! arithmetic on variables (`$((x))`, `$[x]`, `((x))`, `let`, array subscripts,
//! substring offsets, `[[ x -eq 0 ]]`) — `x='a[$(rm -rf ~)]'` makes each of them run a
//! command. A line using one is as opaque as an `eval`.

use std::sync::LazyLock;

use regex::Regex;

use super::expand::blank_single_quotes;
use super::shell::SimpleCommand;

/// Why `line` (with its simple commands) may run code hidden in a variable, or None.
pub(super) fn hidden_code(line: &str, commands: &[SimpleCommand]) -> Option<String> {
    for command in commands {
        let program = command.argv.first().map(String::as_str).unwrap_or_default();
        let integer_attribute = matches!(program, "declare" | "typeset" | "local")
            && command
                .argv
                .iter()
                .skip(1)
                .any(|a| a.starts_with('-') && a.contains('i'));
        if program == "let" || integer_attribute {
            return Some(format!("arithmetic on variables in `{}`", command.source));
        }
    }
    let visible = blank_single_quotes(line);
    #[expect(
        clippy::expect_used,
        reason = "invariant: a constant pattern, compiled by the tests"
    )]
    static CHECKS: LazyLock<Vec<(Regex, &'static str)>> =
        LazyLock::new(|| {
            [
            (r"\$\{[^}]*@[PE]", "prompt or escape expansion of a variable"),
            (r"\$\{!", "indirect expansion"),
            (r"\$\(\(([^)]*[A-Za-z_][^)]*)\)\)", "arithmetic on variables"),
            (r"\$\[([^\]]*[A-Za-z_][^\]]*)\]", "arithmetic on variables"),
            (r"(^|[^$(])\(\(([^)]*[A-Za-z_][^)]*)\)\)", "arithmetic on variables"),
            (
                r"\$\{[A-Za-z_][A-Za-z0-9_]*\[[^\]]*[A-Za-z_$][^\]]*\]",
                "an array subscript computed from variables",
            ),
            (
                r"\$\{[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?:(?:[A-Za-z_$]|[^-=?+}][^}]*[A-Za-z_$])",
                "a substring offset computed from variables",
            ),
            (
                r"\[\[[^\]]*-(eq|ne|lt|le|gt|ge)\b",
                "an arithmetic comparison of variables",
            ),
        ]
        .into_iter()
        .map(|(pattern, why)| {
            (
                // invariant: a constant pattern, compiled by the tests.
                Regex::new(pattern).expect("invariant: constant patterns that compile"),
                why,
            )
        })
        .collect()
        });
    CHECKS
        .iter()
        .find(|(pattern, _)| pattern.is_match(&visible))
        .map(|(_, why)| (*why).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::analyse;

    fn hidden(line: &str) -> Option<String> {
        hidden_code(line, &analyse(line).commands)
    }

    #[test]
    fn code_hidden_in_values_is_found() {
        for line in [
            "x='$(git push origin)'; echo ${x@P}",
            "echo ${x@E}",
            "x='a[$(git push)0]'; echo $((x))",
            "echo $[x]",
            "((x))",
            "if ((x > 1)); then echo; fi",
            "echo ${a[x]}",
            "echo ${a[$i]}",
            "echo ${y[@]:x:1}",
            "echo ${y:off}",
            "[[ $x -eq 0 ]] && echo",
            "ls ${!x}",
            "let x=1",
            "declare -i n=x",
        ] {
            assert!(hidden(line).is_some(), "{line}");
        }
    }

    #[test]
    fn ordinary_expansions_are_fine() {
        for line in [
            "echo $((1 + 2))",
            "echo ${x:-default}",
            "echo ${x:=default} ${x:+y} ${x:?unset}",
            "echo ${#x}",
            "echo ${a[0]} ${a[@]}",
            "echo '${x@P} $((x))'",
            "[[ -f x ]] && echo",
            "cargo test -- --nocapture",
            "echo ${y:1:2}",
        ] {
            assert_eq!(hidden(line), None, "{line}");
        }
    }
}
