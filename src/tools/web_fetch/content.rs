//! What a fetched body becomes for the model: HTML as Markdown (htmd, a turndown-style
//! converter), text and JSON as they are, anything binary refused. The model reads
//! text; an image or archive as bytes would only spend its context.

use markup5ever_rcdom::NodeData;

use crate::tools::ToolError;

/// Most characters of page text the model is shown (the rest is cut, with a note).
pub(crate) const MAX_CHARS: usize = 100_000;

/// How a body is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Binary,
}

/// Why a body gives no text.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoText {
    #[error(
        "the content is binary ({kind}, {bytes} bytes); WebFetch returns only text: HTML pages, plain text, JSON, XML"
    )]
    Binary { kind: String, bytes: usize },
    /// The converter's own words.
    #[error("the HTML could not be converted: {0}")]
    Unconvertible(String),
}

/// The text of a body whose `Content-Type` is `content_type`, or why it has none.
pub(crate) fn to_text(content_type: Option<&str>, body: &[u8]) -> Result<String, NoText> {
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
    // A body labelled text that holds NUL bytes is not text whatever its label (gzip bytes
    // sent as text/plain, a compressed body inside another encoding).
    let kind = if kind != Kind::Binary && body[..body.len().min(8192)].contains(&0) {
        Kind::Binary
    } else {
        kind
    };
    match kind {
        Kind::Binary => Err(NoText::Binary {
            kind: mime.map_or_else(
                || "no content type, not text".to_string(),
                |mime| {
                    if is_textual(&mime) || mime.contains("html") {
                        format!("labelled {mime}, but holding NUL bytes")
                    } else {
                        mime
                    }
                },
            ),
            bytes: body.len(),
        }),
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

/// Deepest element nesting converted as Markdown. The converter walks the page's tree
/// recursively and the parser's cost grows with depth times elements, so a hostile page
/// nesting a million `<div>`s could exhaust a stack or a CPU; past this depth the page's
/// text is returned instead, with a note.
pub(crate) const MAX_DEPTH: usize = 512;

/// Tags that never nest (void elements).
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "!doctype",
];

/// Tags whose end tag may be left out: the parser closes them itself, so counting them
/// as nesting would take an ordinary sloppy page for a deep one.
const OPTIONAL_END: &[&str] = &[
    "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "tbody", "thead", "tfoot",
    "colgroup", "caption", "rb", "rt", "rp", "rtc", "html", "head", "body",
];

/// Elements whose text is not content.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "head",
];

/// Stack of the converter's thread: the Markdown walk recurses once per level, up to
/// [`MAX_DEPTH`] levels. Reserved, not committed: untouched pages cost nothing.
const CONVERTER_STACK: usize = 64 * 1024 * 1024;

/// Longest the conversion of one page may take.
const CONVERT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// How many pages are converted at once, in the whole process: a turn of many WebFetch
/// calls (they run concurrently) cannot take every core and all memory.
const CONVERTERS: usize = 2;

/// The permits of [`CONVERTERS`]; a converter thread holds its permit until it ends,
/// even one whose caller gave up waiting, so runaway conversions cannot pile up.
static CONVERTER_PERMITS: std::sync::LazyLock<std::sync::Arc<tokio::sync::Semaphore>> =
    std::sync::LazyLock::new(|| std::sync::Arc::new(tokio::sync::Semaphore::new(CONVERTERS)));

/// Run `work` (a page's conversion) on a thread of its own with a stack deep enough for
/// [`MAX_DEPTH`], at most [`CONVERTERS`] at once, each for at most 30 seconds (past that
/// the model is told, and the thread is left to finish on its own, still holding its
/// permit).
pub(crate) async fn on_converter_thread<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ToolError> {
    let permit = std::sync::Arc::clone(&CONVERTER_PERMITS)
        .acquire_owned()
        .await
        .map_err(|e| ToolError::Internal(format!("the page converters are gone: {e}")))?;
    let (sender, receiver) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("drover-webfetch".into())
        .stack_size(CONVERTER_STACK)
        .spawn(move || {
            let _ = sender.send(work());
            drop(permit);
        })
        .map_err(|e| ToolError::Internal(format!("could not start the page converter: {e}")))?;
    match tokio::time::timeout(CONVERT_TIMEOUT, receiver).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(_)) => Err(ToolError::Failed(
            "the page could not be converted (the converter failed on it)".to_string(),
        )),
        Err(_) => Err(ToolError::Failed(format!(
            "converting the page took longer than {} seconds and was given up",
            CONVERT_TIMEOUT.as_secs()
        ))),
    }
}

/// The most HTML converted to Markdown; a larger page comes back as its text.
pub(crate) const MAX_CONVERTED_HTML: usize = 2 * 1024 * 1024;

/// The most work a conversion may do, in characters times nesting depth: Markdown
/// prefixes every line with a marker per enclosing quote or list, so a page of many
/// lines inside deep nesting grows quadratically when converted. A real page costs a
/// few million; past this the page comes back as its text.
pub(crate) const MAX_CONVERSION_COST: u64 = 20_000_000;

/// HTML as Markdown, without scripts, styles and other parts that are not content. A
/// page nesting deeper than [`MAX_DEPTH`], larger than [`MAX_CONVERTED_HTML`], or costing
/// more than [`MAX_CONVERSION_COST`] to convert comes back as its text.
pub(crate) fn html_to_markdown(html: &str) -> Result<String, NoText> {
    if approximate_depth(html) > MAX_DEPTH {
        return Ok(format!("{}\n\n{}", too_deep_note(), strip_tags(html)));
    }
    if html.len() > MAX_CONVERTED_HTML {
        return Ok(format!(
            "[Note: the page has {} bytes of HTML, more than the {MAX_CONVERTED_HTML} converted to Markdown; its text is shown without formatting.]\n\n{}",
            html.len(),
            strip_tags(html)
        ));
    }
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED.to_vec())
        .build();
    let tree = converter
        .html_to_tree(html)
        .map_err(|e| NoText::Unconvertible(e.to_string()))?;
    if tree_depth(&tree) > MAX_DEPTH {
        return Ok(format!("{}\n\n{}", too_deep_note(), tree_text(&tree)));
    }
    if conversion_cost(&tree) > MAX_CONVERSION_COST {
        return Ok(format!(
            "[Note: the page's text sits too deep in nested quotes or lists to convert to Markdown at a bounded cost; its text is shown without formatting.]\n\n{}",
            tree_text(&tree)
        ));
    }
    Ok(converter.tree_to_markdown(&tree).trim().to_string())
}

fn too_deep_note() -> String {
    format!(
        "[Note: the page nests elements more than {MAX_DEPTH} deep; its text is shown without Markdown formatting.]"
    )
}

/// The deepest element nesting of `html` as its tags say, counted cheaply before any
/// parsing: opening tags minus matching closing ones, leaving out void elements and those
/// whose end tag may be omitted. Errs towards deeper (a self-closing `<div/>` counts, as
/// the parser takes it as open).
fn approximate_depth(html: &str) -> usize {
    let mut open: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let (mut depth, mut deepest) = (0usize, 0usize);
    for (at, _) in html.match_indices('<') {
        let rest = &html[at + 1..];
        let (closing, rest) = match rest.strip_prefix('/') {
            Some(rest) => (true, rest),
            None => (false, rest),
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | ':' | '!'))
            .take(64)
            .collect::<String>()
            .to_ascii_lowercase();
        if name.is_empty()
            || !name.starts_with(|c: char| c.is_ascii_alphabetic())
            || VOID.contains(&name.as_str())
            || OPTIONAL_END.contains(&name.as_str())
        {
            continue;
        }
        let count = open.entry(name).or_default();
        if closing {
            if *count > 0 {
                *count -= 1;
                depth -= 1;
            }
        } else {
            *count += 1;
            depth += 1;
            deepest = deepest.max(depth);
        }
    }
    deepest
}

/// The depth of the parsed tree, walked without recursion.
fn tree_depth(root: &htmd::Node) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(root.children.borrow().clone(), 1usize)];
    while let Some((children, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        for child in children {
            let grandchildren = child.children.borrow().clone();
            if !grandchildren.is_empty() {
                stack.push((grandchildren, depth + 1));
            }
        }
    }
    deepest
}

/// What converting the tree costs: every node's text (at least one character) times how
/// deep it sits, walked without recursion.
fn conversion_cost(root: &htmd::Node) -> u64 {
    let mut cost = 0u64;
    let mut stack: Vec<(std::rc::Rc<htmd::Node>, u64)> = root
        .children
        .borrow()
        .iter()
        .map(|child| (std::rc::Rc::clone(child), 1))
        .collect();
    while let Some((node, depth)) = stack.pop() {
        let length = match &node.data {
            NodeData::Text { contents } => contents.borrow().len() as u64,
            _ => 0,
        };
        cost = cost.saturating_add(length.max(1).saturating_mul(depth));
        if cost > MAX_CONVERSION_COST {
            return cost;
        }
        stack.extend(
            node.children
                .borrow()
                .iter()
                .map(|child| (std::rc::Rc::clone(child), depth + 1)),
        );
    }
    cost
}

/// The text of the parsed tree (skipping scripts and styles), walked without recursion.
fn tree_text(root: &htmd::Node) -> String {
    let mut text = String::new();
    let mut stack: Vec<std::rc::Rc<htmd::Node>> =
        root.children.borrow().iter().rev().cloned().collect();
    while let Some(node) = stack.pop() {
        match &node.data {
            NodeData::Text { contents } => text.push_str(&contents.borrow()),
            NodeData::Element { name, .. } => {
                if SKIPPED.contains(&&*name.local) {
                    continue;
                }
                text.push(' ');
                stack.extend(node.children.borrow().iter().rev().cloned());
            }
            _ => stack.extend(node.children.borrow().iter().rev().cloned()),
        }
    }
    collapse_whitespace(&text)
}

/// The text of `html` with every tag removed (for pages too deep to parse).
fn strip_tags(html: &str) -> String {
    let mut text = String::with_capacity(html.len() / 2);
    let mut in_tag = false;
    for c in html.chars() {
        match (in_tag, c) {
            (false, '<') => in_tag = true,
            (true, '>') => {
                in_tag = false;
                text.push(' ');
            }
            (false, c) => text.push(c),
            (true, _) => {}
        }
    }
    collapse_whitespace(&text)
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
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
    fn a_body_labelled_text_holding_nul_bytes_is_binary() {
        let gzip = [
            0x1f_u8, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03,
        ];
        let error = to_text(Some("text/plain"), &gzip).unwrap_err().to_string();
        assert!(
            error.contains("labelled text/plain, but holding NUL bytes"),
            "{error}"
        );
        assert!(to_text(Some("text/html"), b"<p>a\0b</p>").is_err());
        assert_eq!(to_text(Some("text/plain"), b"plain").unwrap(), "plain");
    }

    #[test]
    fn text_and_json_pass_through_binary_is_refused() {
        assert_eq!(to_text(Some("text/plain"), b"a\nb").unwrap(), "a\nb");
        assert_eq!(
            to_text(Some("application/json"), b"{\"a\":1}").unwrap(),
            "{\"a\":1}"
        );
        assert_eq!(to_text(Some("application/ld+json"), b"{}").unwrap(), "{}");
        let error = to_text(Some("image/png"), b"\x89PNG\r\n\x1a\n")
            .unwrap_err()
            .to_string();
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

    #[test]
    fn a_page_too_costly_to_convert_comes_back_as_text_quickly() {
        // Many lines inside deep quotes: Markdown would repeat the quote markers on
        // every line (hundreds of megabytes); the cost budget turns it into text.
        let bomb = format!(
            "{}{}{}",
            "<blockquote>".repeat(500),
            "<p>x</p>".repeat(100_000),
            "</blockquote>".repeat(500)
        );
        let started = std::time::Instant::now();
        let text = html_to_markdown(&bomb).unwrap();
        assert!(
            text.starts_with("[Note: the page's text sits too deep"),
            "{}",
            &text[..80]
        );
        assert!(text.len() < 1_000_000, "{}", text.len());
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        let huge = format!("<p>{}</p>", "word ".repeat(MAX_CONVERTED_HTML / 4));
        assert!(
            html_to_markdown(&huge)
                .unwrap()
                .starts_with("[Note: the page has")
        );
        // An ordinary page converts.
        let page =
            "<h1>Title</h1><ul><li>one</li><li>two</li></ul><blockquote><p>q</p></blockquote>";
        let markdown = html_to_markdown(page).unwrap();
        assert!(
            markdown.contains("# Title") && markdown.contains("> q"),
            "{markdown}"
        );
    }

    #[test]
    fn a_deeply_nested_page_comes_back_as_text_without_exhausting_the_stack() {
        for depth in [MAX_DEPTH + 1, 200_000] {
            let html = format!(
                "{}deep text{}",
                "<div>".repeat(depth),
                "</div>".repeat(depth)
            );
            let out = html_to_markdown(&html).unwrap();
            assert!(out.contains("deep text"), "{depth}");
            assert!(out.contains("nests elements more than"), "{depth}");
        }
        // Nesting the cheap count does not see (tags the parser nests on its own) is
        // caught on the parsed tree.
        let sneaky = format!("{}text", "<table><tr><td>".repeat(MAX_DEPTH));
        let out = html_to_markdown(&sneaky).unwrap();
        assert!(
            out.contains("text") && out.contains("nests elements"),
            "{out}"
        );
        // Ordinary sloppy pages are not taken for deep ones.
        let sloppy = format!("<ul>{}</ul>", "<li><p>item".repeat(5_000));
        assert!(!approximate_depth(&sloppy).gt(&MAX_DEPTH));
        assert!(
            !html_to_markdown(&sloppy)
                .unwrap()
                .contains("nests elements")
        );
    }
}
