//! What the policy judges: facts a tool states about itself and about one call. The
//! policy knows no tool; each tool describes itself (its name, whether it only reads,
//! whose rules govern it, what a call acts on), so a tool added later, built in or
//! discovered at run time, is judged by the same rules without the policy changing.

use std::path::Path;

/// What a tool is, whatever the call: enough to decide whether it is offered at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFacts {
    /// The name the model calls it by.
    pub name: String,
    /// Only reads: allowed by default inside the workspace, and offered in plan mode.
    pub read_only: bool,
    /// The tool whose rules govern this one: itself, or (BashOutput, KillShell) the
    /// tool it serves, so `deny: [Bash]` withholds them too.
    pub governed_by: String,
    /// Acts only on this run's own state (its to-do list, its background shells):
    /// allowed by default, like a read.
    pub run_state: bool,
    /// The rule family whose path rules also govern this tool's paths, as in Claude
    /// Code: `Read` for a tool that reads files (Glob, Grep, LS), `Edit` for one that
    /// writes them (Write, MultiEdit). None: only rules naming the tool itself.
    pub path_family: Option<String>,
}

impl ToolFacts {
    /// A command's file reads, judged as Read would be (by `Read` rules).
    pub fn reading_files() -> ToolFacts {
        ToolFacts::family("Read", true)
    }

    /// A command's file writes, judged as Edit would be (by `Edit` rules).
    pub fn writing_files() -> ToolFacts {
        ToolFacts::family("Edit", false)
    }

    fn family(name: &str, read_only: bool) -> ToolFacts {
        ToolFacts {
            name: name.to_string(),
            read_only,
            governed_by: name.to_string(),
            run_state: false,
            path_family: Some(name.to_string()),
        }
    }
}

/// What one call acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// The call names no path or command (or names none yet: a default applies).
    None,
    /// A file or directory, as written in the input (not yet resolved).
    Path(String),
    /// A shell command line.
    Command(String),
    /// One named thing the call starts (Agent: the sub-agent's type), judged against
    /// rules naming it (`Agent(reviewer)`) and the tool's.
    Name(String),
    /// A URL to fetch (WebFetch), as written in the input: judged by its host against
    /// `WebFetch(domain:…)` rules, never allowed by default.
    Url(String),
    /// The skill a `Skill` call asks for, by name: judged against `Skill(name)` rules.
    Skill(String),
}

/// One call as the policy judges it: the tool's facts and what this input acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallFacts {
    pub tool: ToolFacts,
    pub subject: Subject,
}

impl CallFacts {
    /// A call of `tool` that names no path or command (an MCP tool's call).
    pub fn without_subject(tool: ToolFacts) -> CallFacts {
        CallFacts {
            tool,
            subject: Subject::None,
        }
    }
}

/// Which files a search tool walking directories (Grep, Glob, LS) must skip: true means
/// skip it.
pub type HiddenFilter = dyn Fn(&Path) -> bool + Send + Sync;

/// [`HiddenFilter`] for every search tool at once: (tool name, path) → skip it.
pub type SearchFilter = dyn Fn(&str, &Path) -> bool + Send + Sync;
