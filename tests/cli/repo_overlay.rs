//! `--repo-cache` checkouts as overlays (root with overlayfs): the task's checkout is
//! the cache's template of the commit mounted under the task's own directory. A task
//! works in it as in a clone (its diff, a directory renamed, git's view of it); what it
//! writes — files, `.git/config`, the packs themselves, in place — lands in its own
//! directory and never in the template the next task starts from, even when it tries
//! to reach the template by the path the mount table shows; the mount is gone when the
//! task ends, and a killed drover's is taken down by the next run.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::common::write_spec;
use crate::repo::{git, result, served_repo};
use crate::repo_attacks::{assert_nothing_ran, plant, planted, run, scene, spec_text};

/// A scene with a served repository (`served/service-a.git`, two commits) and the path
/// of a cache for it.
struct Cached {
    _dir: tempfile::TempDir,
    root: PathBuf,
    markers: PathBuf,
    served: PathBuf,
    bare: PathBuf,
    /// The first and second commits (`main` is at the second).
    first: String,
    second: String,
    url: String,
    cache: PathBuf,
    cache_arg: String,
}

fn cached() -> Cached {
    let (dir, root, markers) = scene();
    let served = root.join("served");
    let (bare, first, second) = served_repo(&served, "service-a");
    let url = format!("file://{}", bare.display());
    let cache = root.join("cache");
    let cache_arg = cache.to_string_lossy().into_owned();
    Cached {
        _dir: dir,
        root,
        markers,
        served,
        bare,
        first,
        second,
        url,
        cache,
        cache_arg,
    }
}

/// The templates of the cache's one repository: their commits, and their paths.
fn templates(cache: &Path) -> Vec<PathBuf> {
    let trees = std::fs::read_dir(cache)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "trees"))
        .expect("a templates directory beside the mirror");
    let mut found: Vec<PathBuf> = std::fs::read_dir(trees)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Every entry under `root`: its kind, mode and content (a symlink: its target).
fn fingerprint(root: &Path) -> BTreeMap<PathBuf, (u32, Vec<u8>)> {
    let mut found = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let content = if meta.is_dir() {
                stack.push(path.clone());
                Vec::new()
            } else if meta.file_type().is_symlink() {
                std::fs::read_link(&path)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else {
                std::fs::read(&path).unwrap()
            };
            let relative = path.strip_prefix(root).unwrap().to_path_buf();
            found.insert(relative, (meta.permissions().mode(), content));
        }
    }
    found
}

/// The mount table's lines naming `path`.
fn mounts_naming(path: &Path) -> Vec<String> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let needle = path.to_string_lossy().into_owned();
    table
        .lines()
        .filter(|line| line.contains(&needle))
        .map(str::to_string)
        .collect()
}

/// What the agent of the functional test runs: the mount's type, git's view, a
/// directory renamed, a change and a new file.
const WORKS_AS_A_CLONE: &str = r#"echo "fs=$(grep " $PWD " /proc/self/mountinfo | grep -o ' - [a-z]*' | head -1)"
echo "status=[$(git status --porcelain -- . ':!plant.sh')]"
echo "branch=$(git rev-parse --abbrev-ref HEAD) upstream=$(git rev-parse --abbrev-ref '@{u}')"
mkdir -p lib && echo helper > lib/helper.txt && git add lib && git -c user.name=a -c user.email=a@a commit -qm lib && mv lib src && echo "renamed=$?"
echo changed > app.txt
echo new > added.txt
echo done"#;

#[test]
#[cfg_attr(not(drover_has_overlay), ignore = "needs root and overlayfs")]
#[cfg_attr(not(drover_has_sandbox), ignore = "needs the sandbox")]
fn a_cached_checkout_is_an_overlay_that_works_as_a_clone_and_goes_with_the_task() {
    let Cached {
        _dir,
        root,
        served,
        bare,
        second,
        url,
        cache,
        cache_arg,
        ..
    } = cached();
    let spec = write_spec(
        &root,
        "task.yaml",
        &spec_text(
            "overlay",
            Some(WORKS_AS_A_CLONE),
            &format!("repo:\n  url: {url}\n"),
        ),
    );
    for (round, artifacts) in ["out", "out2"].into_iter().enumerate() {
        let output = run(&root, &spec, artifacts, &["--repo-cache", &cache_arg]);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let said = planted(&root.join(artifacts), "overlay");
        assert!(said.contains("fs= - overlay"), "round {round}: {said}");
        assert!(said.contains("status=[]"), "a clean checkout: {said}");
        assert!(said.contains("branch=main upstream=origin/main"), "{said}");
        assert!(said.contains("renamed=0"), "{said}");
        let ended = result(&root.join(artifacts), "overlay");
        assert_eq!(ended["status"], "passed", "{ended}");
        assert_eq!(ended["start"]["commit"], second.as_str());
        // The diff applies to a fresh clone of the commit the task started from.
        let patch = root.join(artifacts).join("overlay/diff.patch");
        let text = std::fs::read_to_string(&patch).unwrap();
        assert!(
            text.contains("+changed") && text.contains("added.txt"),
            "{text}"
        );
        let fresh = root.join(format!("fresh-{round}"));
        git(&root, &["clone", "--quiet", &url, &fresh.to_string_lossy()]);
        git(&fresh, &["apply", "--index", &patch.to_string_lossy()]);
        assert_eq!(
            std::fs::read_to_string(fresh.join("app.txt")).unwrap(),
            "changed\n"
        );
        assert!(
            fresh.join("src/helper.txt").exists(),
            "the renamed directory is in the diff"
        );
    }
    let made = templates(&cache);
    assert_eq!(made.len(), 1, "both runs used one template: {made:?}");
    assert!(made[0].ends_with(&second));
    assert_eq!(
        std::fs::read_to_string(made[0].join("app.txt")).unwrap(),
        "version two\n",
        "the template is as committed"
    );
    assert!(
        mounts_naming(&cache).is_empty(),
        "{:?}",
        mounts_naming(&cache)
    );

    // Upstream moves on: the next run makes the new commit's template, and the old one,
    // which no task holds, goes.
    let work = served.join("service-a-work");
    std::fs::write(work.join("app.txt"), "version three\n").unwrap();
    git(&work, &["commit", "--quiet", "-am", "three"]);
    git(&work, &["push", "--quiet", &bare.to_string_lossy(), "main"]);
    let third = git(&bare, &["rev-parse", "main"]);
    let output = run(&root, &spec, "out3", &["--repo-cache", &cache_arg]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let made = templates(&cache);
    assert_eq!(made.len(), 1, "{made:?}");
    assert!(made[0].ends_with(&third), "{made:?}");
    assert!(mounts_naming(&cache).is_empty());
}

/// What the hostile agent adds to [`plant`]: every pack, index and object file of the
/// checkout overwritten in place, a tracked file truncated, the mount taken down, and
/// the template written at the path the mount table shows for it.
const WRITE_THROUGH: &str = r#"
for f in $(find .git/objects .git/index .git/HEAD -type f); do chmod u+w "$f"; printf 'poison' > "$f"; done
: > app.txt
umount "$PWD" 2>&1 || umount -l "$PWD" 2>&1; echo "umount=$?"
lower=$(grep " $PWD " /proc/self/mountinfo | grep -o 'lowerdir=[^,]*' | head -1 | cut -d= -f2)
echo "lower=$lower"
echo poison > "$lower/app.txt" 2>&1; echo "wrote=$?"
echo poison > "$lower/.git/config" 2>&1; echo "config=$?"
cat "$lower/app.txt" 2>&1; echo "read-template=$?"
cache=${lower%/*.trees/*}
cat "$cache"/*.git/config 2>&1; echo "read-mirror=$?"
cat "$PWD/../upper/app.txt" 2>&1; echo "read-upper=$?"
"#;

#[test]
#[cfg_attr(not(drover_has_overlay), ignore = "needs root and overlayfs")]
#[cfg_attr(not(drover_has_sandbox), ignore = "needs the sandbox")]
fn what_a_task_writes_in_its_overlay_never_reaches_the_template_the_next_task_starts_from() {
    let Cached {
        _dir,
        root,
        markers,
        second: head,
        url,
        cache,
        cache_arg,
        ..
    } = cached();
    let top = format!("repo:\n  url: {url}\n");
    let first = write_spec(&root, "first.yaml", &spec_text("first", None, &top));
    let output = run(&root, &first, "out1", &["--repo-cache", &cache_arg]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let template = templates(&cache)
        .pop()
        .expect("the first task made a template");
    let before = fingerprint(&template);

    let script = format!("{}\n{WRITE_THROUGH}", plant(&markers));
    let attack = write_spec(
        &root,
        "attack.yaml",
        &spec_text("attack", Some(&script), &top),
    );
    let output = run(&root, &attack, "out2", &["--repo-cache", &cache_arg]);
    let said = planted(&root.join("out2"), "attack");
    assert!(said.contains("planted"), "{said}");
    assert!(
        !said.contains("umount=0"),
        "the sandbox let the mount go: {said}"
    );
    assert!(
        said.contains(&format!("lower={}", template.display())),
        "{said}"
    );
    assert!(
        !said.contains("wrote=0") && !said.contains("config=0"),
        "{said}"
    );
    // The cache, its mirror and the task's own layers are out of the commands' reach.
    for unread in ["read-template=0", "read-mirror=0", "read-upper=0"] {
        assert!(!said.contains(unread), "{unread}: {said}");
    }
    assert!(said.contains("read-mirror=1"), "{said}");
    assert!(output.status.code().is_some(), "{output:?}");
    assert_eq!(fingerprint(&template), before, "the template changed");
    assert_eq!(
        std::fs::metadata(template.join("app.txt")).unwrap().len(),
        "version two\n".len() as u64
    );
    assert_nothing_ran(&markers, "the attacking task");

    // The next task starts from the commit as it is: git's own check of every object,
    // a clean status, the file as committed, and none of the planted settings.
    let next_script = "git fsck --no-progress --no-dangling 2>&1; echo fsck=$?; echo \"status=[$(git status --porcelain -- . ':!plant.sh')]\"; cat app.txt; git config --get core.fsmonitor; echo end";
    let next = write_spec(
        &root,
        "next.yaml",
        &spec_text("next", Some(next_script), &top),
    );
    let output = run(&root, &next, "out3", &["--repo-cache", &cache_arg]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let said = planted(&root.join("out3"), "next");
    assert!(
        said.contains("fsck=0") && said.contains("status=[]"),
        "{said}"
    );
    assert!(
        said.contains("version two") && !said.contains("touch"),
        "{said}"
    );
    assert_eq!(
        result(&root.join("out3"), "next")["start"]["commit"],
        head.as_str()
    );
    assert_nothing_ran(&markers, "the next task");
    assert!(
        mounts_naming(&cache).is_empty(),
        "{:?}",
        mounts_naming(&cache)
    );
}

#[test]
#[cfg_attr(not(drover_has_overlay), ignore = "needs root and overlayfs")]
fn the_overlay_a_killed_drover_left_mounted_is_taken_down_by_the_next_run() {
    let (_dir, root, _markers) = scene();
    let tmp = root.join("tmp");
    // As a drover killed with SIGKILL mid-task leaves it: a pid no process has, its
    // checkouts directory, and in it a task's directory with its layers and mount.
    let stale_root = tmp.join("drover-repos-4999999-abcdef");
    let stale = stale_root.join("drover-repo-4999999-ghijkl");
    for name in ["lower", "upper", "work", "checkout"] {
        std::fs::create_dir_all(stale.join(name)).unwrap();
    }
    std::fs::write(stale.join("lower/app.txt"), "template\n").unwrap();
    let options = format!(
        "lowerdir={0}/lower,upperdir={0}/upper,workdir={0}/work",
        stale.display()
    );
    let mounted = std::process::Command::new("mount")
        .args(["-t", "overlay", "drover", "-o", &options])
        .arg(stale.join("checkout"))
        .output()
        .unwrap();
    assert!(mounted.status.success(), "{mounted:?}");
    assert_eq!(mounts_naming(&stale).len(), 1);
    let before = std::fs::metadata(&tmp).unwrap().ino();
    std::fs::create_dir(root.join("ws")).unwrap();
    let spec = write_spec(
        &root,
        "task.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - text: done\n",
    );
    let output = crate::common::drover()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(root.join("out"))
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        mounts_naming(&stale).is_empty(),
        "{:?}",
        mounts_naming(&stale)
    );
    assert!(!stale_root.exists(), "{stderr}");
    assert!(stderr.contains("removed 1 leftover directory"), "{stderr}");
    assert_eq!(std::fs::metadata(&tmp).unwrap().ino(), before);
}

#[test]
#[cfg_attr(not(drover_has_overlay), ignore = "needs root and overlayfs")]
#[cfg_attr(not(drover_has_sandbox), ignore = "needs the sandbox")]
fn repo_checkout_copy_writes_the_checkout_and_mounts_nothing() {
    let Cached {
        _dir,
        root,
        second,
        url,
        cache,
        cache_arg,
        ..
    } = cached();
    let spec = write_spec(
        &root,
        "task.yaml",
        &spec_text(
            "copied",
            Some(WORKS_AS_A_CLONE),
            &format!("repo:\n  url: {url}\n"),
        ),
    );
    for artifacts in ["out", "out2"] {
        let output = run(
            &root,
            &spec,
            artifacts,
            &["--repo-cache", &cache_arg, "--repo-checkout", "copy"],
        );
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let said = planted(&root.join(artifacts), "copied");
        assert!(!said.contains("fs= - overlay"), "{said}");
        assert!(
            said.contains("status=[]") && said.contains("renamed=0"),
            "{said}"
        );
        assert_eq!(
            result(&root.join(artifacts), "copied")["start"]["commit"],
            second.as_str()
        );
    }
    let trees: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "trees"))
        .collect();
    assert!(trees.is_empty(), "no template was made: {trees:?}");
}

/// What a task on `main` prints of the repository's other refs.
const OTHER_REFS: &str = r#"echo "dev=$(git rev-parse origin/dev)"
echo "tags=$(git tag | tr '\n' ' ')"
echo "status=[$(git status --porcelain -- . ':!plant.sh')]"
echo done"#;

#[test]
#[cfg_attr(not(drover_has_overlay), ignore = "needs root and overlayfs")]
#[cfg_attr(not(drover_has_sandbox), ignore = "needs the sandbox")]
fn a_template_shows_the_mirrors_refs_of_now_and_a_half_removed_one_is_never_used() {
    let Cached {
        _dir,
        root,
        served,
        bare,
        first,
        url,
        cache,
        cache_arg,
        ..
    } = cached();
    let on_main = write_spec(
        &root,
        "main.yaml",
        &spec_text("main", Some(OTHER_REFS), &format!("repo:\n  url: {url}\n")),
    );
    let on_tag = write_spec(
        &root,
        "tag.yaml",
        &spec_text("tag", None, &format!("repo:\n  url: {url}\n  ref: v1\n")),
    );
    let output = run(&root, &on_main, "out1", &["--repo-cache", &cache_arg]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let output = run(&root, &on_tag, "out2", &["--repo-cache", &cache_arg]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    // Both commits are tips of the mirror's refs (main; the tag v1): both kept.
    let made = templates(&cache);
    assert_eq!(made.len(), 2, "{made:?}");
    assert!(made.iter().any(|t| t.ends_with(&first)), "{made:?}");

    // Upstream, `dev` moves and a tag appears; `main` does not move, so its template
    // stays, yet the task sees the refs as they are now.
    let work = served.join("service-a-work");
    git(&work, &["checkout", "--quiet", "dev"]);
    std::fs::write(work.join("dev.txt"), "dev\n").unwrap();
    git(&work, &["add", "dev.txt"]);
    git(&work, &["commit", "--quiet", "-m", "dev"]);
    git(&work, &["tag", "v2"]);
    let bare_text = bare.to_string_lossy().into_owned();
    git(&work, &["push", "--quiet", &bare_text, "dev", "v2"]);
    let dev = git(&bare, &["rev-parse", "dev"]);
    let output = run(&root, &on_main, "out3", &["--repo-cache", &cache_arg]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let said = planted(&root.join("out3"), "main");
    assert!(said.contains(&format!("dev={dev}")), "{said}");
    assert!(said.contains("v1 v2"), "{said}");

    // A template a killed drover left half removed (its marker gone first) is made
    // again, never used as it is.
    let main_template = templates(&cache)
        .into_iter()
        .find(|t| !t.ends_with(&first))
        .unwrap();
    let name = main_template
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    std::fs::remove_file(main_template.with_file_name(format!("{name}.ready"))).unwrap();
    std::fs::remove_file(main_template.join("app.txt")).unwrap();
    let output = run(&root, &on_main, "out4", &["--repo-cache", &cache_arg]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let said = planted(&root.join("out4"), "main");
    assert!(said.contains("status=[]"), "{said}");
    assert!(main_template.join("app.txt").is_file(), "made again");
}
