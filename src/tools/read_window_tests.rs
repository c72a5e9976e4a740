// Test-only module: its parent includes it under #[cfg(test)].
use super::*;

fn window(content: &[u8], first: usize, limit: usize) -> Result<Window, WindowError> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("f"), content).unwrap();
    let roots = Roots::new(std::slice::from_ref(&root));
    read_window(&roots, &root.join("f"), first, limit)
}

fn shown(window: &Window) -> Vec<(usize, &str)> {
    window
        .lines
        .iter()
        .map(|(n, line)| (*n, line.as_str()))
        .collect()
}

#[test]
fn counts_lines_as_split_does_and_keeps_only_the_window() {
    let w = window(b"one\r\ntwo\nthree\n", 2, 1).unwrap();
    assert_eq!(shown(&w), [(2, "two")]);
    assert_eq!(w.total, 4);
    assert!(!w.lossy && !w.empty);
    let whole = window(b"one\r\ntwo", 1, 10).unwrap();
    assert_eq!(shown(&whole), [(1, "one"), (2, "two")]);
    assert_eq!(whole.total, 2);
    let digest: [u8; 32] = Sha256::digest(b"one\r\ntwo").into();
    assert_eq!(whole.sha256, digest);
}

#[test]
fn a_bom_is_hidden_and_utf16_is_decoded() {
    let w = window(b"\xEF\xBB\xBFfirst\nsecond", 1, 5).unwrap();
    assert_eq!(shown(&w), [(1, "first"), (2, "second")]);
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain("a\nb".encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    let w = window(&utf16, 2, 1).unwrap();
    assert_eq!(shown(&w), [(2, "b")]);
}

#[test]
fn binary_and_empty_files_are_told_apart() {
    assert!(matches!(
        window(b"ab\0cd", 1, 5),
        Err(WindowError::NotText(NotText::Binary))
    ));
    assert!(window(b"", 1, 5).unwrap().empty);
    assert!(window(b"\xEF\xBB\xBF", 1, 5).unwrap().empty);
}

#[test]
fn a_huge_line_is_held_only_as_far_as_it_is_shown() {
    let mut content = vec![b'x'; 5_000_000];
    content.extend_from_slice("é\nnext\n".as_bytes());
    let w = window(&content, 1, 2).unwrap();
    let first = &w.lines[0].1;
    assert!(first.len() < 10_000, "{}", first.len());
    assert!(
        first.ends_with("… [line truncated: 5000001 characters in total]"),
        "{}",
        &first[first.len() - 60..]
    );
    assert_eq!(w.lines[1], (2, "next".to_string()));
    assert!(!w.lossy);
}

#[test]
fn invalid_utf8_in_a_shown_line_is_flagged() {
    let w = window(b"ok\ncaf\xe9\n", 2, 1).unwrap();
    assert_eq!(shown(&w), [(2, "caf\u{fffd}")]);
    assert!(w.lossy);
    assert!(!window(b"ok\ncaf\xe9\n", 1, 1).unwrap().lossy);
}

#[test]
fn a_window_too_large_to_hold_ends_early() {
    let line = "y".repeat(1000);
    let content = format!("{line}\n").repeat(5000);
    let w = window(content.as_bytes(), 1, 5000).unwrap();
    assert!(w.lines.len() < 5000);
    assert!(w.lines.len() * 1000 >= MAX_WINDOW_BYTES);
    assert_eq!(w.total, 5001);
}
