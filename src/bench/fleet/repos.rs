//! The fleet's repositories: `count` bare repositories of `files` files and `commits`
//! commits each, made with `git fast-import` (one process a repository, no work tree),
//! with text that compresses as source does, so a clone transfers a real pack. Built
//! once under the scratch directory and reused while their shape is the same.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The shape of the fleet's repositories.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub count: usize,
    pub files: usize,
    pub commits: usize,
}

impl Shape {
    /// The name of repository `index` (`svc-00` …), as the matrix and the daemon see it.
    pub(super) fn name(index: usize) -> String {
        format!("svc-{index:02}")
    }

    fn stamp(&self) -> String {
        format!("{} files, {} commits\n", self.files, self.commits)
    }
}

/// `served/<name>.git` for every repository of `shape`, built unless a build of the same
/// shape is there. Returns the directory to serve.
pub(super) fn build(dir: &Path, shape: Shape) -> std::io::Result<PathBuf> {
    let served = dir.join("served");
    let stamp = dir.join("served.shape");
    let complete =
        (0..shape.count).all(|i| served.join(format!("{}.git", Shape::name(i))).is_dir());
    if complete && std::fs::read_to_string(&stamp).is_ok_and(|s| s == shape.stamp()) {
        return Ok(served);
    }
    if served.exists() {
        std::fs::remove_dir_all(&served)?;
    }
    std::fs::create_dir_all(&served)?;
    for index in 0..shape.count {
        let repository = served.join(format!("{}.git", Shape::name(index)));
        git(
            &served,
            &["init", "-q", "--bare", "-b", "main", &path_arg(&repository)],
        )?;
        import(&repository, shape, index)?;
        // A git daemon serves only repositories marked for export (or --export-all).
        std::fs::write(repository.join("git-daemon-export-ok"), "")?;
    }
    std::fs::write(&stamp, shape.stamp())?;
    Ok(served)
}

fn path_arg(path: &Path) -> String {
    path.display().to_string()
}

/// Feed `git fast-import` the history of repository `index`: the first commit adds every
/// file, each later one rewrites a twentieth of them.
fn import(repository: &Path, shape: Shape, index: usize) -> std::io::Result<()> {
    let mut child = Command::new("git")
        .args(["fast-import", "--quiet"])
        .current_dir(repository)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()?;
    let mut text = Text::new(index as u64 + 1);
    if let Some(stdin) = child.stdin.as_mut() {
        let mut stream = std::io::BufWriter::new(stdin);
        for commit in 0..shape.commits.max(1) {
            let changed: Vec<usize> = if commit == 0 {
                (0..shape.files).collect()
            } else {
                let step = 20;
                (commit % step..shape.files).step_by(step).collect()
            };
            let message = format!("change {commit}\n");
            write!(
                stream,
                "commit refs/heads/main\ncommitter Bench <bench@example.invalid> {} +0000\ndata {}\n{message}",
                1_700_000_000 + commit * 60,
                message.len()
            )?;
            for file in changed {
                let body = text.file(file, commit);
                write!(
                    stream,
                    "M 100644 inline src/m{:02}/f{file:05}.rs\ndata {}\n",
                    file % 50,
                    body.len()
                )?;
                stream.write_all(body.as_bytes())?;
                stream.write_all(b"\n")?;
            }
        }
        stream.flush()?;
    }
    // Closing stdin ends the stream.
    drop(child.stdin.take());
    let status = child.wait()?;
    if !status.success() {
        return Err(std::io::Error::other(format!(
            "git fast-import into {} failed ({status})",
            repository.display()
        )));
    }
    Ok(())
}

fn git(dir: &Path, args: &[&str]) -> std::io::Result<()> {
    let status = Command::new("git").args(args).current_dir(dir).status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "git {} failed ({status})",
            args.join(" ")
        )))
    }
}

/// Source-like text from a small generator: identifiers from a fixed vocabulary, so it
/// compresses about as code does (3-5×), and differs between files and commits.
struct Text {
    state: u64,
}

const WORDS: &[&str] = &[
    "let", "fn", "match", "value", "result", "config", "request", "handler", "error", "self",
    "return", "Some", "None", "Ok", "Err", "map", "iter", "collect", "into", "String", "Vec",
    "usize", "u64", "async", "await", "service", "client", "retry",
];

impl Text {
    fn new(seed: u64) -> Text {
        Text {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        }
    }

    fn next(&mut self) -> u64 {
        // xorshift64*: deterministic, fast, good enough for text.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// About 1.5 KB of text for `file` as of `commit`.
    fn file(&mut self, file: usize, commit: usize) -> String {
        let mut out = format!("// f{file:05}, revision {commit}\n");
        for line in 0..40 {
            out.push_str("    ");
            for _ in 0..5 {
                let word = WORDS[(self.next() % WORDS.len() as u64) as usize];
                out.push_str(word);
                out.push(' ');
            }
            out.push_str(&format!("{};\n", self.next() % 1000 + line));
        }
        out
    }
}
