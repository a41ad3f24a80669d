/// The XOR masking of RFC 6455 §5.3, eight bytes at a time.
///
/// A masking key is a `UInt32` whose big-endian bytes are the four key
/// bytes as they stand on the wire (`0x37FA213D` is `37 fa 21 3d`). Byte `i`
/// of a payload is XORed with key byte `i % 4`; `phase` is the payload
/// offset the buffer starts at, so a payload masked in pieces comes out the
/// same as in one go. Masking twice with the same key restores the bytes.
public enum WebSocketMask {
    /// XORs `bytes` in place with `key`, starting at key byte `phase % 4`.
    /// Returns the phase of the byte after the buffer.
    @discardableResult
    public static func apply(key: UInt32, phase: Int = 0, to bytes: UnsafeMutableRawBufferPointer) -> Int {
        apply(key: key, phase: phase, from: UnsafeRawBufferPointer(bytes), into: bytes)
    }

    /// Writes `source` XORed with `key` (from key byte `phase % 4`) into
    /// `destination`, which holds at least `source.count` bytes and may be
    /// the same memory. Returns the phase of the byte after the buffer.
    @discardableResult
    public static func apply(
        key: UInt32, phase: Int = 0,
        from source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer
    ) -> Int {
        precondition(destination.count >= source.count, "mask destination too small")
        let count = source.count
        guard count > 0, let input = source.baseAddress, let output = destination.baseAddress else { return phase & 3 }
        // The key as it lies in memory (wire order), rotated so that its
        // first byte in memory is the one for offset `phase`, repeated twice.
        let wire = UInt32(bigEndian: key).littleEndian   // memory order read as a little-endian word
        let shift = UInt32((phase & 3) * 8)
        let rotated = shift == 0 ? wire : (wire >> shift) | (wire << (32 - shift))
        let word = UInt64(rotated) | UInt64(rotated) << 32
        let native = UInt64(littleEndian: word)
        var offset = 0
        while count - offset >= 8 {
            let value = input.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            output.storeBytes(of: value ^ native, toByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        // The tail: 8 divides the offset, so the key is at `phase` again.
        var keyByte = word
        while offset < count {
            let value = input.load(fromByteOffset: offset, as: UInt8.self) ^ UInt8(truncatingIfNeeded: keyByte)
            output.storeBytes(of: value, toByteOffset: offset, as: UInt8.self)
            keyByte >>= 8
            offset += 1
        }
        return (phase + count) & 3
    }

    /// The four key bytes in wire order.
    public static func bytes(of key: UInt32) -> [UInt8] {
        [UInt8(key >> 24), UInt8(truncatingIfNeeded: key >> 16), UInt8(truncatingIfNeeded: key >> 8), UInt8(truncatingIfNeeded: key)]
    }
}
