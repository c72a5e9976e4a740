//! The second seccomp filter of a proxied command: `connect()` and `listen()` are not
//! run by the kernel but handed to the launcher (`SECCOMP_RET_USER_NOTIF`), which does
//! them itself on the command's socket (see [`super::on_behalf`]). A filter cannot read
//! the address a `connect()` names (it is behind a pointer), and a launcher that only
//! looked at it and let the kernel go on would race a thread of the command rewriting
//! it; acting on the socket with its own copy of the address leaves nothing to race.
//!
//! The filter is installed by the command's process itself, between `fork` and `exec`
//! ([`install_in_child`]): a filter that notifies its own installer would deadlock the
//! launcher's own calls. The listener descriptor the kernel returns travels to the
//! launcher over a Unix socket pair ([`super::pass_fd`]).

use std::io;
use std::os::fd::RawFd;

use super::pass_fd;

/// `seccomp_data` offsets: the system call number, then the architecture.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;

// Classic BPF opcodes (linux/filter.h): load a word at an absolute offset, jump if
// equal to a constant, return a constant.
const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const RET_K: u16 = 0x06;
/// Jump if greater or equal (x86_64's x32 numbers are all above its bit).
#[cfg(target_arch = "x86_64")]
const JGE_K: u16 = 0x35;

#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: u32 = 0xc000_003e; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: u32 = 0xc000_00b7; // AUDIT_ARCH_AARCH64

/// The bit x86_64 sets in the number of an x32 system call.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// The calls handed to the launcher.
const NOTIFIED: [libc::c_long; 2] = [libc::SYS_connect, libc::SYS_listen];

/// The compiled filter, built before `fork` so the child only has to install it.
pub(crate) struct ConnectFilter {
    instructions: Vec<libc::sock_filter>,
}

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump_if(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: JEQ_K,
        jt,
        jf,
        k,
    }
}

impl ConnectFilter {
    /// The program: calls of another architecture are left to the first filter (which
    /// kills them); on x86_64 every x32 call fails with EPERM (x32 has calls of its
    /// own, such as its `sendmsg`, that could connect a socket made natively, and no
    /// program a task runs needs x32); the native `connect` and `listen` notify;
    /// everything else is allowed (the first filter still applies).
    pub(crate) fn new() -> ConnectFilter {
        let mut program = vec![
            stmt(LD_W_ABS, OFFSET_ARCH),
            // Patched below to jump to ALLOW when the architecture is another.
            jump_if(NATIVE_ARCH, 0, 0),
            stmt(LD_W_ABS, OFFSET_NR),
        ];
        // Only x86_64 has calls to refuse here (its x32 ones).
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut to_refuse: Vec<usize> = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            to_refuse.push(program.len());
            program.push(libc::sock_filter {
                code: JGE_K,
                jt: 0,
                jf: 0,
                k: X32_SYSCALL_BIT,
            });
        }
        let mut to_notify = Vec::new();
        for nr in NOTIFIED {
            to_notify.push(program.len());
            program.push(jump_if(nr as u32, 0, 0));
        }
        let allow = program.len();
        program.push(stmt(RET_K, libc::SECCOMP_RET_ALLOW));
        let notify = program.len();
        program.push(stmt(RET_K, libc::SECCOMP_RET_USER_NOTIF));
        let refuse = program.len();
        program.push(stmt(
            RET_K,
            libc::SECCOMP_RET_ERRNO | (libc::EPERM as u32 & libc::SECCOMP_RET_DATA),
        ));
        // Jump offsets count from the next instruction; the program is a dozen
        // instructions, so every offset fits a u8.
        program[1].jf = (allow - 2) as u8;
        for at in to_refuse {
            program[at].jt = (refuse - at - 1) as u8;
        }
        for at in to_notify {
            program[at].jt = (notify - at - 1) as u8;
        }
        ConnectFilter {
            instructions: program,
        }
    }

    /// Install the filter on the calling process and send its listener descriptor over
    /// `channel`. Called between `fork` and `exec` in the command's process: it makes
    /// raw system calls only and allocates nothing. `no_new_privs` is already set (by
    /// Landlock, inherited from the launcher).
    pub(crate) fn install_in_child(&self, channel: RawFd) -> io::Result<()> {
        let program = libc::sock_fprog {
            len: self.instructions.len() as u16,
            filter: self.instructions.as_ptr().cast_mut(),
        };
        // SAFETY: seccomp(2) reads the program, which lives in `self` for the call.
        let listener = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
                &program as *const libc::sock_fprog,
            )
        };
        if listener < 0 {
            return Err(io::Error::last_os_error());
        }
        let listener = listener as RawFd;
        let sent = pass_fd::send(channel, listener);
        // SAFETY: the descriptor was just returned by seccomp(2) and is ours to close;
        // the launcher holds its own copy now.
        unsafe { libc::close(listener) };
        sent
    }

    #[cfg(test)]
    pub(super) fn instructions(&self) -> &[libc::sock_filter] {
        &self.instructions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_jump_lands_on_a_return() {
        let filter = ConnectFilter::new();
        let program = filter.instructions();
        for (i, ins) in program.iter().enumerate() {
            if ins.code != RET_K && ins.code != LD_W_ABS {
                for offset in [ins.jt, ins.jf] {
                    let target = i + 1 + offset as usize;
                    assert!(target < program.len(), "jump {i} leaves the program");
                }
                if ins.k != NATIVE_ARCH {
                    let target = &program[i + 1 + ins.jt as usize];
                    assert_eq!(target.code, RET_K, "a matched number returns at once");
                }
            }
        }
        let last = &program[program.len() - 3..];
        assert_eq!(last[0].k, libc::SECCOMP_RET_ALLOW);
        assert_eq!(last[1].k, libc::SECCOMP_RET_USER_NOTIF);
    }
}
