//! The engine's allocator: the global allocator, counting. It refuses an
//! allocation that would take the heap past the memory limit, and
//! remembers that it did, so a failure is told apart as the memory limit
//! even when the engine had no memory left to make an error of it (it then
//! throws `null`). Once the run is marked over (its deadline came, or the
//! call was cancelled) it refuses every allocation (see `deadline`),
//! without counting that as the memory limit.

// The engine's allocator interface is raw pointers by nature: this module
// only adds a count around the allocator the engine's bindings provide.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rquickjs::allocator::{Allocator, RustAllocator};

use crate::deadline::Deadline;

pub(crate) struct Counted {
    limit: usize,
    used: usize,
    refused: Arc<AtomicBool>,
    deadline: Arc<Deadline>,
}

impl Counted {
    pub(crate) fn new(limit: usize, refused: Arc<AtomicBool>, deadline: Arc<Deadline>) -> Self {
        Counted {
            limit,
            used: 0,
            refused,
            deadline,
        }
    }

    fn fits(&self, more: usize) -> bool {
        if self.deadline.over() {
            return false;
        }
        let fits = self.used.checked_add(more).is_some_and(|n| n <= self.limit);
        if !fits {
            self.refused.store(true, Ordering::SeqCst);
        }
        fits
    }
}

// SAFETY: every pointer handed out comes from `RustAllocator` and goes back
// to it unchanged; the count only reads sizes it recorded.
unsafe impl Allocator for Counted {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.fits(size) {
            return std::ptr::null_mut();
        }
        let p = RustAllocator.alloc(size);
        if !p.is_null() {
            // SAFETY: `p` was just allocated by `RustAllocator`.
            self.used += unsafe { RustAllocator::usable_size(p) };
        }
        p
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            self.refused.store(true, Ordering::SeqCst);
            return std::ptr::null_mut();
        };
        if !self.fits(total) {
            return std::ptr::null_mut();
        }
        let p = RustAllocator.calloc(count, size);
        if !p.is_null() {
            // SAFETY: `p` was just allocated by `RustAllocator`.
            self.used += unsafe { RustAllocator::usable_size(p) };
        }
        p
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: the engine frees only what this allocator gave it.
        unsafe {
            self.used = self.used.saturating_sub(RustAllocator::usable_size(ptr));
            RustAllocator.dealloc(ptr);
        }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` is one this allocator gave the engine.
        let old = unsafe { RustAllocator::usable_size(ptr) };
        if new_size > old && !self.fits(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above; on failure `ptr` stays valid and counted.
        let p = unsafe { RustAllocator.realloc(ptr, new_size) };
        if !p.is_null() {
            // SAFETY: `p` was just allocated by `RustAllocator`.
            self.used = self.used - old + unsafe { RustAllocator::usable_size(p) };
        }
        p
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: `ptr` is one this allocator gave the engine.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}
