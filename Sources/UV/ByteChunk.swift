/// An immutable run of bytes whose address is stable for the object's whole
/// life, so that one chunk can sit in many streams' write queues at once
/// without being copied (encode once, fan out bytes).
public protocol ByteChunk: AnyObject {
    /// The bytes; must not move or change while the object lives.
    var bytes: UnsafeRawBufferPointer { get }
}

/// A ``ByteChunk`` that owns a private copy of some bytes.
public final class OwnedBytes: ByteChunk {
    /// The copied bytes.
    public let bytes: UnsafeRawBufferPointer

    /// Copies `source` into a buffer of its own.
    public init(_ source: some Collection<UInt8>) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(source.count, 1), alignment: 1)
        buffer.copyBytes(from: source)
        bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<source.count])
    }

    /// Allocates `capacity` bytes and lets `fill` write them; keeps the
    /// count it returns (at most `capacity`).
    init(capacity: Int, fill: (UnsafeMutableRawBufferPointer) -> Int) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(capacity, 1), alignment: 1)
        let count = min(max(fill(buffer), 0), capacity)
        bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
    }

    deinit { bytes.deallocate() }
}
