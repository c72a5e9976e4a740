// Test-only module: its parent includes it under #[cfg(test)].
use super::*;

fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn references_with_or_without_spaces_are_read_and_filled() {
    let template = Template::parse("bump-${{ matrix.service }}/${{matrix.path}}-x").unwrap();
    assert_eq!(template.keys(), ["service", "path"]);
    let filled = template.render(
        &values(&[("service", "billing"), ("path", "svc/b")]),
        Insert::AsIs,
    );
    assert_eq!(filled, "bump-billing/svc/b-x");
    assert!(Template::parse("no references").unwrap().is_plain());
}

#[test]
fn a_value_is_never_read_for_references_again() {
    let template = Template::parse("a ${{ matrix.x }} b").unwrap();
    let tricky = "${{ matrix.y }} $(id) 'q' \n`x`";
    let filled = template.render(&values(&[("x", tricky), ("y", "NO")]), Insert::AsIs);
    assert_eq!(filled, format!("a {tricky} b"));
}

#[test]
fn in_a_shell_command_a_reference_becomes_drovers_variable_never_the_value() {
    let template =
        Template::parse("cd ${{ matrix.path }} && echo x=${{ matrix.v }} ${{ matrix.base-url }}")
            .unwrap();
    template.check_shell().unwrap();
    let filled = template.render(
        &values(&[("path", "a b; rm -rf /"), ("v", "it's $(id)\nnext")]),
        Insert::Shell,
    );
    assert_eq!(
        filled,
        "cd \"${DROVER_MATRIX_path}\" && echo x=\"${DROVER_MATRIX_v}\" \"${DROVER_MATRIX_base_url}\""
    );
    assert_eq!(env_name("base-url"), "DROVER_MATRIX_base_url");
}

/// The attacker's shapes (issue 37): a heredoc, a comment, backticks, `$'…'`, an
/// apostrophe in a comment flipping a quote tracker. Whatever the tracker makes of them,
/// the command's text is the same for every value: no value is ever shell text.
#[test]
fn a_shell_commands_text_is_the_same_whatever_the_values() {
    let hostile = values(&[("x", "'; touch INJECTED; '\n$(touch INJECTED)`id`\\\"")]);
    let plain = values(&[("x", "plain")]);
    for run in [
        "cat <<EOF\n${{ matrix.x }}\nEOF",
        "cat <<'EOF'\n${{ matrix.x }}\nEOF",
        "echo hi # ${{ matrix.x }}",
        "# don't\necho ${{ matrix.x }}",
        "echo `echo ${{ matrix.x }}`",
        "echo $'a' ${{ matrix.x }}",
        "echo $(echo ${{ matrix.x }})",
    ] {
        let template = Template::parse(run).unwrap();
        let filled = template.render(&hostile, Insert::Shell);
        assert_eq!(filled, template.render(&plain, Insert::Shell), "{run}");
        assert!(!filled.contains("INJECTED"), "{run}: {filled}");
        assert!(filled.contains("\"${DROVER_MATRIX_x}\""), "{run}: {filled}");
    }
}

#[test]
fn a_reference_inside_quotes_or_after_a_backslash_in_a_shell_command_is_refused() {
    for run in [
        "cd \"${{ matrix.path }}\"",
        "echo '${{ matrix.path }}'",
        "echo \"a \\\" ${{ matrix.path }}\"",
    ] {
        let error = Template::parse(run).unwrap().check_shell().unwrap_err();
        assert!(error.message.contains("inside quotes"), "{run}: {error}");
        assert_eq!(error.key, "path");
    }
    let error = Template::parse("echo ${{ matrix.a }} ${{ matrix.path }} \\${{ matrix.path }}")
        .unwrap()
        .check_shell()
        .unwrap_err();
    assert!(error.message.contains("follows a `\\`"), "{error}");
    assert_eq!((error.key.as_str(), error.nth), ("path", 1));
    for run in [
        "echo \"a\" ${{ matrix.path }}",
        "echo 'it''s' ${{ matrix.path }}",
        "echo \\\" ${{ matrix.path }}",
        "echo \\\\${{ matrix.path }}",
    ] {
        Template::parse(run).unwrap().check_shell().unwrap();
    }
}

#[test]
fn other_expressions_and_escaped_references_are_left_as_written() {
    let text = "uses ${{ github.ref }} and ${{ secrets.X }}, ${{ matrixish }}";
    let template = Template::parse(text).unwrap();
    assert!(template.is_plain());
    assert_eq!(template.render(&BTreeMap::new(), Insert::AsIs), text);
    let template = Template::parse("os: $${{ matrix.os }} ${{ matrix.v }}").unwrap();
    assert_eq!(template.keys(), ["v"]);
    assert_eq!(
        template.render(&values(&[("v", "1")]), Insert::AsIs),
        "os: ${{ matrix.os }} 1"
    );
    let template = Template::parse("unclosed ${{ github.x").unwrap();
    assert_eq!(
        template.render(&BTreeMap::new(), Insert::AsIs),
        "unclosed ${{ github.x"
    );
}

#[test]
fn malformed_references_are_refused_saying_what_to_write() {
    for text in [
        "${{ matrix }}",
        "${{ matrix. }}",
        "${{ matrix.1x }}",
        "${{ matrix.a.b }}",
        "${{ matrix['a'] }}",
        "${{ matrix .a }}",
        "${{ matrix.a",
        "${{ matrix.a b }}",
    ] {
        let error = Template::parse(text).unwrap_err();
        assert!(error.0.contains("${{ matrix.KEY }}"), "{text}: {error}");
    }
    assert!(valid_key("_a-1"));
    assert!(!valid_key("-a"));
    assert!(!valid_key(""));
}
