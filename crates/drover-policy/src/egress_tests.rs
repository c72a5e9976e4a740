// Test-only module: its parent includes it under #[cfg(test)].
use super::*;

fn entries(written: &[&str]) -> Vec<EntryData> {
    written
        .iter()
        .map(|entry| {
            // `host:port`, with IPv6 in brackets; a bare host has no port.
            match entry.rsplit_once(':') {
                Some((host, port)) if !port.ends_with(']') && !host.is_empty() => {
                    (host.to_string(), Some(port.parse().unwrap()))
                }
                _ => (entry.to_string(), None),
            }
        })
        .collect()
}

fn rules(allow: &[&str], deny: &[&str]) -> EgressRules {
    EgressRules::new(&entries(allow), &entries(deny)).unwrap()
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn host(text: &str) -> EgressHost {
    EgressHost::parse(text).unwrap()
}

#[test]
fn a_host_without_port_opens_443_and_80_only() {
    let r = rules(&["example.com"], &[]);
    assert_eq!(
        r.judge("example.com", 443),
        EgressVerdict::Allowed {
            rule: "example.com".to_string()
        }
    );
    assert!(r.judge("example.com", 80).allowed());
    let refused = r.judge("example.com", 8443);
    assert!(!refused.allowed());
    assert_eq!(refused.rule(), None);
    let EgressVerdict::Denied { reason, .. } = refused else {
        unreachable!()
    };
    assert!(reason.contains("no allow rule for port 8443"), "{reason}");
    assert!(reason.contains("443 and 80 only"), "{reason}");
    assert_eq!(
        r.judge("other.com", 443),
        EgressVerdict::Denied {
            rule: None,
            reason: "no allow rule".to_string()
        }
    );
}

#[test]
fn a_host_with_a_port_opens_that_port_only() {
    let r = rules(&["example.com:8443", "[::1]:9000"], &[]);
    assert!(r.judge("example.com", 8443).allowed());
    assert!(!r.judge("example.com", 443).allowed());
    assert!(!r.judge("example.com", 80).allowed());
    assert_eq!(r.judge("[::1]", 9000).rule(), Some("[::1]:9000"));
    assert!(r.judge("[0:0:0:0:0:0:0:1]", 9000).allowed());
    assert!(!r.judge("[::1]", 9001).allowed());
}

#[test]
fn port_edge_cases() {
    let r = rules(&["example.com:65535", "example.org"], &[]);
    assert!(r.judge("example.com", 65535).allowed());
    assert!(!r.judge("example.com", 65534).allowed());
    // Port 0 is no port, whatever the entries.
    assert!(!r.judge("example.org", 0).allowed());
    let error = EgressRules::new(&[("example.com".to_string(), Some(0))], &[]).unwrap_err();
    assert!(error.to_string().contains("port 0"), "{error}");
}

#[test]
fn a_deny_entry_without_port_denies_every_port_and_wins() {
    let r = rules(
        &["example.com", "example.com:8080", "*.example.org"],
        &["example.com", "bad.example.org:443"],
    );
    for port in [80, 443, 8080, 22] {
        let verdict = r.judge("example.com", port);
        assert_eq!(verdict.rule(), Some("example.com"), "{port}");
        assert!(!verdict.allowed(), "{port}");
    }
    // A deny entry with a port denies that port only.
    let denied = r.judge("bad.example.org", 443);
    assert_eq!(
        denied,
        EgressVerdict::Denied {
            rule: Some("bad.example.org:443".to_string()),
            reason: "denied by bad.example.org:443".to_string()
        }
    );
    assert!(r.judge("bad.example.org", 80).allowed());
}

#[test]
fn a_wildcard_covers_subdomains_only_and_a_deny_covers_them_too() {
    let r = rules(&["*.example.com", "github.com"], &["evil.com"]);
    assert!(r.judge("a.example.com", 443).allowed());
    assert!(r.judge("a.b.example.com", 443).allowed());
    assert!(!r.judge("example.com", 443).allowed());
    assert!(!r.judge("notexample.com", 443).allowed());
    // An allow entry naming a host does not open its subdomains.
    assert!(!r.judge("api.github.com", 443).allowed());
    // A deny entry naming a host covers its subdomains.
    let allow_all_under = rules(&["*.evil.com"], &["evil.com"]);
    assert_eq!(
        allow_all_under.judge("sub.evil.com", 443).rule(),
        Some("evil.com")
    );
    assert!(!allow_all_under.judge("sub.evil.com", 443).allowed());
}

#[test]
fn an_exact_entry_is_named_before_a_wildcard() {
    let r = rules(&["*.example.com", "api.example.com"], &[]);
    assert_eq!(
        r.judge("api.example.com", 443).rule(),
        Some("api.example.com")
    );
    assert_eq!(
        r.judge("www.example.com", 443).rule(),
        Some("*.example.com")
    );
}

#[test]
fn hosts_are_normalised_like_webfetch_hosts() {
    let r = rules(&["Example.COM.", "bücher.de"], &[]);
    for written in ["example.com", "EXAMPLE.com", "example.com.", "ExAmPlE.CoM."] {
        assert_eq!(
            r.judge(written, 443).rule(),
            Some("example.com"),
            "{written}"
        );
    }
    assert_eq!(
        host("BÜCHER.de"),
        EgressHost::Name("xn--bcher-kva.de".into())
    );
    assert!(r.judge("xn--bcher-kva.de", 443).allowed());
    assert!(r.judge("bücher.de", 443).allowed());
    // A percent-encoded name is the name it decodes to: judged and resolved alike.
    assert_eq!(
        host("ex%61mple.com"),
        EgressHost::Name("example.com".into())
    );
}

#[test]
fn ip_literals_in_odd_notations_are_judged_as_the_address() {
    let loopback = EgressHost::Address(ip("127.0.0.1"));
    for written in [
        "127.0.0.1",
        "0x7f.1",
        "2130706433",
        "127.1",
        "0177.0.0.1",
        "0x7f000001",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
    ] {
        assert_eq!(host(written), loopback, "{written}");
    }
    let r = rules(&["127.0.0.1:8080", "*.example.com"], &[]);
    for written in ["0x7f.1", "2130706433", "[::ffff:127.0.0.1]"] {
        assert_eq!(
            r.judge(written, 8080).rule(),
            Some("127.0.0.1:8080"),
            "{written}"
        );
        assert!(!r.judge(written, 8081).allowed(), "{written}");
    }
    // A wildcard never covers an address, whatever its notation, and cannot be written
    // over one.
    assert!(!r.judge("0x7f.1", 443).allowed());
    assert!(EgressRules::new(&entries(&["*.0.1"]), &[]).is_err());
    // A deny entry naming an address refuses it in every notation.
    let denied = rules(&["*.example.com"], &["169.254.169.254"]);
    for written in ["169.254.169.254", "0xa9fea9fe", "[::ffff:169.254.169.254]"] {
        assert_eq!(
            denied.judge(written, 80).rule(),
            Some("169.254.169.254"),
            "{written}"
        );
    }
}

#[test]
fn what_is_no_host_is_refused() {
    let r = rules(&["example.com"], &[]);
    for written in [
        "",
        "exa mple.com",
        "user@example.com",
        "example.com/path",
        "example.com:443",
        "::1",
        "1.2.3.4.5",
        "example.com\r\nX: y",
        "*.example.com",
        "[::1",
        "http://example.com",
        ".",
    ] {
        let verdict = r.judge(written, 443);
        assert!(!verdict.allowed(), "{written:?}");
        assert_eq!(verdict.rule(), None, "{written:?}");
        assert!(EgressHost::parse(written).is_err(), "{written:?}");
    }
    let long = "x".repeat(500);
    assert_eq!(
        EgressHost::parse(&format!("{long} "))
            .unwrap_err()
            .written
            .len(),
        100
    );
}

#[test]
fn entries_that_are_no_hosts_fail_the_rule_set() {
    for written in [
        "exa mple.com",
        "http://example.com",
        "example.com/path",
        "*.1.2.3.4",
        "user@example.com",
        "",
    ] {
        let error = EgressRules::new(&[(written.to_string(), None)], &[]).unwrap_err();
        assert!(error.to_string().starts_with("network entry "), "{error}");
        assert!(EgressRules::new(&[], &[(written.to_string(), Some(1))]).is_err());
    }
}

#[test]
fn a_public_address_of_an_allowed_name_is_reached() {
    let r = rules(&["example.com"], &[]);
    let name = host("example.com");
    assert_eq!(r.address_allowed(&name, 443, ip("93.184.215.14")), Ok(()));
    assert_eq!(
        r.address_allowed(&name, 443, ip("2606:2800:21f::1")),
        Ok(())
    );
}

#[test]
fn an_allowed_name_resolving_into_the_machine_is_refused() {
    // DNS rebinding: the rule names a public name, the name resolves to the metadata
    // service, loopback, the private network, in any form.
    let r = rules(&["example.com", "*.example.org"], &[]);
    let name = host("example.com");
    for address in [
        "169.254.169.254",
        "127.0.0.1",
        "127.0.0.53",
        "10.0.0.1",
        "192.168.1.1",
        "172.16.0.1",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "::",
        "fe80::1",
        "fd00::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "64:ff9b::a9fe:a9fe",
        "2002:7f00:1::",
    ] {
        let refused = r.address_allowed(&name, 443, ip(address)).unwrap_err();
        assert_eq!(refused.rule, None);
        assert!(
            refused.reason.starts_with("example.com resolves to "),
            "{address}: {refused}"
        );
    }
    let metadata = r
        .address_allowed(&host("a.example.org"), 80, ip("169.254.169.254"))
        .unwrap_err();
    assert!(
        metadata.reason.contains("link-local") && metadata.reason.contains("169.254.169.254:80"),
        "{metadata}"
    );
}

#[test]
fn a_restricted_address_is_opened_by_an_entry_naming_it() {
    let r = rules(
        &["db.internal:5432", "10.0.0.5:5432", "[fd00::7]:5432"],
        &[],
    );
    let db = host("db.internal");
    assert_eq!(r.address_allowed(&db, 5432, ip("10.0.0.5")), Ok(()));
    assert_eq!(r.address_allowed(&db, 5432, ip("::ffff:10.0.0.5")), Ok(()));
    assert_eq!(r.address_allowed(&db, 5432, ip("fd00::7")), Ok(()));
    // Another private address of the same name, or the same address on another port.
    assert!(r.address_allowed(&db, 5432, ip("10.0.0.6")).is_err());
    assert!(r.address_allowed(&db, 5433, ip("10.0.0.5")).is_err());
    // An address given as the host itself.
    let literal = host("0xa.5");
    assert_eq!(literal, EgressHost::Address(ip("10.0.0.5")));
    assert!(r.judge_host(&literal, 5432).allowed());
    assert_eq!(r.address_allowed(&literal, 5432, ip("10.0.0.5")), Ok(()));
    let unnamed = host("10.0.0.9");
    let refused = r
        .address_allowed(&unnamed, 5432, ip("10.0.0.9"))
        .unwrap_err();
    assert!(
        refused
            .reason
            .starts_with("10.0.0.9:5432 is a private-network address"),
        "{refused}"
    );
}

#[test]
fn localhost_with_a_port_reaches_loopback_on_that_port_only() {
    let r = rules(&["localhost:8080", "*.example.com:8080"], &[]);
    let localhost = host("localhost");
    assert!(r.judge("localhost", 8080).allowed());
    assert!(r.judge("LOCALHOST.", 8080).allowed());
    assert!(!r.judge("localhost", 8081).allowed());
    assert_eq!(r.address_allowed(&localhost, 8080, ip("127.0.0.1")), Ok(()));
    assert_eq!(r.address_allowed(&localhost, 8080, ip("::1")), Ok(()));
    assert_eq!(
        r.address_allowed(&localhost, 8080, ip("::ffff:127.0.0.1")),
        Ok(())
    );
    assert!(
        r.address_allowed(&localhost, 8081, ip("127.0.0.1"))
            .is_err()
    );
    // localhost resolving off the machine's loopback (a planted hosts file) is refused.
    for address in ["10.0.0.1", "169.254.169.254", "0.0.0.0"] {
        assert!(
            r.address_allowed(&localhost, 8080, ip(address)).is_err(),
            "{address}"
        );
    }
    // Another allowed name resolving to loopback gets nothing from the localhost entry.
    let refused = r
        .address_allowed(&host("rebind.example.com"), 8080, ip("127.0.0.1"))
        .unwrap_err();
    assert!(refused.reason.contains("a loopback address"), "{refused}");
    // Nor do the literals: 127.0.0.1 is not the name localhost.
    assert!(!r.judge("127.0.0.1", 8080).allowed());
    assert!(!r.judge("[::1]", 8080).allowed());
}

#[test]
fn a_localhost_lookalike_is_a_name_like_any_other() {
    let r = rules(&["localhost.localdomain:8080", "sub.localhost:8080"], &[]);
    for name in ["localhost.localdomain", "sub.localhost"] {
        assert!(r.judge(name, 8080).allowed(), "{name}");
        let refused = r
            .address_allowed(&host(name), 8080, ip("127.0.0.1"))
            .unwrap_err();
        assert!(refused.reason.contains("127.0.0.1:8080"), "{refused}");
    }
}

#[test]
fn a_deny_entry_naming_an_address_refuses_names_resolving_to_it() {
    let r = rules(
        &["*.example.com"],
        &["93.184.215.14", "[2606:2800:21f::1]:443"],
    );
    let name = host("www.example.com");
    let refused = r
        .address_allowed(&name, 443, ip("93.184.215.14"))
        .unwrap_err();
    assert_eq!(refused.rule.as_deref(), Some("93.184.215.14"));
    assert!(
        r.address_allowed(&name, 443, ip("::ffff:93.184.215.14"))
            .is_err()
    );
    assert!(
        r.address_allowed(&name, 443, ip("2606:2800:21f::1"))
            .is_err()
    );
    assert_eq!(r.address_allowed(&name, 80, ip("2606:2800:21f::1")), Ok(()));
}

#[test]
fn preset_hosts_are_named_with_their_preset() {
    let r = EgressRules::new(&[], &entries(&["evil.npmjs.org"]))
        .unwrap()
        .with_preset(
            "registries: npm",
            &[
                ("registry.npmjs.org".to_string(), None),
                ("*.npmjs.org".to_string(), None),
            ],
        )
        .unwrap();
    assert_eq!(
        r.judge("registry.npmjs.org", 443).rule(),
        Some("registry.npmjs.org (registries: npm)")
    );
    assert_eq!(
        r.judge("x.npmjs.org", 443).rule(),
        Some("*.npmjs.org (registries: npm)")
    );
    assert_eq!(
        r.judge("evil.npmjs.org", 443).rule(),
        Some("evil.npmjs.org")
    );
    assert!(!r.judge("evil.npmjs.org", 443).allowed());
    assert!(
        EgressRules::default()
            .with_preset("p", &[("bad host".to_string(), None)])
            .is_err()
    );
}

#[test]
fn hosts_display_as_entries_are_written() {
    assert_eq!(host("[::1]").to_string(), "[::1]");
    assert_eq!(
        EgressHost::from(ip("::ffff:10.1.2.3")).to_string(),
        "10.1.2.3"
    );
    assert_eq!(host("Example.com.").to_string(), "example.com");
    assert_eq!(host("example.com").address(), None);
}
