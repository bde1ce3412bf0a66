//! A buffer of a few `Copy` values in pages mapped for it alone (`mmap`),
//! not malloc'd: its pages are resident only once written, and go back to
//! the kernel when it is dropped. For what a busy capsule keeps in bulk and
//! lets go of a little at a time (the ledger's acknowledgements Redis took
//! lately): malloc'd, each piece would stay, freed but resident, in the
//! malloc arena of whichever thread allocated it (any of Sidekiq's
//! processors), for the process's life.

use std::ptr::NonNull;

/// The bytes a block maps.
const BYTES: usize = 16 * 1024;

pub(crate) struct Block<T: Copy> {
    values: NonNull<T>,
    len: usize,
}

// SAFETY: a block owns its pages, as a Vec<T> owns its buffer.
unsafe impl<T: Copy + Send> Send for Block<T> {}
// SAFETY: shared, a block is only read.
unsafe impl<T: Copy + Sync> Sync for Block<T> {}

impl<T: Copy> Block<T> {
    /// How many values a block holds.
    pub(crate) const CAPACITY: usize = BYTES / std::mem::size_of::<T>();

    /// An empty block; `None` if the kernel maps no pages.
    pub(crate) fn new() -> Option<Self> {
        // SAFETY: a new private anonymous mapping, checked before use; page
        // aligned, so aligned for any T a page holds.
        let pages = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if pages == libc::MAP_FAILED || std::mem::align_of::<T>() > 4096 {
            return None;
        }
        NonNull::new(pages.cast::<T>()).map(|values| Block { values, len: 0 })
    }

    /// Appends `value`; false if the block is full.
    pub(crate) fn push(&mut self, value: T) -> bool {
        if self.len == Self::CAPACITY {
            return false;
        }
        // SAFETY: within the mapping (len < CAPACITY), which nothing else
        // references.
        unsafe { self.values.as_ptr().add(self.len).write(value) };
        self.len += 1;
        true
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn as_slice(&self) -> &[T] {
        // SAFETY: the first `len` values were written by `push`.
        unsafe { std::slice::from_raw_parts(self.values.as_ptr(), self.len) }
    }
}

impl<T: Copy> Drop for Block<T> {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, not used after this.
        unsafe { libc::munmap(self.values.as_ptr().cast(), BYTES) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_holds_its_capacity_in_order() {
        let mut block = Block::<(u32, [u8; 20])>::new().expect("a mapping");
        assert_eq!(Block::<(u32, [u8; 20])>::CAPACITY, 682);
        for n in 0..682u32 {
            assert!(block.push((n, [n as u8; 20])));
        }
        assert!(!block.push((0, [0; 20])));
        assert_eq!(block.len(), 682);
        assert!(block
            .as_slice()
            .iter()
            .enumerate()
            .all(|(at, (n, d))| *n as usize == at && d[0] == at as u8));
    }
}
