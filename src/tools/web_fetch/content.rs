//! What a fetched body becomes for the model: HTML as Markdown (htmd, a turndown-style
//! converter), text and JSON as they are, anything binary refused. The model reads
//! text; an image or archive as bytes would only spend its context.

/// Most characters of page text the model is shown (the rest is cut, with a note).
pub(crate) const MAX_CHARS: usize = 100_000;

/// How a body is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Binary,
}

/// The text of a body whose `Content-Type` is `content_type`, or why it has none.
pub(crate) fn to_text(content_type: Option<&str>, body: &[u8]) -> Result<String, String> {
    let mime = content_type
        .and_then(|t| t.split(';').next())
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty());
    let kind = match mime.as_deref() {
        Some("text/html" | "application/xhtml+xml") => Kind::Html,
        Some(t) if is_textual(t) => Kind::Text,
        Some(_) => Kind::Binary,
        None => sniff(body),
    };
    match kind {
        Kind::Binary => Err(format!(
            "the content is binary ({}, {} bytes); WebFetch returns only text: HTML pages, plain text, JSON, XML",
            mime.as_deref().unwrap_or("no content type, not text"),
            body.len()
        )),
        Kind::Text => Ok(String::from_utf8_lossy(body).into_owned()),
        Kind::Html => html_to_markdown(&String::from_utf8_lossy(body)),
    }
}

fn is_textual(mime: &str) -> bool {
    mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/ecmascript"
                | "application/x-javascript"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/sql"
                | "application/graphql"
        )
}

/// A body without a content type: text when it has no NUL byte and is UTF-8 (HTML
/// when it opens like a page), binary otherwise.
fn sniff(body: &[u8]) -> Kind {
    let head = &body[..body.len().min(8192)];
    if head.contains(&0) {
        return Kind::Binary;
    }
    // A cut-off multi-byte character at the end of the sample is still text.
    match std::str::from_utf8(head) {
        Ok(_) => {}
        Err(e) if e.error_len().is_none() => {}
        Err(_) => return Kind::Binary,
    }
    let start = String::from_utf8_lossy(&head[..head.len().min(512)])
        .trim_start()
        .to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Kind::Html
    } else {
        Kind::Text
    }
}

/// HTML as Markdown, without scripts, styles and other parts that are not content.
pub(crate) fn html_to_markdown(html: &str) -> Result<String, String> {
    htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object",
            "embed", "head",
        ])
        .build()
        .convert(html)
        .map(|markdown| markdown.trim().to_string())
        .map_err(|e| format!("the HTML could not be converted: {e}"))
}

/// `text` cut to at most `max` characters (on a character boundary), and whether it was.
pub(crate) fn truncate_chars(text: String, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        Some((at, _)) => {
            let mut text = text;
            text.truncate(at);
            (text, true)
        }
        None => (text, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_markdown_without_scripts() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body><h1>Title</h1><p>Some <b>bold</b> <a href=\"https://x.org/\">link</a></p><script>alert(1)</script><ul><li>one</li></ul></body></html>";
        let md = to_text(Some("text/html; charset=utf-8"), html.as_bytes()).unwrap();
        assert!(md.contains("# Title"), "{md}");
        assert!(md.contains("**bold**"), "{md}");
        assert!(md.contains("[link](https://x.org/)"), "{md}");
        assert!(md.contains("one"), "{md}");
        assert!(!md.contains("alert"), "{md}");
        assert!(!md.contains("p{}"), "{md}");
    }

    #[test]
    fn text_and_json_pass_through_binary_is_refused() {
        assert_eq!(to_text(Some("text/plain"), b"a\nb").unwrap(), "a\nb");
        assert_eq!(
            to_text(Some("application/json"), b"{\"a\":1}").unwrap(),
            "{\"a\":1}"
        );
        assert_eq!(to_text(Some("application/ld+json"), b"{}").unwrap(), "{}");
        let error = to_text(Some("image/png"), b"\x89PNG\r\n\x1a\n").unwrap_err();
        assert!(error.contains("binary (image/png, 8 bytes)"), "{error}");
        assert!(to_text(None, b"\x00\x01\x02").is_err());
        assert!(to_text(None, b"\xff\xfe\xfd garbage").is_err());
        assert_eq!(to_text(None, b"plain words").unwrap(), "plain words");
        assert!(
            to_text(None, b"<!DOCTYPE html><p>hi</p>")
                .unwrap()
                .contains("hi")
        );
        assert!(
            !to_text(None, b"<!DOCTYPE html><p>hi</p>")
                .unwrap()
                .contains("<p>")
        );
    }

    #[test]
    fn truncation_counts_characters_and_keeps_them_whole() {
        let (text, cut) = truncate_chars("héllo wörld".to_string(), 4);
        assert_eq!((text.as_str(), cut), ("héll", true));
        let (text, cut) = truncate_chars("short".to_string(), 5);
        assert_eq!((text.as_str(), cut), ("short", false));
        let (text, cut) = truncate_chars("ééé".to_string(), 0);
        assert_eq!((text.as_str(), cut), ("", true));
    }
}
