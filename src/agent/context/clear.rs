//! Making a conversation smaller without a model call: the oldest tool results become a
//! placeholder naming their call (the model can call again), and when that is not
//! enough, the oldest turns go whole. Deterministic: the same conversation and goal give
//! the same result, so a replay rebuilds the recorded requests.

use std::collections::HashMap;

use crate::message::{ContentBlock, Message, Role};

use super::size::json_bytes;

/// What a cleared result reads as; a result that starts with it is cleared already.
pub(crate) const CLEARED: &str =
    "[drover cleared this result to keep the conversation inside the model's context window:";

/// How far to go: down to a size (a live run), or exactly as far as a recorded
/// compaction went (a replay).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Goal {
    /// Clear, then remove, until the request is at most this many bytes.
    Bytes(u64),
    /// Clear this many results and remove this many turns.
    Counts { results: u64, turns: u64 },
}

/// What was taken out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cleared {
    pub results: u64,
    pub turns: u64,
}

/// Clear `messages` (the first is the task's opening, never touched here) toward
/// `goal`, from a request of `bytes`; the newest `keep` results and turns stay whole.
pub(crate) fn clear(messages: &mut Vec<Message>, keep: usize, bytes: u64, goal: Goal) -> Cleared {
    let mut bytes = bytes;
    let results = clear_results(messages, keep, &mut bytes, goal);
    let turns = match goal {
        Goal::Bytes(target) if bytes > target => remove_turns(messages, keep, bytes - target, None),
        Goal::Bytes(_) => 0,
        Goal::Counts { turns, .. } => remove_turns(messages, keep, u64::MAX, Some(turns)),
    };
    Cleared { results, turns }
}

/// Whether a clearing toward any goal would take something out: a result older than
/// the newest `keep` that is not cleared yet, or a turn older than the newest `keep`.
pub(crate) fn compactable(messages: &[Message], keep: usize) -> bool {
    let results = messages
        .iter()
        .skip(1)
        .flat_map(|m| &m.content)
        .filter(|block| {
            matches!(block, ContentBlock::ToolResult { content, .. } if !content.starts_with(CLEARED))
        })
        .count();
    let turns = messages
        .iter()
        .skip(1)
        .filter(|m| m.role == Role::Assistant)
        .count();
    results > keep || turns > keep.max(1)
}

/// Replace the oldest uncleared results but the newest `keep` with a placeholder, one at
/// a time until the goal is met.
fn clear_results(messages: &mut [Message], keep: usize, bytes: &mut u64, goal: Goal) -> u64 {
    let calls = calls_by_id(messages);
    let mut places: Vec<(usize, usize)> = Vec::new();
    for (index, message) in messages.iter().enumerate().skip(1) {
        for (block, content) in message.content.iter().enumerate() {
            if matches!(content, ContentBlock::ToolResult { content, .. } if !content.starts_with(CLEARED))
            {
                places.push((index, block));
            }
        }
    }
    let clearable = places.len().saturating_sub(keep);
    let mut cleared = 0;
    for &(index, block) in &places[..clearable] {
        let done = match goal {
            Goal::Bytes(target) => *bytes <= target,
            Goal::Counts { results, .. } => cleared >= results,
        };
        if done {
            break;
        }
        let slot = &mut messages[index].content[block];
        let before = json_bytes(slot);
        if let ContentBlock::ToolResult {
            tool_use_id,
            content,
            images,
            ..
        } = slot
        {
            *content = placeholder(calls.get(tool_use_id.as_str()));
            images.clear();
        }
        *bytes = bytes.saturating_sub(before.saturating_sub(json_bytes(slot)));
        cleared += 1;
    }
    cleared
}

/// The call each tool_use id names, as `Name {input…}` cut short.
fn calls_by_id(messages: &[Message]) -> HashMap<String, String> {
    let mut calls = HashMap::new();
    for message in messages.iter().filter(|m| m.role == Role::Assistant) {
        for block in &message.content {
            if let ContentBlock::ToolUse { id, name, input } = block {
                let input = input.to_string();
                let short: String = input.chars().take(120).collect();
                let cut = if short.len() < input.len() { "…" } else { "" };
                calls.insert(id.clone(), format!("{name} {short}{cut}"));
            }
        }
    }
    calls
}

fn placeholder(call: Option<&String>) -> String {
    let call = call.map_or("an earlier call", String::as_str);
    format!("{CLEARED} {call}. Call the tool again if you need its result.]")
}

/// Remove the oldest turns (a model turn and the results and notes that answer it)
/// while more than `excess` bytes must go, or exactly `count` of them; the newest `keep`
/// model turns (at least one) stay.
fn remove_turns(messages: &mut Vec<Message>, keep: usize, excess: u64, count: Option<u64>) -> u64 {
    let starts: Vec<usize> = (1..messages.len())
        .filter(|&i| messages[i].role == Role::Assistant)
        .collect();
    let removable = starts.len().saturating_sub(keep.max(1));
    let mut removed = 0u64;
    let mut freed = 0u64;
    let mut cut = 1;
    for turn in 0..removable {
        let done = match count {
            Some(count) => removed >= count,
            None => freed >= excess,
        };
        if done {
            break;
        }
        let end = starts[turn + 1];
        freed += messages[cut..end]
            .iter()
            .map(|m| json_bytes(m) + 1)
            .sum::<u64>();
        cut = end;
        removed += 1;
    }
    messages.drain(1..cut);
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn turn(n: usize, result: &str) -> [Message; 2] {
        let id = format!("toolu_{n}");
        [
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: id.clone(),
                    name: "Read".into(),
                    input: json!({"file_path": format!("f{n}.txt")}),
                }],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: id,
                    content: result.into(),
                    is_error: false,
                    images: Vec::new(),
                }],
            },
        ]
    }

    fn conversation(turns: usize) -> Vec<Message> {
        let mut messages = vec![Message::user_text("do the task")];
        for n in 0..turns {
            messages.extend(turn(n, &"x".repeat(4_000)));
        }
        messages
    }

    fn result_of(message: &Message) -> &str {
        match &message.content[0] {
            ContentBlock::ToolResult { content, .. } => content,
            _ => panic!("not a result"),
        }
    }

    #[test]
    fn the_oldest_results_are_cleared_first_naming_their_call_and_the_newest_stay() {
        let mut messages = conversation(6);
        let bytes = json_bytes(&messages);
        let cleared = clear(&mut messages, 2, bytes, Goal::Bytes(bytes - 9_000));
        assert_eq!(
            cleared,
            Cleared {
                results: 3,
                turns: 0
            }
        );
        assert!(result_of(&messages[2]).starts_with(CLEARED));
        assert!(result_of(&messages[2]).contains(r#"Read {"file_path":"f0.txt"}"#));
        assert!(result_of(&messages[6]).starts_with(CLEARED));
        assert_eq!(result_of(&messages[8]).len(), 4_000, "the fourth stays");
        assert!(json_bytes(&messages) <= bytes - 9_000);
    }

    #[test]
    fn when_clearing_is_not_enough_the_oldest_turns_go_whole_and_the_order_holds() {
        let mut messages = conversation(8);
        let bytes = json_bytes(&messages);
        let cleared = clear(&mut messages, 2, bytes, Goal::Bytes(9_000));
        assert_eq!(cleared.results, 6);
        assert!(cleared.turns > 0, "{cleared:?}");
        assert_eq!(messages[0], Message::user_text("do the task"));
        assert_eq!(messages[1].role, Role::Assistant);
        for pair in messages[1..].chunks(2) {
            assert_eq!(pair[0].role, Role::Assistant);
            assert_eq!(pair[1].role, Role::User);
        }
        assert!(messages.len() >= 5, "two turns at least stay");
        assert!(json_bytes(&messages) <= 9_000 + 2_000);
    }

    #[test]
    fn a_replay_clears_exactly_as_far_as_the_recording_says() {
        let mut live = conversation(8);
        let bytes = json_bytes(&live);
        let cleared = clear(&mut live, 3, bytes, Goal::Bytes(6_000));
        let mut replayed = conversation(8);
        let again = clear(
            &mut replayed,
            3,
            bytes,
            Goal::Counts {
                results: cleared.results,
                turns: cleared.turns,
            },
        );
        assert_eq!(again, cleared);
        assert_eq!(replayed, live);
    }
}
