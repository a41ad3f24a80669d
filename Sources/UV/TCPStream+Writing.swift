import CLibUV

extension TCPStream {
    /// Queues `chunk` for the next ``flush()``; no copy, no syscall.
    public func enqueue(_ chunk: ByteChunk) {
        guard !isClosing else { return }
        queue.append(chunk)
    }

    /// Bytes queued or in flight, not yet taken by the kernel.
    public var bufferedByteCount: Int { queue.byteCount + (inFlight?.byteCount ?? 0) }

    /// True when nothing is queued or in flight.
    public var isDrained: Bool { queue.isEmpty && inFlight == nil }

    /// Sends what is queued: first a direct `writev` (`uv_try_write`), then one
    /// `uv_write` for the rest. Does nothing while a write is in flight (its
    /// callback flushes again).
    public func flush() {
        guard inFlight == nil, !queue.isEmpty, !isClosing else { return }
        let stream = typed(uv_stream_t.self)
        let scratch = loop.writeScratch
        var count = queue.fill(scratch, max: Loop.maxChunksPerWrite)
        let written = uv_try_write(stream, scratch, UInt32(count))
        if written < 0 && written != Int32(UV_EAGAIN.rawValue) {
            failWrite(UVError(written))
            return
        }
        if written > 0 { queue.consume(Int(written)) }
        if queue.isEmpty {
            onDrained?()
            return
        }
        count = queue.fill(scratch, max: Loop.maxChunksPerWrite)
        let pending = PendingWrite(stream: self, chunks: queue.removeFirst(count), byteCount: 0)
        pending.byteCount = (0..<count).reduce(0) { $0 + Int(scratch[$1].len) }
        pending.request.pointee.data = Unmanaged.passRetained(pending).toOpaque()
        let result = uv_write(pending.request, stream, scratch, UInt32(count), Trampolines.onWrite)
        if result < 0 {
            Unmanaged.passUnretained(pending).release()
            failWrite(UVError(result))
            return
        }
        inFlight = pending
    }

    func didWrite(_ pending: PendingWrite, status: Int32) {
        inFlight = nil
        if status < 0 {
            if status != Int32(UV_ECANCELED.rawValue) { failWrite(UVError(status)) }
            return
        }
        if queue.isEmpty {
            onDrained?()
        } else {
            flush()
        }
    }

    private func failWrite(_ error: UVError) {
        queue.removeAll()
        let callback = onWriteError
        onWriteError = nil
        callback?(error)
    }
}

/// A `uv_write_t` in flight; holds its chunks alive until libuv is done.
final class PendingWrite {
    let request = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
    let stream: TCPStream
    let chunks: [ByteChunk]
    var byteCount: Int

    init(stream: TCPStream, chunks: [ByteChunk], byteCount: Int) {
        self.stream = stream
        self.chunks = chunks
        self.byteCount = byteCount
    }

    deinit { request.deallocate() }
}

/// A FIFO of chunks with the offset already written of the first one.
struct WriteQueue {
    private var chunks: [ByteChunk] = []
    private var head = 0
    private var headOffset = 0
    /// Bytes not yet written.
    private(set) var byteCount = 0

    var isEmpty: Bool { head == chunks.count }

    mutating func append(_ chunk: ByteChunk) {
        chunks.append(chunk)
        byteCount += chunk.bytes.count
    }

    /// Describes up to `max` chunks (from the unwritten offset) in `buffers`.
    func fill(_ buffers: UnsafeMutablePointer<uv_buf_t>, max: Int) -> Int {
        var count = 0
        var index = head
        while index < chunks.count && count < max {
            let bytes = chunks[index].bytes
            let offset = index == head ? headOffset : 0
            let base = UnsafeMutableRawPointer(mutating: bytes.baseAddress!) + offset
            buffers[count] = uv_buf_init(base.assumingMemoryBound(to: CChar.self), UInt32(bytes.count - offset))
            count += 1
            index += 1
        }
        return count
    }

    /// Drops `written` bytes from the front.
    mutating func consume(_ written: Int) {
        var remaining = written
        byteCount -= written
        while remaining > 0 {
            let available = chunks[head].bytes.count - headOffset
            if remaining < available {
                headOffset += remaining
                return
            }
            remaining -= available
            head += 1
            headOffset = 0
        }
        compact()
    }

    /// Removes the first `count` chunks (as described by the last ``fill(_:max:)``).
    mutating func removeFirst(_ count: Int) -> [ByteChunk] {
        let taken = Array(chunks[head..<(head + count)])
        for (index, chunk) in taken.enumerated() {
            byteCount -= chunk.bytes.count - (index == 0 ? headOffset : 0)
        }
        head += count
        headOffset = 0
        compact()
        return taken
    }

    mutating func removeAll() {
        chunks = []
        head = 0
        headOffset = 0
        byteCount = 0
    }

    private mutating func compact() {
        if head == chunks.count {
            // Release the array's storage: idle connections keep no buffers.
            removeAll()
        } else if head > 64 && head * 2 > chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
    }
}
