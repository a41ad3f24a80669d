/// Why a frame header was refused. Either way the stream cannot be trusted
/// any more: the server sends an `error` push, a `bye` and closes (§1).
public enum FrameError: Error, Sendable, Equatable {
    /// The header announced 0 or 1 bytes: too short for any JSON object.
    case tooShort(length: Int)
    /// The header announced more than the decoder's `maxFrame` bytes.
    case tooLarge(length: Int, max: Int)

    /// The wire form: `bad_frame` or `frame_too_large`, with a message that
    /// names the length and the allowed range.
    public var protocolError: ProtocolError {
        switch self {
        case .tooShort(let length):
            ProtocolError(
                .badFrame,
                "frame length \(length) is too short: a frame body is at least 2 bytes (the smallest JSON object, '{}')"
            )
        case .tooLarge(let length, let max):
            ProtocolError(
                .frameTooLarge,
                "frame length \(length) exceeds max_frame: allowed 2…\(max) bytes"
            )
        }
    }
}

/// Splits an inbound byte stream into frame bodies, incrementally and with
/// bounded memory.
///
/// Feed it whatever the socket read. Bodies that lie wholly inside a chunk
/// are handed out as pointers into that chunk, without copying; only an
/// incomplete trailing frame is copied, into a buffer sized for exactly that
/// frame and freed as soon as it completes, so an idle connection holds no
/// buffer. A header announcing more than `maxFrame` is refused before
/// anything is reserved for its body (§1: never read or buffer the oversized
/// body). Like NIO's `ByteToMessageDecoder` it knows nothing of sockets.
public struct FrameDecoder: Sendable {
    /// The largest body length accepted, in bytes (the hello reply's `max_frame`).
    public let maxFrame: Int

    /// Header bytes of the frame in progress, accumulated big-endian.
    private var header: UInt32 = 0
    /// The length the first bad header announced; the stream is out of sync
    /// from there on (see ``failure``).
    private var failedLength: UInt32?
    /// How many of the 4 header bytes have arrived; 0 between frames.
    private var headerByteCount: UInt8 = 0
    /// The body in progress, once its header is complete and accepted.
    private var partial: PartialBody?
    // Every server connection holds a decoder: its fields are packed (32
    // bytes, not 49 with an `Int` count and a `FrameError?`).

    /// The error of the first bad header, if one came.
    private var failure: FrameError? {
        failedLength.map { Self.error(forLength: Int($0), maxFrame: maxFrame) }
    }

    /// Creates a decoder that accepts bodies of 2…`maxFrame` bytes.
    ///
    /// - Precondition: `2 <= maxFrame <= UInt32.max`.
    public init(maxFrame: Int) {
        precondition(
            maxFrame >= 2 && maxFrame <= Int(UInt32.max),
            "maxFrame must be 2…\(UInt32.max), got \(maxFrame)"
        )
        self.maxFrame = maxFrame
    }

    /// Bytes held for an incomplete frame, header bytes included.
    public var bufferedByteCount: Int {
        Int(headerByteCount) + (partial?.count ?? 0)
    }

    /// Capacity of the internal buffer; 0 when nothing is held. Never more
    /// than the length of the frame in progress.
    public var bufferCapacity: Int {
        partial?.capacity ?? 0
    }

    /// Consumes `chunk`; calls `onFrame` synchronously once per complete
    /// frame body, in order.
    ///
    /// Bodies that lie wholly inside `chunk` are passed without copying (a
    /// pointer into `chunk`, valid only during the call); only an incomplete
    /// trailing frame is copied into an internal buffer, reserved for at most
    /// that frame's length. On a bad header it throws after having delivered
    /// the frames before it, and the decoder is then failed: later feeds
    /// throw the same error and deliver nothing. It never reserves or
    /// buffers anything for a body whose header says more than `maxFrame`.
    public mutating func feed(
        _ chunk: UnsafeRawBufferPointer,
        _ onFrame: (UnsafeRawBufferPointer) -> Void
    ) throws(FrameError) {
        if let failure { throw failure }
        guard chunk.count > 0 else { return }

        var offset = 0
        if headerByteCount > 0 {
            // Finish the frame left over from earlier chunks first. If it is
            // still incomplete, the whole chunk went into it.
            offset = try resume(chunk, from: 0, onFrame)
        }
        // Fast path: whole frames inside the chunk, delivered in place.
        while chunk.count - offset >= Frame.headerSize {
            let length = Int(UInt32(bigEndian: chunk.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            try check(length)
            let start = offset + Frame.headerSize
            guard chunk.count - start >= length else { break }
            onFrame(UnsafeRawBufferPointer(rebasing: chunk[start ..< start + length]))
            offset = start + length
        }
        if offset < chunk.count {
            // An incomplete trailing frame (or 1–3 header bytes): keep it.
            _ = try resume(chunk, from: offset, onFrame)
        }
    }

    /// Moves bytes from `chunk[offset...]` into the frame in progress and
    /// delivers it if it completes. Returns the offset after the bytes used.
    private mutating func resume(
        _ chunk: UnsafeRawBufferPointer,
        from start: Int,
        _ onFrame: (UnsafeRawBufferPointer) -> Void
    ) throws(FrameError) -> Int {
        var offset = start
        while headerByteCount < Frame.headerSize && offset < chunk.count {
            header = header << 8 | UInt32(chunk[offset])
            headerByteCount += 1
            offset += 1
        }
        guard headerByteCount == Frame.headerSize else { return offset }

        if partial == nil {
            let length = Int(header)
            try check(length)
            if chunk.count - offset >= length {
                // The header was split but the body is all here: no copy.
                resetHeader()
                onFrame(UnsafeRawBufferPointer(rebasing: chunk[offset ..< offset + length]))
                return offset + length
            }
            partial = PartialBody(capacity: length)
        }

        let taken = min(partial!.remaining, chunk.count - offset)
        if !isKnownUniquelyReferenced(&partial!) {
            // A copy of this decoder shares the buffer: copy on write.
            partial = partial!.copy()
        }
        partial!.append(UnsafeRawBufferPointer(rebasing: chunk[offset ..< offset + taken]))
        offset += taken

        if let done = partial, done.remaining == 0 {
            // Release before delivering so the decoder is idle (capacity 0)
            // even if the caller inspects it right after; `done` keeps the
            // bytes alive for the call.
            partial = nil
            resetHeader()
            withExtendedLifetime(done) { onFrame(done.bytes) }
        }
        return offset
    }

    /// Throws, and fails the decoder for good, if `length` is outside 2…maxFrame.
    private mutating func check(_ length: Int) throws(FrameError) {
        guard length < 2 || length > maxFrame else { return }
        // A header holds 4 bytes: the length fits in 32 bits.
        failedLength = UInt32(length)
        partial = nil
        resetHeader()
        throw Self.error(forLength: length, maxFrame: maxFrame)
    }

    /// The error for a header announcing `length` bytes, outside 2…`maxFrame`.
    private static func error(forLength length: Int, maxFrame: Int) -> FrameError {
        length < 2 ? .tooShort(length: length) : .tooLarge(length: length, max: maxFrame)
    }

    private mutating func resetHeader() {
        header = 0
        headerByteCount = 0
    }
}

/// The body of one incomplete frame, in a block of exactly its length.
///
/// A class so the decoder struct stays small and its copies cheap; the
/// decoder copies it before writing if it is shared (copy on write), so no
/// instance is ever mutated while another decoder can see it. That is why
/// `@unchecked Sendable` is safe.
private final class PartialBody: @unchecked Sendable {
    /// Bytes reserved: the frame's announced length.
    let capacity: Int
    /// Bytes received so far.
    private(set) var count = 0
    private let storage: UnsafeMutableRawPointer

    init(capacity: Int) {
        self.capacity = capacity
        storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 1)
    }

    deinit {
        storage.deallocate()
    }

    /// Bytes still missing.
    var remaining: Int { capacity - count }

    /// The bytes received so far.
    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage, count: count)
    }

    func append(_ source: UnsafeRawBufferPointer) {
        precondition(source.count <= remaining, "frame body overflow")
        guard let base = source.baseAddress, source.count > 0 else { return }
        (storage + count).copyMemory(from: base, byteCount: source.count)
        count += source.count
    }

    func copy() -> PartialBody {
        let clone = PartialBody(capacity: capacity)
        clone.append(bytes)
        return clone
    }
}
