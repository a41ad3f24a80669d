import Synchronization

/// Writes `Encodable` values as compact JSON bytes in one pass.
///
/// **Why not Foundation's `JSONEncoder` here** (a deliberate deviation from
/// "JSON through Foundation", docs/BENCHMARKS.md has the numbers): Foundation
/// builds a tree of boxed values with a dictionary per object, then walks it
/// again to write, with a dynamic cast per value to look for its special
/// types. Measured with callgrind under the durable-command load, encoding
/// one command reply took about 100,000 instructions, 45 % of the event
/// loop's work, and the event data another third of the storage thread's.
/// This encoder writes each key and value straight into a byte array as the
/// value's `encode(to:)` produces them; a ``JSONWritable`` value writes its
/// fields without going through `Codable` at all. Requests are read by
/// ``JSONValue/parse(_:)`` (its own reader, for its own measured reasons);
/// the stored states are decoded with Foundation's `JSONDecoder`.
///
/// What it writes, compared with Foundation's `JSONEncoder` with
/// `.withoutEscapingSlashes` (the tests compare the two for every message
/// type the protocol defines):
/// - the same JSON values; object keys in the order `encode(to:)` writes
///   them (Foundation's order is its dictionary's, which differs from run
///   to run);
/// - strings escaped the same way: `"` `\` and the control characters, with
///   `\b \f \n \r \t` for those that have a short form and `\u00XX`
///   otherwise; everything else, `/` included, as UTF-8;
/// - numbers: integers in decimal, floating-point values by their shortest
///   round-tripping form (`description`) without a trailing `.0`; NaN and
///   infinities throw `EncodingError.invalidValue`, as Foundation does;
/// - a value whose `encode(to:)` writes nothing becomes `{}`.
/// It has no strategies: `Date`, `Data` and `URL` encode through their own
/// `Codable` conformances (the protocol carries times as ISO 8601 strings and
/// has no binary values), and `codingPath` is always empty.
///
/// Containers must be used in order, as every synthesised and hand-written
/// conformance in this project does: a nested container or a `superEncoder`
/// ends when its parent container writes its next value.
///
/// A value type with no shared state: create one per call or keep one.
public struct CompactJSONEncoder: Sendable {
    /// Creates an encoder.
    public init() {}

    /// Encodes `value` as compact JSON (UTF-8).
    ///
    /// - Throws: `EncodingError.invalidValue` for a NaN or infinite number.
    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let writer = JSONByteWriter()
        try writer.encodeTopLevel(value)
        return writer.withBytes { Array($0) }
    }

    /// Encodes `value` and hands the JSON to `body` without copying it into
    /// an array first; the buffer is valid only during the call.
    ///
    /// - Throws: `EncodingError.invalidValue` for a NaN or infinite number.
    public func withEncoded<T: Encodable, Result>(
        _ value: T, _ body: (UnsafeRawBufferPointer) throws -> Result
    ) throws -> Result {
        let writer = JSONByteWriter()
        try writer.encodeTopLevel(value)
        return try writer.withBytes(body)
    }
}

/// A growable byte buffer for ``JSONByteWriter``.
///
/// Most JSON writes are one to twenty bytes. `Array.append` checks
/// uniqueness and goes through the generic `append(contentsOf:)` path for
/// each: about a hundred instructions per write under callgrind, a third of
/// a command reply's encoding. Here a write is a capacity check and a copy.
/// Owned by one writer, which frees it.
struct JSONOutputBuffer {
    private var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int) {
        base = .allocate(capacity: capacity)
        self.capacity = capacity
    }

    /// Forgets the bytes written; keeps the memory unless it grew past
    /// `limit` bytes (one huge message must not pin its buffer for good).
    mutating func removeAll(keepingCapacityUpTo limit: Int) {
        count = 0
        guard capacity > limit else { return }
        base.deallocate()
        capacity = 256
        base = .allocate(capacity: capacity)
    }

    /// Frees the memory; the buffer must not be used afterwards.
    func deallocate() { base.deallocate() }

    /// The bytes written so far, valid until the next write.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        if count == capacity { grow(toAtLeast: count + 1) }
        base[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func append(_ first: UInt8, _ second: UInt8) {
        if count + 2 > capacity { grow(toAtLeast: count + 2) }
        base[count] = first
        base[count + 1] = second
        count += 2
    }

    @inline(__always)
    mutating func append(contentsOf bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        if count + bytes.count > capacity { grow(toAtLeast: count + bytes.count) }
        UnsafeMutableRawPointer(base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    mutating func append(contentsOf bytes: UnsafeBufferPointer<UInt8>) {
        append(contentsOf: UnsafeRawBufferPointer(bytes))
    }

    mutating func append(contentsOf bytes: some Sequence<UInt8>) {
        for byte in bytes { append(byte) }
    }

    private mutating func grow(toAtLeast minimum: Int) {
        let grown = max(minimum, capacity * 2)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        moved.moveInitialize(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = grown
    }
}

/// The containers still open, innermost last: whether each is an object
/// and how many members it has so far.
///
/// An array of tuples checked its uniqueness and bounds on every member
/// written (`open[depth - 1].count += 1`): about a fifth of writing a
/// member under callgrind. Here it is a pointer and a capacity check.
/// Owned by one writer, which frees it.
struct ContainerStack {
    struct Container {
        var isObject: Bool
        var count: Int
    }

    private var base: UnsafeMutablePointer<Container>
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int) {
        base = .allocate(capacity: capacity)
        self.capacity = capacity
    }

    /// Frees the memory; the stack must not be used afterwards.
    func deallocate() { base.deallocate() }

    mutating func removeAll() { count = 0 }

    @inline(__always)
    mutating func append(isObject: Bool) {
        if count == capacity {
            let grown = UnsafeMutablePointer<Container>.allocate(capacity: capacity * 2)
            grown.moveInitialize(from: base, count: count)
            base.deallocate()
            base = grown
            capacity *= 2
        }
        (base + count).initialize(to: Container(isObject: isObject, count: 0))
        count += 1
    }

    @inline(__always)
    mutating func removeLast() -> Container {
        count -= 1
        return base[count]
    }

    /// The container at `index` (0 is the top-level value); must be open.
    @inline(__always)
    subscript(index: Int) -> Container {
        get {
            precondition(index >= 0 && index < count, "no container open at this depth")
            return base[index]
        }
        nonmutating set {
            precondition(index >= 0 && index < count, "no container open at this depth")
            base[index] = newValue
        }
    }
}

/// The state of one encoding: the output and the containers still open.
///
/// `open` holds, for each nesting depth that currently has an open object
/// or array, whether it is an object and how many members it has. Depth 1
/// is the top-level value. Writing at depth `d` first closes every container
/// deeper than `d` (those values are complete), which is what lets nested
/// containers end without being told.
/// `@unchecked Sendable` only so that ``borrow()``'s spares can cross
/// threads: a writer is used by one thread at a time (its borrower's, or
/// its owner's).
final class JSONByteWriter: @unchecked Sendable {
    private struct State {
        var bytes = JSONOutputBuffer(capacity: 256)
        var open = ContainerStack(capacity: 16)
        /// One reusable `Encoder` per depth: nested values get the one of
        /// their depth instead of a new allocation each.
        var encoders: [DepthEncoder] = []
    }

    /// The mutable state, behind a pointer: every access to a class's
    /// stored `var` is checked for exclusivity at run time
    /// (`swift_beginAccess`), a tenth of the encoding time when the state
    /// lived in properties; a pointee is not checked. Only this class
    /// touches it, on one thread.
    private let state: UnsafeMutablePointer<State>

    /// Calls `body` with the JSON written so far.
    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(state.pointee.bytes.bytes)
    }

    init() {
        state = .allocate(capacity: 1)
        state.initialize(to: State())
    }

    /// Writers kept for ``borrow()``: a writer is four allocations (itself,
    /// its state, its buffer, its container stack), which were a third of
    /// writing a small event's text under callgrind. Any thread may borrow;
    /// a borrowed writer is its borrower's alone until given back.
    private static let spares = Mutex<[JSONByteWriter]>([])

    /// The most writers kept; more are freed when given back.
    private static let maxSpares = 8

    /// A ready writer: a kept one, or a new one.
    static func borrow() -> JSONByteWriter {
        spares.withLock { $0.popLast() } ?? JSONByteWriter()
    }

    /// Returns a writer from ``borrow()`` for reuse. Its memory is kept
    /// only up to the size ``reset()`` keeps.
    static func giveBack(_ writer: JSONByteWriter) {
        writer.reset()
        spares.withLock { spares in
            if spares.count < maxSpares { spares.append(writer) }
        }
    }

    /// Makes the writer ready for the next value, keeping its memory.
    func reset() {
        state.pointee.bytes.removeAll(keepingCapacityUpTo: 64 * 1024)
        state.pointee.open.removeAll()
    }

    deinit {
        state.pointee.bytes.deallocate()
        state.pointee.open.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Writes a ``JSONWritable`` object as the top-level value, without
    /// the dynamic cast ``encodeValue(_:depth:)`` needs to find it.
    func writeTopLevel<T: JSONWritable>(_ value: T) throws {
        openContainer(isObject: true, depth: 1)
        var fields = JSONFields(writer: self, depth: 1)
        try value.writeFields(to: &fields)
        closeContainers(deeperThan: 0)
    }

    /// Writes ``ReplyOK``'s fields around `result`'s own, as the top-level value.
    func writeReply<T: JSONWritable>(id: RequestID, result: T) throws {
        openContainer(isObject: true, depth: 1)
        var fields = JSONFields(writer: self, depth: 1)
        fields.write("type", "reply")
        fields.write("id", id)
        fields.write("ok", true)
        beginMember(static: "result", depth: 1)
        openContainer(isObject: true, depth: 2)
        var resultFields = JSONFields(writer: self, depth: 2)
        try result.writeFields(to: &resultFields)
        closeContainers(deeperThan: 0)
    }

    func encodeTopLevel<T: Encodable>(_ value: T) throws {
        try encodeValue(value, depth: 1)
        closeContainers(deeperThan: 0)
    }

    /// Encodes a nested value at `depth`, writing `{}` if it wrote nothing.
    ///
    /// The types most messages are made of are written directly: comparing
    /// metatypes costs a pointer comparison, where the generic path through
    /// `encode(to:)` looks up metadata and witness tables for every value.
    func encodeValue<T: Encodable>(_ value: T, depth: Int) throws {
        if try writeKnown(value) { return }
        if let writable = value as? any JSONWritable {
            openContainer(isObject: true, depth: depth)
            var fields = JSONFields(writer: self, depth: depth)
            try writable.writeFields(to: &fields)
            return
        }
        let start = state.pointee.bytes.count
        try value.encode(to: encoder(at: depth))
        if state.pointee.bytes.count == start { state.pointee.bytes.append(UInt8(ascii: "{"), UInt8(ascii: "}")) }
    }

    /// Writes `value` if it is a `String`, `Int`, `Int64`, `Bool`, an
    /// optional of one of those, a `JSONValue`, a `[String: Int]` (sorted
    /// by key), a `RawJSON` (verbatim) or a `RequestID`; false for anything else
    /// (then a ``JSONWritable`` writes its own fields, and the rest goes
    /// through `Codable`).
    @inline(__always)
    private func writeKnown<T: Encodable>(_ value: T) throws -> Bool {
        if T.self == String.self {
            writeString(unsafeBitCast(value, to: String.self))
        } else if T.self == Int.self {
            writeInteger(unsafeBitCast(value, to: Int.self))
        } else if T.self == Int64.self {
            writeInteger(unsafeBitCast(value, to: Int64.self))
        } else if T.self == Bool.self {
            writeBool(unsafeBitCast(value, to: Bool.self))
        } else if T.self == JSONValue.self {
            try writeJSON(unsafeBitCast(value, to: JSONValue.self))
        } else if T.self == [String: Int].self {
            // Counts by name (`stats`): sorted by key, as a JSONValue object.
            let counts = unsafeBitCast(value, to: [String: Int].self)
            try writeJSON(.object(counts.mapValues { .int(Int64($0)) }))
        } else if T.self == RawJSON.self {
            writeVerbatim(unsafeBitCast(value, to: RawJSON.self).text)
        } else if T.self == RequestID.self {
            switch unsafeBitCast(value, to: RequestID.self) {
            case .int(let number): writeInteger(number)
            case .string(let text): writeString(text)
            }
        } else if T.self == String?.self {
            if let string = unsafeBitCast(value, to: String?.self) { writeString(string) } else { writeNull() }
        } else if T.self == Int?.self {
            if let integer = unsafeBitCast(value, to: Int?.self) { writeInteger(integer) } else { writeNull() }
        } else if T.self == Int64?.self {
            if let integer = unsafeBitCast(value, to: Int64?.self) { writeInteger(integer) } else { writeNull() }
        } else {
            return false
        }
        return true
    }

    /// A `JSONValue` tree, without going through `Codable`.
    func writeJSON(_ value: JSONValue) throws {
        switch value {
        case .null: writeNull()
        case .bool(let flag): writeBool(flag)
        case .int(let integer): writeInteger(integer)
        case .double(let number): try writeFloat(number)
        case .string(let string): writeString(string)
        case .array(let elements):
            state.pointee.bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { state.pointee.bytes.append(UInt8(ascii: ",")) }
                try writeJSON(element)
            }
            state.pointee.bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            // Sorted by key: a dictionary's own order changes from process
            // to process (and with its history), and a message's members
            // are written in a fixed order (PROTOCOL.md "JSON").
            state.pointee.bytes.append(UInt8(ascii: "{"))
            var first = true
            for key in members.keys.sorted() {
                if !first { state.pointee.bytes.append(UInt8(ascii: ",")) }
                first = false
                writeString(key)
                state.pointee.bytes.append(UInt8(ascii: ":"))
                try writeJSON(members[key]!)
            }
            state.pointee.bytes.append(UInt8(ascii: "}"))
        }
    }

    func encoder(at depth: Int) -> DepthEncoder {
        while state.pointee.encoders.count < depth { state.pointee.encoders.append(DepthEncoder(writer: self, depth: state.pointee.encoders.count + 1)) }
        return state.pointee.encoders[depth - 1]
    }

    // MARK: Containers

    /// Opens (or, asked again by the same value, reuses) the container of
    /// the value at `depth`.
    func openContainer(isObject: Bool, depth: Int) {
        closeContainers(deeperThan: depth)
        if state.pointee.open.count == depth { return }
        closeContainers(deeperThan: depth - 1)
        state.pointee.open.append(isObject: isObject)
        state.pointee.bytes.append(isObject ? UInt8(ascii: "{") : UInt8(ascii: "["))
    }

    /// Ends the values nested deeper than `depth`.
    func closeContainers(deeperThan depth: Int) {
        while state.pointee.open.count > depth {
            let container = state.pointee.open.removeLast()
            state.pointee.bytes.append(container.isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
        }
    }

    /// Starts the next member of the object at `depth`: `,"key":`.
    func beginMember(_ key: String, depth: Int) {
        closeContainers(deeperThan: depth)
        if state.pointee.open[depth - 1].count > 0 { state.pointee.bytes.append(UInt8(ascii: ",")) }
        state.pointee.open[depth - 1].count += 1
        writeString(key)
        state.pointee.bytes.append(UInt8(ascii: ":"))
    }

    /// Starts `count` members of the object at `depth` that the caller
    /// writes whole, keys included (``JSONFields/writeMessageMembers(channel:from:data:)``).
    func beginRawMembers(count: Int, depth: Int) {
        closeContainers(deeperThan: depth)
        if state.pointee.open[depth - 1].count > 0 { state.pointee.bytes.append(UInt8(ascii: ",")) }
        state.pointee.open[depth - 1].count += count
    }

    /// Starts the next element of the array at `depth`.
    func beginElement(depth: Int) {
        closeContainers(deeperThan: depth)
        if state.pointee.open[depth - 1].count > 0 { state.pointee.bytes.append(UInt8(ascii: ",")) }
        state.pointee.open[depth - 1].count += 1
    }

    func count(depth: Int) -> Int { state.pointee.open.count >= depth ? state.pointee.open[depth - 1].count : 0 }

    // MARK: Scalars

    func writeNull() { writeRaw("null") }

    func writeBool(_ value: Bool) { writeRaw(value ? "true" : "false") }

    /// Appends `text` as it is (JSON syntax, or a key known to need no escaping).
    func writeRaw(_ text: StaticString) {
        text.withUTF8Buffer { state.pointee.bytes.append(contentsOf: UnsafeRawBufferPointer($0)) }
    }

    /// Appends `text`, already JSON (a ``RawJSON``), as it is.
    func writeVerbatim(_ text: String) {
        var text = text
        text.withUTF8 { state.pointee.bytes.append(contentsOf: UnsafeRawBufferPointer($0)) }
    }

    /// Starts the next member of the object at `depth` with a key that
    /// needs no escaping (a ``JSONWritable``'s field names).
    func beginMember(static key: StaticString, depth: Int) {
        closeContainers(deeperThan: depth)
        if state.pointee.open[depth - 1].count > 0 { state.pointee.bytes.append(UInt8(ascii: ",")) }
        state.pointee.open[depth - 1].count += 1
        state.pointee.bytes.append(UInt8(ascii: "\""))
        writeRaw(key)
        state.pointee.bytes.append(UInt8(ascii: "\""), UInt8(ascii: ":"))
    }

    func writeInteger<I: BinaryInteger>(_ value: I) {
        if value == 0 {
            state.pointee.bytes.append(UInt8(ascii: "0"))
            return
        }
        // Digits from the least significant, into a small stack buffer.
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits and a sign
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            while magnitude > 0 {
                let (quotient, remainder) = magnitude.quotientAndRemainder(dividingBy: 10)
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: remainder)
                magnitude = quotient
            }
            if value < 0 {
                index -= 1
                buffer[index] = UInt8(ascii: "-")
            }
            state.pointee.bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[index...]))
        }
    }

    func writeFloat<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, EncodingError.Context(
                codingPath: [], debugDescription: "Unable to encode \(F.self).\(value) directly in JSON."))
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        state.pointee.bytes.append(contentsOf: text.utf8)
    }

    /// A JSON string: the UTF-8 bytes, with `"`, `\` and control characters escaped.
    func writeString(_ string: String) {
        state.pointee.bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            guard let base = utf8.baseAddress else { return }
            var runStart = 0
            var index = 0
            var high: UInt8 = 0  // not needed here: a Swift string is valid UTF-8
            while true {
                // Plain bytes eight at a time (``JSONStringScan``).
                index = JSONStringScan.plainRunEnd(UnsafeRawPointer(base), from: index, count: utf8.count, high: &high)
                guard index < utf8.count else { break }
                let byte = utf8[index]
                defer { index += 1 }
                if runStart < index { state.pointee.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index])) }
                runStart = index + 1
                state.pointee.bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): state.pointee.bytes.append(byte)
                case 0x08: state.pointee.bytes.append(UInt8(ascii: "b"))
                case 0x0C: state.pointee.bytes.append(UInt8(ascii: "f"))
                case 0x0A: state.pointee.bytes.append(UInt8(ascii: "n"))
                case 0x0D: state.pointee.bytes.append(UInt8(ascii: "r"))
                case 0x09: state.pointee.bytes.append(UInt8(ascii: "t"))
                default:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    state.pointee.bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                              hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
                }
            }
            if runStart < utf8.count { state.pointee.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...])) }
        }
        state.pointee.bytes.append(UInt8(ascii: "\""))
    }
}

/// The `Encoder` a value at one depth sees. Reused for every value at that
/// depth (see ``JSONByteWriter``); holds no state of its own.
final class DepthEncoder: Encoder {
    unowned let writer: JSONByteWriter
    let depth: Int

    init(writer: JSONByteWriter, depth: Int) {
        self.writer = writer
        self.depth = depth
    }

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        writer.openContainer(isObject: true, depth: depth)
        return KeyedEncodingContainer(StreamKeyedContainer<Key>(writer: writer, depth: depth))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        writer.openContainer(isObject: false, depth: depth)
        return StreamUnkeyedContainer(writer: writer, depth: depth)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        StreamSingleValueContainer(writer: writer, depth: depth)
    }
}

/// Writes `"key":value` members of the object at `depth`.
struct StreamKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: JSONByteWriter
    let depth: Int
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws { writer.beginMember(key.stringValue, depth: depth); writer.writeNull() }
    mutating func encode(_ value: Bool, forKey key: Key) throws { writer.beginMember(key.stringValue, depth: depth); writer.writeBool(value) }
    mutating func encode(_ value: String, forKey key: Key) throws { writer.beginMember(key.stringValue, depth: depth); writer.writeString(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { writer.beginMember(key.stringValue, depth: depth); try writer.writeFloat(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { writer.beginMember(key.stringValue, depth: depth); try writer.writeFloat(value) }
    mutating func encode(_ value: Int, forKey key: Key) throws { writer.beginMember(key.stringValue, depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { writer.beginMember(key.stringValue, depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { writer.beginMember(key.stringValue, depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { writer.beginMember(key.stringValue, depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { writer.beginMember(key.stringValue, depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { writer.beginMember(key.stringValue, depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { writer.beginMember(key.stringValue, depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { writer.beginMember(key.stringValue, depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { writer.beginMember(key.stringValue, depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { writer.beginMember(key.stringValue, depth: depth); writer.writeInteger(value) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        writer.beginMember(key.stringValue, depth: depth)
        try writer.encodeValue(value, depth: depth + 1)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                        forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        writer.beginMember(key.stringValue, depth: depth)
        return writer.encoder(at: depth + 1).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        writer.beginMember(key.stringValue, depth: depth)
        return writer.encoder(at: depth + 1).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        writer.beginMember("super", depth: depth)
        return writer.encoder(at: depth + 1)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        writer.beginMember(key.stringValue, depth: depth)
        return writer.encoder(at: depth + 1)
    }
}

/// Writes the elements of the array at `depth`.
struct StreamUnkeyedContainer: UnkeyedEncodingContainer {
    let writer: JSONByteWriter
    let depth: Int
    var codingPath: [any CodingKey] { [] }
    var count: Int { writer.count(depth: depth) }

    mutating func encodeNil() throws { writer.beginElement(depth: depth); writer.writeNull() }
    mutating func encode(_ value: Bool) throws { writer.beginElement(depth: depth); writer.writeBool(value) }
    mutating func encode(_ value: String) throws { writer.beginElement(depth: depth); writer.writeString(value) }
    mutating func encode(_ value: Double) throws { writer.beginElement(depth: depth); try writer.writeFloat(value) }
    mutating func encode(_ value: Float) throws { writer.beginElement(depth: depth); try writer.writeFloat(value) }
    mutating func encode(_ value: Int) throws { writer.beginElement(depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: Int8) throws { writer.beginElement(depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: Int16) throws { writer.beginElement(depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: Int32) throws { writer.beginElement(depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: Int64) throws { writer.beginElement(depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: UInt) throws { writer.beginElement(depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: UInt8) throws { writer.beginElement(depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: UInt16) throws { writer.beginElement(depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: UInt32) throws { writer.beginElement(depth: depth); writer.writeInteger(value) }
    mutating func encode(_ value: UInt64) throws { writer.beginElement(depth: depth); writer.writeInteger(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        writer.beginElement(depth: depth)
        try writer.encodeValue(value, depth: depth + 1)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        writer.beginElement(depth: depth)
        return writer.encoder(at: depth + 1).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        writer.beginElement(depth: depth)
        return writer.encoder(at: depth + 1).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        writer.beginElement(depth: depth)
        return writer.encoder(at: depth + 1)
    }
}

/// Writes the one value at `depth` (a scalar, or hands over to the value's
/// own `encode(to:)` at the same depth).
struct StreamSingleValueContainer: SingleValueEncodingContainer {
    let writer: JSONByteWriter
    let depth: Int
    var codingPath: [any CodingKey] { [] }

    /// A single value replaces nothing: close what a nested value left open.
    private func begin() { writer.closeContainers(deeperThan: depth - 1) }

    mutating func encodeNil() throws { begin(); writer.writeNull() }
    mutating func encode(_ value: Bool) throws { begin(); writer.writeBool(value) }
    mutating func encode(_ value: String) throws { begin(); writer.writeString(value) }
    mutating func encode(_ value: Double) throws { begin(); try writer.writeFloat(value) }
    mutating func encode(_ value: Float) throws { begin(); try writer.writeFloat(value) }
    mutating func encode(_ value: Int) throws { begin(); writer.writeInteger(value) }
    mutating func encode(_ value: Int8) throws { begin(); writer.writeInteger(value) }
    mutating func encode(_ value: Int16) throws { begin(); writer.writeInteger(value) }
    mutating func encode(_ value: Int32) throws { begin(); writer.writeInteger(value) }
    mutating func encode(_ value: Int64) throws { begin(); writer.writeInteger(value) }
    mutating func encode(_ value: UInt) throws { begin(); writer.writeInteger(value) }
    mutating func encode(_ value: UInt8) throws { begin(); writer.writeInteger(value) }
    mutating func encode(_ value: UInt16) throws { begin(); writer.writeInteger(value) }
    mutating func encode(_ value: UInt32) throws { begin(); writer.writeInteger(value) }
    mutating func encode(_ value: UInt64) throws { begin(); writer.writeInteger(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        begin()
        try writer.encodeValue(value, depth: depth)
    }
}
