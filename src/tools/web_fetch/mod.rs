//! WebFetch: fetch a URL and return its content as Markdown (or, with
//! `tools.web_fetch.model`, a small model's answer to `prompt` over it), as Claude Code
//! does. Everything the model sends is hostile: the URL is judged by the rules, its host
//! and every address it resolves to are confined (see `policy::web` and [`fetch`]), and
//! what comes back is capped in size.

mod access;
mod cache;
mod content;
mod encoding;
mod fetch;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use url::Url;

pub(crate) use access::{NoAnswer, PageAnswerer, WebAccess};
use cache::Page;
use content::{MAX_CHARS, to_text, truncate_chars};
use encoding::{Coding, Cut};
use fetch::{Body, Fetched, MAX_BODY_BYTES};

use super::{About, ToolContext, ToolError, ToolInput, TypedTool};
use crate::policy::{Subject, UrlGrant, judge_url};
use crate::tools::recorded::{Answer, RecordedAnswers};

#[derive(Clone, Copy)]
pub(crate) struct WebFetchTool;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The URL to fetch: a fully formed http:// or https:// URL (http is upgraded to https).
    url: String,
    /// What to find out from the page (a page model answers it when one is configured).
    prompt: Option<String>,
}

impl ToolInput for Input {
    fn subject(&self) -> Subject {
        Subject::Url(self.url.clone())
    }
}

const DESCRIPTION: &str = "Fetches a web page and returns its content: HTML converted to Markdown, plain text and JSON as they are.

Usage:
- url must be a fully formed http:// or https:// URL; http is upgraded to https. URLs with credentials (user:password@) are refused.
- prompt says what you want from the page. When a page model is configured it answers the prompt from the page and its answer is the result; otherwise the page follows the prompt.
- Only hosts the task's permission rules allow can be fetched; loopback, private and link-local addresses need a rule naming that exact host.
- When a URL redirects to a host that is not allowed, the redirect is not followed: the result gives the redirect URL, and you may call WebFetch again with it.
- Binary content (images, archives) is refused. Long pages are cut to 100,000 characters, with a note.
- Results are cached for the run: fetching the same URL again returns the earlier content.
- Read-only: nothing in the workspace changes.";

/// Pages fetched at once in the whole process.
const FETCHES: usize = 4;

static FETCH_PERMITS: std::sync::LazyLock<tokio::sync::Semaphore> =
    std::sync::LazyLock::new(|| tokio::sync::Semaphore::new(FETCHES));

impl TypedTool for WebFetchTool {
    type Input = Input;
    const ABOUT: About = About::reads("WebFetch", DESCRIPTION);

    async fn run(&self, input: Input, ctx: &ToolContext) -> Result<String, ToolError> {
        let url = Url::parse(input.url.trim()).map_err(|e| {
            ToolError::Failed(format!(
                "Invalid URL {:?}: {e}; write a full URL such as https://example.com/page",
                input.url
            ))
        })?;
        let web = Arc::clone(&ctx.web);
        // Judged again here, with the run's grants: the tool needs the upgraded URL, and
        // a call that reached it without the policy (a test, `drover tool`) is held too.
        let granted = judge_url(&url, &*web.grants)
            .map_err(|refused| ToolError::Failed(format!("WebFetch refused {url}: {refused}")))?;
        if let Some(recorded) = &web.recorded
            && let Some(answer) = recorded_answer(recorded, ctx.call_id.as_deref())
        {
            return answer;
        }
        let prompt = input.prompt.as_deref().map(str::trim).unwrap_or_default();
        let (page, cached) = match page(&web, granted).await? {
            Got::Page(page, cached) => (page, cached),
            Got::Redirect(message) => return Ok(message),
        };
        let mut shown = page.text.clone();
        for note in &page.notes {
            shown.push_str("\n\n");
            shown.push_str(note);
        }
        let cache_note = if cached {
            "\n\n(Served from this run's cache: this URL was fetched earlier in the run.)"
        } else {
            ""
        };
        let mut model_failed = None;
        if let Some(answerer) = &web.answerer
            && !prompt.is_empty()
        {
            match answerer.answer(prompt, &page.final_url, &shown).await {
                Ok(answer) => return Ok(format!("{}{cache_note}", answer.trim())),
                Err(error) => model_failed = Some(error),
            }
        }
        let mut result = format!("URL: {}\n", page.final_url);
        if !prompt.is_empty() {
            result.push_str(&format!("Prompt: {prompt}\n"));
        }
        if let Some(error) = model_failed {
            result.push_str(&format!(
                "(The page model could not answer: {error}. The page follows instead.)\n"
            ));
        }
        result.push('\n');
        result.push_str(&shown);
        result.push_str(cache_note);
        Ok(result)
    }
}

/// In a replay, the recorded result of call `call_id`; None when the call is live (a
/// resumed run's call the recording does not answer: fetched for real).
fn recorded_answer(
    recorded: &RecordedAnswers,
    call_id: Option<&str>,
) -> Option<Result<String, ToolError>> {
    match recorded.answer(call_id) {
        Answer::Recorded(output) if output.is_error => Some(Err(ToolError::Failed(output.content))),
        Answer::Recorded(output) => Some(Ok(output.content)),
        Answer::Missing => Some(Err(ToolError::Failed(
            "the recording has no result for this call of WebFetch: the replay took a different path (a replay fetches nothing)".to_string(),
        ))),
        Answer::Live => None,
    }
}

/// What fetching a URL gave: the page (and whether it came from the run's cache), or the
/// message about a redirect that was not followed.
enum Got {
    Page(Arc<Page>, bool),
    Redirect(String),
}

/// The page at `granted`: from the run's cache, else fetched, converted and cached.
async fn page(web: &WebAccess, granted: UrlGrant) -> Result<Got, ToolError> {
    // The fragment is the browser's, never sent: one page, one cache entry.
    let key = {
        let mut page = granted.url.clone();
        page.set_fragment(None);
        page.to_string()
    };
    if let Some(page) = web.cache.get(&key) {
        return Ok(Got::Page(page, true));
    }
    let fetched = {
        // At most FETCHES bodies (10 MiB each) in memory at once, whatever the number of
        // calls in a turn.
        let _permit = FETCH_PERMITS
            .acquire()
            .await
            .map_err(|e| ToolError::Internal(format!("the fetch permits are gone: {e}")))?;
        fetch::fetch(granted, Arc::clone(&web.grants)).await
    }
    .map_err(|error| ToolError::Failed(error.to_string()))?;
    match fetched {
        Fetched::Redirect {
            from,
            to,
            status,
            why,
        } => Ok(Got::Redirect(redirect_message(&from, &to, status, &why))),
        Fetched::Page(body) => {
            // Converting up to 10 MiB of HTML is CPU work: off the async threads, on a
            // stack deep enough for the converter.
            let page = content::on_converter_thread(move || page_of(body)).await??;
            web.cache.put(&key, page.clone());
            Ok(Got::Page(Arc::new(page), false))
        }
    }
}

/// The page the model is shown for `body`, or why there is none.
fn page_of(body: Body) -> Result<Page, ToolError> {
    let Body {
        url,
        status,
        content_type,
        bytes,
        coding,
        cut: body_cut,
    } = body;
    if !status.is_success() {
        let detail = to_text(content_type.as_deref(), &bytes)
            .map(|text| truncate_chars(text, 2_000).0)
            .unwrap_or_default();
        let detail = if detail.trim().is_empty() {
            String::new()
        } else {
            format!("\n\n{}", detail.trim())
        };
        return Err(ToolError::Failed(format!(
            "{url} answered HTTP {status}{detail}"
        )));
    }
    let text = to_text(content_type.as_deref(), &bytes)
        .map_err(|e| ToolError::Failed(format!("{url}: {e}")))?;
    let total = text.chars().count();
    let (text, cut) = truncate_chars(text, MAX_CHARS);
    let mut notes = Vec::new();
    notes.extend(cut_note(body_cut, coding));
    if cut {
        notes.push(format!(
            "[Content truncated: showing the first {MAX_CHARS} of {total} characters. Fetch a more specific page if you need the rest.]"
        ));
    }
    Ok(Page {
        final_url: url.to_string(),
        text,
        notes,
    })
}

/// What the model is told of a body cut at [`MAX_BODY_BYTES`], if it was.
fn cut_note(cut: Cut, coding: Coding) -> Option<String> {
    let mib = MAX_BODY_BYTES / (1024 * 1024);
    match (cut, coding) {
        (Cut::None, _) => None,
        (Cut::Read, Coding::Identity) => Some(format!(
            "[Note: the response was larger than {mib} MiB; only its first {mib} MiB were read.]"
        )),
        (Cut::Read, coding) => Some(format!(
            "[Note: the {}-compressed response was larger than {mib} MiB; only its first {mib} MiB were read and decoded.]",
            coding.name()
        )),
        (Cut::Decoded, coding) => Some(format!(
            "[Note: the response decoded from {} to more than {mib} MiB (a compression bomb, or a very large page); decoding stopped there and only its first {mib} MiB were kept.]",
            coding.name()
        )),
    }
}

/// What the model is told of a redirect the fetch did not follow, as Claude Code tells it.
fn redirect_message(from: &Url, to: &str, status: u16, why: &str) -> String {
    let same_host = Url::parse(to).is_ok_and(|to| to.host_str() == from.host_str());
    let what = if same_host {
        "to a URL this fetch does not follow"
    } else {
        "to a different host"
    };
    format!(
        "REDIRECT DETECTED: The URL redirects {what}.\n\nOriginal URL: {from}\nRedirect URL: {to}\nStatus: {status}\n\nThe redirect was not followed: {why}\nTo fetch the redirect target, call WebFetch again with url \"{to}\"; that call is judged by the permission rules."
    )
}

#[cfg(test)]
#[path = "web_fetch_tests.rs"]
mod tests;
