//! Assignments and declarations: `PATH=x cmd`, `export A=1`, `declare -n`, `read X`.
//! Each assigned name is checked with
//! [`changes_what_runs`](super::super::assignments::changes_what_runs).

use tree_sitter::Node;

use super::super::assignments;
use super::super::words::{self, Word};
use super::super::{Opaque, SimpleCommand};
use super::{Walker, excerpt};

impl Walker<'_> {
    /// An assignment to `name`, which runs or affects the commands after it.
    pub(super) fn assigns(&mut self, name: &str) {
        if assignments::changes_what_runs(name) {
            self.flag(Opaque::DangerousAssignment(excerpt(name)));
        }
    }

    /// The arguments of `export`/`declare`/`typeset`/`local`/`readonly` (`name` is the
    /// builtin): flag assignments that change what runs, names not known statically
    /// (`export "$X"`), and namerefs (`declare -n r=PATH; r=x`).
    pub(super) fn declared(&mut self, name: &str, args: &[Word]) {
        let mut options_done = false;
        for arg in args {
            if !arg.is_literal() {
                let reason = format!("{name} {}", arg.source);
                self.flag(Opaque::DangerousAssignment(excerpt(&reason)));
                continue;
            }
            let text = arg.text.as_str();
            if !options_done && (text.starts_with('-') || text.starts_with('+')) {
                options_done = text == "--";
                if name != "export" && text.starts_with('-') && text.contains('n') {
                    let reason = format!("{name} {text} (a name reference)");
                    self.flag(Opaque::DangerousAssignment(reason));
                }
                continue;
            }
            options_done = true;
            if let Some((variable, _)) = text.split_once('=') {
                let variable = variable.trim_end_matches('+');
                let variable = variable.split('[').next().unwrap_or(variable);
                self.assigns(variable);
            }
        }
    }

    /// Arguments naming variables that `read`, `mapfile`, `getopts`, `let` or
    /// `printf -v` set: the name is the leading identifier of each argument.
    pub(super) fn sets_variables(&mut self, args: &[Word]) {
        for arg in args {
            if !arg.is_literal() && arg.text.starts_with('$') {
                self.flag(Opaque::DangerousAssignment(excerpt(&arg.source)));
                continue;
            }
            let end = arg
                .text
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(arg.text.len());
            let variable = &arg.text[..end];
            if !variable.is_empty() {
                self.assigns(variable);
            }
        }
    }

    /// `export A=1`, `local x`, `unset y`: builtins the grammar gives their own nodes.
    /// Assignments (`variable_assignment` children) are judged when visited; arguments
    /// that assign without being parsed as one (`export "PATH=x"`) are judged here.
    pub(super) fn declaration(&mut self, node: Node, depth: usize) {
        let mut argv = Vec::new();
        let mut args = Vec::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if child.is_named() {
                let word = words::convert(child, self.src);
                argv.push(word.text.clone());
                // Assignments are judged when visited; a bare name assigns nothing.
                if !matches!(child.kind(), "variable_assignment" | "variable_name") {
                    args.push(word);
                }
            } else if argv.is_empty() {
                argv.push(self.text(child).to_string());
            }
        }
        if node.kind() == "declaration_command"
            && let Some(builtin) = argv.first()
        {
            let builtin = builtin.clone();
            self.declared(&builtin, &args);
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
}
