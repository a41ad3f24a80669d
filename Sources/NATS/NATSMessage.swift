import CNats
#if canImport(Glibc)
import Glibc
#endif

/// One message, copied out of libnats (so it outlives the C message).
public struct NATSMessage: Sendable, Equatable {
    /// The subject it was published on.
    public var subject: String
    /// The reply subject of a request, or nil.
    public var reply: String?
    /// The payload.
    public var data: [UInt8]
    /// The headers; for a header sent several times, its first value.
    public var headers: [String: String]
    /// The JetStream stream sequence, or 0 for a core message.
    public var streamSequence: UInt64

    /// A message from its fields (tests and replies).
    public init(subject: String, reply: String? = nil, data: [UInt8], headers: [String: String] = [:], streamSequence: UInt64 = 0) {
        self.subject = subject
        self.reply = reply
        self.data = data
        self.headers = headers
        self.streamSequence = streamSequence
    }

    /// The payload as UTF-8 text.
    public var text: String { String(decoding: data, as: UTF8.self) }

    /// Copies a libnats message (which the caller still owns and destroys).
    init(copying msg: OpaquePointer) {
        subject = String(cString: natsMsg_GetSubject(msg))
        reply = natsMsg_GetReply(msg).map { String(cString: $0) }
        let length = Int(natsMsg_GetDataLength(msg))
        if length > 0, let bytes = natsMsg_GetData(msg) {
            data = bytes.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
        } else {
            data = []
        }
        headers = Self.readHeaders(msg)
        streamSequence = natsMsg_GetSequence(msg)
        if streamSequence == 0, let text = headers["Nats-Sequence"], let seq = UInt64(text) {
            streamSequence = seq
        }
    }

    private static func readHeaders(_ msg: OpaquePointer) -> [String: String] {
        var keys: UnsafeMutablePointer<UnsafePointer<CChar>?>?
        var count: Int32 = 0
        guard natsMsgHeader_Keys(msg, &keys, &count) == NATS_OK, let keys else { return [:] }
        // The array is ours to free; the strings belong to the message.
        defer { free(keys) }
        var headers: [String: String] = [:]
        for index in 0..<Int(count) {
            guard let key = keys[index] else { continue }
            var value: UnsafePointer<CChar>?
            if natsMsgHeader_Get(msg, key, &value) == NATS_OK, let value {
                headers[String(cString: key)] = String(cString: value)
            }
        }
        return headers
    }
}

/// A libnats message built for one send and destroyed after it.
struct OutgoingMessage: ~Copyable {
    let pointer: OpaquePointer

    /// Builds `subject` + `data` + `headers`; a header with an empty name is refused.
    init(subject: String, reply: String? = nil, data: [UInt8], headers: [String: String]) throws(NATSError) {
        guard !subject.isEmpty, !subject.contains(where: { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }) else {
            throw .invalidArgument("subject '\(subject)' is empty or contains white space")
        }
        var msg: OpaquePointer?
        let status = data.withUnsafeBytes { bytes in
            natsMsg_Create(&msg, subject, reply, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(bytes.count))
        }
        try check(status, "create message on '\(subject)'")
        let created = msg!
        // Every throw comes before `pointer` is set, so `deinit` never sees a destroyed message.
        for (key, value) in headers.sorted(by: { $0.key < $1.key }) {
            guard !key.isEmpty else {
                natsMsg_Destroy(created)
                throw .invalidArgument("a header of the message on '\(subject)' has an empty name")
            }
            let set = natsMsgHeader_Set(created, key, value)
            if set != NATS_OK {
                let error = NATSError.from(set, operation: "set header '\(key)' on '\(subject)'")
                natsMsg_Destroy(created)
                throw error
            }
        }
        pointer = created
    }

    deinit { natsMsg_Destroy(pointer) }
}
