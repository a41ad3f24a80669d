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

    deinit { bytes.deallocate() }
}
