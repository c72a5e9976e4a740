//! Where a spec goes wrong (`file:line:column`) and why it could not be loaded.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_saphyr::Location;

/// A place in a spec file, printed `file:line:column`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub path: PathBuf,
    pub line: u64,
    pub column: u64,
}

impl Position {
    /// `location` in `path`; line and column 1 when the parser gave none.
    pub fn at(path: &Path, location: Option<Location>) -> Self {
        let (line, column) = location.map_or((1, 1), |l| (l.line().max(1), l.column().max(1)));
        Position {
            path: path.to_path_buf(),
            line,
            column,
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.path.display(), self.line, self.column)
    }
}

/// Why specs could not be loaded. Every variant is bad input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("{}: cannot read spec: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{position}: {message}")]
    Invalid { position: Position, message: String },
    #[error(
        "{second}: task name {name:?} is already used by {first}; task names must be unique within a run"
    )]
    DuplicateName {
        name: String,
        first: Position,
        second: Position,
    },
    #[error("{}: no task specs (*.yaml, *.yml) found", path.display())]
    NoSpecs { path: PathBuf },
    /// A directory with both `drover.yaml` and `.drover/defaults.yaml`: which one its
    /// specs inherit would be a guess.
    #[error(
        "{}:1:1: {} is there too: the specs of a directory take their defaults from one file, drover.yaml or .drover/defaults.yaml (docs/defaults.md); keep one of them",
        second.display(),
        first.display()
    )]
    TwoDefaults { first: PathBuf, second: PathBuf },
    /// A defaults file named where a task spec is expected.
    #[error(
        "{}:1:1: this is the defaults file of the specs in its directory (docs/defaults.md), not a task spec; name a spec, or the directory, and it is merged into each",
        path.display()
    )]
    DefaultsNotATask { path: PathBuf },
}
