//! The real agent clients under Nightshift: Claude Code against the project's mock Messages API
//! (`tests/mock_api`), Codex against its mock Responses API (`tests/mock_responses`), and the night
//! rehearsal. Each test says which client it needs; without it a test skips, unless
//! `NIGHTSHIFT_REQUIRE_CLAUDE` / `NIGHTSHIFT_REQUIRE_CODEX` make that a failure (`make test` does).

mod common;
mod mock_api;
mod mock_responses;

mod account_switch;
mod canary_real;
mod codex_real;
mod doctor_cli;
mod failover;
mod fence_real;
mod hooks_real;
mod hostile_dialogs;
mod hostile_envelope;
mod hostile_guard;
mod limits_real;
mod loops_real;
mod night;
mod phone_real;
mod real_claude;
mod salvage_real;
mod sandbox_real;
mod worktree_real;
