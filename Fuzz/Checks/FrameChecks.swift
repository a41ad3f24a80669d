import OutaTimeProtocol

/// The frame decoder against a plain reading of the same stream.
///
/// Input: one byte choosing `maxFrame`, one byte `k` (0–7) and `k` chunk
/// sizes (0–255; 0 feeds an empty chunk), one byte choosing the chunk after
/// which the decoder is copied, then the stream. The stream is fed in
/// chunks of those sizes, cycled, and must give exactly what reading it
/// whole by hand gives: the same bodies in order, then the same error or
/// the same number of bytes left over; the buffer never larger than the
/// frame in progress; after an error every feed throws it again and
/// delivers nothing; a copy made mid-stream (sharing the partial body, copy
/// on write) continues independently with the same result.
enum FrameChecks {
    static let maxFrames = [2, 3, 5, 16, 64, 255, 4096, 16 << 20]

    /// The stream read whole: the bodies, then an error or the bytes left.
    struct Reading: Equatable {
        var bodies: [[UInt8]] = []
        var error: FrameError?
        var leftover = 0
    }

    static func reference(_ stream: [UInt8], maxFrame: Int) -> Reading {
        var reading = Reading()
        var offset = 0
        while stream.count - offset >= Frame.headerSize {
            let length = stream[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            if length < 2 {
                reading.error = .tooShort(length: length)
                return reading
            }
            if length > maxFrame {
                reading.error = .tooLarge(length: length, max: maxFrame)
                return reading
            }
            guard stream.count - offset - 4 >= length else { break }
            reading.bodies.append(Array(stream[offset + 4..<offset + 4 + length]))
            offset += 4 + length
        }
        reading.leftover = stream.count - offset
        return reading
    }

    static func check(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) {
        var bytes = FuzzBytes(input)
        let maxFrame = bytes.pick(maxFrames)
        let sizes = (0..<bytes.choice(8)).map { _ in Int(bytes.byte()) }
        let copyAfter = Int(bytes.byte())
        let stream = Array(bytes.remaining)
        let expected = reference(stream, maxFrame: maxFrame)

        // The chunks: `sizes` cycled, the rest of the stream last.
        var chunks: [ArraySlice<UInt8>] = []
        var offset = 0
        while offset < stream.count {
            let size = sizes.isEmpty ? stream.count : sizes[chunks.count % sizes.count]
            let end = min(stream.count, offset + size)
            chunks.append(stream[offset..<end])
            offset = end
            if chunks.count > 4 * stream.count + 8 { break }  // only empty chunks: stop
        }
        if offset < stream.count { chunks.append(stream[offset...]) }

        var decoder = FrameDecoder(maxFrame: maxFrame)
        var copy: (decoder: FrameDecoder, reading: Reading)?
        var reading = Reading()
        for (index, chunk) in chunks.enumerated() {
            try feed(&decoder, chunk, into: &reading, maxFrame: maxFrame)
            if var (other, otherReading) = copy {
                try feed(&other, chunk, into: &otherReading, maxFrame: maxFrame)
                copy = (other, otherReading)
            }
            if index == copyAfter % max(1, chunks.count) { copy = (decoder, reading) }
        }
        reading.leftover = reading.error == nil ? decoder.bufferedByteCount : 0
        var want = expected
        if want.error != nil { want.leftover = 0 }
        guard reading == want else {
            throw FuzzFailure(.frame, "maxFrame \(maxFrame), chunks \(chunks.map(\.count)): decoded \(describe(reading)), expected \(describe(want))")
        }
        if let copy {
            var otherReading = copy.reading
            otherReading.leftover = otherReading.error == nil ? copy.decoder.bufferedByteCount : 0
            guard otherReading == want else {
                throw FuzzFailure(.frame, "a copy made mid-stream decoded \(describe(otherReading)), expected \(describe(want))")
            }
        }
        if let error = reading.error {
            // Failed for good: the next feed throws the same and delivers nothing.
            var after = Reading()
            try feed(&decoder, [0, 0, 0, 2, 123, 125], into: &after, maxFrame: maxFrame)
            guard after.error == error, after.bodies.isEmpty else {
                throw FuzzFailure(.frame, "after \(error), a failed decoder gave \(describe(after))")
            }
        }
    }

    /// Feeds one chunk, collecting bodies and the error; checks the buffer bound.
    static func feed(_ decoder: inout FrameDecoder, _ chunk: ArraySlice<UInt8>, into reading: inout Reading,
                     maxFrame: Int) throws(FuzzFailure) {
        let result: Result<Void, FrameError> = chunk.withUnsafeBytes { raw in
            do throws(FrameError) {
                try decoder.feed(raw) { body in reading.bodies.append(Array(body)) }
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        if case .failure(let error) = result {
            if let earlier = reading.error, earlier != error {
                throw FuzzFailure(.frame, "a failed decoder threw \(error) after \(earlier)")
            }
            reading.error = error
        }
        guard decoder.bufferCapacity <= maxFrame,
              decoder.bufferedByteCount <= maxFrame + Frame.headerSize,
              decoder.bufferedByteCount > 0 || decoder.bufferCapacity == 0 else {
            throw FuzzFailure(.frame, "buffer of \(decoder.bufferCapacity) bytes holding \(decoder.bufferedByteCount) with maxFrame \(maxFrame)")
        }
    }

    static func describe(_ reading: Reading) -> String {
        "\(reading.bodies.count) bodies \(reading.bodies.prefix(4).map(\.count)), error \(reading.error.map { "\($0)" } ?? "none"), \(reading.leftover) bytes left"
    }
}
