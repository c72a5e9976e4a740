// Test-only module: its parent includes it under #[cfg(test)].
//! The decision table, continued: the classes an attacker found with only `Bash(cat *)`
//! and `Bash(echo *)` allowed (the `narrow` policy), several spellings each, both sides.

use super::table_tests::{bash, check};

#[test]
fn substitutions_in_here_documents_and_expansions() {
    check(&[
        // Unquoted bodies run backticks and $(…), also in <<- bodies.
        ("narrow", bash("cat <<EOF\n`id`\nEOF"), false),
        ("narrow", bash("cat <<EOF\nhello `id` there\nEOF"), false),
        ("narrow", bash("cat <<EOF\n$(id)\nEOF"), false),
        ("narrow", bash("cat <<-EOF\n\t$(id)\n\tEOF"), false),
        ("narrow", bash("cat <<-EOF\n\t`id`\n\tEOF"), false),
        ("narrow", bash("cat <<-  EOF\n  $(touch x)\n  EOF"), false),
        ("narrow", bash("cat <<EOF\n${x:-`id`}\nEOF"), false),
        ("narrow", bash("cat <<EOF\n$(( x[$(id)] ))\nEOF"), false),
        ("narrow", bash("cat <<EOF\n'$(id)'\nEOF"), false),
        ("narrow", bash("cat <<EOF; echo ok\n`id`\nEOF"), false),
        (
            "narrow",
            bash("echo a; cat <<A <<B\nplain\nA\n`id`\nB"),
            false,
        ),
        // A quoted delimiter expands nothing; plain text and variables stay allowed.
        ("narrow", bash("cat <<'EOF'\n`id` $(id)\nEOF"), true),
        ("narrow", bash("cat <<\"EOF\"\n`id` $(id)\nEOF"), true),
        ("narrow", bash("cat <<\\EOF\n`id`\nEOF"), true),
        ("narrow", bash("cat <<-'EOF'\n\t$(id)\n\tEOF"), true),
        ("narrow", bash("cat <<EOF\nhello\nEOF"), true),
        (
            "narrow",
            bash("cat <<EOF\nhome is $HOME, ${USER:-me}\nEOF"),
            true,
        ),
        (
            "narrow",
            bash("cat <<EOF\nescaped \\`id\\` and \\$(id)\nEOF"),
            true,
        ),
        // Substitutions inside parameter expansions, nested too.
        ("narrow", bash("echo ${x:=`id`}"), false),
        ("narrow", bash("echo ${x:-`id`}"), false),
        ("narrow", bash("echo ${x:-$(id)}"), false),
        ("narrow", bash("echo ${x:+$(id)}"), false),
        ("narrow", bash("echo ${x/$(id)/y}"), false),
        ("narrow", bash("echo ${x//`id`/y}"), false),
        ("narrow", bash("echo ${x:-${y:-$(id)}}"), false),
        ("narrow", bash("echo ${x:-${y:-`id`}}"), false),
        ("narrow", bash("echo \"${x:-`id`}\""), false),
        ("narrow", bash("cat ${f:-$(id)}.txt"), false),
        ("narrow", bash("echo ${x:-plain} ${#y} ${z%%.*}"), true),
        // ERROR and MISSING nodes anywhere make the line opaque.
        ("narrow", bash("echo (("), false),
        ("narrow", bash("echo $(cat"), false),
        ("narrow", bash("cat x; if then fi"), false),
        ("narrow", bash("echo ok; case x in"), false),
        ("narrow", bash("cat <(echo"), false),
    ]);
}
