/// One outbound frame, ready for the socket: a 4-byte big-endian length, then
/// the body.
///
/// Header and body sit in one heap block that is allocated once in `init`
/// and never written again. The server encodes a push once and hands the same
/// `Frame` to every subscriber's output buffer: each socket write points at
/// the same stable address, so fan-out costs a reference count per
/// subscriber, not a copy (Redis `shared.mbulkhdr`, NIO's `writeToAll`).
///
/// `@unchecked Sendable` is safe because the block is immutable after `init`
/// and freed only in `deinit`, when no reference (and so no reader) is left.
/// Readers on any thread see the bytes `init` wrote: handing a reference to
/// another thread already implies the needed memory ordering. The one
/// mutable field, ``webSocketCache``, is touched by the server's loop
/// thread alone (see ``webSocketMessage``).
public final class Frame: @unchecked Sendable {
    /// Bytes in the length prefix.
    public static let headerSize = 4

    /// Header and body, `count` bytes; owned by this frame.
    private let storage: UnsafeMutableRawPointer

    /// Total size in bytes: header plus body.
    public let count: Int

    /// The body as one WebSocket text message, once a WebSocket connection
    /// needed it (``webSocketMessage``, Frame+WebSocket.swift); nil until then.
    var webSocketCache: WebSocketMessage?

    /// Allocates the block, writes the header and lets `fill` write the body
    /// in place; the only initializer that allocates.
    private init(bodyCount: Int, fill: (UnsafeMutableRawBufferPointer) -> Void) {
        precondition(
            bodyCount <= Int(UInt32.max),
            "frame body of \(bodyCount) bytes exceeds the 4-byte length header (max \(UInt32.max))"
        )
        count = Frame.headerSize + bodyCount
        storage = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 1)
        // storeBytes accepts unaligned addresses for trivial types (SE-0349).
        storage.storeBytes(of: UInt32(bodyCount).bigEndian, as: UInt32.self)
        fill(UnsafeMutableRawBufferPointer(start: storage + Frame.headerSize, count: bodyCount))
    }

    /// Copies `body` behind a freshly written header.
    ///
    /// - Precondition: `body.count <= UInt32.max`, the largest length the
    ///   header can express.
    public convenience init(body: UnsafeRawBufferPointer) {
        self.init(bodyCount: body.count) { destination in
            destination.copyMemory(from: body)
        }
    }

    /// Copies any byte collection (`[UInt8]`, `Data`, a slice) behind a
    /// freshly written header; contiguous collections are copied with one
    /// `memcpy`.
    ///
    /// - Precondition: `body.count <= UInt32.max`.
    public convenience init(body: some Collection<UInt8>) {
        self.init(bodyCount: body.count) { destination in
            destination.copyBytes(from: body)
        }
    }

    deinit {
        storage.deallocate()
    }

    /// The whole frame, header then body. Valid only while a reference to
    /// this frame is held (the output queue holds one until the write
    /// completes); without one, use ``withUnsafeBytes(_:)``.
    public var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage, count: count)
    }

    /// The body alone (the JSON text), without the length prefix. Valid
    /// only while a reference to this frame is held, like ``bytes``.
    public var body: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage + Frame.headerSize, count: count - Frame.headerSize)
    }

    /// Calls `body` with the whole frame, keeping the frame alive for the
    /// call. `Frame(body: x).bytes` alone would hand out a pointer into a
    /// frame that may be freed right after the property read.
    public func withUnsafeBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try withExtendedLifetime(self) { () throws(Failure) -> Result in
            try body(bytes)
        }
    }
}
