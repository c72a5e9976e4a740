//! Parsing a permission rule from a spec must never panic, only accept or reject.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: String| {
    if let Ok(rule) = drover::Rule::try_from(text) {
        let _ = rule.to_string();
        let _ = rule.governs("Bash");
        let _ = rule.covers_whole_tool("Bash");
    }
});
