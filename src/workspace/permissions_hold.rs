// Test-only module: its parent includes it under #[cfg(test)].
//! Test support: file permissions that hold for root too. Root reads and lists any file
//! through CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so a test of what drover does with a
//! file it may not read (mode 000) would test nothing as root, which is how CI runs. The
//! test's steps run with the two capabilities out of the calling thread's effective set
//! (capabilities belong to a thread, and the threads it starts inherit its sets); they
//! come back when the steps end, panic or not. For any other user nothing changes.

use rustix::thread::{CapabilitySet, CapabilitySets, capabilities, set_capabilities};

/// Puts the thread's capabilities back when dropped.
struct Restore(CapabilitySets);

impl Drop for Restore {
    fn drop(&mut self) {
        // The effective set only shrank: the permitted set still holds what comes back.
        let _ = set_capabilities(None, self.0);
    }
}

/// Run `steps` where a file's mode binds this thread as it binds an ordinary user.
pub(crate) fn permissions_hold<R>(steps: impl FnOnce() -> R) -> R {
    let held = capabilities(None).expect("read this thread's capabilities");
    let mut lowered = held;
    lowered
        .effective
        .remove(CapabilitySet::DAC_OVERRIDE | CapabilitySet::DAC_READ_SEARCH);
    set_capabilities(None, lowered).expect("lower this thread's capabilities");
    let _restore = Restore(held);
    steps()
}
