// Test-only module: its parent includes it under #[cfg(test)].
//! The decision table, continued: the classes an attacker found with only `Bash(cat *)`
//! and `Bash(echo *)` allowed (the `narrow` policy), several spellings each, both sides.

use super::table_tests::{bash, check, file};

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

#[test]
fn paths_that_are_not_what_they_look_like() {
    check(&[
        // `*` does not carry a rule out of its directory through `..`.
        ("narrow", bash("python3 scripts/run.py"), true),
        ("narrow", bash("python3 scripts/a/../run.py"), true),
        ("narrow", bash("python3 scripts/../src/evil.py"), false),
        ("narrow", bash("python3 scripts/./../src/evil.py"), false),
        ("narrow", bash("python3 scripts/../../../tmp/x.py"), false),
        (
            "narrow",
            bash("python3 scripts/sub/../../src/lib.rs"),
            false,
        ),
        // /proc and /dev/fd name the command's own process: opaque.
        ("narrow", bash("cat /dev/fd/../cwd/.env"), false),
        ("narrow", bash("cat /proc/self/cwd/.env"), false),
        ("narrow", bash("cat /proc/self//cwd/.env"), false),
        ("narrow", bash("cat /proc/self/./root/etc/passwd"), false),
        ("narrow", bash("cat /proc/thread-self/cwd/.env"), false),
        ("narrow", bash("cat /proc/1/environ"), false),
        ("narrow", bash("cat /dev/stdin"), false),
        (
            "narrow",
            bash("cat ../../../../../../../../proc/self/cwd/.env"),
            false,
        ),
        ("narrow", bash("echo /proc/self/cwd"), true),
        ("none", file("Read", "/proc/self/environ"), false),
        ("none", file("Read", "/dev/fd/../cwd/.env"), false),
        ("open", bash("cat /proc/self/status"), true),
        // A destructive command through them is a guardrail, whatever the rules.
        ("open", bash("rm -rf /dev/fd/../cwd/"), false),
        ("open", bash("rm -rf /proc/self/root/*"), false),
        ("open", bash("rm -rf /proc/self/cwd"), false),
        ("open", bash("rm -rf /dev/fd/../cwd/src"), false),
        ("open", bash("rm -rf src/../"), false),
        ("open", bash("rm -rf src/.."), false),
        ("open", bash("rm -rf src"), true),
    ]);
}
