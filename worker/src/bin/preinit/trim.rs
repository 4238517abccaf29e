//! wasmtime-wizer keeps each of the module's original active data segments, applied already by
//! the snapshot, as an empty passive segment, so that their indices stay as they were.
//! wasmtime gives every instance a base and a length for each passive segment in its
//! VMContext, written at instantiation: for componentize-js's engine, 5,609 empty segments,
//! 67 KB written on every request, which the worker's CPU per request showed (bench/RESULTS.md).
//! wizer itself left them out. Code names a data segment only in `memory.init` and `data.drop`:
//! in a module whose code has neither, the empty passive segments go (and the DataCount
//! section counts the rest); otherwise the module is left as it is.

use std::ops::Range;
use wasmparser::{BinaryReader, DataKind, DataSectionReader, Operator, Parser, Payload};

const DATA_COUNT_SECTION: u8 = 12;
const DATA_SECTION: u8 = 11;

/// `wasm` without its empty passive data segments, where nothing can refer to them.
pub fn drop_empty_passive_data(wasm: Vec<u8>) -> wasmtime::Result<Vec<u8>> {
    let Some((data, data_count)) = sections(&wasm)? else {
        return Ok(wasm);
    };
    let reader = DataSectionReader::new(BinaryReader::new(&wasm[data.clone()], data.start))?;
    let mut kept = Vec::new();
    let mut count = 0u32;
    for segment in reader {
        let segment = segment?;
        if matches!(segment.kind, DataKind::Passive) && segment.data.is_empty() {
            continue;
        }
        kept.extend_from_slice(&wasm[segment.range.clone()]);
        count += 1;
    }
    let mut contents = Vec::new();
    leb128(&mut contents, count);
    contents.extend_from_slice(&kept);

    // The DataCount section comes before the code, the data section after it.
    let mut out = Vec::with_capacity(wasm.len());
    let mut copied = 0;
    if let Some(range) = data_count {
        let header = header_start(&wasm, DATA_COUNT_SECTION, &range)?;
        out.extend_from_slice(&wasm[copied..header]);
        let mut count_contents = Vec::new();
        leb128(&mut count_contents, count);
        section(&mut out, DATA_COUNT_SECTION, &count_contents)?;
        copied = range.end;
    }
    let header = header_start(&wasm, DATA_SECTION, &data)?;
    out.extend_from_slice(&wasm[copied..header]);
    section(&mut out, DATA_SECTION, &contents)?;
    out.extend_from_slice(&wasm[data.end..]);
    Ok(out)
}

/// The data and DataCount sections' contents, when the code names no data segment.
type Sections = (Range<usize>, Option<Range<usize>>);

fn sections(wasm: &[u8]) -> wasmtime::Result<Option<Sections>> {
    let (mut data, mut data_count) = (None, None);
    for payload in Parser::new(0).parse_all(wasm) {
        match payload? {
            Payload::DataCountSection { range, .. } => data_count = Some(range),
            Payload::DataSection(reader) => data = Some(reader.range()),
            Payload::CodeSectionEntry(body) => {
                let mut operators = body.get_operators_reader()?;
                while !operators.eof() {
                    if matches!(
                        operators.read()?,
                        Operator::MemoryInit { .. } | Operator::DataDrop { .. }
                    ) {
                        return Ok(None);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(data.map(|data| (data, data_count)))
}

fn section(out: &mut Vec<u8>, id: u8, contents: &[u8]) -> wasmtime::Result<()> {
    out.push(id);
    leb128(out, u32::try_from(contents.len())?);
    out.extend_from_slice(contents);
    Ok(())
}

/// Where the section whose contents are `range` starts: its id, then its size in LEB128.
fn header_start(wasm: &[u8], id: u8, range: &Range<usize>) -> wasmtime::Result<usize> {
    (2..=6)
        .filter_map(|back| range.start.checked_sub(back))
        .find(|&at| wasm[at] == id && size_at(&wasm[at + 1..range.start]) == Some(range.len()))
        .ok_or_else(|| {
            wasmtime::Error::msg(format!(
                "section {id}'s header is not where its contents say"
            ))
        })
}

fn leb128(out: &mut Vec<u8>, mut value: u32) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// The size encoded by exactly these bytes, if they are one LEB128 number.
fn size_at(bytes: &[u8]) -> Option<usize> {
    let mut value = 0usize;
    for (index, &byte) in bytes.iter().enumerate() {
        value |= usize::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            return (index + 1 == bytes.len()).then_some(value);
        }
    }
    None
}
