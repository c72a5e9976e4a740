//! A real `git daemon` on 127.0.0.1 serving the fleet's repositories over `git://`,
//! stopped when dropped.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(super) struct Daemon {
    child: Child,
    pub(super) port: u16,
}

impl Daemon {
    /// Serve every repository under `base` (`git://127.0.0.1:PORT/<name>.git`).
    pub(super) fn start(base: &Path) -> std::io::Result<Daemon> {
        // A port the kernel just handed out, free again once the listener is dropped.
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
            .local_addr()?
            .port();
        let child = Command::new("git")
            .arg("daemon")
            .arg("--reuseaddr")
            .arg("--export-all")
            .arg(format!("--base-path={}", base.display()))
            .arg("--listen=127.0.0.1")
            .arg(format!("--port={port}"))
            .arg(base)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let mut daemon = Daemon { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            if Instant::now() > deadline {
                return Err(std::io::Error::other(
                    "git daemon did not listen within 10 s (is git-daemon installed?)",
                ));
            }
            if let Some(status) = daemon.child.try_wait()? {
                return Err(std::io::Error::other(format!(
                    "git daemon exited at once ({status}); is git-daemon installed?"
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(daemon)
    }

    pub(super) fn url(&self, name: &str) -> String {
        format!("git://127.0.0.1:{}/{name}.git", self.port)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
