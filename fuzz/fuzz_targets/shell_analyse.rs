//! The shell analyser must never panic, whatever the model sends as a command line.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|line: &str| {
    let analysis = drover::analyse(line);
    for command in &analysis.commands {
        assert!(!command.argv.is_empty());
        assert_eq!(command.text, command.argv.join(" "));
    }
});
