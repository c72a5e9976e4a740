//! Rule lists as the command line writes them: `--allow Read,Edit,"Bash(cargo test *)"`,
//! and Claude Code's `--allowedTools "Bash(git log:*) Read"`. A list is split only
//! outside parentheses, so a rule whose specifier holds a comma or a blank
//! (`Bash(cargo test *, --lib)`) stays one rule.

/// The rules of `text`, split at commas (and, with `at_blanks`, at blanks: Claude Code's
/// spelling) outside parentheses, each trimmed; empty entries (`Read,,Edit`, a trailing
/// comma) are left out.
pub(super) fn split_rules(text: &str, at_blanks: bool) -> Vec<String> {
    let mut rules = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        let splits = depth == 0 && (c == ',' || (at_blanks && c.is_whitespace()));
        if splits {
            push_rule(&mut rules, &current);
            current.clear();
        } else {
            current.push(c);
        }
    }
    push_rule(&mut rules, &current);
    rules
}

fn push_rule(rules: &mut Vec<String>, text: &str) {
    let rule = text.trim();
    if !rule.is_empty() {
        rules.push(rule.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commas_split_only_outside_parentheses() {
        assert_eq!(
            split_rules("Read,Edit,Bash(cargo test *)", false),
            ["Read", "Edit", "Bash(cargo test *)"]
        );
        assert_eq!(
            split_rules("Bash(cargo test *, --lib), Read", false),
            ["Bash(cargo test *, --lib)", "Read"]
        );
        assert_eq!(split_rules(" Read ,, Edit, ", false), ["Read", "Edit"]);
        assert!(split_rules("", false).is_empty());
    }

    #[test]
    fn without_blanks_a_list_with_a_blank_stays_one_rule_for_the_rule_check_to_refuse() {
        assert_eq!(split_rules("Read Edit", false), ["Read Edit"]);
    }

    #[test]
    fn claude_codes_lists_split_at_blanks_too() {
        assert_eq!(
            split_rules("Bash(git log:*) Bash(git diff:*)  Read,Edit", true),
            ["Bash(git log:*)", "Bash(git diff:*)", "Read", "Edit"]
        );
        assert_eq!(
            split_rules("Bash(npm run test *)\tWebFetch(domain:docs.rs)", true),
            ["Bash(npm run test *)", "WebFetch(domain:docs.rs)"]
        );
    }

    #[test]
    fn an_unclosed_parenthesis_keeps_the_rest_in_one_rule() {
        assert_eq!(
            split_rules("Bash(echo a, Read", false),
            ["Bash(echo a, Read"]
        );
    }
}
