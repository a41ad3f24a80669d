import CLibUV
import Testing
@testable import UV

/// The write queue's two operations for slow links (PROTOCOL.md §12): a
/// `uv_write` is handed whole chunks up to a byte bound, and what was not
/// handed over can be dropped without cutting a chunk partly written.
@Suite struct WriteQueueTests {
    static func chunk(_ byte: UInt8, _ count: Int) -> OwnedBytes { OwnedBytes([UInt8](repeating: byte, count: count)) }

    @Test func boundedFillTakesWholeChunksUpToTheByteLimitAndAlwaysOne() {
        var queue = WriteQueue()
        defer { queue.removeAll() }
        for byte in UInt8(1)...5 { queue.append(Self.chunk(byte, 100_000)) }
        let buffers = UnsafeMutablePointer<uv_buf_t>.allocate(capacity: 8)
        defer { buffers.deallocate() }
        // 250,000 bytes: the third chunk reaches it, and is taken whole.
        #expect(queue.fill(buffers, max: 8, maxBytes: 250_000) == 3)
        #expect((0..<3).map { Int(buffers[$0].len) } == [100_000, 100_000, 100_000])
        // A bound below one chunk still takes one.
        #expect(queue.fill(buffers, max: 8, maxBytes: 1) == 1)
        // The chunk count bound holds too.
        #expect(queue.fill(buffers, max: 2, maxBytes: 1 << 30) == 2)
    }

    @Test func droppingKeepsAPartlyWrittenFirstChunkWhole() {
        var queue = WriteQueue()
        for byte in UInt8(1)...4 { queue.append(Self.chunk(byte, 1_000)) }
        queue.consume(1_500)  // the first chunk written, the second half written
        queue.removeAllButStarted()
        #expect(queue.count == 1)
        #expect(queue.byteCount == 500)  // the rest of the second chunk: the frame stays whole
        let buffers = UnsafeMutablePointer<uv_buf_t>.allocate(capacity: 4)
        defer { buffers.deallocate() }
        #expect(queue.fill(buffers, max: 4) == 1)
        #expect(buffers[0].len == 500)
        #expect(UnsafeRawPointer(buffers[0].base!).load(as: UInt8.self) == 2)
        queue.consume(500)
        #expect(queue.isEmpty && queue.byteCount == 0)

        // Nothing written yet: everything goes.
        for byte in UInt8(1)...3 { queue.append(Self.chunk(byte, 1_000)) }
        queue.removeAllButStarted()
        #expect(queue.isEmpty && queue.byteCount == 0)
    }

    /// After draining, the next buffer starts at the last size (up to
    /// `reusedCapacity`): chunks still come out in order across the ring's
    /// wrap, through drains at every size, and a burst larger than the
    /// reused size still grows.
    @Test func aDrainedQueueStartsAtItsLastSizeAndKeepsOrder() {
        var queue = WriteQueue()
        defer { queue.removeAll() }
        let buffers = UnsafeMutablePointer<uv_buf_t>.allocate(capacity: 1_024)
        defer { buffers.deallocate() }
        var next: UInt8 = 0
        var expected: [UInt8] = []
        for round in [3, 130, 7, 600, 1, 129, 40] {
            for _ in 0..<round {
                queue.append(Self.chunk(next, 2))
                expected.append(next)
                next &+= 1
            }
            // Write half, append a few more (the ring wraps), then drain.
            queue.consume(round)  // round/2 chunks of 2 bytes (and half of one when odd)
            for _ in 0..<5 {
                queue.append(Self.chunk(next, 2))
                expected.append(next)
                next &+= 1
            }
            let count = queue.fill(buffers, max: 1_024)
            var seen: [UInt8] = []
            for index in 0..<count { seen.append(UnsafeRawPointer(buffers[index].base!).load(as: UInt8.self)) }
            let written = round / 2
            #expect(seen == Array(expected[written...]), "round \(round)")
            queue.consume(queue.byteCount)
            #expect(queue.isEmpty && queue.byteCount == 0)
            expected = []
        }
    }
}
