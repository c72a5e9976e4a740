//! drover's end-to-end tests: each module runs the `drover` binary as users do, against
//! scratch workspaces, mock servers on 127.0.0.1 and scripted or replayed models. One test
//! binary, so the suite links once.

// Helpers may unwrap too: a panic fails the test. A test that needs what the machine may
// lack is ignored by a cfg the build sets (build.rs), never skipped by the test; the
// notes of a part that only the running test can find it cannot check (`part skipped:
// …`) are the tests' own words, not drover's output, so they may use eprintln!.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_macros)]

mod common;
mod context_fixture;
mod mock_model;
mod mock_server;
mod users;

mod action;
mod action_examples;
mod action_steps;
mod artifacts_lock;
mod attacker_artifacts;
mod attacker_capabilities;
mod attacker_config;
mod attacker_egress;
mod attacker_files;
mod attacker_mcp_names;
mod attacker_network;
mod attacker_processes;
mod attacker_redirects;
mod attacker_replay;
mod attacker_text;
mod batch_cli;
mod claude_code_corpus;
mod claude_code_corpus_runs;
mod context_attacks;
mod context_clear;
mod context_mock;
mod context_replay;
mod context_spec;
mod context_summarize;
mod defaults;
mod demo;
mod diff_exclude;
mod events_json;
mod exec_claude_flags;
mod exec_cli;
mod exec_corpus;
mod exec_defaults;
mod expect_cli;
mod fleet;
mod fleet_examples;
mod full_disk;
mod hooks_cli;
mod install_script;
mod interrupt;
mod large_workspace;
mod limits;
mod long_run;
mod loop_detection;
mod matrix;
mod matrix_attacks;
mod mcp;
mod mcp_bounds;
mod mcp_faults;
mod mcp_headers_helper;
mod mcp_http;
mod mcp_modern;
mod mcp_registry_servers;
mod network_bypass;
mod network_egress;
mod network_registries;
mod network_sources;
mod network_spec;
mod notebook_cli;
mod output_cli;
mod output_providers;
mod parity;
mod permissions_from;
mod progress_cli;
mod project_cli;
mod provider_pages;
mod providers;
mod publish;
mod redaction;
mod redaction_safety;
mod replay_drift;
mod replay_outcome;
mod replay_start;
mod replay_trust;
mod repo;
mod repo_attacks;
mod repo_http;
mod repo_overlay;
mod repo_resume;
mod resume;
mod resume_attacks;
mod retry_cli;
mod run_cli;
mod sandbox;
mod server_context_editing;
mod setup_cli;
mod sharding;
mod subagents_cli;
mod summary_schema;
mod tool_bench_cli;
mod tools_cli;
mod web_fetch_cli;
mod web_fetch_encodings;
mod web_search;
mod workspace_cli;
mod wrap_up;
