//! Giving back the memory that building the encoders needed and serving
//! does not, so an idle replica stays small.
//!
//! `bpe-openai` embeds its tables serialized in the binary (47 MB of
//! read-only data for o200k and cl100k) and deserializes them at start-up:
//! every page of that data is read once, then never again, yet stays
//! resident as file-backed memory. And glibc keeps the heap that the
//! deserialization's temporaries freed. Both are handed back once the
//! encoders are built. Nothing here changes a count: the pages are clean
//! copies of the file, and any later read faults them back in.

/// Best effort, Linux only; a failure costs memory, never correctness.
pub fn release_build_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only returns free heap pages to the kernel.
        unsafe { libc::malloc_trim(0) };
    }
    #[cfg(target_os = "linux")]
    page_out_read_only_image();
}

/// Asks the kernel to reclaim the executable's read-only mappings.
/// `MADV_PAGEOUT` is a hint that keeps contents: clean pages are dropped
/// and re-read on use; relocated (RELRO) pages are anonymous and, with no
/// swap, simply stay.
#[cfg(target_os = "linux")]
fn page_out_read_only_image() {
    let (Ok(exe), Ok(maps)) = (
        std::fs::read_link("/proc/self/exe"),
        std::fs::read_to_string("/proc/self/maps"),
    ) else {
        return;
    };
    for line in maps.lines() {
        // start-end perms offset dev inode path
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        let path = fields.nth(3);
        if perms != "r--p" || path.map(std::path::Path::new) != Some(exe.as_path()) {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (
            usize::from_str_radix(start, 16),
            usize::from_str_radix(end, 16),
        ) else {
            continue;
        };
        // SAFETY: a page-aligned range of this process's own mapping, read
        // from /proc/self/maps; MADV_PAGEOUT never changes its contents.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_PAGEOUT);
        }
    }
}
