//! What an MCP tool result becomes for the model: text blocks as text, anything else
//! named in a line of text (an image's type and size, a resource's URI), cut to the
//! task's `max_output`.

use serde_json::Value;

/// Bytes per token when estimating a result's size (the usual rough figure).
const BYTES_PER_TOKEN: u64 = 4;

/// The text of `content` blocks (as the MCP `content` array serializes), one block per
/// paragraph.
pub(crate) fn render(content: &[Value]) -> String {
    let parts: Vec<String> = content.iter().map(block).collect();
    parts.join("\n\n")
}

fn block(value: &Value) -> String {
    let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
    match text("type") {
        "text" => text("text").to_string(),
        kind @ ("image" | "audio") => {
            let size = value
                .get("data")
                .and_then(Value::as_str)
                .map_or(0, |data| data.len() * 3 / 4);
            format!(
                "[{kind} content ({}, about {size} bytes) returned by the tool; drover passes MCP {kind} content to the model as this note]",
                text("mimeType")
            )
        }
        "resource_link" => {
            let mut line = format!("[resource link: {}", text("uri"));
            if !text("name").is_empty() {
                line.push_str(&format!(" ({})", text("name")));
            }
            line.push(']');
            line
        }
        "resource" => {
            let resource = value.get("resource").cloned().unwrap_or(Value::Null);
            let field = |key: &str| {
                resource
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            };
            match resource.get("text").and_then(Value::as_str) {
                Some(body) => format!("[resource {}]\n{body}", field("uri")),
                None => format!(
                    "[resource {} ({}), binary content not shown]",
                    field("uri"),
                    field("mimeType")
                ),
            }
        }
        other => format!("[{other} content, not shown]"),
    }
}

/// `text` cut to about `max_tokens` tokens, with a note saying so.
pub(crate) fn limit(text: String, max_tokens: u64) -> String {
    let max_bytes =
        usize::try_from(max_tokens.saturating_mul(BYTES_PER_TOKEN)).unwrap_or(usize::MAX);
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n\n[the result was cut at about {max_tokens} tokens of {} bytes; ask the tool for less (a narrower query, a page or range) to see the rest]",
        &text[..end],
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_images_and_resources_are_told_apart() {
        let content = [
            json!({"type": "text", "text": "hello"}),
            json!({"type": "image", "mimeType": "image/png", "data": "AAAA"}),
            json!({"type": "resource_link", "uri": "test://static/resource/1", "name": "Resource 1"}),
            json!({"type": "resource", "resource": {"uri": "file:///a.txt", "text": "body"}}),
        ];
        let text = render(&content);
        assert!(text.starts_with("hello\n\n[image content (image/png, about 3 bytes)"));
        assert!(text.contains("[resource link: test://static/resource/1 (Resource 1)]"));
        assert!(text.ends_with("[resource file:///a.txt]\nbody"));
    }

    #[test]
    fn long_results_are_cut_with_a_note_on_a_character_boundary() {
        let long = "é".repeat(100);
        let cut = limit(long.clone(), 10);
        assert!(cut.starts_with(&"é".repeat(20)));
        assert!(cut.contains("cut at about 10 tokens of 200 bytes"));
        assert_eq!(limit("short".into(), 10), "short");
    }
}
