//! How the policy reads the words of a simple command: the forms under which a deny rule
//! must recognise a command (whatever wrapper, path or brace spelling hides it), the
//! file names an argument may carry (`of=x`, `-ox`, `--output=x`), the files input
//! redirections read, and options that make an allowed program run other code.

use std::sync::LazyLock;

use regex::Regex;

use super::expand::{basename, blank_single_quotes};

/// The most spellings one command is expanded into before matching deny rules.
const MAX_VARIANTS: usize = 64;

/// Every way a deny rule may see this command: each tail of its words (so
/// `setsid git push`, `flock f git push` and `echo git push` all contain `git push`),
/// with the program named by its basename (`/usr/bin/git`), brace expansions spelled
/// out (`git pus{h,}`), and git's global options dropped (`git -C . push`).
pub(super) fn deny_forms(argv: &[String]) -> Vec<String> {
    let mut forms = Vec::new();
    for variant in brace_variants(argv) {
        for start in 0..variant.len() {
            let mut words: Vec<String> = variant[start..].to_vec();
            if let Some(first) = words.first_mut() {
                *first = basename(first).to_string();
            }
            forms.push(words.join(" "));
            if words.first().is_some_and(|w| w == "git") {
                forms.push(without_git_globals(&words).join(" "));
            }
        }
    }
    forms.sort();
    forms.dedup();
    forms
}

/// `git [global options] SUBCOMMAND …` without the global options.
fn without_git_globals(words: &[String]) -> Vec<String> {
    const WITH_VALUE: &[&str] = &[
        "-C",
        "-c",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--exec-path",
        "--config-env",
        "--super-prefix",
    ];
    let mut out = vec![words[0].clone()];
    let mut index = 1;
    while index < words.len() {
        let word = &words[index];
        if WITH_VALUE.contains(&word.as_str()) {
            index += 2;
        } else if word.starts_with('-') {
            index += 1;
        } else {
            break;
        }
    }
    out.extend(words[index.min(words.len())..].iter().cloned());
    out
}

/// The words with brace expansions (`a{b,c}d`) spelled out, at most `MAX_VARIANTS`.
fn brace_variants(argv: &[String]) -> Vec<Vec<String>> {
    let mut variants: Vec<Vec<String>> = vec![Vec::new()];
    for word in argv {
        let spellings = expand_braces(word);
        let mut next = Vec::new();
        for variant in &variants {
            for spelling in &spellings {
                if next.len() >= MAX_VARIANTS {
                    break;
                }
                let mut extended = variant.clone();
                extended.push(spelling.clone());
                next.push(extended);
            }
        }
        variants = next;
    }
    variants
}

/// One level of brace expansion: `pre{a,b}post` → `preapost`, `prebpost` (recursively,
/// bounded). A word without a comma inside braces is itself.
pub(super) fn expand_braces(word: &str) -> Vec<String> {
    #[expect(
        clippy::expect_used,
        reason = "invariant: a constant pattern, compiled by the tests"
    )]
    static BRACES: LazyLock<Regex> = LazyLock::new(|| {
        // invariant: a constant pattern, compiled by the tests.
        Regex::new(r"\{([^{}]*,[^{}]*)\}").expect("invariant: a constant pattern that compiles")
    });
    let Some(found) = BRACES.captures(word) else {
        return vec![word.to_string()];
    };
    let (Some(whole), Some(inner)) = (found.get(0), found.get(1)) else {
        return vec![word.to_string()];
    };
    let mut out = Vec::new();
    for part in inner.as_str().split(',') {
        let spelled = format!("{}{part}{}", &word[..whole.start()], &word[whole.end()..]);
        for expanded in expand_braces(&spelled) {
            if out.len() < MAX_VARIANTS {
                out.push(expanded);
            }
        }
    }
    out
}

/// The file names an argument may carry: the word itself, the value of `key=value`
/// (`of=x`, `--output=x`), a value attached to a short option (`-ox`), and the path of
/// git's `REV:path` (`git show HEAD:.env` prints the committed `.env`).
pub(super) fn path_candidates(arg: &str) -> Vec<String> {
    let mut out = Vec::new();
    if !arg.starts_with('-') {
        out.push(arg.to_string());
        if let Some((_, path)) = arg.split_once(':')
            && !path.is_empty()
            && !path.starts_with("//")
        {
            out.push(path.to_string());
        }
    }
    if let Some((_, value)) = arg.split_once('=')
        && !value.is_empty()
    {
        out.push(value.to_string());
    }
    if arg.len() > 2 && arg.starts_with('-') && !arg.starts_with("--") {
        out.push(arg[2..].to_string());
    }
    out.into_iter().flat_map(|w| expand_braces(&w)).collect()
}

/// Does the word depend on the shell's state (a variable, a command substitution) in a
/// way the policy cannot resolve?
pub(super) fn is_dynamic(word: &str) -> bool {
    word.contains('$') || word.contains('`')
}

/// Files read through input redirections (`< f`, `0< f`, `3<f`, `<> f`) in the line,
/// outside single quotes. Here-documents and process substitution are not files.
pub(super) fn input_redirections(line: &str) -> Vec<String> {
    #[expect(
        clippy::expect_used,
        reason = "invariant: a constant pattern, compiled by the tests"
    )]
    static INPUT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?:^|[^<>&0-9])[0-9]*<>?[ \t]*([^\s;&|<>()]+)")
            // invariant: a constant pattern, compiled by the tests.
            .expect("invariant: a constant pattern that compiles")
    });
    let visible = blank_single_quotes(line);
    INPUT
        .captures_iter(&visible)
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str().trim_matches('"').to_string())
        .filter(|target| !target.is_empty() && !target.starts_with('&'))
        .collect()
}

/// An option that makes an allowed program run code it names (`cargo --config
/// 'target.x.runner=…'`, `cargo -Z …`, `git -c core.pager=…`, `git --exec-path=…`).
/// A `Bash(cargo test *)` rule does not vouch for those: the rule must name the option.
pub(super) fn code_running_option(argv: &[String]) -> Option<&str> {
    let program = basename(argv.first()?);
    let options: &[&str] = match program {
        "cargo" => &["--config", "-Z"],
        "git" => &["-c", "--exec-path", "--config-env"],
        _ => return None,
    };
    argv.iter().skip(1).find_map(|arg| {
        options
            .iter()
            .find(|option| {
                arg == *option
                    || arg.starts_with(&format!("{option}="))
                    || (option.len() == 2 && arg.starts_with(*option) && arg.len() > 2)
            })
            .copied()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn deny_forms_see_through_wrappers_paths_braces_and_git_options() {
        let has =
            |line: &str, form: &str| deny_forms(&words(line)).iter().any(|f| f.starts_with(form));
        assert!(has("setsid git push origin", "git push"));
        assert!(has("/usr/bin/git push x", "git push"));
        assert!(has("git -C . push origin", "git push"));
        assert!(has("git --git-dir=.git push", "git push"));
        assert!(has("git -c alias.p=push p", "git p"));
        assert!(has("git pus{h,} origin", "git push"));
        assert!(has("chroot / curl x", "curl x"));
    }

    #[test]
    fn arguments_carry_paths_in_several_forms() {
        assert!(path_candidates("of=secrets/key").contains(&"secrets/key".to_string()));
        assert!(path_candidates("--output=secrets/key").contains(&"secrets/key".to_string()));
        assert!(path_candidates("-osecrets/key").contains(&"secrets/key".to_string()));
        assert!(path_candidates("{.env,x}").contains(&".env".to_string()));
    }

    #[test]
    fn input_redirections_are_found() {
        assert_eq!(input_redirections("cat < .env"), vec![".env"]);
        assert_eq!(input_redirections("cat <.env"), vec![".env"]);
        assert_eq!(input_redirections("wc 0<.env && x 3<a"), vec![".env", "a"]);
        assert_eq!(input_redirections("cat <<EOF"), Vec::<String>::new());
        assert_eq!(input_redirections("diff <(ls) x"), Vec::<String>::new());
        assert_eq!(input_redirections("echo '< .env'"), Vec::<String>::new());
        assert_eq!(input_redirections("cmd 2>&1"), Vec::<String>::new());
    }

    #[test]
    fn options_that_run_code_are_recognised() {
        assert_eq!(
            code_running_option(&words("cargo test --config x")),
            Some("--config")
        );
        assert_eq!(
            code_running_option(&words("cargo test -Zunstable")),
            Some("-Z")
        );
        assert_eq!(
            code_running_option(&words("git -c core.pager=x status")),
            Some("-c")
        );
        assert_eq!(code_running_option(&words("cargo test --quiet")), None);
    }
}
