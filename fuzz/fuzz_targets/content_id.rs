//! Parsing of ids, prefixes, ranges, sizes and durations: no panic, and what
//! parses round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spillway::{ByteRange, ByteSize, ContentId, HumanDuration, IdPrefix, LineRange};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(id) = s.parse::<ContentId>() {
        assert_eq!(id.to_string(), s);
        assert_eq!(ContentId::from_hex(&id.to_hex()).unwrap(), id);
    }
    if let Ok(p) = s.parse::<IdPrefix>() {
        let hex = p.hex();
        assert!((8..=64).contains(&hex.len()));
        assert!(hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        assert!(s.ends_with(hex));
        assert!(!hex.contains('/') && !hex.contains('.'));
    }
    if let Ok(r) = s.parse::<LineRange>() {
        assert!(r.first() >= 1);
        assert!(r.last().is_none_or(|l| l >= r.first()));
        assert_eq!(LineRange::new(r.first(), r.last()), Ok(r));
    }
    if let Ok(r) = s.parse::<ByteRange>() {
        assert!(r.end().is_none_or(|e| e >= r.start()));
        assert_eq!(ByteRange::new(r.start(), r.end()), Ok(r));
    }
    if let Ok(b) = s.parse::<ByteSize>() {
        let printed = b.to_string();
        assert!(!printed.is_empty());
    }
    let _ = s.parse::<HumanDuration>().map(|d| d.to_string());
});
