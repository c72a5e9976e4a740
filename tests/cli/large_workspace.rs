//! The workspace at scale, end to end: a git repository whose diff covers every kind of
//! change and `git apply`s on a pristine copy, attempts to hide changes from it, and a
//! Read of a huge file that stays small in memory.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{assert_exit, bash_task, drover, peak_kib, run_spec, summary, write_spec};

fn git(dir: &Path, args: &[&str]) {
    let output = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// Every file below `root` except `.git/`, with its mode and content (symlinks: target).
fn tree(root: &Path) -> Vec<(String, u32, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            if entry.file_name() == ".git" {
                continue;
            }
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                files.push((rel, 0o120000, target.display().to_string().into_bytes()));
            } else {
                let mode = entry.metadata().unwrap().permissions().mode() & 0o111;
                files.push((rel, mode, std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_kind_of_change_in_a_git_repository_applies_on_a_pristine_copy() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    for i in 0..2000 {
        write(
            &ws,
            &format!("src/m{}/f{i}.txt", i % 40),
            &format!("file {i}\n"),
        );
    }
    write(&ws, ".gitignore", "build/\n*.log\n");
    write(&ws, "build/old.o", "object\n");
    write(&ws, "run.sh", "#!/bin/sh\n");
    write(&ws, "untracked.txt", "not committed\n");
    let script = "\
echo changed >> src/m1/f1.txt
echo added > src/new.txt
rm src/m2/f2.txt
chmod +x run.sh
mv src/m3/f3.txt src/moved.txt
ln -s src/m4/f4.txt link
printf 'bin\\0ary' > src/blob.bin
echo more >> untracked.txt
mkdir -p src/m5/node_modules && echo hidden > src/m5/node_modules/x.js
printf 'Signature: 8a477f597d28d172789f06886806bc55' > src/m6/CACHEDIR.TAG
echo tagged >> src/m6/f6.txt
echo '*' > src/m7/.gitignore
echo ignored-by-agent >> src/m7/f7.txt
echo counted > build/new.o
echo counted > trace.log
";
    write(&ws, "change.sh", script);
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "."]);
    git(&ws, &["rm", "-q", "--cached", "untracked.txt"]);
    git(&ws, &["commit", "-qm", "start"]);
    let pristine = dir.path().join("pristine");
    common::copy_tree(&ws, &pristine);
    std::fs::write(pristine.join("run.sh"), "#!/bin/sh\n").unwrap();
    let spec = write_spec(
        dir.path(),
        "t.yaml",
        &bash_task("big", "sh change.sh", "workspace: ws\n"),
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let summary = summary(&artifacts);
    let changed: Vec<&str> = summary["tasks"][0]["files_changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(
        changed,
        [
            "link",
            "run.sh",
            "src/blob.bin",
            "src/m1/f1.txt",
            "src/m2/f2.txt",
            "src/m3/f3.txt",
            "src/m5/node_modules/x.js",
            "src/m6/CACHEDIR.TAG",
            "src/m6/f6.txt",
            "src/m7/.gitignore",
            "src/m7/f7.txt",
            "src/moved.txt",
            "src/new.txt",
            "untracked.txt"
        ],
        "{summary}"
    );
    assert_eq!(summary["tasks"][0]["ignored_changes"], 2, "{summary}");
    // The patch turns the pristine copy into the agent's tree, byte for byte (minus
    // what the starting rules leave out).
    let patch = artifacts.join("big/diff.patch");
    let applied = Command::new("git")
        .arg("apply")
        .arg(&patch)
        .current_dir(&pristine)
        .output()
        .unwrap();
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    for ignored in ["build/new.o", "trace.log"] {
        std::fs::remove_file(ws.join(ignored)).unwrap();
    }
    assert!(
        tree(&pristine) == tree(&ws),
        "the trees differ after git apply"
    );
}

#[test]
fn a_read_with_a_limit_of_a_huge_file_stays_small() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    // 300 MiB: text at the start, then a hole (no disk space used).
    let path = ws.join("huge.log");
    // More text than binary detection looks at (8 KiB), then the hole's NUL bytes.
    let text = format!(
        "first\nsecond\nthird\nfourth\nfifth\nsixth\n{}",
        "more text\n".repeat(2000)
    );
    std::fs::write(&path, text).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(300 * 1024 * 1024).unwrap();
    drop(file);
    let spec = write_spec(
        dir.path(),
        "t.yaml",
        "version: 1\nname: huge\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Read, input: { file_path: huge.log, limit: 5 } }]\n    - text: done\npermissions:\n  allow: [Read]\n",
    );
    let artifacts = dir.path().join("out");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("drover"))
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .env_remove("GITHUB_ACTIONS")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = peak_kib(child.id()) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(0));
    assert!(peak > 0, "no memory figure was read");
    assert!(
        peak < 128 * 1024,
        "peak RSS {peak} KiB for a Read of 5 lines"
    );
    let lines = common::transcript(&artifacts.join("huge/transcript.jsonl"));
    let result = common::events(&lines, "tool_result")[0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.starts_with("1\tfirst\n2\tsecond\n"), "{result}");
    assert!(result.contains("5\tfifth\n"), "{result}");
    assert!(!result.contains("sixth"), "{result}");
}

/// A version 2 git index with one entry: `name` as blob `id`, with the metadata of the
/// file at `path` as it is now (what a forger would write to vouch for the file).
fn forged_index(path: &Path, name: &str, id: [u8; 20]) -> Vec<u8> {
    use sha1::Digest;
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).unwrap();
    let mut entry = Vec::new();
    for value in [
        meta.ctime() as u32,
        meta.ctime_nsec() as u32,
        meta.mtime() as u32,
        meta.mtime_nsec() as u32,
        meta.dev() as u32,
        meta.ino() as u32,
        0o100644,
        meta.uid(),
        meta.gid(),
        meta.size() as u32,
    ] {
        entry.extend_from_slice(&value.to_be_bytes());
    }
    entry.extend_from_slice(&id);
    entry.extend_from_slice(&(name.len() as u16).to_be_bytes());
    entry.extend_from_slice(name.as_bytes());
    entry.push(0);
    while entry.len() % 8 != 0 {
        entry.push(0);
    }
    let mut index = b"DIRC".to_vec();
    index.extend_from_slice(&2u32.to_be_bytes());
    index.extend_from_slice(&1u32.to_be_bytes());
    index.extend_from_slice(&entry);
    let checksum = sha1::Sha1::digest(&index);
    index.extend_from_slice(&checksum);
    index
}

#[test]
fn an_index_forged_by_an_earlier_task_cannot_hide_a_later_tasks_change() {
    use sha1::Digest;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    write(&ws, "x.py", "print('original')\n");
    let payload = "print('payload')\n";
    write(&ws, "payload.txt", payload);
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "x.py"]);
    git(&ws, &["commit", "-qm", "start"]);
    git(&ws, &["hash-object", "-w", "payload.txt"]);
    std::thread::sleep(Duration::from_millis(20));
    git(&ws, &["update-index", "--refresh"]);
    let mut hasher = sha1::Sha1::new();
    hasher.update(format!("blob {}\0", payload.len()).as_bytes());
    hasher.update(payload.as_bytes());
    let payload_id: [u8; 20] = hasher.finalize().into();
    // The first task's agent puts an index in place that vouches for x.py as the payload
    // (x.py itself untouched, so its metadata still matches the forged entry).
    std::fs::write(
        ws.join("forged-index"),
        forged_index(&ws.join("x.py"), "x.py", payload_id),
    )
    .unwrap();
    write(&ws, "forge.sh", "cp forged-index .git/index\n");
    write(&ws, "change.sh", "cp payload.txt x.py\n");
    for (name, script) in [("t1", "forge.sh"), ("t2", "change.sh")] {
        write_spec(
            dir.path(),
            &format!("{name}.yaml"),
            &bash_task(name, &format!("sh {script}"), "workspace: ws\n"),
        );
    }
    let artifacts = dir.path().join("out");
    let output = drover()
        .current_dir(dir.path())
        .args(["run", "t1.yaml", "t2.yaml", "--artifacts"])
        .arg(&artifacts)
        .output()
        .unwrap();
    assert_exit(&output, 0);
    let summary = summary(&artifacts);
    assert_eq!(
        summary["tasks"][1]["files_changed"],
        serde_json::json!(["x.py"]),
        "{summary}"
    );
    let patch = std::fs::read_to_string(artifacts.join("t2/diff.patch")).unwrap();
    assert!(
        patch.contains("-print('original')\n+print('payload')\n"),
        "{patch}"
    );
}
