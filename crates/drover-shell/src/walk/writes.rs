//! The files a line writes: redirection targets, `tee` arguments and `find -fprint`
//! files (found by [`Walker::inner_commands`]), which the caller checks against the
//! paths it may write.

use tree_sitter::Node;

use super::super::Opaque;
use super::super::words::{self, Shape, Word};
use super::{Walker, excerpt};

/// Redirections that write to their target.
const WRITE_OPERATORS: &[&str] = &[">", ">>", "&>", "&>>", ">|", ">&"];
/// Redirection targets that are not files.
const NOT_FILES: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr"];

impl Walker<'_> {
    /// A statement with redirections after it. Bash passes words after a redirection's
    /// target to the command (`echo hi >out rm -rf /` runs `echo hi rm -rf /`), while
    /// tree-sitter reads them as more targets: give them back to the command.
    pub(super) fn redirected(&mut self, node: Node, depth: usize) {
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

    /// `tee [-a] FILE…` writes its file arguments.
    pub(super) fn tee(&mut self, args: &[Word]) {
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

    pub(super) fn write_target(&mut self, target: &Word) {
        // A glob or brace pattern names whatever files exist when it runs.
        if target.shape != Shape::Literal {
            self.flag(Opaque::DynamicWrite(excerpt(&target.source)));
        } else if !NOT_FILES.contains(&target.text.as_str()) {
            self.out.writes.push(target.text.clone());
        }
    }

    pub(super) fn file_redirect(&mut self, node: Node, depth: usize) {
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
pub(super) fn extra_destinations(redirect: Node) -> Vec<Node> {
    let mut cursor = redirect.walk();
    redirect
        .children_by_field_name("destination", &mut cursor)
        .skip(1)
        .collect()
}
