//! Exit codes, the same for every command (README.md, "Exit codes").

/// Every task passed (for `policy check`: the call is allowed).
pub const PASSED: i32 = 0;
/// A task failed: a check failed, a limit was hit, the model stopped early, a replay
/// drifted under `--strict` (for `policy check`: the call is denied).
pub const FAILED: i32 = 1;
/// Bad input: usage, an invalid spec, an unreadable transcript.
pub const BAD_INPUT: i32 = 2;
/// drover could not do its job: provider unreachable after retries, internal error.
pub const RUNNER_ERROR: i32 = 3;
