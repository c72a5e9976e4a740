//! The run's page cache: the same URL fetched twice in one run is fetched once, as in
//! Claude Code (whose cache keeps pages for 15 minutes). Bounded in entries and bytes,
//! oldest out first, so a model fetching many pages cannot grow drover without limit.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Most pages kept.
pub(crate) const MAX_ENTRIES: usize = 32;
/// Most bytes of page text kept, all entries together.
pub(crate) const MAX_BYTES: usize = 16 * 1024 * 1024;
/// How long a page stays fresh.
pub(crate) const TTL: Duration = Duration::from_secs(15 * 60);

/// A page as the tool made it, ready to be shown again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Page {
    /// Where the page was finally fetched from (after redirects within allowed hosts).
    pub final_url: String,
    /// The text (Markdown for HTML), already cut to the tool's limit.
    pub text: String,
    /// Notes on what was cut, shown after the text.
    pub notes: Vec<String>,
}

impl Page {
    fn size(&self) -> usize {
        self.final_url.len() + self.text.len() + self.notes.iter().map(String::len).sum::<usize>()
    }
}

#[derive(Default)]
pub(crate) struct PageCache {
    entries: Mutex<VecDeque<(String, Instant, Arc<Page>)>>,
}

impl PageCache {
    /// The fresh page cached for `url`, if any.
    pub(crate) fn get(&self, url: &str) -> Option<Arc<Page>> {
        self.get_at(url, Instant::now())
    }

    fn get_at(&self, url: &str, now: Instant) -> Option<Arc<Page>> {
        // A poisoned lock means a call panicked holding it; the deque is still whole.
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|(_, at, _)| now.saturating_duration_since(*at) < TTL);
        entries
            .iter()
            .find(|(key, _, _)| key == url)
            .map(|(_, _, page)| Arc::clone(page))
    }

    /// Keep `page` for `url`, dropping the oldest pages to stay within the bounds. A page
    /// larger than the whole budget is not kept.
    pub(crate) fn put(&self, url: &str, page: Page) {
        self.put_at(url, page, Instant::now());
    }

    fn put_at(&self, url: &str, page: Page, now: Instant) {
        let size = page.size();
        if size > MAX_BYTES {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|(key, _, _)| key != url);
        let mut total: usize = entries.iter().map(|(_, _, p)| p.size()).sum();
        while !entries.is_empty() && (entries.len() >= MAX_ENTRIES || total + size > MAX_BYTES) {
            if let Some((_, _, old)) = entries.pop_front() {
                total -= old.size();
            }
        }
        entries.push_back((url.to_string(), now, Arc::new(page)));
    }

    /// How many pages are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(text: &str) -> Page {
        Page {
            final_url: "https://example.com/".into(),
            text: text.into(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn a_page_comes_back_until_it_expires() {
        let cache = PageCache::default();
        let now = Instant::now();
        cache.put_at("https://example.com/", page("hello"), now);
        assert_eq!(
            cache.get_at("https://example.com/", now).unwrap().text,
            "hello"
        );
        assert!(cache.get_at("https://example.com/other", now).is_none());
        assert!(cache.get_at("https://example.com/", now + TTL).is_none());
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn entries_and_bytes_are_bounded_oldest_out_first() {
        let cache = PageCache::default();
        for i in 0..MAX_ENTRIES + 5 {
            cache.put(&format!("https://example.com/{i}"), page("x"));
        }
        assert_eq!(cache.len(), MAX_ENTRIES);
        assert!(cache.get("https://example.com/0").is_none());
        assert!(
            cache
                .get(&format!("https://example.com/{}", MAX_ENTRIES + 4))
                .is_some()
        );

        let big = "y".repeat(MAX_BYTES / 2);
        cache.put("https://example.com/big1", page(&big));
        cache.put("https://example.com/big2", page(&big));
        assert!(cache.get("https://example.com/big1").is_none());
        assert!(cache.get("https://example.com/big2").is_some());
        cache.put("https://example.com/huge", page(&"z".repeat(MAX_BYTES + 1)));
        assert!(cache.get("https://example.com/huge").is_none());
    }
}
