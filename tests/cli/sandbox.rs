//! The OS sandbox around Bash, end to end: a scripted model runs commands that try to
//! write outside the workspace, read a denied file, open a socket and print the
//! environment; the sandbox (on by default) stops each, and the spec's explicit opt-ins
//! (`sandbox: {network: true}`, `env.pass`, `sandbox: off`) lift exactly what they say.

use crate::common;

use std::path::{Path, PathBuf};

use common::{drover, events, transcript, write_spec};
use serde_json::Value;

const FAKE_KEY: &str = "fake-key-value-9f8e7d";
const SECRET: &str = "TOPSECRET-5c4b3a";

struct Setup {
    dir: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
    secret: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ws = root.join("ws");
    let outside = root.join("outside");
    std::fs::create_dir(&ws).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::fs::create_dir(root.join("secrets")).unwrap();
    let secret = root.join("secrets/secret.txt");
    std::fs::write(&secret, SECRET).unwrap();
    Setup {
        dir,
        ws,
        outside,
        secret,
    }
}

/// Put `body` in a script in the workspace and return the command that runs it: the
/// policy sees only `bash NAME`, so whatever the script does is the sandbox's to stop.
fn script(setup: &Setup, name: &str, body: &str) -> String {
    std::fs::write(setup.ws.join(name), format!("{body}\n")).unwrap();
    format!("bash {name}")
}

/// A spec whose model runs each of `commands` as its own Bash call, then stops.
fn spec(setup: &Setup, extra: &str, commands: &[String]) -> PathBuf {
    let mut script = String::new();
    for command in commands {
        let call = serde_json::json!([{ "name": "Bash", "input": { "command": command } }]);
        script.push_str(&format!("    - tool_calls: {call}\n"));
    }
    script.push_str("    - text: done\n");
    let body = format!(
        "version: 1\nname: sandboxed\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n{script}permissions:\n  allow: [Bash]\n  deny: [\"Read(/{})\"]\n{extra}",
        setup.secret.display()
    );
    write_spec(setup.dir.path(), "task.yaml", &body)
}

/// Run the spec with FAKE_API_KEY in drover's environment; the transcript's lines and
/// its raw text.
fn run(setup: &Setup, spec: &Path) -> (Vec<Value>, String) {
    let artifacts = setup.dir.path().join("out");
    drover()
        .env("FAKE_API_KEY", FAKE_KEY)
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .assert()
        .code(0);
    let path = artifacts.join("sandboxed/transcript.jsonl");
    (transcript(&path), std::fs::read_to_string(&path).unwrap())
}

fn results(lines: &[Value]) -> Vec<(bool, String)> {
    events(lines, "tool_result")
        .iter()
        .map(|r| {
            (
                r["is_error"].as_bool().unwrap(),
                r["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn bash_is_confined_by_default() {
    let setup = setup();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let escaped = setup.outside.join("escaped.txt");
    let commands = [
        script(
            &setup,
            "escape.sh",
            &format!("echo x > {}", escaped.display()),
        ),
        "echo inside > made.txt && cat made.txt".to_string(),
        script(
            &setup,
            "peek.sh",
            &format!("cat {}", setup.secret.display()),
        ),
        script(
            &setup,
            "dial.sh",
            &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
        ),
        "env".to_string(),
        "echo \"$TMPDIR\" && touch \"$TMPDIR/scratch\" && echo writable".to_string(),
    ];
    let (lines, raw) = run(&setup, &spec(&setup, "", &commands));
    let sandbox = &lines[0]["sandbox"];
    assert_eq!(sandbox["enabled"], true, "{sandbox}");
    assert_eq!(sandbox["network"], false);
    let results = results(&lines);
    assert_eq!(results.len(), commands.len(), "{results:?}");

    let (error, text) = &results[0];
    // Landlock refuses the write (EACCES); as root, the read-only mounts refuse it first
    // (EROFS). Either way the OS, not a rule.
    assert!(
        *error && (text.contains("Permission denied") || text.contains("Read-only file system")),
        "{text}"
    );
    assert!(
        !text.contains("Permission denied by"),
        "the OS stopped it, not the rules: {text}"
    );
    assert!(
        !escaped.exists(),
        "the write outside the workspace was stopped"
    );

    assert_eq!(results[1], (false, "inside".to_string()));
    assert!(setup.ws.join("made.txt").is_file());

    let (error, text) = &results[2];
    assert!(*error && text.contains("Permission denied"), "{text}");
    assert!(!text.contains("Permission denied by"), "{text}");
    assert!(!raw.contains(SECRET), "the denied file's content leaked");

    let (error, text) = &results[3];
    assert!(*error && !text.contains("connected"), "{text}");

    let (error, env) = &results[4];
    assert!(!error);
    assert!(env.contains("DROVER=1"), "{env}");
    assert!(
        !env.contains("FAKE_API_KEY") && !raw.contains(FAKE_KEY),
        "{env}"
    );

    let (error, text) = &results[5];
    assert!(!error, "{text}");
    let tmpdir = text.lines().next().unwrap();
    assert!(tmpdir.contains("drover-tmp-"), "{tmpdir}");
    assert!(text.ends_with("writable"));
    assert!(
        !Path::new(tmpdir).exists(),
        "the private TMPDIR is removed at the end"
    );
}

#[test]
fn the_spec_can_open_the_network_and_pass_a_secret() {
    let setup = setup();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let commands = [
        script(
            &setup,
            "dial.sh",
            &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
        ),
        "echo \"key=$FAKE_API_KEY\"".to_string(),
        script(
            &setup,
            "peek.sh",
            &format!("cat {}", setup.secret.display()),
        ),
    ];
    let extra = "sandbox: { network: true }\nenv:\n  pass: [FAKE_API_KEY]\n";
    let (lines, _) = run(&setup, &spec(&setup, extra, &commands));
    assert_eq!(lines[0]["sandbox"]["network"], true);
    let results = results(&lines);
    assert_eq!(results[0], (false, "connected".to_string()));
    assert_eq!(results[1], (false, format!("key={FAKE_KEY}")));
    assert!(results[2].0, "reads stay denied: {:?}", results[2]);
}

#[test]
fn sandbox_off_runs_commands_unsandboxed() {
    let setup = setup();
    let escaped = setup.outside.join("escaped.txt");
    let commands = [script(
        &setup,
        "escape.sh",
        &format!("echo x > {} && echo wrote", escaped.display()),
    )];
    let (lines, _) = run(&setup, &spec(&setup, "sandbox: off\n", &commands));
    assert_eq!(lines[0]["sandbox"], serde_json::json!({"enabled": false}));
    assert_eq!(results(&lines)[0], (false, "wrote".to_string()));
    assert!(escaped.is_file());
}
