import OutaTimeTestKit
import Testing
@testable import UV

/// Small queued chunks are gathered into one buffer per write
/// (``WriteQueue/gather(into:)``, ``TCPStream/flush()``): whole chunks only,
/// from the unwritten offset, in order; and over a real socket the bytes
/// arrive in order whatever the kernel takes at once.
@Suite struct GatheredWriteTests {
    static func chunk(_ bytes: [UInt8]) -> OwnedBytes { OwnedBytes(bytes) }

    @Test func gatherCopiesWholeChunksFromTheUnwrittenOffsetWhileTheyFit() {
        var queue = WriteQueue()
        defer { queue.removeAll() }
        queue.append(Self.chunk([1, 2, 3, 4]))
        queue.append(Self.chunk([5, 6]))
        queue.append(Self.chunk([7, 8, 9]))
        queue.append(Self.chunk([10, 11, 12, 13, 14, 15]))
        queue.consume(3)  // the first chunk three-quarters written
        let destination = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 1)
        defer { destination.deallocate() }
        let gathered = queue.gather(into: destination)
        // [4] + [5, 6] + [7, 8, 9] = 6 bytes; the next chunk (6) would not fit in 8: not cut.
        #expect(gathered.chunks == 3)
        #expect(gathered.bytes == 6)
        #expect(Array(destination[0..<6]) == [4, 5, 6, 7, 8, 9])
        // Gathering copies; the queue is unchanged until consumed.
        #expect(queue.count == 4 && queue.byteCount == 12)
        queue.consume(6)
        let rest = queue.gather(into: destination)
        #expect(rest.chunks == 1 && rest.bytes == 6)
        #expect(Array(destination[0..<6]) == [10, 11, 12, 13, 14, 15])
        // A first chunk larger than the buffer: nothing gathered.
        queue.append(Self.chunk([UInt8](repeating: 9, count: 20)))
        queue.consume(6)
        #expect(queue.gather(into: destination) == (bytes: 0, chunks: 0))
    }

    /// 30,000 small chunks of 1 to 400 bytes (seeded), with a 300 KiB chunk
    /// every 5,000 (too large to gather): queued while the peer does not
    /// read, so gathered writes are cut short by a full socket and the rest
    /// goes through `uv_write`; then everything is read, in order.
    @Test func smallAndLargeChunksArriveInOrderThroughAFullSocket() throws {
        let pairs = try ReadBudgetTests.Pairs(count: 1)
        var generator = SeededGenerator(seed: 0x6A7E)
        var expected: [UInt8] = []
        let writer = pairs.clients[0]
        for index in 0..<30_000 {
            let count = index % 5_000 == 4_999 ? 300 * 1024 : Int(generator.next() % 400) + 1
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &+ index &* 31) }
            expected.append(contentsOf: bytes)
            writer.enqueue(Self.chunk(bytes))
            if index % 1_000 == 999 { writer.flush() }
        }
        writer.flush()
        #expect(!writer.isDrained)  // the peer has not read: the socket is full
        var received: [UInt8] = []
        received.reserveCapacity(expected.count)
        try pairs.servers[0].startReading(onData: { received.append(contentsOf: $0) }, onEnd: { _ in })
        try pairs.run { received.count >= expected.count && writer.isDrained }
        #expect(received.count == expected.count)
        #expect(received == expected)
        try pairs.close()
    }
}
