// Test-only module: its parent includes it under #[cfg(test)].
use super::*;
use crate::{CallFacts, Policy, RuleSet, Subject};

fn web_fetch() -> ToolFacts {
    ToolFacts {
        name: "WebFetch".to_string(),
        read_only: true,
        governed_by: "WebFetch".to_string(),
        run_state: false,
        path_family: None,
    }
}

fn policy(allow: &[&str], deny: &[&str]) -> Policy {
    let rules = |texts: &[&str]| {
        texts
            .iter()
            .map(|t| Rule::try_from(t.to_string()).unwrap())
            .collect::<Vec<_>>()
    };
    let set = RuleSet {
        allow: rules(allow),
        deny: rules(deny),
        ..RuleSet::default()
    };
    Policy::new(&set, std::path::Path::new("/nonexistent-ws"), &[])
}

fn decide(policy: &Policy, url: &str) -> crate::Decision {
    policy.decide(&CallFacts {
        tool: web_fetch(),
        subject: Subject::Url(url.to_string()),
    })
}

#[test]
fn web_fetch_without_a_rule_is_denied_although_read_only() {
    let decision = decide(&policy(&[], &[]), "https://example.com/");
    assert!(!decision.allowed(), "{decision:?}");
    assert!(
        decision.reason().contains("WebFetch(domain:example.com)"),
        "{}",
        decision.reason()
    );
    // Allow rules for other tools change nothing.
    assert!(!decide(&policy(&["Read", "Bash"], &[]), "https://example.com/").allowed());
}

#[test]
fn domain_rules_match_the_host_case_insensitively_and_without_trailing_dot() {
    let p = policy(&["WebFetch(domain:Example.COM)"], &[]);
    for url in [
        "https://example.com/x",
        "https://EXAMPLE.com./", // example.com in capitals, with the root dot
        "https://example.com:8443/",
    ] {
        let d = decide(&p, url);
        assert!(d.allowed(), "{url}: {d:?}");
        assert_eq!(d.rule(), Some("WebFetch(domain:Example.COM)"));
    }
    assert!(!decide(&p, "https://www.example.com/").allowed());
    assert!(!decide(&p, "https://example.com.evil.invalid/").allowed());
    assert!(!decide(&p, "https://notexample.com/").allowed());
}

#[test]
fn a_wildcard_covers_subdomains_not_the_apex() {
    let p = policy(&["WebFetch(domain:*.example.com)"], &[]);
    assert!(decide(&p, "https://docs.example.com/").allowed());
    assert!(decide(&p, "https://a.b.example.com/").allowed());
    assert!(!decide(&p, "https://example.com/").allowed());
    assert!(!decide(&p, "https://badexample.com/").allowed());
}

#[test]
fn idna_hosts_are_compared_in_punycode() {
    let p = policy(&["WebFetch(domain:bücher.invalid)"], &[]);
    assert!(decide(&p, "https://xn--bcher-kva.invalid/").allowed());
    assert!(decide(&p, "https://BÜCHER.invalid/").allowed());
}

#[test]
fn deny_rules_win_over_allow_rules() {
    let p = policy(
        &["WebFetch"],
        &[
            "WebFetch(domain:*.evil.invalid)",
            "WebFetch(domain:evil.invalid)",
        ],
    );
    assert!(decide(&p, "https://good.invalid/").allowed());
    let d = decide(&p, "https://x.evil.invalid/");
    assert!(!d.allowed());
    assert_eq!(d.rule(), Some("WebFetch(domain:*.evil.invalid)"));
    assert!(!decide(&p, "https://evil.invalid/").allowed());
    let everything = policy(&["WebFetch(domain:good.invalid)"], &["WebFetch"]);
    assert!(!decide(&everything, "https://good.invalid/").allowed());
}

#[test]
fn urls_with_credentials_or_other_schemes_are_refused() {
    let p = policy(&["WebFetch"], &[]);
    assert!(!decide(&p, "https://user:pw@example.com/").allowed());
    assert!(!decide(&p, "https://user@example.com/").allowed());
    assert!(!decide(&p, "file:///etc/passwd").allowed());
    assert!(!decide(&p, "ftp://example.com/").allowed());
    assert!(!decide(&p, "not a url").allowed());
}

#[test]
fn restricted_addresses_need_a_rule_naming_the_exact_host() {
    let bare = policy(&["WebFetch"], &[]);
    for url in [
        "http://127.0.0.1:8080/",
        "http://localhost/",
        "http://app.localhost/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://172.16.3.4/",
        "http://192.168.1.1/",
        "http://100.64.0.1/",
        "http://0.0.0.0/",
        "http://0/",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://017700000001/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://[fe80::1]/",
        "http://[fd00::1]/",
        "http://[::]/",
        "http://255.255.255.255/",
        "http://224.0.0.1/",
        "http://127.1/",
        "http://LOCALHOST./", // localhost in capitals, with the root dot
        "http://127。0。0。1/",
        "http://１２７.0.0.1/",
        "http://[::ffff:7f00:1]/",
        "http://[0:0:0:0:0:ffff:a9fe:a9fe]/",
    ] {
        let d = decide(&bare, url);
        assert!(!d.allowed(), "{url}: {d:?}");
        assert!(
            d.reason().contains("names exactly this host"),
            "{url}: {}",
            d.reason()
        );
    }
    let wildcard = policy(&["WebFetch(domain:*.localhost)"], &[]);
    assert!(!decide(&wildcard, "http://app.localhost/").allowed());
    let exact = policy(
        &[
            "WebFetch(domain:127.0.0.1)",
            "WebFetch(domain:169.254.169.254)",
        ],
        &[],
    );
    assert!(decide(&exact, "http://127.0.0.1:8080/").allowed());
    // Other notations of the same address are the same host.
    assert!(decide(&exact, "http://2130706433:8080/").allowed());
    assert!(decide(&exact, "http://169.254.169.254/").allowed());
    assert!(!decide(&exact, "http://127.0.0.2/").allowed());
}

#[test]
fn http_is_upgraded_except_for_an_exactly_named_loopback_host() {
    let p = policy(
        &[
            "WebFetch(domain:127.0.0.1)",
            "WebFetch(domain:10.1.2.3)",
            "WebFetch",
        ],
        &[],
    );
    let grants = p.web_grants(web_fetch());
    let judged = |raw: &str| judge_url(&Url::parse(raw).unwrap(), &*grants).unwrap().url;
    assert_eq!(judged("http://127.0.0.1:9/x").scheme(), "http");
    assert_eq!(judged("http://10.1.2.3/").scheme(), "https");
    assert_eq!(
        judged("http://example.com/a?b").as_str(),
        "https://example.com/a?b"
    );
    assert_eq!(
        judged("http://example.com:8080/").as_str(),
        "https://example.com:8080/"
    );
}

#[test]
fn addresses_are_classified_in_every_form() {
    let kind = |s: &str| restricted_ip(s.parse().unwrap());
    assert_eq!(kind("127.5.6.7"), Some(AddressKind::Loopback));
    assert_eq!(kind("169.254.169.254"), Some(AddressKind::LinkLocal));
    assert_eq!(kind("100.127.255.255"), Some(AddressKind::Private));
    assert_eq!(kind("100.128.0.1"), None);
    assert_eq!(kind("172.31.0.1"), Some(AddressKind::Private));
    assert_eq!(kind("172.32.0.1"), None);
    assert_eq!(kind("0.1.2.3"), Some(AddressKind::Unspecified));
    assert_eq!(kind("::ffff:10.0.0.1"), Some(AddressKind::Private));
    assert_eq!(kind("::127.0.0.1"), Some(AddressKind::Loopback));
    assert_eq!(kind("64:ff9b::a9fe:a9fe"), Some(AddressKind::LinkLocal));
    assert_eq!(kind("2002:7f00:1::"), Some(AddressKind::Loopback));
    assert_eq!(kind("fec0::1"), Some(AddressKind::Private));
    assert_eq!(kind("ff02::1"), Some(AddressKind::Multicast));
    assert_eq!(kind("8.8.8.8"), None);
    assert_eq!(kind("2606:4700::1111"), None);
    assert_eq!(kind("::ffff:8.8.8.8"), None);
}

#[test]
fn rule_domains_are_normalised_and_checked() {
    assert_eq!(rule_domain("Example.COM.").unwrap(), "example.com");
    assert_eq!(rule_domain("*.Example.com").unwrap(), "*.example.com");
    assert_eq!(rule_domain("[::1]").unwrap(), "[::1]");
    assert_eq!(rule_domain("0x7f.1").unwrap(), "127.0.0.1");
    for bad in [
        "example.com:8080",
        "example.com/x",
        "u@example.com",
        "*.127.0.0.1",
        "a*.b",
        "::1",
        "*.",
    ] {
        assert!(rule_domain(bad).is_err(), "{bad}");
    }
    let error = Rule::try_from("WebFetch(domain:a.com:80)".to_string()).unwrap_err();
    assert!(
        error.to_string().contains("without scheme, port or path"),
        "{error}"
    );
}

#[test]
fn a_deny_rule_covers_the_subdomains_of_its_domain() {
    let open = policy(&["WebFetch"], &["WebFetch(domain:evil.invalid)"]);
    assert!(!decide(&open, "https://evil.invalid/").allowed());
    assert!(!decide(&open, "https://sub.evil.invalid/").allowed());
    assert!(decide(&open, "https://notevil.invalid/").allowed());
    let nested = policy(
        &["WebFetch(domain:*.example.com)"],
        &["WebFetch(domain:bad.example.com)"],
    );
    assert!(!decide(&nested, "https://x.bad.example.com/").allowed());
    assert!(decide(&nested, "https://good.example.com/").allowed());
}

#[test]
fn a_dns_name_named_exactly_never_opens_restricted_addresses() {
    let named = policy(&["WebFetch(domain:docs.example.com)"], &[]);
    let grant = named.web_grant(&web_fetch(), "docs.example.com");
    assert!(grant.allowed);
    assert!(
        !grant.named_exactly,
        "what a name resolves to is not the rule's to open"
    );
    let ip = policy(&["WebFetch(domain:10.0.0.5)"], &[]);
    assert!(ip.web_grant(&web_fetch(), "10.0.0.5").named_exactly);
    let local = policy(&["WebFetch(domain:localhost)"], &[]);
    assert!(local.web_grant(&web_fetch(), "localhost").named_exactly);
}

#[test]
fn translated_and_tunnelled_ipv6_forms_are_restricted() {
    for form in [
        "::ffff:0:a9fe:a9fe",
        "64:ff9b:1::a9fe:a9fe",
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        "100::1",
    ] {
        let ip: IpAddr = form.parse().unwrap();
        assert!(restricted_ip(ip).is_some(), "{form}");
    }
    let public: IpAddr = "2606:4700::1111".parse().unwrap();
    assert_eq!(restricted_ip(public), None);
}
