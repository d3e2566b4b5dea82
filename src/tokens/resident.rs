//! Giving back the memory that building the encoders needed and serving
//! does not: the 47 MB of serialized tables `bpe-openai` embeds (read once,
//! yet resident) and the heap glibc keeps. Clean pages fault back in if read.

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

/// Asks the kernel to reclaim the executable's read-only mappings
/// (`MADV_PAGEOUT` keeps contents: clean pages are re-read on use).
#[cfg(target_os = "linux")]
fn page_out_read_only_image() {
    let (Ok(exe), Ok(maps)) = (
        std::fs::read_link("/proc/self/exe"),
        std::fs::read_to_string("/proc/self/maps"),
    ) else {
        return;
    };
    for line in maps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // start-end perms offset dev inode path
        let [range, "r--p", _, _, _, path, ..] = fields[..] else {
            continue;
        };
        let hex = |s| usize::from_str_radix(s, 16).ok();
        let Some((Some(start), Some(end))) = range.split_once('-').map(|(s, e)| (hex(s), hex(e)))
        else {
            continue;
        };
        if std::path::Path::new(path) != exe {
            continue;
        }
        // SAFETY: a page-aligned range of our own mapping; MADV_PAGEOUT keeps contents.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_PAGEOUT);
        }
    }
}
