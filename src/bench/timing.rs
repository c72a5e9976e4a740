//! Timing whole processes: spawn, drain stdout through a pipe, wait.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One finished run.
#[derive(Debug, Clone)]
pub(super) struct Run {
    pub wall: Duration,
    pub exit_code: Option<i32>,
    /// Lines written to stdout.
    pub lines: usize,
    /// The end of stderr, to explain a failure.
    pub stderr: String,
}

/// Run `program args` in `dir` with stdin closed, counting stdout's lines as they arrive
/// (so the output costs what writing to a reader costs, on both sides).
pub(super) fn run_once(program: &Path, args: &[String], dir: &Path) -> std::io::Result<Run> {
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut lines = 0;
    if let Some(mut stdout) = child.stdout.take() {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            match stdout.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => lines += buffer[..n].iter().filter(|&&b| b == b'\n').count(),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    // stderr is read after stdout: the programs benchmarked write little to it, well
    // under a pipe's capacity, so this cannot deadlock in practice.
    let mut stderr = Vec::new();
    if let Some(mut pipe) = child.stderr.take() {
        pipe.read_to_end(&mut stderr)?;
    }
    let status = child.wait()?;
    let wall = start.elapsed();
    let stderr = String::from_utf8_lossy(&stderr);
    let tail: String = stderr
        .lines()
        .rev()
        .take(3)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join(" | ");
    Ok(Run {
        wall,
        exit_code: status.code(),
        lines,
        stderr: tail,
    })
}

/// The median of `times` (the mean of the middle two for an even count).
pub(super) fn median(times: &mut [Duration]) -> Option<Duration> {
    if times.is_empty() {
        return None;
    }
    times.sort();
    let mid = times.len() / 2;
    if times.len() % 2 == 1 {
        Some(times[mid])
    } else {
        Some((times[mid - 1] + times[mid]) / 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        let ms = Duration::from_millis;
        assert_eq!(median(&mut [ms(5), ms(1), ms(3)]), Some(ms(3)));
        assert_eq!(
            median(&mut [ms(4), ms(1), ms(3), ms(2)]),
            Some(Duration::from_micros(2500))
        );
        assert_eq!(median(&mut []), None);
    }
}
