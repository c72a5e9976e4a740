//! Every named node kind of tree-sitter-bash, and how the walk treats it. A kind not in
//! this table (a newer grammar's) makes the command opaque: the analyser never guesses
//! what unknown syntax does. A test checks the table against the grammar's
//! `node-types.json`, so a grammar upgrade cannot add a kind silently.
//!
//! | kind | handling |
//! |---|---|
//! | `program`, `list`, `pipeline`, `subshell`, `compound_statement`, `do_group` | walked: every statement inside is judged |
//! | `if_statement`, `elif_clause`, `else_clause`, `while_statement`, `for_statement`, `c_style_for_statement`, `case_statement`, `case_item` | walked: conditions, bodies, words and patterns alike |
//! | `function_definition` | walked: the body is judged as if it ran (it may be called) |
//! | `negated_command`, `redirected_statement` | walked; redirections are writes or reads (see `writes`) |
//! | `command`, `command_name` | a simple command: its words are resolved and it is matched against the rules |
//! | `declaration_command`, `unset_command`, `variable_assignment`, `variable_assignments` | judged in `declarations` (assigning `PATH`, `IFS`, `BASH_ENV` … is opaque) |
//! | `test_command`, `test_operator`, `binary_expression`, `unary_expression`, `ternary_expression`, `postfix_expression`, `parenthesized_expression`, `arithmetic_expansion` | walked: substitutions inside are found |
//! | `file_redirect`, `file_descriptor`, `herestring_redirect` | a write or read of the target (see `writes`) |
//! | `heredoc_redirect`, `heredoc_start`, `heredoc_body`, `heredoc_content`, `heredoc_end` | walked; an unquoted body is also scanned as text for `` ` `` and `$(` (the grammar leaves backticks in bodies unparsed) |
//! | `command_substitution`, `process_substitution` | opaque: what runs is known only at run time |
//! | `expansion` | walked, and scanned as text for `` ` `` and `$(` (the grammar leaves backticks in `${x:=…}` unparsed) |
//! | `simple_expansion`, `variable_name`, `special_variable_name`, `subscript` | words whose value is known only at run time (see `words`) |
//! | `word`, `string`, `string_content`, `raw_string`, `ansi_c_string`, `translated_string`, `concatenation`, `number`, `array`, `brace_expression`, `extglob_pattern`, `regex` | words: resolved where static, dynamic otherwise |
//! | `comment` | ignored |
//! | `ERROR`, and any node marked missing | opaque: the line does not parse as bash says it will run |
//! | anonymous tokens (`&&`, `if`, `;;`, `=` …) | leaves with no meaning of their own |

/// Named node kinds the walk knows (see the table above).
pub(super) const KNOWN: &[&str] = &[
    "program",
    "list",
    "pipeline",
    "subshell",
    "compound_statement",
    "do_group",
    "if_statement",
    "elif_clause",
    "else_clause",
    "while_statement",
    "for_statement",
    "c_style_for_statement",
    "case_statement",
    "case_item",
    "function_definition",
    "negated_command",
    "redirected_statement",
    "command",
    "command_name",
    "declaration_command",
    "unset_command",
    "variable_assignment",
    "variable_assignments",
    "test_command",
    "test_operator",
    "binary_expression",
    "unary_expression",
    "ternary_expression",
    "postfix_expression",
    "parenthesized_expression",
    "arithmetic_expansion",
    "file_redirect",
    "file_descriptor",
    "herestring_redirect",
    "heredoc_redirect",
    "heredoc_start",
    "heredoc_body",
    "heredoc_content",
    "heredoc_end",
    "command_substitution",
    "process_substitution",
    "expansion",
    "simple_expansion",
    "variable_name",
    "special_variable_name",
    "subscript",
    "word",
    "string",
    "string_content",
    "raw_string",
    "ansi_c_string",
    "translated_string",
    "concatenation",
    "number",
    "array",
    "brace_expression",
    "extglob_pattern",
    "regex",
    "comment",
    "ERROR",
];

/// Does `text` (a heredoc body or a `${…}` expansion, as written) hold a command
/// substitution the shell would run: an unescaped backtick, or `$(` that does not start
/// an arithmetic `$((`? Quotes are not honoured: inside an unquoted heredoc they are
/// literal, and treating a quoted one as live only ever denies more.
pub(super) fn has_live_substitution(text: &[u8]) -> bool {
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'\\' => i += 2,
            b'`' => return true,
            b'$' if text.get(i + 1) == Some(&b'(') => {
                if text.get(i + 2) != Some(&b'(') {
                    return true;
                }
                // `$((`: arithmetic; what is inside is scanned like the rest.
                i += 3;
            }
            _ => i += 1,
        }
    }
    false
}

/// Is this heredoc's delimiter quoted (`<<'EOF'`, `<<"EOF"`, `<<\EOF`, `<<E"O"F`)? Then
/// its body expands nothing.
pub(super) fn quoted_delimiter(start: &str) -> bool {
    start.contains(['\'', '"', '\\'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_every_named_kind_of_the_grammar() {
        let types: serde_json::Value = serde_json::from_str(tree_sitter_bash::NODE_TYPES).unwrap();
        let mut grammar: Vec<&str> = types
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["named"] == true)
            .filter_map(|t| t["type"].as_str())
            // Supertypes never appear as nodes in a tree.
            .filter(|kind| !kind.starts_with('_'))
            .collect();
        grammar.push("ERROR");
        grammar.sort_unstable();
        let mut known = KNOWN.to_vec();
        known.sort_unstable();
        assert_eq!(known, grammar);
    }

    #[test]
    fn live_substitutions_are_found_in_text() {
        for live in [
            "`id`",
            "a $(id) b",
            "$(( x[$(id)] ))",
            "$(( `id` ))",
            "'$(id)'",
            "\\\\`id`",
        ] {
            assert!(has_live_substitution(live.as_bytes()), "{live}");
        }
        for dead in [
            "plain text",
            "\\`id\\`",
            "\\$(id)",
            "$((1 + 2))",
            "${x:-y}",
            "$",
        ] {
            assert!(!has_live_substitution(dead.as_bytes()), "{dead}");
        }
        assert!(quoted_delimiter("<<'EOF'"));
        assert!(quoted_delimiter("\\EOF"));
        assert!(quoted_delimiter("E\"O\"F"));
        assert!(!quoted_delimiter("EOF"));
    }
}
