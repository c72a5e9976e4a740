//! The walk over tree-sitter-bash's syntax tree that fills an [`Analysis`].
//!
//! Every node is visited, so commands hidden anywhere (inside `$(…)`, a heredoc body, an
//! `if` condition, a function body) are found; only `command`, redirection and a few
//! other nodes get special treatment. Recursion is bounded by [`MAX_DEPTH`], and the
//! left-nested chains of `&&`/`||` are walked iteratively so that long but flat lines
//! do not count as deep.
//!
//! Assignments and declarations are judged in [`declarations`], the files the line writes
//! are collected in [`writes`].

mod declarations;
mod node_kinds;
mod writes;

use std::ops::ControlFlow;
use std::time::Instant;

use tree_sitter::{Node, ParseOptions, Parser};

use super::runners;
use super::words::{self, Word};
use super::wrappers::{self, ShellScript};
use super::{Analysis, MAX_DEPTH, MAX_INPUT, Opaque, PARSE_TIME_LIMIT, SimpleCommand};

/// At most this many opaque reasons are kept; the first ones say enough.
const MAX_OPAQUE: usize = 64;
/// Source excerpts in [`Opaque`] are cut to this many characters.
const EXCERPT: usize = 80;

/// When parsing must stop, shared by nested `bash -c` analyses.
#[derive(Debug, Clone, Copy)]
pub(super) struct Deadline(Instant);

impl Deadline {
    pub(super) fn start() -> Self {
        Deadline(Instant::now() + PARSE_TIME_LIMIT)
    }

    fn expired(self) -> bool {
        Instant::now() >= self.0
    }
}

/// Parse `line` and add what it does to `out`; `depth` is the nesting it is found at.
pub(super) fn analyse_into(line: &str, out: &mut Analysis, depth: usize, deadline: Deadline) {
    if line.len() > MAX_INPUT {
        let reason = format!("{} bytes, more than the {MAX_INPUT} analysed", line.len());
        push_opaque(out, Opaque::TooComplex(reason));
        return;
    }
    if depth > MAX_DEPTH {
        let reason = format!("nested more than {MAX_DEPTH} levels deep");
        push_opaque(out, Opaque::TooComplex(reason));
        return;
    }
    let mut parser = Parser::new();
    if let Err(error) = parser.set_language(&tree_sitter_bash::LANGUAGE.into()) {
        push_opaque(out, Opaque::ParseError(format!("no bash parser: {error}")));
        return;
    }
    let bytes = line.as_bytes();
    let mut read = |offset: usize, _: tree_sitter::Point| bytes.get(offset..).unwrap_or_default();
    let mut progress = |_: &tree_sitter::ParseState| {
        if deadline.expired() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let options = ParseOptions::new().progress_callback(&mut progress);
    let Some(tree) = parser.parse_with_options(&mut read, None, Some(options)) else {
        let reason = format!("parsing took longer than {PARSE_TIME_LIMIT:?}");
        push_opaque(out, Opaque::TooComplex(reason));
        return;
    };
    let mut walker = Walker {
        src: bytes,
        out,
        deadline,
        too_deep: false,
    };
    walker.visit(tree.root_node(), depth);
}

fn push_opaque(out: &mut Analysis, opaque: Opaque) {
    if out.opaque.len() < MAX_OPAQUE && !out.opaque.contains(&opaque) {
        out.opaque.push(opaque);
    }
}

/// `text` cut to [`EXCERPT`] characters.
fn excerpt(text: &str) -> String {
    match text.char_indices().nth(EXCERPT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

struct Walker<'a> {
    src: &'a [u8],
    out: &'a mut Analysis,
    deadline: Deadline,
    too_deep: bool,
}

impl Walker<'_> {
    fn flag(&mut self, opaque: Opaque) {
        push_opaque(self.out, opaque);
    }

    fn text(&self, node: Node) -> &str {
        words::text_of(node, self.src)
    }

    fn excerpt(&self, node: Node) -> String {
        excerpt(self.text(node))
    }

    /// Is `depth` too deep to follow? Reported once.
    fn beyond_depth(&mut self, depth: usize) -> bool {
        if depth <= MAX_DEPTH {
            return false;
        }
        if !self.too_deep {
            self.too_deep = true;
            let reason = format!("nested more than {MAX_DEPTH} levels deep");
            self.flag(Opaque::TooComplex(reason));
        }
        true
    }

    fn visit(&mut self, node: Node, depth: usize) {
        if self.beyond_depth(depth) {
            return;
        }
        if node.is_missing() {
            let reason = format!("missing `{}`", node.kind());
            self.flag(Opaque::ParseError(reason));
            return;
        }
        if node.is_named() && !node_kinds::KNOWN.contains(&node.kind()) {
            let reason = format!("syntax drover does not know (`{}`)", node.kind());
            self.flag(Opaque::ParseError(reason));
            return;
        }
        match node.kind() {
            "comment" => {}
            "heredoc_redirect" => {
                self.heredoc(node);
                self.children(node, depth);
            }
            "expansion" => {
                // `${x:=`cmd`}`: the grammar keeps backticks there as plain words.
                if node_kinds::has_live_substitution(self.text(node).as_bytes()) {
                    let excerpt = self.excerpt(node);
                    self.flag(Opaque::CommandSubstitution(excerpt));
                }
                self.children(node, depth);
            }
            "ERROR" => {
                let excerpt = self.excerpt(node);
                self.flag(Opaque::ParseError(excerpt));
                self.children(node, depth);
            }
            "command" => self.command(node, &[], depth),
            "redirected_statement" => self.redirected(node, depth),
            "declaration_command" | "unset_command" => self.declaration(node, depth),
            "list" => self.list(node, depth),
            "variable_assignment" => {
                // `PATH=x cmd`, `PATH=x; cmd`, `export PATH=x`, `for ((PATH=0; …))`.
                let name = node
                    .child_by_field_name("name")
                    .map(|name| match name.kind() {
                        "subscript" => name.child_by_field_name("name").unwrap_or(name),
                        _ => name,
                    });
                if let Some(name) = name {
                    let name = self.text(name).to_string();
                    self.assigns(&name);
                }
                self.children(node, depth);
            }
            "file_redirect" => self.file_redirect(node, depth),
            "command_substitution" => {
                let excerpt = self.excerpt(node);
                self.flag(Opaque::CommandSubstitution(excerpt));
                self.children(node, depth);
            }
            "process_substitution" => {
                let excerpt = self.excerpt(node);
                self.flag(Opaque::ProcessSubstitution(excerpt));
                self.children(node, depth);
            }
            _ => self.children(node, depth),
        }
    }

    /// An unquoted here-document's body runs its backticks and `$(…)` (the grammar parses
    /// `$(…)` there but not backticks, and not in `<<-` bodies); a quoted one expands
    /// nothing.
    fn heredoc(&mut self, node: Node) {
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        let quoted = children
            .iter()
            .find(|child| child.kind() == "heredoc_start")
            .is_some_and(|start| node_kinds::quoted_delimiter(self.text(*start)));
        if quoted {
            return;
        }
        for body in children
            .iter()
            .filter(|child| child.kind() == "heredoc_body")
        {
            if node_kinds::has_live_substitution(self.text(*body).as_bytes()) {
                let excerpt = self.excerpt(*body);
                self.flag(Opaque::CommandSubstitution(excerpt));
            }
        }
    }

    fn children(&mut self, node: Node, depth: usize) {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.visit(child, depth + 1);
        }
    }

    /// `a && b || c` is `list(list(a, b), c)`: walk the left spine without recursing.
    fn list(&mut self, node: Node, depth: usize) {
        let mut spine = vec![node];
        let mut leftmost = node;
        while let Some(first) = leftmost.child(0) {
            if first.kind() != "list" {
                break;
            }
            spine.push(first);
            leftmost = first;
        }
        while let Some(list) = spine.pop() {
            let mut cursor = list.walk();
            for (index, child) in list.children(&mut cursor).enumerate() {
                let nested_list = index == 0 && child.kind() == "list";
                if !nested_list {
                    self.visit(child, depth + 1);
                }
            }
        }
    }

    fn command(&mut self, node: Node, extra: &[Node], depth: usize) {
        let mut word_nodes = Vec::new();
        let mut cursor = node.walk();
        for (index, child) in node.children(&mut cursor).enumerate() {
            if child.is_missing() {
                continue; // flagged when the children are visited
            }
            match node.field_name_for_child(index as u32) {
                Some("name") => match child.named_child(0) {
                    Some(word) if word.is_missing() => {}
                    Some(word) => word_nodes.push(word),
                    None => word_nodes.push(child),
                },
                Some("argument") => word_nodes.push(child),
                _ if child.kind() == "file_redirect" => {
                    word_nodes.extend(writes::extra_destinations(child));
                }
                _ => {}
            }
        }
        word_nodes.extend_from_slice(extra);
        let all: Vec<Word> = word_nodes
            .iter()
            .map(|word| words::convert(*word, self.src))
            .collect();
        let source = self.text(node).to_string();
        self.simple_command(&all, &source, depth);
        self.children(node, depth);
    }

    /// Record one simple command given its words (assignments already left out) and its
    /// source text, and the commands it runs.
    fn simple_command(&mut self, all: &[Word], source: &str, depth: usize) {
        if self.beyond_depth(depth) {
            return;
        }
        let stripped = wrappers::strip(all);
        if let Some(problem) = stripped.problem {
            self.flag(Opaque::Wrapper(problem));
        }
        for name in &stripped.assigned {
            self.assigns(name);
        }
        let run = &all[stripped.start..];
        let Some(name) = run.first() else {
            return;
        };
        if !name.is_literal() {
            self.flag(Opaque::DynamicCommand(excerpt(&name.source)));
            return;
        }
        if self.shell_script(run, source, depth) {
            return;
        }
        if name.text.contains(char::is_whitespace) {
            // `'git status'` runs a program named "git status", yet its text would match
            // `Bash(git status)`.
            let reason = format!("command name with spaces: {}", name.source);
            self.flag(Opaque::DynamicCommand(excerpt(&reason)));
        }
        let argv: Vec<String> = run.iter().map(|word| word.text.clone()).collect();
        self.output_option_writes(run, &argv, source);
        self.out.commands.push(SimpleCommand {
            text: argv.join(" "),
            argv,
            source: source.to_string(),
        });
        self.builtin(run, source, depth);
        self.inner_commands(run, depth);
    }

    /// A shell run on a script (`bash -c SCRIPT`): the script analysed in turn when it is
    /// literal, or flagged (read from stdin, not literal). True when the script's analysis
    /// stands for the whole command.
    fn shell_script(&mut self, run: &[Word], source: &str, depth: usize) -> bool {
        match wrappers::shell_script(run) {
            ShellScript::Script(index) => {
                let script = &run[index];
                if script.is_literal() {
                    analyse_into(&script.text, self.out, depth + 1, self.deadline);
                } else {
                    self.flag(Opaque::DynamicCommand(excerpt(&script.source)));
                }
                return true;
            }
            ShellScript::Unreadable(word) => self.flag(Opaque::DynamicCommand(excerpt(&word))),
            ShellScript::FromStdin => {
                let reason = format!("script read from standard input: {source}");
                self.flag(Opaque::Source(excerpt(&reason)));
            }
            ShellScript::No | ShellScript::MissingScript => {}
        }
        false
    }

    /// `git diff --output=FILE`, `curl -o FILE`, `sort -o FILE`: writes like `>`.
    fn output_option_writes(&mut self, run: &[Word], argv: &[String], source: &str) {
        for written in super::output_options::written(argv) {
            match written {
                super::output_options::Written::Word(index) => {
                    if let Some(word) = run.get(index) {
                        self.write_target(word);
                    }
                }
                super::output_options::Written::Attached(index, value) => {
                    if run.get(index).is_some_and(Word::is_literal) {
                        self.out.writes.push(value);
                    } else {
                        self.flag(Opaque::DynamicWrite(excerpt(source)));
                    }
                }
            }
        }
    }

    /// What the builtins among simple commands do beyond running: `eval`, `source` and
    /// `trap` run code, `tee` writes, `export` and friends assign, `alias` renames.
    fn builtin(&mut self, run: &[Word], source: &str, depth: usize) {
        let name = &run[0];
        match name.text.as_str() {
            "eval" => {
                self.flag(Opaque::Eval(excerpt(source)));
                // List what a static eval would run, so that deny rules see it.
                if run[1..].iter().all(Word::is_literal) {
                    let code: Vec<&str> = run[1..].iter().map(|w| w.text.as_str()).collect();
                    analyse_into(&code.join(" "), self.out, depth + 1, self.deadline);
                }
            }
            "source" | "." => self.flag(Opaque::Source(excerpt(source))),
            // `trap 'rm x' EXIT` runs its first argument as shell code later.
            "trap" if run.len() > 2 && !run[1].text.starts_with('-') => {
                self.flag(Opaque::Eval(excerpt(source)));
                if run[1].is_literal() {
                    analyse_into(&run[1].text, self.out, depth + 1, self.deadline);
                }
            }
            "tee" => self.tee(&run[1..]),
            // `builtin export PATH=x`, `command declare …`: the grammar's own
            // declaration nodes are handled in `declaration`.
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                self.declared(&name.text, &run[1..]);
            }
            "read" | "mapfile" | "readarray" | "getopts" | "let" => self.sets_variables(&run[1..]),
            "printf" => {
                let target = run
                    .iter()
                    .position(|w| w.text == "-v")
                    .and_then(|i| run.get(i + 1));
                if let Some(target) = target {
                    self.sets_variables(std::slice::from_ref(target));
                }
            }
            "alias" => {
                for arg in &run[1..] {
                    if !arg.is_literal() || arg.text.contains('=') {
                        let alias = arg.text.split('=').next().unwrap_or_default();
                        self.flag(Opaque::DangerousAssignment(excerpt(&format!(
                            "alias {alias}"
                        ))));
                    }
                }
            }
            _ => {}
        }
    }

    /// The commands `xargs`, `find -exec` and `busybox` run: listed as well as the outer
    /// command, so that rules and guardrails judge both.
    fn inner_commands(&mut self, run: &[Word], depth: usize) {
        let runs = runners::runs(run);
        if let Some(why) = runs.unknown {
            self.flag(Opaque::Wrapper(why));
        }
        if let Some(why) = runs.dynamic {
            self.flag(Opaque::DynamicCommand(excerpt(&why)));
        }
        for index in runs.writes {
            if let Some(target) = run.get(index) {
                self.write_target(target);
            }
        }
        for inner in runs.commands {
            let Some(words) = run.get(inner.words.clone()) else {
                continue;
            };
            let sources: Vec<&str> = words.iter().map(|w| w.source.as_str()).collect();
            let source = sources.join(" ");
            self.input_as_code(words, &inner, &source);
            self.simple_command(words, &source, depth + 1);
        }
    }

    /// `find -exec sh -c 'echo {}' ;`, `xargs -I % sh -c 'echo %'`: input (file names,
    /// lines) substituted into a shell script runs as code; so does `xargs sh -c`, whose
    /// script is the first word of input.
    fn input_as_code(&mut self, words: &[Word], inner: &runners::Inner, source: &str) {
        let start = wrappers::strip(words).start;
        let shell = words.get(start..).unwrap_or_default();
        match wrappers::shell_script(shell) {
            ShellScript::Script(index) => {
                let script = shell
                    .get(index)
                    .map(|w| w.text.as_str())
                    .unwrap_or_default();
                if let Some(placeholder) = &inner.placeholder
                    && script.contains(placeholder.as_str())
                {
                    let reason = format!("input substituted into a shell script: {source}");
                    self.flag(Opaque::Eval(excerpt(&reason)));
                }
            }
            ShellScript::MissingScript if inner.appended => {
                let reason = format!("script read from input: {source}");
                self.flag(Opaque::Source(excerpt(&reason)));
            }
            _ => {}
        }
    }
}
