import Testing
import OutaTimeProtocol

/// What one `feed` produced: the bodies delivered, in order, and the error
/// thrown after them, if any.
struct FeedOutcome {
    var frames: [[UInt8]] = []
    var error: FrameError?
}

extension FrameDecoder {
    /// Feeds `bytes` as one chunk and records what came out.
    mutating func feedCollecting(_ bytes: [UInt8]) -> FeedOutcome {
        var outcome = FeedOutcome()
        // Array.withUnsafeBytes rethrows untyped; `feed` itself throws
        // only FrameError, so the cast cannot lose anything.
        do {
            try bytes.withUnsafeBytes { chunk in
                try feed(chunk) { outcome.frames.append(Array($0)) }
            }
        } catch {
            outcome.error = error as? FrameError
        }
        return outcome
    }
}

/// The wire form of one frame: big-endian length, then the body.
func wire(_ body: [UInt8]) -> [UInt8] {
    header(UInt32(body.count)) + body
}

/// A 4-byte big-endian length header.
func header(_ length: UInt32) -> [UInt8] {
    [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
}

/// A body of `count` bytes whose content depends on `seed`, so frames differ.
func body(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ seed &* 31 &+ 1) }
}

@Suite("FrameDecoder")
struct FrameDecoderTests {
    static let twenty = body(20)

    @Test("a frame split into two chunks at every point", arguments: 0...24)
    func splitAtEveryPoint(split: Int) {
        let bytes = wire(Self.twenty)
        var decoder = FrameDecoder(maxFrame: 64)

        let first = decoder.feedCollecting(Array(bytes[..<split]))
        let expectedFirst: [[UInt8]] = split == bytes.count ? [Self.twenty] : []
        #expect(first.frames == expectedFirst)
        #expect(first.error == nil)
        #expect(decoder.bufferedByteCount == (split == bytes.count ? 0 : split))
        // Header bytes alone need no buffer; a started body gets exactly its length.
        #expect(decoder.bufferCapacity == ((4..<bytes.count).contains(split) ? 20 : 0))

        let second = decoder.feedCollecting(Array(bytes[split...]))
        #expect(second.frames == (split == bytes.count ? [] : [Self.twenty]))
        #expect(second.error == nil)
        #expect(decoder.bufferedByteCount == 0)
        #expect(decoder.bufferCapacity == 0)
    }

    @Test("two frames split into two chunks at every point", arguments: 0...20)
    func twoFramesSplitAtEveryPoint(split: Int) {
        let a = body(5, seed: 1), b = body(7, seed: 2)
        let bytes = wire(a) + wire(b)
        var decoder = FrameDecoder(maxFrame: 64)

        let first = decoder.feedCollecting(Array(bytes[..<split]))
        let second = decoder.feedCollecting(Array(bytes[split...]))
        #expect(first.frames + second.frames == [a, b])
        #expect(first.error == nil && second.error == nil)
        #expect(decoder.bufferCapacity == 0)
    }

    @Test("frames fed one byte at a time")
    func byteByByte() {
        let bodies = [body(2, seed: 1), body(20, seed: 2), body(64, seed: 3)]
        var decoder = FrameDecoder(maxFrame: 64)
        var delivered: [[UInt8]] = []
        var maxCapacitySeen = 0

        for (index, frameBody) in bodies.enumerated() {
            for byte in wire(frameBody) {
                let outcome = decoder.feedCollecting([byte])
                #expect(outcome.error == nil)
                delivered += outcome.frames
                #expect(decoder.bufferCapacity <= frameBody.count + 4)
                maxCapacitySeen = max(maxCapacitySeen, decoder.bufferCapacity)
            }
            #expect(delivered.count == index + 1)
            #expect(decoder.bufferCapacity == 0)
        }
        #expect(delivered == bodies)
        #expect(maxCapacitySeen == 64)
    }

    @Test("50 frames in one chunk are delivered in order, in place")
    func fiftyFramesInOneChunk() {
        let bodies = (0..<50).map { body(2 + $0 % 13, seed: $0) }
        let bytes = bodies.flatMap(wire)
        var decoder = FrameDecoder(maxFrame: 64)
        var delivered: [[UInt8]] = []
        var allInsideChunk = true

        bytes.withUnsafeBytes { chunk in
            let range = UInt(bitPattern: chunk.baseAddress!)..<UInt(bitPattern: chunk.baseAddress! + chunk.count)
            try? decoder.feed(chunk) { frame in
                delivered.append(Array(frame))
                // No copy: the body must point into the caller's chunk.
                allInsideChunk = allInsideChunk && range.contains(UInt(bitPattern: frame.baseAddress!))
            }
        }
        #expect(delivered == bodies)
        #expect(allInsideChunk)
        #expect(decoder.bufferedByteCount == 0)
        #expect(decoder.bufferCapacity == 0)
    }

    @Test("a minimal frame of 2 bytes is accepted")
    func minimumLength() {
        var decoder = FrameDecoder(maxFrame: 64)
        let outcome = decoder.feedCollecting(wire(Array("{}".utf8)))
        #expect(outcome.frames == [Array("{}".utf8)])
        #expect(outcome.error == nil)
    }

    @Test("a frame of exactly maxFrame is accepted, whole or split")
    func exactlyMax() {
        let frameBody = body(64)
        var whole = FrameDecoder(maxFrame: 64)
        #expect(whole.feedCollecting(wire(frameBody)).frames == [frameBody])

        var split = FrameDecoder(maxFrame: 64)
        #expect(split.feedCollecting(Array(wire(frameBody)[..<10])).frames.isEmpty)
        #expect(split.bufferCapacity == 64)
        #expect(split.feedCollecting(Array(wire(frameBody)[10...])).frames == [frameBody])
    }

    @Test("maxFrame + 1 is refused without delivering or buffering anything")
    func maxPlusOne() {
        var decoder = FrameDecoder(maxFrame: 64)
        let outcome = decoder.feedCollecting(wire(body(65)))
        #expect(outcome.frames.isEmpty)
        #expect(outcome.error == .tooLarge(length: 65, max: 64))
        #expect(decoder.bufferCapacity == 0)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test("an oversized header arriving alone reserves nothing, and later bytes are refused")
    func oversizedHeaderAlone() {
        var decoder = FrameDecoder(maxFrame: 64)
        let headerOnly = decoder.feedCollecting(header(65))
        #expect(headerOnly.error == .tooLarge(length: 65, max: 64))
        #expect(decoder.bufferCapacity == 0)

        let more = decoder.feedCollecting(body(65) + wire(body(3)))
        #expect(more.frames.isEmpty)
        #expect(more.error == .tooLarge(length: 65, max: 64))
        #expect(decoder.bufferCapacity == 0)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test("an oversized header split over chunks is refused when its last byte arrives")
    func oversizedHeaderSplit() {
        var decoder = FrameDecoder(maxFrame: 65_536)
        let huge = header(UInt32.max)
        #expect(decoder.feedCollecting(Array(huge[..<2])).error == nil)
        #expect(decoder.bufferedByteCount == 2)
        let rest = decoder.feedCollecting(Array(huge[2...]) + [1, 2, 3])
        #expect(rest.error == .tooLarge(length: Int(UInt32.max), max: 65_536))
        #expect(decoder.bufferCapacity == 0)
    }

    @Test("lengths 0 and 1 are too short", arguments: [0, 1])
    func tooShort(length: Int) {
        var decoder = FrameDecoder(maxFrame: 64)
        let outcome = decoder.feedCollecting(header(UInt32(length)) + body(length) + wire(body(4)))
        #expect(outcome.frames.isEmpty)
        #expect(outcome.error == .tooShort(length: length))
        #expect(decoder.bufferCapacity == 0)
    }

    @Test("frames before a bad header are delivered, then it throws")
    func framesBeforeBadHeader() {
        let a = body(3, seed: 1), b = body(9, seed: 2)
        var decoder = FrameDecoder(maxFrame: 64)
        let outcome = decoder.feedCollecting(wire(a) + wire(b) + header(1000) + body(10))
        #expect(outcome.frames == [a, b])
        #expect(outcome.error == .tooLarge(length: 1000, max: 64))
    }

    @Test("a bad header after a split frame still delivers that frame first")
    func badHeaderAfterResumedFrame() {
        let a = body(10)
        var decoder = FrameDecoder(maxFrame: 64)
        _ = decoder.feedCollecting(Array(wire(a)[..<6]))
        let outcome = decoder.feedCollecting(Array(wire(a)[6...]) + header(0))
        #expect(outcome.frames == [a])
        #expect(outcome.error == .tooShort(length: 0))
    }

    @Test("a failed decoder keeps throwing the same error and delivers nothing")
    func failedDecoderStaysFailed() {
        var decoder = FrameDecoder(maxFrame: 64)
        #expect(decoder.feedCollecting(header(0)).error == .tooShort(length: 0))
        for _ in 0..<3 {
            let outcome = decoder.feedCollecting(wire(body(5)))
            #expect(outcome.frames.isEmpty)
            #expect(outcome.error == .tooShort(length: 0))
        }
    }

    @Test("the largest length a header can announce fails as too large, and stays failed with it")
    func failedDecoderKeepsTheLargestLength() {
        var decoder = FrameDecoder(maxFrame: 64)
        let largest = Int(UInt32.max)
        #expect(decoder.feedCollecting([0xFF, 0xFF, 0xFF, 0xFF]).error == .tooLarge(length: largest, max: 64))
        #expect(decoder.feedCollecting(wire(body(5))).error == .tooLarge(length: largest, max: 64))
    }

    @Test("a decoder stays small: every connection of the server holds one")
    func decoderLayout() {
        // maxFrame, the header, the failed length, the header count and
        // the partial body's reference (docs/BENCHMARKS.md, idle memory).
        #expect(MemoryLayout<FrameDecoder>.size <= 32)
    }

    @Test("the buffer is released when a partial frame completes")
    func capacityReturnsToZero() {
        let a = body(30), b = body(12, seed: 5)
        var decoder = FrameDecoder(maxFrame: 64)
        _ = decoder.feedCollecting(Array(wire(a)[..<20]))
        #expect(decoder.bufferCapacity == 30)
        #expect(decoder.bufferedByteCount == 20)

        // The rest of `a`, all of `b`, and 2 header bytes of a third frame.
        let outcome = decoder.feedCollecting(Array(wire(a)[20...]) + wire(b) + [0, 0])
        #expect(outcome.frames == [a, b])
        #expect(decoder.bufferCapacity == 0)
        #expect(decoder.bufferedByteCount == 2)
    }

    @Test("a copied decoder does not share its partial buffer (copy on write)")
    func copyOnWrite() {
        let a = body(10, seed: 1), b = body(10, seed: 2)
        var original = FrameDecoder(maxFrame: 64)
        _ = original.feedCollecting(Array(wire(a)[..<8]))
        var copy = original

        #expect(copy.feedCollecting(Array(wire(b)[8...])).frames == [Array(a[..<4] + b[4...])])
        #expect(original.feedCollecting(Array(wire(a)[8...])).frames == [a])
    }

    @Test("an empty chunk changes nothing")
    func emptyChunk() {
        var decoder = FrameDecoder(maxFrame: 64)
        _ = decoder.feedCollecting([0, 0, 0])
        let outcome = decoder.feedCollecting([])
        #expect(outcome.frames.isEmpty && outcome.error == nil)
        #expect(decoder.bufferedByteCount == 3)
    }

    @Test("frame errors map to the contract's codes, naming length and range")
    func protocolErrors() {
        let short = FrameError.tooShort(length: 1).protocolError
        #expect(short.code == .badFrame)
        #expect(short.message.contains("frame length 1"))

        let large = FrameError.tooLarge(length: 70_000, max: 65_536).protocolError
        #expect(large.code == .frameTooLarge)
        #expect(large.message.contains("70000"))
        #expect(large.message.contains("2…65536"))
    }
}
