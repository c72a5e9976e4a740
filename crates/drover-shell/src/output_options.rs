//! Options that name a file the program writes (`git diff --output=FILE`, `curl -o FILE`,
//! `sort -o FILE`, `gcc -o FILE` …): writes, judged like `>` (Edit rules, confinement,
//! the `.git` rule). One table, one place; a test per entry.
//!
//! For a program not in the table, `-o VALUE`, `--output[=]VALUE`, `--output-file`,
//! `--out`, `--log-file` are writes when the value looks like a path (it has a `/` or a
//! file extension), except for programs known to use `-o` for something else (`grep -o`
//! prints only the match).

/// A program's options that take the name of a file or directory it writes.
struct Entry {
    program: &'static str,
    /// Options whose value is written (`-o`, `--output`); long ones also as `--opt=VALUE`.
    options: &'static [&'static str],
}

const TABLE: &[Entry] = &[
    Entry {
        program: "git",
        options: &["--output", "-o", "--output-directory"],
    },
    Entry {
        program: "curl",
        options: &[
            "-o",
            "--output",
            "-D",
            "--dump-header",
            "-c",
            "--cookie-jar",
            "--trace",
            "--trace-ascii",
            "--stderr",
            "--libcurl",
            "--etag-save",
            "--output-dir",
        ],
    },
    Entry {
        program: "wget",
        options: &[
            "-O",
            "--output-document",
            "-o",
            "--output-file",
            "-a",
            "--append-output",
            "-P",
            "--directory-prefix",
        ],
    },
    Entry {
        program: "sort",
        options: &["-o", "--output"],
    },
    Entry {
        program: "tar",
        options: &["-f", "--file", "-C", "--directory"],
    },
    Entry {
        program: "unzip",
        options: &["-d"],
    },
    Entry {
        program: "cargo",
        options: &["--target-dir", "--out-dir", "--artifact-dir", "--root"],
    },
    Entry {
        program: "rustc",
        options: &["-o", "--out-dir"],
    },
    Entry {
        program: "npm",
        options: &["--prefix", "--cache", "--pack-destination"],
    },
    Entry {
        program: "pip",
        options: &[
            "-t", "--target", "--prefix", "--root", "-d", "--dest", "--log", "--src", "--report",
        ],
    },
    Entry {
        program: "pip3",
        options: &[
            "-t", "--target", "--prefix", "--root", "-d", "--dest", "--log", "--src", "--report",
        ],
    },
];

/// Compilers and linkers: `-o FILE` (also attached, `-oFILE`).
const COMPILERS: &[&str] = &[
    "gcc", "g++", "cc", "c++", "clang", "clang++", "ld", "as", "tcc", "zig", "go", "javac",
];

/// Generic output options of programs not in the table.
const GENERIC: &[&str] = &[
    "-o",
    "--output",
    "--output-file",
    "--out",
    "--out-file",
    "--outfile",
    "--log-file",
    "--logfile",
];

/// Programs whose `-o` (or `--output`) is not a file.
const NOT_FILES: &[&str] = &[
    "grep", "egrep", "fgrep", "rg", "ag", "ls", "ps", "cut", "mount", "ssh", "scp", "sftp", "jq",
    "yq", "column", "df", "lsblk", "findmnt", "top", "htop", "pgrep", "ip", "echo", "printf",
];

/// The indexes of `argv`'s words that name a file the program writes through an option,
/// with the value's text when it is attached (`--output=FILE`, `-oFILE`).
pub(super) fn written(argv: &[String]) -> Vec<Written> {
    let Some(first) = argv.first() else {
        return Vec::new();
    };
    let mut program = first.rsplit('/').next().unwrap_or(first).to_string();
    let mut start = 1;
    // `python -m pip install --target d`: the module's options.
    if program.starts_with("python")
        && let Some(index) = argv.iter().position(|a| a == "-m")
        && let Some(module) = argv.get(index + 1)
    {
        program = module.clone();
        start = index + 2;
    }
    let (options, generic): (&[&str], bool) =
        match TABLE.iter().find(|entry| entry.program == program) {
            Some(entry) => (entry.options, false),
            None if COMPILERS.contains(&program.as_str()) => (&["-o"], false),
            None if NOT_FILES.contains(&program.as_str()) => return Vec::new(),
            None => (GENERIC, true),
        };
    let tar = tar_mode(&program, &argv[start.min(argv.len())..]);
    let mut found = Vec::new();
    let mut index = start;
    while index < argv.len() {
        let arg = &argv[index];
        if arg == "--" {
            break;
        }
        if let Some(mode) = &tar
            && arg.starts_with('-')
            && !arg.starts_with("--")
        {
            // `-czf a.tgz`, `-xfa.tar`: f (the archive, written when creating) and C (the
            // directory, written when extracting) take the rest or the next word.
            for (letter, writes) in [('f', mode.creating), ('C', mode.extracting)] {
                if let Some(at) = arg[1..].find(letter).filter(|_| writes) {
                    let rest = &arg[1 + at + 1..];
                    if rest.is_empty() {
                        if index + 1 < argv.len() {
                            found.push(Written::Word(index + 1));
                        }
                    } else {
                        found.push(Written::Attached(index, rest.to_string()));
                    }
                }
            }
        } else if let Some((name, value)) = arg.split_once('=')
            && name.starts_with("--")
            && options.contains(&name)
            && tar.as_ref().is_none_or(|mode| mode.writes(name))
        {
            found.push(Written::Attached(index, value.to_string()));
        } else if options.contains(&arg.as_str())
            && tar.as_ref().is_none_or(|mode| mode.writes(arg))
        {
            if index + 1 < argv.len() {
                found.push(Written::Word(index + 1));
            }
            index += 1;
        } else if let Some(value) = attached_short(arg, options, &program) {
            found.push(Written::Attached(index, value));
        }
        index += 1;
    }
    if generic {
        found.retain(|written| looks_like_path(written.text(argv)));
    }
    found
}

/// A written file named by an option: a whole word, or a value attached to the option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Written {
    /// The word at this index is the file.
    Word(usize),
    /// The file is attached to the option in the word at this index.
    Attached(usize, String),
}

impl Written {
    pub(super) fn text<'a>(&'a self, argv: &'a [String]) -> &'a str {
        match self {
            Written::Word(index) => argv.get(*index).map_or("", String::as_str),
            Written::Attached(_, value) => value,
        }
    }
}

/// What a tar command does: its archive is written when creating, its `-C` directory
/// when extracting.
struct TarMode {
    creating: bool,
    extracting: bool,
}

impl TarMode {
    fn writes(&self, option: &str) -> bool {
        match option {
            "-f" | "--file" => self.creating,
            _ => self.extracting,
        }
    }
}

fn tar_mode(program: &str, args: &[String]) -> Option<TarMode> {
    if program != "tar" {
        return None;
    }
    let bundles: Vec<&str> = args
        .iter()
        .filter(|a| a.starts_with('-') && !a.starts_with("--"))
        .map(String::as_str)
        // Old style: the first word is a bundle without a dash (`tar czf a.tgz src`).
        .chain(
            args.first()
                .filter(|a| !a.starts_with('-'))
                .map(String::as_str),
        )
        .collect();
    let has = |letters: &[char], long: &[&str]| {
        bundles.iter().any(|b| b.contains(letters))
            || args.iter().any(|a| long.contains(&a.as_str()))
    };
    Some(TarMode {
        creating: has(
            &['c', 'r', 'u', 'A'],
            &["--create", "--append", "--update", "--catenate"],
        ),
        extracting: has(&['x'], &["--extract", "--get"]),
    })
}

/// `-oFILE` for a single-letter option of the table (compilers, sort, curl …), and tar's
/// bundles are left alone (`-czf` takes the next word: handled as `-f` is not matched).
fn attached_short(arg: &str, options: &[&str], program: &str) -> Option<String> {
    if program == "tar" || arg.starts_with("--") || arg.len() <= 2 || !arg.starts_with('-') {
        return None;
    }
    let option = &arg[..2];
    options.contains(&option).then(|| arg[2..].to_string())
}

/// A value that names a file: it has a `/`, or ends in a file extension, and holds no
/// pattern characters.
fn looks_like_path(value: &str) -> bool {
    if value.is_empty() || value.contains(['*', '[', '|', '(', '^', '$', ' ', '\\']) {
        return false;
    }
    value.contains('/')
        || value.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(line: &str) -> Vec<String> {
        let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        written(&argv)
            .iter()
            .map(|w| w.text(&argv).to_string())
            .collect()
    }

    #[test]
    fn every_entry_of_the_table_is_a_write() {
        let cases = [
            (
                "git diff --no-index --output=scripts/ci.sh a b",
                "scripts/ci.sh",
            ),
            ("git diff --output scripts/ci.sh", "scripts/ci.sh"),
            ("git format-patch -o out HEAD~1", "out"),
            ("git archive -o a.tar HEAD", "a.tar"),
            ("curl -o i.sh http://127.0.0.1:9", "i.sh"),
            ("curl --output=i.sh http://127.0.0.1:9", "i.sh"),
            ("curl -D h.txt http://127.0.0.1:9", "h.txt"),
            ("curl -c jar http://127.0.0.1:9", "jar"),
            ("curl --output-dir d -O http://127.0.0.1:9/f", "d"),
            ("wget -O x.sh http://127.0.0.1:9", "x.sh"),
            ("wget --output-document=x.sh http://127.0.0.1:9", "x.sh"),
            ("wget -o log http://127.0.0.1:9", "log"),
            ("wget -P dir http://127.0.0.1:9", "dir"),
            ("sort -o out.txt in.txt", "out.txt"),
            ("sort --output=out.txt in.txt", "out.txt"),
            ("sort -oout.txt in.txt", "out.txt"),
            ("tar -czf a.tgz src", "a.tgz"),
            ("tar --file=a.tar -c src", "a.tar"),
            ("tar -xf a.tar -C dest", "dest"),
            ("tar -xzfa.tgz -C dest", "dest"),
            ("tar -cf out.tar src", "out.tar"),
            ("tar --create --file out.tar src", "out.tar"),
            ("unzip a.zip -d dest", "dest"),
            ("cargo build --target-dir /tmp/t", "/tmp/t"),
            ("cargo install --root r x", "r"),
            ("rustc -o bin main.rs", "bin"),
            ("gcc -o a.out x.c", "a.out"),
            ("cc -oa.out x.c", "a.out"),
            (
                "clang x.c -o .git/hooks/pre-commit",
                ".git/hooks/pre-commit",
            ),
            ("npm install --prefix p", "p"),
            ("pip install --target t x", "t"),
            ("pip3 download -d d x", "d"),
            ("python3 -m pip install -t t x", "t"),
            ("mytool --output=out/report.json", "out/report.json"),
            ("mytool -o build/x.bin", "build/x.bin"),
            ("mytool --log-file run.log", "run.log"),
        ];
        for (line, target) in cases {
            assert!(
                targets(line).contains(&target.to_string()),
                "{line}: {:?}",
                targets(line)
            );
        }
    }

    #[test]
    fn options_that_are_not_files_are_not_writes() {
        for line in [
            "grep -o a.b file.txt",
            "ls -o src/",
            "mytool -o fast",
            "mytool --output json",
            "ps -o pid,cmd",
            "ssh -o StrictHostKeyChecking=no host",
            "git log --oneline",
            "cargo test -- -o x.txt",
            "tar -xf a.tar",
            "tar -tzf a.tgz",
        ] {
            assert!(targets(line).is_empty(), "{line}: {:?}", targets(line));
        }
        // Creating, `-C` is where tar reads from.
        assert_eq!(targets("tar -czf a.tgz -C src ."), ["a.tgz"]);
    }
}
