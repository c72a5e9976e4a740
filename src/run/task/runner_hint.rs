//! Where a task that cannot be sandboxed ran, and what to do about it there: on a GitHub
//! runner the message names the runner image and its kernel, and the fix for that image.

/// A sentence naming the machine and the fix, for the `sandbox_unavailable` message;
/// `env` reads the environment, `kernel` is the kernel's release (`uname -r`).
pub(super) fn runner_hint(env: impl Fn(&str) -> Option<String>, kernel: &str) -> String {
    let on_github = env("GITHUB_ACTIONS").as_deref() == Some("true");
    if !on_github {
        return format!(
            "this machine runs kernel {kernel}: drover needs Landlock ABI 3 (Linux 6.2) with `landlock` in /sys/kernel/security/lsm, and seccomp to cut the network"
        );
    }
    let image = match (env("ImageOS"), env("ImageVersion")) {
        (Some(os), Some(version)) => format!("{os} {version}"),
        (Some(os), None) => os,
        _ => "unknown".to_string(),
    };
    if env("ImageOS").as_deref() == Some("ubuntu24") {
        return format!(
            "this GitHub-hosted runner (image {image}, kernel {kernel}) has every Landlock ABI drover uses, so something blocks it here: a `container:` job or a restrictive seccomp profile; run the task on the runner itself"
        );
    }
    if env("RUNNER_ENVIRONMENT").as_deref() == Some("self-hosted") {
        format!(
            "this self-hosted GitHub runner (image {image}) runs kernel {kernel}: enable Landlock there (Linux 6.2+, `landlock` in the kernel's `lsm=` list), or run the job on GitHub's `ubuntu-24.04` image (see docs/github-action.md, Runner requirements)"
        )
    } else {
        format!(
            "this GitHub-hosted runner (image {image}) runs kernel {kernel}: use `runs-on: ubuntu-24.04` (or `ubuntu-latest`, the same image), whose kernel has every Landlock ABI drover uses (see docs/github-action.md, Runner requirements)"
        )
    }
}

/// The hint for this machine, from drover's environment and the running kernel.
pub(super) fn here() -> String {
    runner_hint(|name| std::env::var(name).ok(), &kernel_release())
}

/// The running kernel's release, as `uname -r` prints it.
fn kernel_release() -> String {
    rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn a_github_runner_is_named_with_its_image_and_fix() {
        let hosted = runner_hint(
            env_of(&[
                ("GITHUB_ACTIONS", "true"),
                ("ImageOS", "ubuntu22"),
                ("ImageVersion", "20261116.1"),
                ("RUNNER_ENVIRONMENT", "github-hosted"),
            ]),
            "5.15.0-1070-azure",
        );
        assert!(hosted.contains("image ubuntu22 20261116.1"), "{hosted}");
        assert!(hosted.contains("kernel 5.15.0-1070-azure"), "{hosted}");
        assert!(hosted.contains("runs-on: ubuntu-24.04"), "{hosted}");
        let own = runner_hint(
            env_of(&[
                ("GITHUB_ACTIONS", "true"),
                ("RUNNER_ENVIRONMENT", "self-hosted"),
            ]),
            "6.1.0",
        );
        assert!(own.contains("self-hosted") && own.contains("lsm="), "{own}");
        let blocked = runner_hint(
            env_of(&[("GITHUB_ACTIONS", "true"), ("ImageOS", "ubuntu24")]),
            "6.17.0-1010-azure",
        );
        assert!(blocked.contains("container:"), "{blocked}");
        let elsewhere = runner_hint(env_of(&[]), "6.1.0");
        assert!(elsewhere.contains("kernel 6.1.0"), "{elsewhere}");
    }
}
