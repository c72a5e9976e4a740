//! The walk over tree-sitter-bash's syntax tree that fills an [`Analysis`].
//!
//! Every node is visited, so commands hidden anywhere (inside `$(…)`, a heredoc body, an
//! `if` condition, a function body) are found; only `command`, redirection and a few
//! other nodes get special treatment. Recursion is bounded by [`MAX_DEPTH`], and the
//! left-nested chains of `&&`/`||` are walked iteratively so that long but flat lines
//! do not count as deep.

use std::ops::ControlFlow;
use std::time::Instant;

use tree_sitter::{Node, ParseOptions, Parser};

use super::words::{self, Shape, Word};
use super::wrappers::{self, ShellScript};
use super::{Analysis, MAX_DEPTH, MAX_INPUT, Opaque, PARSE_TIME_LIMIT, SimpleCommand};

/// At most this many opaque reasons are kept; the first ones say enough.
const MAX_OPAQUE: usize = 64;
/// Source excerpts in [`Opaque`] are cut to this many characters.
const EXCERPT: usize = 80;
/// Redirections that write to their target.
const WRITE_OPERATORS: &[&str] = &[">", ">>", "&>", "&>>", ">|", ">&"];
/// Redirection targets that are not files.
const NOT_FILES: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr"];

/// When parsing must stop, shared by nested `bash -c` analyses.
#[derive(Debug, Clone, Copy)]
pub(super) struct Deadline(Instant);

impl Deadline {
    pub fn start() -> Self {
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

    fn visit(&mut self, node: Node, depth: usize) {
        if depth > MAX_DEPTH {
            if !self.too_deep {
                self.too_deep = true;
                let reason = format!("nested more than {MAX_DEPTH} levels deep");
                self.flag(Opaque::TooComplex(reason));
            }
            return;
        }
        if node.is_missing() {
            let reason = format!("missing `{}`", node.kind());
            self.flag(Opaque::ParseError(reason));
            return;
        }
        match node.kind() {
            "comment" => {}
            "ERROR" => {
                let excerpt = self.excerpt(node);
                self.flag(Opaque::ParseError(excerpt));
                self.children(node, depth);
            }
            "command" => self.command(node, &[], depth),
            "redirected_statement" => self.redirected(node, depth),
            "declaration_command" | "unset_command" => self.declaration(node, depth),
            "list" => self.list(node, depth),
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

    /// A statement with redirections after it. Bash passes words after a redirection's
    /// target to the command (`echo hi >out rm -rf /` runs `echo hi rm -rf /`), while
    /// tree-sitter reads them as more targets: give them back to the command.
    fn redirected(&mut self, node: Node, depth: usize) {
        let body = node.child_by_field_name("body");
        let mut extra = Vec::new();
        let mut cursor = node.walk();
        for redirect in node.children_by_field_name("redirect", &mut cursor) {
            if redirect.kind() == "file_redirect" {
                extra.extend(extra_destinations(redirect));
            }
        }
        match body {
            Some(body) if body.kind() == "command" => self.command(body, &extra, depth + 1),
            Some(body) => {
                self.visit(body, depth + 1);
                if !extra.is_empty() {
                    let reason = format!("words after a redirection: {}", self.excerpt(node));
                    self.flag(Opaque::ParseError(reason));
                }
            }
            None => {}
        }
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if Some(child) != body {
                self.visit(child, depth + 1);
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
                    word_nodes.extend(extra_destinations(child));
                }
                _ => {}
            }
        }
        word_nodes.extend_from_slice(extra);
        let all: Vec<Word> = word_nodes
            .iter()
            .map(|word| words::convert(*word, self.src))
            .collect();
        self.simple_command(&all, node, depth);
        self.children(node, depth);
    }

    /// Record one simple command given its words (assignments already left out).
    fn simple_command(&mut self, all: &[Word], node: Node, depth: usize) {
        let stripped = wrappers::strip(all);
        if let Some(problem) = stripped.problem {
            self.flag(Opaque::Wrapper(problem));
        }
        let run = &all[stripped.start..];
        let Some(name) = run.first() else {
            return;
        };
        if !name.is_literal() {
            self.flag(Opaque::DynamicCommand(excerpt(&name.source)));
            return;
        }
        match wrappers::shell_script(run) {
            ShellScript::Script(index) => {
                let script = &run[index];
                if script.is_literal() {
                    analyse_into(&script.text, self.out, depth + 1, self.deadline);
                } else {
                    self.flag(Opaque::DynamicCommand(excerpt(&script.source)));
                }
                return;
            }
            ShellScript::Unreadable(word) => self.flag(Opaque::DynamicCommand(excerpt(&word))),
            ShellScript::FromStdin => {
                let reason = format!("script read from standard input: {}", self.text(node));
                self.flag(Opaque::Source(excerpt(&reason)));
            }
            ShellScript::No => {}
        }
        if name.text.contains(char::is_whitespace) {
            // `'git status'` runs a program named "git status", yet its text would match
            // `Bash(git status)`.
            let reason = format!("command name with spaces: {}", name.source);
            self.flag(Opaque::DynamicCommand(excerpt(&reason)));
        }
        let argv: Vec<String> = run.iter().map(|word| word.text.clone()).collect();
        let source = self.text(node).to_string();
        self.out.commands.push(SimpleCommand {
            text: argv.join(" "),
            argv,
            source: source.clone(),
        });
        match name.text.as_str() {
            "eval" => {
                self.flag(Opaque::Eval(excerpt(&source)));
                // List what a static eval would run, so that deny rules see it.
                if run[1..].iter().all(Word::is_literal) {
                    let code: Vec<&str> = run[1..].iter().map(|w| w.text.as_str()).collect();
                    analyse_into(&code.join(" "), self.out, depth + 1, self.deadline);
                }
            }
            "source" | "." => self.flag(Opaque::Source(excerpt(&source))),
            // `trap 'rm x' EXIT` runs its first argument as shell code later.
            "trap" if run.len() > 2 && !run[1].text.starts_with('-') => {
                self.flag(Opaque::Eval(excerpt(&source)));
                if run[1].is_literal() {
                    analyse_into(&run[1].text, self.out, depth + 1, self.deadline);
                }
            }
            "tee" => self.tee(&run[1..]),
            _ => {}
        }
    }

    /// `tee [-a] FILE…` writes its file arguments.
    fn tee(&mut self, args: &[Word]) {
        let mut options_done = false;
        for arg in args {
            if !options_done && arg.is_literal() && arg.text == "--" {
                options_done = true;
                continue;
            }
            if !options_done && arg.text.starts_with('-') && arg.text.len() > 1 {
                continue;
            }
            self.write_target(arg);
        }
    }

    fn write_target(&mut self, target: &Word) {
        // A glob or brace pattern names whatever files exist when it runs.
        if target.shape != Shape::Literal {
            self.flag(Opaque::DynamicWrite(excerpt(&target.source)));
        } else if !NOT_FILES.contains(&target.text.as_str()) {
            self.out.writes.push(target.text.clone());
        }
    }

    /// `export A=1`, `local x`, `unset y`: builtins the grammar gives their own nodes.
    fn declaration(&mut self, node: Node, depth: usize) {
        let mut argv = Vec::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if child.is_named() {
                argv.push(words::convert(child, self.src).text);
            } else if argv.is_empty() {
                argv.push(self.text(child).to_string());
            }
        }
        if !argv.is_empty() {
            let source = self.text(node).to_string();
            self.out.commands.push(SimpleCommand {
                text: argv.join(" "),
                argv,
                source,
            });
        }
        self.children(node, depth);
    }

    fn file_redirect(&mut self, node: Node, depth: usize) {
        let mut operator = None;
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if !child.is_named() {
                operator = Some(child.kind());
                break;
            }
        }
        let mut cursor = node.walk();
        let target = node
            .children_by_field_name("destination", &mut cursor)
            .next();
        if let (Some(operator), Some(target)) = (operator, target) {
            let word = words::convert(target, self.src);
            let duplicates_fd = operator == ">&"
                && word.is_literal()
                && (word.text == "-" || word.text.bytes().all(|b| b.is_ascii_digit()));
            if WRITE_OPERATORS.contains(&operator) && !duplicates_fd {
                self.write_target(&word);
            }
        }
        self.children(node, depth);
    }
}

/// The destination words after the first of a file redirection (see
/// [`Walker::redirected`]).
fn extra_destinations(redirect: Node) -> Vec<Node> {
    let mut cursor = redirect.walk();
    redirect
        .children_by_field_name("destination", &mut cursor)
        .skip(1)
        .collect()
}
