//! What an MCP tool result becomes for the model: text blocks as text; images attached
//! (the Anthropic provider sends them as image blocks, others get the note) when they are
//! in a format models take; anything else named in a line of text (a resource's URI), the
//! text cut to the task's `max_output`.

use base64::Engine;
use serde_json::Value;

use crate::message::Image;

/// Bytes per token when estimating a result's size (the usual rough figure).
const BYTES_PER_TOKEN: u64 = 4;
/// The most base64 one image may have (the Anthropic API's 5 MB limit applies to it).
const MAX_IMAGE_BASE64: usize = 5 * 1024 * 1024;
/// The longest side, in pixels, the Anthropic API takes.
const MAX_IMAGE_SIDE: usize = 8000;
/// The most images one result attaches; more are named, not sent.
const MAX_IMAGES: usize = 8;

/// A result's text and the images it attaches.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    pub text: String,
    pub images: Vec<Image>,
}

/// The text of `content` blocks (as the MCP `content` array serializes), one block per
/// paragraph, and its images.
pub(crate) fn render(content: &[Value]) -> Rendered {
    let mut images = Vec::new();
    let parts: Vec<String> = content
        .iter()
        .map(|value| block(value, &mut images))
        .collect();
    Rendered {
        text: parts.join("\n\n"),
        images,
    }
}

fn block(value: &Value, images: &mut Vec<Image>) -> String {
    let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
    match text("type") {
        "text" => text("text").to_string(),
        "image" => image(text("data"), text("mimeType"), images),
        "audio" => {
            let size = text("data").len() * 3 / 4;
            format!(
                "[audio content ({}, about {size} bytes) returned by the tool; drover passes MCP audio to the model as this note]",
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

/// The note for an image, which is attached when models take it: valid base64, PNG,
/// JPEG, GIF or WebP with readable dimensions by its bytes (the declared type is not
/// trusted), at most [`MAX_IMAGE_BASE64`] of base64 and [`MAX_IMAGE_SIDE`] pixels a side,
/// at most [`MAX_IMAGES`] per result. An image the API would refuse is named instead:
/// the API refuses the whole request for one bad image, and the image would stay in the
/// conversation.
fn image(data: &str, declared: &str, images: &mut Vec<Image>) -> String {
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data) else {
        return format!("[image content ({declared}) that is not valid base64; not shown]");
    };
    let size = bytes.len();
    let media_type = match imagesize::image_type(&bytes) {
        Ok(imagesize::ImageType::Png) => "image/png",
        Ok(imagesize::ImageType::Jpeg) => "image/jpeg",
        Ok(imagesize::ImageType::Gif) => "image/gif",
        Ok(imagesize::ImageType::Webp) => "image/webp",
        _ => {
            return format!(
                "[image content ({declared}, {size} bytes) not in a format models take (PNG, JPEG, GIF, WebP); not shown]"
            );
        }
    };
    let Ok(dimensions) = imagesize::blob_size(&bytes) else {
        return format!(
            "[image ({media_type}, {size} bytes) whose dimensions cannot be read; not shown]"
        );
    };
    let (width, height) = (dimensions.width, dimensions.height);
    if data.len() > MAX_IMAGE_BASE64 || width.max(height) > MAX_IMAGE_SIDE {
        return format!(
            "[image ({media_type}, {width}x{height}, {size} bytes) larger than a model takes ({MAX_IMAGE_SIDE} px a side, {MAX_IMAGE_BASE64} bytes of base64); not shown]"
        );
    }
    if images.len() >= MAX_IMAGES {
        return format!(
            "[image ({media_type}, {width}x{height}, {size} bytes) not shown: at most {MAX_IMAGES} images per result]"
        );
    }
    images.push(Image {
        media_type: media_type.to_string(),
        data: data.to_string(),
    });
    format!(
        "[image {}: {media_type}, {width}x{height}, {size} bytes, attached]",
        images.len()
    )
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

    fn encoded(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// The first bytes of an image of each kind, enough to read its dimensions.
    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        bytes.extend(width.to_be_bytes());
        bytes.extend(height.to_be_bytes());
        bytes.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
        bytes
    }

    fn gif(width: u16, height: u16) -> Vec<u8> {
        let mut bytes = b"GIF89a".to_vec();
        bytes.extend(width.to_le_bytes());
        bytes.extend(height.to_le_bytes());
        bytes.extend([0; 8]);
        bytes
    }

    fn jpeg(width: u16, height: u16) -> Vec<u8> {
        let mut bytes = vec![0xff, 0xd8, 0xff, 0xc0, 0x00, 0x11, 0x08];
        bytes.extend(height.to_be_bytes());
        bytes.extend(width.to_be_bytes());
        bytes.extend([0x03; 10]);
        bytes
    }

    fn webp(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = b"RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0".to_vec();
        bytes.extend(&(width - 1).to_le_bytes()[..3]);
        bytes.extend(&(height - 1).to_le_bytes()[..3]);
        bytes
    }

    #[test]
    fn text_images_and_resources_are_told_apart() {
        let png = encoded(&png(2, 3));
        let content = [
            json!({"type": "text", "text": "hello"}),
            json!({"type": "image", "mimeType": "image/png", "data": png}),
            json!({"type": "resource_link", "uri": "test://static/resource/1", "name": "Resource 1"}),
            json!({"type": "resource", "resource": {"uri": "file:///a.txt", "text": "body"}}),
        ];
        let rendered = render(&content);
        let text = rendered.text;
        assert!(
            text.starts_with("hello\n\n[image 1: image/png, 2x3, 33 bytes, attached]"),
            "{text}"
        );
        assert!(text.contains("[resource link: test://static/resource/1 (Resource 1)]"));
        assert!(text.ends_with("[resource file:///a.txt]\nbody"));
        assert_eq!(
            rendered.images,
            [Image {
                media_type: "image/png".into(),
                data: png
            }]
        );
    }

    #[test]
    fn images_models_would_refuse_are_named_not_attached() {
        let content = [
            // Declared PNG, really JPEG: the bytes decide.
            json!({"type": "image", "mimeType": "image/png", "data": encoded(&jpeg(4, 4))}),
            json!({"type": "image", "mimeType": "image/png", "data": "not base64!"}),
            json!({"type": "image", "mimeType": "image/svg+xml", "data": encoded(b"<svg/>")}),
            // A PNG signature with nothing after it: not an image a model could read.
            json!({"type": "image", "mimeType": "image/png", "data": encoded(b"\x89PNG\r\n\x1a\n")}),
            json!({"type": "image", "mimeType": "image/gif", "data": encoded(&gif(9000, 10))}),
        ];
        let rendered = render(&content);
        assert_eq!(rendered.images.len(), 1);
        assert_eq!(rendered.images[0].media_type, "image/jpeg");
        let text = &rendered.text;
        assert!(text.contains("not valid base64"), "{text}");
        assert!(
            text.contains("(image/svg+xml, 6 bytes) not in a format models take"),
            "{text}"
        );
        assert!(
            text.contains("(image/png, 8 bytes) not in a format"),
            "{text}"
        );
        assert!(
            text.contains("(image/gif, 9000x10, 18 bytes) larger than a model takes"),
            "{text}"
        );
        let many: Vec<Value> = (0..10)
            .map(|_| json!({"type": "image", "mimeType": "image/gif", "data": encoded(&gif(1, 1))}))
            .collect();
        let rendered = render(&many);
        assert_eq!(rendered.images.len(), MAX_IMAGES);
        assert!(rendered.text.contains("at most 8 images per result"));
        let rendered = render(&[
            json!({"type": "image", "mimeType": "image/webp", "data": encoded(&webp(640, 480))}),
        ]);
        assert_eq!(rendered.images[0].media_type, "image/webp");
        assert!(rendered.text.contains("640x480"), "{}", rendered.text);
        // The size limit is on the base64 the API counts.
        let mut big = png(100, 100);
        big.resize(MAX_IMAGE_BASE64 * 3 / 4 + 3, 0);
        let rendered =
            render(&[json!({"type": "image", "mimeType": "image/png", "data": encoded(&big)})]);
        assert!(rendered.images.is_empty());
        assert!(
            rendered.text.contains("larger than a model takes"),
            "{}",
            rendered.text
        );
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
