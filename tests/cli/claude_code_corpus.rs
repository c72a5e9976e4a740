//! The corpus of real Claude Code configurations in fixtures/claude-code (SOURCES.md names
//! each file's repository, commit and licence), and the rule forms Claude Code documents,
//! through `drover policy check`: every rule decides as Claude Code's documentation says,
//! for an input it matches and one it does not, or is refused at its line and column with
//! what to write. fixtures/claude-code/expectations.json is the table; the hook, agent and
//! MCP files are driven by claude_code_corpus_runs.rs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{self, drover, write_spec};

/// The corpus directory.
pub(crate) fn corpus() -> PathBuf {
    common::repo().join("fixtures/claude-code")
}

/// The table of expectations, parsed.
pub(crate) fn expectations() -> Value {
    let text = std::fs::read_to_string(corpus().join("expectations.json")).unwrap();
    serde_json::from_str(&text).expect("expectations.json is JSON")
}

/// One section of the table (`permissions`, `hooks`, …).
pub(crate) fn section<'a>(table: &'a Value, key: &str) -> &'a [Value] {
    table[key]
        .as_array()
        .unwrap_or_else(|| panic!("expectations.json has no {key} list"))
}

/// A string field of a table row.
pub(crate) fn text<'a>(row: &'a Value, key: &str) -> &'a str {
    row[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not a string in {row}"))
}

/// Where the table's `{ws}`, `{dir}` and `{home}` point in one test.
pub(crate) struct Places {
    pub(crate) dir: PathBuf,
    pub(crate) ws: PathBuf,
    pub(crate) home: PathBuf,
}

impl Places {
    /// A workspace `ws` and a home `home` in `dir`, both made.
    pub(crate) fn new(dir: &Path) -> Places {
        let places = Places {
            dir: dir.to_path_buf(),
            ws: dir.join("ws"),
            home: dir.join("home"),
        };
        std::fs::create_dir_all(&places.ws).unwrap();
        std::fs::create_dir_all(&places.home).unwrap();
        places
    }

    pub(crate) fn fill_str(&self, text: &str) -> String {
        // `{dir}` is absolute: `//{dir}/x` is the rule form for an absolute path.
        text.replace("{ws}", &self.ws.display().to_string())
            .replace("{home}", &self.home.display().to_string())
            .replace(
                "{dir}",
                self.dir.display().to_string().trim_start_matches('/'),
            )
    }

    /// `value` with the places filled in, in every string.
    pub(crate) fn fill(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => {
                // In an input path `{dir}` keeps its leading slash.
                let s = s.replace("{dir}", &self.dir.display().to_string());
                Value::String(self.fill_str(&s))
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| self.fill(v)).collect()),
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), self.fill(v))).collect())
            }
            other => other.clone(),
        }
    }
}

/// Permission rules as drover's spec takes them. Headless, an `ask` rule is a deny:
/// nobody is there to answer.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    pub(crate) allow: Vec<String>,
    pub(crate) deny: Vec<String>,
    /// The settings file the spec reads with `permissions_from:` (its rules are in
    /// `allow` and `deny` too, for the coverage check, but not copied into the spec).
    pub(crate) from: Option<PathBuf>,
    /// How many of `allow` and `deny` come from `from`, at their start.
    pub(crate) borrowed: (usize, usize),
}

impl Rules {
    fn all(&self) -> impl Iterator<Item = &String> {
        self.allow.iter().chain(&self.deny)
    }
}

fn strings(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .map(|v| v.as_str().expect("a rule is a string").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The rules of a Claude Code settings file's `permissions` (`allow`; `deny` and `ask`
/// both as denies), the spec reading the file itself with `permissions_from:`.
pub(crate) fn rules_of_settings(path: &Path) -> Rules {
    let text = std::fs::read_to_string(path).unwrap();
    let settings: Value = serde_json::from_str(&text).unwrap();
    let permissions = &settings["permissions"];
    let mut deny = strings(&permissions["deny"]);
    deny.extend(strings(&permissions["ask"]));
    let allow = strings(&permissions["allow"]);
    Rules {
        borrowed: (allow.len(), deny.len()),
        allow,
        deny,
        from: Some(path.to_path_buf()),
    }
}

/// A group's rules: its settings file's (when `source` is a corpus file) and its own.
pub(crate) fn rules_of_group(group: &Value, places: &Places) -> Rules {
    let source = text(group, "source");
    let mut rules = if source.starts_with("docs:") {
        Rules::default()
    } else {
        rules_of_settings(&corpus().join(source))
    };
    let fill = |list: Vec<String>| list.into_iter().map(|r| places.fill_str(&r));
    rules.allow.extend(fill(strings(&group["allow"])));
    rules.deny.extend(fill(strings(&group["deny"])));
    rules.deny.extend(fill(strings(&group["ask"])));
    rules
}

/// A spec in `dir` whose task `name` decides with `rules` (its settings file read with
/// `permissions_from:`, its own rules one a line: without a file, the first allow rule
/// is at line 8, column 7).
pub(crate) fn spec_with_rules(dir: &Path, name: &str, rules: &Rules) -> PathBuf {
    let list = |rules: &[String]| -> String {
        if rules.is_empty() {
            return " []\n".to_string();
        }
        rules
            .iter()
            .map(|rule| format!("\n    - {}", serde_json::to_string(rule).unwrap()))
            .collect::<String>()
            + "\n"
    };
    let from = match &rules.from {
        Some(path) => format!(
            "permissions_from: {}\n",
            serde_json::to_string(&path.display().to_string()).unwrap()
        ),
        None => String::new(),
    };
    let spec = format!(
        "version: 1\nname: {name}\nprompt: p\nworkspace: ws\nmodel: {{ provider: script, script: [ {{ text: done }} ] }}\n{from}permissions:\n  allow:{}  deny:{}",
        list(&rules.allow[rules.borrowed.0..]),
        list(&rules.deny[rules.borrowed.1..])
    );
    write_spec(dir, &format!("{name}.yaml"), &spec)
}

/// One row of a permission group: an input for `tool`, and what Claude Code decides.
pub(crate) struct Check {
    pub(crate) group: String,
    pub(crate) spec: PathBuf,
    pub(crate) rule: String,
    /// Whether the input is one the rule names (the row's `match`).
    pub(crate) names: bool,
    /// Whether the rule decides it in drover (not when the rule is left out).
    pub(crate) matches: bool,
    pub(crate) tool: String,
    pub(crate) input: Value,
    pub(crate) allow: bool,
}

impl Check {
    fn describe(&self) -> String {
        format!(
            "[{}] {} {} {} (rule {}, {})",
            self.group,
            if self.allow { "allow" } else { "deny" },
            self.tool,
            self.input,
            self.rule,
            if self.matches {
                "matching"
            } else {
                "not matching"
            }
        )
    }
}

/// What is wrong with drover's decision of `check`, if anything.
pub(crate) fn decide(check: &Check, places: &Places) -> Option<String> {
    let output = drover()
        .arg("policy")
        .arg("check")
        .arg("--spec")
        .arg(&check.spec)
        .arg("--tool")
        .arg(&check.tool)
        .arg("--input")
        .arg(check.input.to_string())
        .env("HOME", &places.home)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let Ok(decision) = serde_json::from_str::<Value>(&stdout) else {
        return Some(format!("{}: no decision: {stderr}", check.describe()));
    };
    let expected = if check.allow { "allow" } else { "deny" };
    let code = Some(if check.allow { 0 } else { 1 });
    if decision["decision"] != expected || output.status.code() != code {
        return Some(format!("{}: drover says {decision}", check.describe()));
    }
    // The rule that decided: for a command line allowed part by part, every rule used.
    let deciding = decision["rule"].as_str().unwrap_or_default();
    let named = deciding.split(", ").any(|rule| rule == check.rule);
    if named != check.matches {
        return Some(format!(
            "{}: the deciding rule is {deciding:?}",
            check.describe()
        ));
    }
    None
}

/// A file for every path the checks name inside the scratch directory: drover resolves
/// the paths it judges, and a file's parent must exist.
pub(crate) fn make_files(checks: &[Check], places: &Places) {
    for check in checks {
        if let Some(path) = check.input["file_path"].as_str() {
            let path = Path::new(path);
            if path.starts_with(&places.dir) {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, "a\n").unwrap();
            }
        }
    }
    std::fs::write(places.ws.join(".env"), "TOKEN=x\n").unwrap();
    std::fs::write(places.ws.join("README.md"), "a\n").unwrap();
}

/// Every rule of `rules` has a row it matches and a row it does not, and every row names
/// one of them.
fn coverage(group: &str, rules: &Rules, checks: &[&Check]) -> Vec<String> {
    let mut problems = Vec::new();
    for rule in rules.all() {
        for matches in [true, false] {
            if !checks.iter().any(|c| &c.rule == rule && c.names == matches) {
                let which = if matches { "matching" } else { "non-matching" };
                problems.push(format!("[{group}] rule {rule} has no {which} row"));
            }
        }
    }
    let known: BTreeSet<&String> = rules.all().collect();
    for check in checks {
        if !known.contains(&check.rule) {
            problems.push(format!("{}: not a rule of its group", check.describe()));
        }
    }
    problems
}

/// The checks of every permission group, each group's spec written; and what the table
/// misses.
fn checks_of(table: &Value, places: &Places) -> (Vec<Check>, Vec<String>) {
    let mut checks = Vec::new();
    let mut problems = Vec::new();
    for (index, group) in section(table, "permissions").iter().enumerate() {
        let source = text(group, "source").to_string();
        let rules = rules_of_group(group, places);
        let spec = spec_with_rules(&places.dir, &format!("rules{index}"), &rules);
        let first = checks.len();
        for row in section(group, "checks") {
            let rule = places.fill_str(text(row, "rule"));
            let matches = row["match"].as_bool().expect("match is true or false");
            // A rule read from the settings file that drover leaves out by design
            // decides nothing: the row's `from_file` says what drover decides instead.
            let from_file = row["from_file"]
                .as_str()
                .filter(|_| rules.allow[..rules.borrowed.0].contains(&rule));
            checks.push(Check {
                group: source.clone(),
                spec: spec.clone(),
                rule,
                names: matches,
                matches: matches && from_file.is_none(),
                tool: text(row, "tool").to_string(),
                input: places.fill(&row["input"]),
                allow: from_file.unwrap_or(text(row, "expect")) == "allow",
            });
        }
        let rows: Vec<&Check> = checks[first..].iter().collect();
        problems.extend(coverage(&source, &rules, &rows));
    }
    (checks, problems)
}

#[test]
fn every_rule_of_the_corpus_and_every_documented_form_decides_as_claude_code_says() {
    let dir = tempfile::tempdir().unwrap();
    let places = Places::new(dir.path());
    let table = expectations();
    let (checks, mut problems) = checks_of(&table, &places);
    assert!(checks.len() >= 90, "{} checks", checks.len());
    make_files(&checks, &places);
    // Two at a time: the machines that run the suite have two cores.
    let (left, right) = checks.split_at(checks.len() / 2);
    let found: Vec<String> = std::thread::scope(|scope| {
        let places = &places;
        let halves: Vec<_> = [left, right]
            .into_iter()
            .map(|half| {
                scope.spawn(move || {
                    half.iter()
                        .filter_map(|c| decide(c, places))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves
            .into_iter()
            .flat_map(|half| half.join().unwrap())
            .collect()
    });
    problems.extend(found);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn rule_forms_drover_cannot_apply_exactly_are_refused_at_their_line_with_what_to_write() {
    let dir = tempfile::tempdir().unwrap();
    Places::new(dir.path());
    let table = expectations();
    let refused = section(&table, "refused_rules");
    let specs: Vec<PathBuf> = refused
        .iter()
        .enumerate()
        .map(|(index, row)| {
            let rules = Rules {
                allow: vec![text(row, "rule").to_string()],
                ..Rules::default()
            };
            spec_with_rules(dir.path(), &format!("refused{index}"), &rules)
        })
        .collect();
    let output = drover().arg("validate").args(&specs).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for (index, row) in refused.iter().enumerate() {
        // The rule's own line and column, then what to write instead.
        let at = format!("refused{index}.yaml:8:7: ");
        let line = stderr
            .lines()
            .find(|line| line.contains(&at))
            .unwrap_or_else(|| panic!("{} is not refused at {at}:\n{stderr}", row["rule"]));
        assert!(line.contains(text(row, "says")), "{line}");
        assert!(line.contains(text(row, "rule")), "{line}");
    }
}
