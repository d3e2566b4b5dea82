//! condense's token counts of texts read as JSON lines, for the differential
//! fuzz against Python tiktoken (`bench/fuzz_tiktoken.py`).
//!
//! ```text
//! cargo run --release --example count_lines < texts.jsonl
//! ```
//!
//! Each line of stdin is one JSON string; each line of stdout is its count
//! in o200k_base, then in cl100k_base (one [`Encoders::count`] call each),
//! flushed whenever no more input is waiting, so a caller can stream batches.

use std::io::{BufRead, BufReader, BufWriter, Write};

use anyhow::Context;
use condense::tokens::{Encoders, Encoding};

fn main() -> anyhow::Result<()> {
    let encoders = Encoders::load()?;
    let mut stdin = BufReader::new(std::io::stdin().lock());
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut line = String::new();
    for n in 1.. {
        line.clear();
        if stdin.read_line(&mut line)? == 0 {
            break;
        }
        let text: String = serde_json::from_str(&line)
            .with_context(|| format!("line {n} is not a JSON string"))?;
        writeln!(
            out,
            "{} {}",
            encoders.count(Encoding::O200kBase, &text),
            encoders.count(Encoding::Cl100kBase, &text)
        )?;
        if stdin.buffer().is_empty() {
            out.flush()?;
        }
    }
    out.flush()?;
    Ok(())
}
