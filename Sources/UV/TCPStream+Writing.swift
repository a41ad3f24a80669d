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

    /// Sends what is queued: first directly (`uv_try_write`), then one
    /// `uv_write` for the rest. Does nothing while a write is in flight (its
    /// callback flushes again).
    ///
    /// Direct writes first *gather* runs of whole chunks into the loop's
    /// 64 KiB ``Loop/writeStaging`` buffer and write each run as one buffer
    /// (up to ``Loop/maxBytesPerWrite`` a flush), then hand what is left
    /// (chunks too large to gather, or none) to one `writev`. A fan-out
    /// queue is a hundred-odd frames of ~170 bytes per flush, and the kernel
    /// copies each `iovec` into the socket on its own: one copy of 16 KiB
    /// cost about half the system time of 130 small ones, while the extra
    /// copy here is one `memcpy` of bytes already in cache (issue 28,
    /// docs/BENCHMARKS.md, *Session 19*). Only bytes the kernel took
    /// are consumed; a `uv_write` still points at the chunks themselves.
    public func flush() {
        guard inFlight == nil, !queue.isEmpty, !isClosing else { return }
        var socketFull = false
        var gatheredBytes = 0
        while queue.count > 1, gatheredBytes < Loop.maxBytesPerWrite {
            let staging = loop.writeStaging
            let gathered = queue.gather(into: staging)
            guard gathered.chunks > 1 else { break }
            var buffer = uv_buf_init(
                staging.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(gathered.bytes))
            guard let written = tryWrite(&buffer, count: 1) else { return }
            gatheredBytes += gathered.bytes
            if written < gathered.bytes {
                socketFull = true
                break
            }
        }
        let scratch = loop.writeScratch
        if !socketFull && !queue.isEmpty {
            let count = queue.fill(scratch, max: Loop.maxChunksPerWrite)
            guard tryWrite(scratch, count: count) != nil else { return }
        }
        if queue.isEmpty {
            onDrained?()
            return
        }
        // Bounded: what libuv holds cannot be dropped any more.
        let count = queue.fill(scratch, max: Loop.maxChunksPerWrite, maxBytes: Loop.maxBytesPerWrite)
        var byteCount = 0
        for index in 0..<count { byteCount += Int(scratch[index].len) }
        let pending = PendingWrite(stream: self, owners: queue.removeFirst(count), byteCount: byteCount)
        pending.request.pointee.data = Unmanaged.passRetained(pending).toOpaque()
        let result = uv_write(pending.request, typed(uv_stream_t.self), scratch, UInt32(count), Trampolines.onWrite)
        if result < 0 {
            Unmanaged.passUnretained(pending).release()
            failWrite(UVError(result))
            return
        }
        inFlight = pending
    }

    /// One `uv_try_write` of `count` buffers: consumes what the kernel took
    /// and returns its byte count (0 when the socket is full), or nil after
    /// failing the stream on an error.
    private func tryWrite(_ buffers: UnsafeMutablePointer<uv_buf_t>, count: Int) -> Int? {
        let written = uv_try_write(typed(uv_stream_t.self), buffers, UInt32(count))
        if written == Int32(UV_EAGAIN.rawValue) { return 0 }
        if written < 0 {
            failWrite(UVError(written))
            return nil
        }
        queue.consume(Int(written))
        return Int(written)
    }

    /// Drops the queued chunks that have not been handed to the kernel or
    /// libuv yet: the write in flight goes on, and a chunk partly written
    /// stays whole (framing stays intact). Returns the bytes dropped.
    @discardableResult
    public func dropUnsent() -> Int {
        let before = queue.byteCount
        queue.removeAllButStarted()
        return before - queue.byteCount
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

/// A `uv_write_t` in flight; keeps its chunks alive (one retain each, taken
/// over from the ``WriteQueue``) until libuv is done with them.
final class PendingWrite {
    let request = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
    let stream: TCPStream
    private let owners: [Unmanaged<AnyObject>]
    let byteCount: Int

    init(stream: TCPStream, owners: [Unmanaged<AnyObject>], byteCount: Int) {
        self.stream = stream
        self.owners = owners
        self.byteCount = byteCount
    }

    deinit {
        for owner in owners { owner.release() }
        request.deallocate()
    }
}

/// A FIFO of chunks to write, with the offset already written of the first.
///
/// Built for the broadcast hot path, where one frame is queued on thousands
/// of streams: a ring of (retained owner, base address, length) entries in
/// one manually managed buffer, so `append` is one retain and a store, with
/// no existential copies, no array uniqueness checks and no per-chunk
/// allocation. The buffer is freed whenever the queue drains, so an idle
/// connection holds no output memory; the next one is made as large as the
/// last (up to ``reusedCapacity``) at once: a subscriber under fan-out
/// drains at every flush and grew 8 → 16 → … → 128 entries again each time
/// (five allocations and four copies per flush, about 250 instructions a
/// publish at 10 subscribers under callgrind, issue 28). Owners must be released with
/// ``removeAll()`` (the stream does so when it closes).
struct WriteQueue {
    /// One queued chunk: its owner (retained once by the queue) and its bytes.
    private struct Entry {
        let owner: Unmanaged<AnyObject>
        let base: UnsafeRawPointer
        let count: Int
    }

    private var entries: UnsafeMutablePointer<Entry>?
    /// A power of two (the allocated entries), or 0; while nothing is
    /// allocated, the size the next buffer starts at (0: the minimum).
    private var capacity = 0
    /// The largest size a new buffer starts at (6 KiB of entries).
    static let reusedCapacity = 256
    private var head = 0
    /// Number of queued chunks.
    private(set) var count = 0
    private var headOffset = 0
    /// Bytes not yet written.
    private(set) var byteCount = 0

    var isEmpty: Bool { count == 0 }

    /// Queues `chunk` (retained until written or removed); empty chunks are dropped.
    mutating func append(_ chunk: ByteChunk) {
        let bytes = chunk.bytes
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        if count == capacity || entries == nil { grow() }
        let entry = Entry(owner: .passRetained(chunk as AnyObject), base: base, count: bytes.count)
        (entries! + ((head + count) & (capacity - 1))).initialize(to: entry)
        count += 1
        byteCount += bytes.count
    }

    /// Describes up to `max` chunks (from the unwritten offset) in `buffers`.
    func fill(_ buffers: UnsafeMutablePointer<uv_buf_t>, max: Int) -> Int {
        let filled = Swift.min(count, max)
        for index in 0..<filled {
            let entry = entries![(head + index) & (capacity - 1)]
            let offset = index == 0 ? headOffset : 0
            let base = UnsafeMutableRawPointer(mutating: entry.base + offset)
            buffers[index] = uv_buf_init(base.assumingMemoryBound(to: CChar.self), UInt32(entry.count - offset))
        }
        return filled
    }

    /// Copies whole chunks, from the unwritten offset, into `destination`
    /// while they fit; returns the bytes copied and how many chunks they came from.
    func gather(into destination: UnsafeMutableRawBufferPointer) -> (bytes: Int, chunks: Int) {
        var bytes = 0
        var chunks = 0
        let room = destination.count
        while chunks < count {
            let entry = entries![(head + chunks) & (capacity - 1)]
            let offset = chunks == 0 ? headOffset : 0
            let length = entry.count - offset
            guard bytes + length <= room else { break }
            (destination.baseAddress! + bytes).copyMemory(from: entry.base + offset, byteCount: length)
            bytes += length
            chunks += 1
        }
        return (bytes, chunks)
    }

    /// Like ``fill(_:max:)``, but stops after the chunk that reaches
    /// `maxBytes` (at least one chunk, whole).
    func fill(_ buffers: UnsafeMutablePointer<uv_buf_t>, max: Int, maxBytes: Int) -> Int {
        let limit = Swift.min(count, max)
        var filled = 0
        var bytes = 0
        while filled < limit, filled == 0 || bytes < maxBytes {
            let entry = entries![(head + filled) & (capacity - 1)]
            let offset = filled == 0 ? headOffset : 0
            let base = UnsafeMutableRawPointer(mutating: entry.base + offset)
            buffers[filled] = uv_buf_init(base.assumingMemoryBound(to: CChar.self), UInt32(entry.count - offset))
            bytes += entry.count - offset
            filled += 1
        }
        return filled
    }

    /// Drops `written` bytes from the front, releasing the chunks fully written.
    mutating func consume(_ written: Int) {
        var remaining = written
        byteCount -= written
        while remaining > 0 {
            let entry = entries![head]
            let available = entry.count - headOffset
            if remaining < available {
                headOffset += remaining
                return
            }
            remaining -= available
            popFront().release()
        }
        releaseStorageIfEmpty()
    }

    /// Removes the first `count` chunks (as described by the last
    /// ``fill(_:max:)``) and hands over their retained owners.
    mutating func removeFirst(_ taken: Int) -> [Unmanaged<AnyObject>] {
        var owners: [Unmanaged<AnyObject>] = []
        owners.reserveCapacity(taken)
        for _ in 0..<taken {
            byteCount -= entries![head].count - headOffset
            owners.append(popFront())
        }
        releaseStorageIfEmpty()
        return owners
    }

    /// Releases every queued chunk and the buffer.
    mutating func removeAll() {
        while count > 0 { popFront().release() }
        byteCount = 0
        releaseStorageIfEmpty()
    }

    /// Releases every queued chunk except a first one partly written.
    mutating func removeAllButStarted() {
        let keep = headOffset > 0 ? 1 : 0
        while count > keep {
            let entry = (entries! + ((head + count - 1) & (capacity - 1))).move()
            count -= 1
            byteCount -= entry.count
            entry.owner.release()
        }
        releaseStorageIfEmpty()
    }

    private mutating func popFront() -> Unmanaged<AnyObject> {
        let entry = (entries! + head).move()
        head = (head + 1) & (capacity - 1)
        count -= 1
        headOffset = 0
        return entry.owner
    }

    private mutating func grow() {
        guard entries != nil else {
            capacity = Swift.max(8, capacity)
            entries = .allocate(capacity: capacity)
            head = 0
            return
        }
        let newCapacity = capacity * 2
        let grown = UnsafeMutablePointer<Entry>.allocate(capacity: newCapacity)
        if let entries {
            for index in 0..<count {
                (grown + index).initialize(to: (entries + ((head + index) & (capacity - 1))).move())
            }
            entries.deallocate()
        }
        entries = grown
        capacity = newCapacity
        head = 0
    }

    private mutating func releaseStorageIfEmpty() {
        guard count == 0, let entries else { return }
        entries.deallocate()
        self.entries = nil
        capacity = Swift.min(capacity, Self.reusedCapacity)
        head = 0
        headOffset = 0
    }
}
