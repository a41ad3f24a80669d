/// Finds the end of a run of string bytes that JSON carries as they are —
/// neither `"`, `\` nor a control character (< 0x20) — eight bytes at a
/// time (SWAR: "SIMD within a register", the bit tricks of Hacker's Delight
/// §6-1 and Sean Anderson's "Bit Twiddling Hacks", *Determine if a word has
/// a byte less than n*). Both the reader and the writer of JSON strings
/// spend most of a `publish` in such runs (a message's text, a channel's
/// name); one byte at a time they cost 12–17 instructions a byte under
/// callgrind (issue 28).
enum JSONStringScan {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080
    private static let quotes = ones &* UInt64(UInt8(ascii: "\""))
    private static let backslashes = ones &* UInt64(UInt8(ascii: "\\"))
    private static let belowSpace = ones &* 0x20

    /// Whether any byte of `word` is 0 (exact for "any": a borrow only
    /// runs past a byte that is itself 0).
    @inline(__always)
    private static func hasZeroByte(_ word: UInt64) -> Bool {
        (word &- ones) & ~word & highs != 0
    }

    /// Whether any of the eight bytes of `word` ends a plain run.
    @inline(__always)
    static func hasSpecialByte(_ word: UInt64) -> Bool {
        // A byte below 0x20: (b - 0x20) borrows into its top bit while b's
        // own top bit is clear (exact for "any", n <= 128).
        (word &- belowSpace) & ~word & highs != 0
            || hasZeroByte(word ^ quotes)
            || hasZeroByte(word ^ backslashes)
    }

    /// The offset of the first byte at or after `start` (and before
    /// `count`) that ends a plain run, or `count`; `high` collects the top
    /// bits of the bytes passed (non-zero: some byte was >= 0x80, so the
    /// run must be checked as UTF-8).
    @inline(__always)
    static func plainRunEnd(_ base: UnsafeRawPointer, from start: Int, count: Int, high: inout UInt8) -> Int {
        var end = start
        var highBits: UInt64 = 0
        while end &+ 8 <= count {
            let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: end, as: UInt64.self))
            if hasSpecialByte(word) { break }
            highBits |= word
            end &+= 8
        }
        if highBits & highs != 0 { high |= 0x80 }
        while end < count {
            let byte = base.load(fromByteOffset: end, as: UInt8.self)
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            high |= byte
            end &+= 1
        }
        return end
    }
}
