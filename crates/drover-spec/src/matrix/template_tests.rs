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
fn in_a_shell_command_a_value_is_one_quoted_word() {
    let template = Template::parse("cd ${{ matrix.path }} && echo x=${{ matrix.v }}").unwrap();
    template.check_shell().unwrap();
    let filled = template.render(
        &values(&[("path", "a b; rm -rf /"), ("v", "it's $(id)\nnext")]),
        Insert::Shell,
    );
    assert_eq!(
        filled,
        "cd 'a b; rm -rf /' && echo x='it'\\''s $(id)\nnext'"
    );
    assert_eq!(bash_word(""), "''");
}

#[test]
fn a_reference_inside_quotes_in_a_shell_command_is_refused() {
    for run in [
        "cd \"${{ matrix.path }}\"",
        "echo '${{ matrix.path }}'",
        "echo \"a \\\" ${{ matrix.path }}\"",
    ] {
        let error = Template::parse(run).unwrap().check_shell().unwrap_err();
        assert!(error.0.contains("inside quotes"), "{run}: {error}");
    }
    for run in [
        "echo \"a\" ${{ matrix.path }}",
        "echo 'it''s' ${{ matrix.path }}",
        "echo \\\" ${{ matrix.path }}",
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
