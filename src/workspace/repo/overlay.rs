//! A checkout from `--repo-cache` without writing its files: an overlay mount whose
//! lower layer is the cache's finished checkout of the commit (a *template*, which
//! drover made and no task ever writes) and whose upper layer is the task's own
//! directory. What the task changes is copied up into its directory; the template is
//! never written through the mount (the kernel's overlayfs does not write a lower
//! layer). A checkout costs a mount instead of a file per file of the repository.
//!
//! Only root with CAP_SYS_ADMIN can mount, and only where the kernel has overlayfs and
//! the cache's filesystem can be a lower layer (not an overlay itself, as in most
//! containers): anywhere else the checkout is a copy, as before. A probe mount in a
//! temp directory says once per process which it is.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rustix::mount::{MountFlags, UnmountFlags};

use crate::workspace::leftovers::HeldTempDir;

/// The checkout's mount, taken down (lazily, as the task's directory goes) when dropped.
#[derive(Debug)]
pub(crate) struct OverlayMount {
    target: PathBuf,
}

impl Drop for OverlayMount {
    fn drop(&mut self) {
        // DETACH: a process still holding a file open in it does not keep it mounted.
        let _ = rustix::mount::unmount(&self.target, UnmountFlags::DETACH | UnmountFlags::NOFOLLOW);
    }
}

/// Can this process mount an overlay? Probed once, with a mount of empty directories.
pub(crate) fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(probe)
}

fn probe() -> bool {
    if !rustix::process::geteuid().is_root() {
        return false;
    }
    let Ok(temp) = HeldTempDir::new("probe") else {
        return false;
    };
    // `checkout`, as in a task's directory: a probe cut short is swept the same way.
    let [lower, upper, work, checkout] =
        ["lower", "upper", "work", "checkout"].map(|name| temp.path().join(name));
    if [&lower, &upper, &work, &checkout]
        .iter()
        .any(|dir| std::fs::create_dir(dir).is_err())
    {
        return false;
    }
    mount(&lower, &upper, &work, &checkout).is_ok()
}

/// Mount `lower` (read-only to the mount) under `upper` at `target`; `work` is the
/// kernel's scratch directory, beside `upper` on one filesystem.
pub(crate) fn mount(
    lower: &Path,
    upper: &Path,
    work: &Path,
    target: &Path,
) -> std::io::Result<OverlayMount> {
    let mut options = String::new();
    for (key, dir) in [("lowerdir", lower), ("upperdir", upper), ("workdir", work)] {
        let text = dir
            .to_str()
            .filter(|text| !text.contains([',', ':', '\\', '\n']));
        let Some(text) = text else {
            // overlayfs splits its options at these: such a path cannot be said to it.
            return Err(std::io::Error::other(format!(
                "{} has a character overlayfs options cannot carry",
                dir.display()
            )));
        };
        options.push_str(&format!("{key}={text},"));
    }
    // A directory of the template renamed in the checkout (`git mv src lib`) works as on
    // any filesystem instead of failing with EXDEV.
    options.push_str("redirect_dir=on");
    let options = CString::new(options).map_err(std::io::Error::other)?;
    let flags = MountFlags::NOSUID | MountFlags::NODEV;
    rustix::mount::mount("drover", target, "overlay", flags, options.as_c_str())?;
    Ok(OverlayMount {
        target: target.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_option_overlayfs_would_split_is_refused_before_mounting() {
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join("a,b");
        let error = mount(&odd, dir.path(), dir.path(), dir.path()).unwrap_err();
        assert!(error.to_string().contains("a,b"), "{error}");
    }

    #[test]
    #[cfg_attr(not(drover_has_overlay), ignore = "needs root and overlayfs")]
    fn the_lower_layer_is_never_written_through_the_mount() {
        assert!(
            available(),
            "the build's probe mounted an overlay; drover's did not"
        );
        let dir = tempfile::tempdir().unwrap();
        let [lower, upper, work, merged] =
            ["lower", "upper", "work", "merged"].map(|name| dir.path().join(name));
        for path in [&lower, &upper, &work, &merged] {
            std::fs::create_dir(path).unwrap();
        }
        std::fs::create_dir(lower.join("src")).unwrap();
        std::fs::write(lower.join("src/a.txt"), "template\n").unwrap();
        let mounted = mount(&lower, &upper, &work, &merged).unwrap();
        std::fs::write(merged.join("src/a.txt"), "changed\n").unwrap();
        std::fs::rename(merged.join("src"), merged.join("lib")).unwrap();
        std::fs::write(merged.join("new.txt"), "new\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(merged.join("lib/a.txt")).unwrap(),
            "changed\n"
        );
        drop(mounted);
        assert_eq!(
            std::fs::read_to_string(lower.join("src/a.txt")).unwrap(),
            "template\n"
        );
        assert!(!lower.join("new.txt").exists() && !lower.join("lib").exists());
        assert!(!merged.join("new.txt").exists(), "unmounted when dropped");
    }
}
