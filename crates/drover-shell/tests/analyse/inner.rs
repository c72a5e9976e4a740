//! Commands that run other commands given as arguments (`xargs`, `find -exec`,
//! `busybox`): the outer command stays listed and the inner one is listed after it.

use super::{Case, Opaque, analyse, check};

const XARGS: &[Case] = &[
    (
        "echo push | xargs git",
        &["echo push", "xargs git", "git"],
        &[],
        false,
    ),
    (
        "echo / | xargs rm -rf",
        &["echo /", "xargs rm -rf", "rm -rf"],
        &[],
        false,
    ),
    ("xargs -0 -n1 rm", &["xargs -0 -n1 rm", "rm"], &[], false),
    (
        "xargs -n 1 -P 4 rm -f",
        &["xargs -n 1 -P 4 rm -f", "rm -f"],
        &[],
        false,
    ),
    (
        "xargs -I {} mv {} /tmp",
        &["xargs -I {} mv {} /tmp", "mv {} /tmp"],
        &[],
        false,
    ),
    ("xargs -I% rm %", &["xargs -I% rm %", "rm %"], &[], false),
    (
        "xargs -L 2 -s 100 -d '\\n' -E END rm",
        &["xargs -L 2 -s 100 -d \\n -E END rm", "rm"],
        &[],
        false,
    ),
    ("xargs -a list rm", &["xargs -a list rm", "rm"], &[], false),
    ("xargs -0rt rm", &["xargs -0rt rm", "rm"], &[], false),
    (
        "xargs -i{} rm {}",
        &["xargs -i{} rm {}", "rm {}"],
        &[],
        false,
    ),
    ("xargs -- rm -x", &["xargs -- rm -x", "rm -x"], &[], false),
    (
        "xargs --max-args=1 --null rm",
        &["xargs --max-args=1 --null rm", "rm"],
        &[],
        false,
    ),
    (
        "xargs --max-procs 2 --replace=X rm X",
        &["xargs --max-procs 2 --replace=X rm X", "rm X"],
        &[],
        false,
    ),
    (
        "xargs --replace rm",
        &["xargs --replace rm", "rm"],
        &[],
        false,
    ),
    (
        "/usr/bin/xargs rm",
        &["/usr/bin/xargs rm", "rm"],
        &[],
        false,
    ),
    ("xargs", &["xargs"], &[], false),
    ("xargs -0 -n 1", &["xargs -0 -n 1"], &[], false),
    (
        "xargs timeout 5 rm",
        &["xargs timeout 5 rm", "rm"],
        &[],
        false,
    ),
    (
        "xargs nice -n 5 git push",
        &["xargs nice -n 5 git push", "git push"],
        &[],
        false,
    ),
    (
        "xargs sh -c 'rm -rf \"$@\"' _",
        &["xargs sh -c rm -rf \"$@\" _", "rm -rf $@"],
        &[],
        false,
    ),
    (
        "xargs xargs rm",
        &["xargs xargs rm", "xargs rm", "rm"],
        &[],
        false,
    ),
    ("xargs --weird rm", &["xargs --weird rm"], &[], true),
    ("xargs -Z rm", &["xargs -Z rm"], &[], true),
    ("xargs $OPTS rm", &["xargs $OPTS rm"], &[], true),
    ("xargs $CMD", &["xargs $CMD"], &[], true),
    (
        "xargs \"$(echo rm)\" x",
        &["xargs $(echo rm) x", "echo rm"],
        &[],
        true,
    ),
];

const FIND: &[Case] = &[
    (
        "find . -exec git push \\;",
        &["find . -exec git push ;", "git push"],
        &[],
        false,
    ),
    (
        "find / -exec rm -rf {} +",
        &["find / -exec rm -rf {} +", "rm -rf {}"],
        &[],
        false,
    ),
    (
        "find . -execdir rm {} ';'",
        &["find . -execdir rm {} ;", "rm {}"],
        &[],
        false,
    ),
    (
        "find . -ok rm {} \\;",
        &["find . -ok rm {} ;", "rm {}"],
        &[],
        false,
    ),
    (
        "find . -okdir rm {} \\;",
        &["find . -okdir rm {} ;", "rm {}"],
        &[],
        false,
    ),
    (
        "find . -name '*.rs' -exec grep -l x {} + -exec rm {} \\;",
        &[
            "find . -name *.rs -exec grep -l x {} + -exec rm {} ;",
            "grep -l x {}",
            "rm {}",
        ],
        &[],
        false,
    ),
    (
        "find . -exec echo + \\;",
        &["find . -exec echo + ;", "echo +"],
        &[],
        false,
    ),
    (
        "find . -exec timeout 5 rm {} \\;",
        &["find . -exec timeout 5 rm {} ;", "rm {}"],
        &[],
        false,
    ),
    (
        "find . -exec sh -c 'rm -rf /' \\;",
        &["find . -exec sh -c rm -rf / ;", "rm -rf /"],
        &[],
        false,
    ),
    ("find . -exec rm", &["find . -exec rm", "rm"], &[], false),
    (
        "find . -name x -print",
        &["find . -name x -print"],
        &[],
        false,
    ),
    ("find . -delete", &["find . -delete"], &[], false),
    (
        "find . -fprint out.txt",
        &["find . -fprint out.txt"],
        &["out.txt"],
        false,
    ),
    (
        "find . -fprintf out.txt '%p'",
        &["find . -fprintf out.txt %p"],
        &["out.txt"],
        false,
    ),
    (
        "find . -exec $CMD {} \\;",
        &["find . -exec $CMD {} ;"],
        &[],
        true,
    ),
    (
        "find . $X rm -rf / \\;",
        &["find . $X rm -rf / ;"],
        &[],
        true,
    ),
    (
        "find . -exec echo \"$X\" -exec rm \\;",
        &["find . -exec echo $X -exec rm ;", "echo $X -exec rm"],
        &[],
        true,
    ),
    ("find . -name *.rs", &["find . -name *.rs"], &[], true),
];

const BUSYBOX: &[Case] = &[
    (
        "busybox rm -rf /",
        &["busybox rm -rf /", "rm -rf /"],
        &[],
        false,
    ),
    (
        "busybox sh -c 'rm -rf /'",
        &["busybox sh -c rm -rf /", "rm -rf /"],
        &[],
        false,
    ),
    (
        "busybox timeout 5 rm x",
        &["busybox timeout 5 rm x", "rm x"],
        &[],
        false,
    ),
    (
        "busybox xargs rm",
        &["busybox xargs rm", "xargs rm", "rm"],
        &[],
        false,
    ),
    ("busybox --list", &["busybox --list"], &[], false),
    ("busybox", &["busybox"], &[], false),
    ("busybox $X", &["busybox $X"], &[], true),
    (
        "timeout 5 busybox rm x",
        &["busybox rm x", "rm x"],
        &[],
        false,
    ),
];

#[test]
fn xargs_runs_its_command() {
    check(XARGS);
}

#[test]
fn find_runs_its_exec_commands() {
    check(FIND);
}

#[test]
fn busybox_runs_its_applet() {
    check(BUSYBOX);
}

#[test]
fn inner_commands_have_their_own_source() {
    let analysis = analyse("find . -exec rm -f '{}' \\;");
    assert_eq!(analysis.commands[1].argv, ["rm", "-f", "{}"]);
    assert_eq!(analysis.commands[1].source, "rm -f '{}'");
    let analysis = analyse("echo x | xargs -n1 timeout 5 rm");
    assert_eq!(analysis.commands[2].argv, ["rm"]);
    assert_eq!(analysis.commands[2].source, "timeout 5 rm");
}

#[test]
fn commands_not_known_statically_stay_opaque() {
    let dynamic = |line: &str| {
        let opaque = analyse(line).opaque;
        assert!(
            opaque
                .iter()
                .any(|o| matches!(o, Opaque::DynamicCommand(_))),
            "{line:?}: {opaque:?}"
        );
    };
    dynamic("g=git; $g push x");
    dynamic("$CMD");
    dynamic("xargs -- $CMD");
    dynamic("find . -exec \"$CMD\" {} +");
    dynamic("busybox $APPLET x");
    let analysis = analyse("g=git; $g push x");
    assert!(analysis.commands.is_empty(), "{:?}", analysis.commands);
}

#[test]
fn deeply_nested_runners_are_bounded() {
    let line = format!("{}rm x", "xargs ".repeat(5_000));
    let analysis = analyse(&line);
    assert!(
        analysis
            .opaque
            .iter()
            .any(|o| matches!(o, Opaque::TooComplex(_)))
    );
    let line = format!("{}rm x", "busybox find . -exec ".repeat(2_000));
    let _ = analyse(&line);
}

const INPUT_AS_CODE: &[Case] = &[
    (
        "find . -exec sh -c 'echo {}' \\;",
        &["find . -exec sh -c echo {} ;", "echo {}"],
        &[],
        true,
    ),
    (
        "find . -exec bash -c 'cat \"$1\"' _ {} \\;",
        &["find . -exec bash -c cat \"$1\" _ {} ;", "cat $1"],
        &[],
        false,
    ),
    (
        "xargs -I % sh -c 'echo %'",
        &["xargs -I % sh -c echo %", "echo %"],
        &[],
        true,
    ),
    (
        "xargs -I{} sh -c 'echo {}'",
        &["xargs -I{} sh -c echo {}", "echo {}"],
        &[],
        true,
    ),
    (
        "xargs -i sh -c 'echo {}'",
        &["xargs -i sh -c echo {}", "echo {}"],
        &[],
        true,
    ),
    (
        "xargs --replace=@ bash -c 'echo @'",
        &["xargs --replace=@ bash -c echo @", "echo @"],
        &[],
        true,
    ),
    (
        "xargs -I % sh -c 'cp \"$1\" d' _ %",
        &["xargs -I % sh -c cp \"$1\" d _ %", "cp $1 d"],
        &[],
        false,
    ),
    ("xargs sh -c", &["xargs sh -c", "sh -c"], &[], true),
    (
        "xargs -0 bash -ec",
        &["xargs -0 bash -ec", "bash -ec"],
        &[],
        true,
    ),
    ("xargs sh", &["xargs sh", "sh"], &[], true),
    (
        "xargs sh -c 'echo \"$@\"' _",
        &["xargs sh -c echo \"$@\" _", "echo $@"],
        &[],
        false,
    ),
];

#[test]
fn input_run_as_shell_code_is_opaque() {
    check(INPUT_AS_CODE);
}
