use super::*;

#[test]
fn every_allowed_scheme_parses_and_loses_its_credentials() {
    let url = RepoUrl::parse("https://bot:s3cr%40t@git.example.com/org/a.git").unwrap();
    assert_eq!(url.scheme, RepoScheme::Https);
    assert_eq!(url.clean, "https://git.example.com/org/a.git");
    assert_eq!(url.username.as_deref(), Some("bot"));
    assert_eq!(url.password.as_deref(), Some("s3cr@t"));
    assert!(!format!("{url:?}").contains("s3cr"));
    for (text, scheme) in [
        ("git://127.0.0.1:9418/a.git", RepoScheme::Git),
        ("http://127.0.0.1:8080/a.git", RepoScheme::Http),
        ("ssh://git@host/org/a.git", RepoScheme::Ssh),
        ("file:///srv/a.git", RepoScheme::File),
        ("git@github.com:org/a.git", RepoScheme::Ssh),
    ] {
        let url = RepoUrl::parse(text).unwrap();
        assert_eq!(url.scheme, scheme, "{text}");
        assert!(url.password.is_none());
    }
    // ssh keeps its login, which is no secret.
    assert_eq!(
        RepoUrl::parse("ssh://git@host/a.git").unwrap().clean,
        "ssh://git@host/a.git"
    );
}

#[test]
fn programs_options_and_other_schemes_are_refused() {
    for text in [
        "ext::sh -c touch% /tmp/pwned",
        "ext::sh",
        "fd::3",
        "-uhttps://x/a.git",
        "ftp://host/a.git",
        "transport::https://host/a",
        "/srv/plain/path",
        "relative/path",
        "file://otherhost/a.git",
        "ssh://user:pw@host/a.git",
        "https://host/a b",
        "",
    ] {
        assert!(RepoUrl::parse(text).is_err(), "{text:?} was taken");
    }
    let error = RepoUrl::parse("ext::sh -c id").unwrap_err().to_string();
    assert!(error.contains("ext::"), "{error}");
}

#[test]
fn refs_follow_check_ref_format() {
    for good in [
        "main",
        "release/1.2",
        "v1.0.0",
        "refs/heads/x",
        "abc123",
        "deadbeef",
    ] {
        assert_eq!(ref_problem(good), None, "{good}");
    }
    for bad in [
        "",
        "-x",
        "--upload-pack=x",
        "a..b",
        "HEAD~1",
        "a^",
        "a:b",
        "x@{1}",
        "@",
        "a b",
        "a\tb",
        "/a",
        "a/",
        "a//b",
        ".hidden",
        "a/.b",
        "x.lock",
        "a.",
        "a*",
        "a[",
        "a\\b",
        "a?",
    ] {
        assert!(ref_problem(bad).is_some(), "{bad:?} was taken");
    }
    assert!(GitRef::new("abcd").unwrap().may_be_commit());
    assert!(!GitRef::new("main").unwrap().may_be_commit());
    assert!(GitRef::new(&"a".repeat(40)).unwrap().is_full_commit());
}
