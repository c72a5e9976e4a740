// Test-only module: its parent includes it under #[cfg(test)].
use super::*;

fn host(written: &str) -> HostPattern {
    parse(written).unwrap_or_else(|error| panic!("{written}: {error}"))
}

fn refused(written: &str) -> String {
    match parse(written) {
        Ok(pattern) => panic!("{written} was taken as {pattern:?}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn every_accepted_form_is_normalised_and_written_back_canonically() {
    for (written, canonical, port) in [
        ("example.org", "example.org", None),
        ("Example.ORG.", "example.org", None),
        ("example.org:8443", "example.org:8443", Some(8443)),
        ("*.example.org", "*.example.org", None),
        ("*.Example.org:443", "*.example.org:443", Some(443)),
        ("bücher.example", "xn--bcher-kva.example", None),
        ("*.bücher.example", "*.xn--bcher-kva.example", None),
        ("10.0.0.5", "10.0.0.5", None),
        ("127.0.0.1:8080", "127.0.0.1:8080", Some(8080)),
        ("[::1]", "[::1]", None),
        ("[::1]:8080", "[::1]:8080", Some(8080)),
        ("[2001:DB8:0:0::1]", "[2001:db8::1]", None),
        ("localhost", "localhost", None),
        ("LOCALHOST:3000", "localhost:3000", Some(3000)),
        ("registry:1", "registry:1", Some(1)),
        ("registry:65535", "registry:65535", Some(65535)),
    ] {
        let pattern = host(written);
        assert_eq!(pattern.to_string(), canonical, "{written}");
        assert_eq!(pattern.port, port, "{written}");
        assert_eq!(
            serde_json::to_value(&pattern).unwrap(),
            serde_json::json!(canonical),
            "recorded as its canonical text"
        );
        assert_eq!(host(canonical), pattern, "{canonical} parses to itself");
    }
}

#[test]
fn the_pattern_says_what_it_is() {
    assert!(host("*.example.org").is_wildcard());
    assert!(!host("example.org").is_wildcard());
    for address in [
        "localhost",
        "127.0.0.1",
        "10.0.0.5:80",
        "[::1]",
        "[fd00::1]:9",
    ] {
        assert!(host(address).names_address(), "{address}");
    }
    for name in ["example.org", "*.example.org", "localhost.example.org"] {
        assert!(!host(name).names_address(), "{name}");
    }
    assert_eq!(HostPattern::DEFAULT_PORTS, [443, 80]);
}

#[test]
fn a_url_is_refused_with_its_host_to_write_instead() {
    let message = refused("https://x.org");
    assert!(
        message.starts_with("\"https://x.org\" must be a host name, not a URL: write \"x.org\""),
        "{message}"
    );
    assert!(
        refused("http://X.org:8080/simple/").contains("write \"x.org:8080\""),
        "the port is kept"
    );
    assert!(refused("git+ssh://").contains("not a URL"));
}

#[test]
fn paths_queries_and_credentials_are_refused() {
    for written in [
        "example.org/simple",
        "example.org?x=1",
        "example.org#top",
        "user@example.org",
        "user:pw@example.org",
        "example.org\\x",
        "exa mple.org",
        "example.org%2f",
    ] {
        let message = refused(written);
        assert!(
            message.contains("must be a host name") && message.contains("without a path"),
            "{written}: {message}"
        );
    }
}

#[test]
fn a_star_alone_or_out_of_place_is_refused() {
    for written in ["*", "*:443", "*.*"] {
        assert!(
            refused(written).contains("would allow every host"),
            "{written}"
        );
    }
    for written in [
        "*example.org",
        "a.*.example.org",
        "example.*",
        "**.example.org",
    ] {
        assert!(
            refused(written).contains("a wildcard is written once, at the start"),
            "{written}"
        );
    }
}

#[test]
fn a_wildcard_on_an_address_is_refused() {
    for written in ["*.10.0.0.5", "*.[::1]", "*.127.0.0.1:80"] {
        assert!(
            refused(written).contains("not of an IP address"),
            "{written}"
        );
    }
}

#[test]
fn ports_must_be_from_1_to_65535() {
    assert!(refused("example.org:0").contains("port 0 names no port"));
    assert!(refused("[::1]:0").contains("port 0 names no port"));
    assert!(refused("example.org:").contains("the port is missing"));
    for (written, port) in [
        ("example.org:65536", "65536"),
        ("example.org:http", "http"),
        ("example.org:-1", "-1"),
        ("example.org:+80", "+80"),
        ("example.org:99999999999", "99999999999"),
    ] {
        let message = refused(written);
        assert!(
            message.contains(&format!("{port:?} is not a port")),
            "{written}: {message}"
        );
    }
}

#[test]
fn an_ipv6_address_needs_brackets() {
    let message = refused("::1");
    assert!(message.contains("written in brackets: [::1]"), "{message}");
    assert!(refused("fd00::1:8080").contains("in brackets"));
    assert!(refused("[::1").contains("must be a host name"));
    assert!(refused("[::1]8080").contains("must be a host name"));
    assert!(refused("[not-an-address]").contains("is not a host name"));
}

#[test]
fn an_address_is_taken_only_in_its_usual_form() {
    for (written, address) in [
        ("8080", "0.0.31.144"),
        ("127.1", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("2130706433:80", "127.0.0.1"),
    ] {
        let message = refused(written);
        assert!(
            message.contains(&format!("reads as the IPv4 address {address}")),
            "{written}: {message}"
        );
    }
}

#[test]
fn empty_hosts_are_refused() {
    for written in ["", ":443", ".", "*.", "*.:80"] {
        let message = refused(written);
        assert!(
            message.contains("empty")
                || message.contains("names no host")
                || message.contains("is not a host name"),
            "{written:?}: {message}"
        );
    }
}
