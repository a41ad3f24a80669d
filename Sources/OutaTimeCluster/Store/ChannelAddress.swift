import OutaTimeStore

/// Where one channel lives in JetStream (design §4.2): its event subject in
/// partition stream `OT_EV_<p>`, and its snapshot key in `OT_SNAP`.
///
/// A channel name is `<kind>/<name>` with a name of `A–Z a–z 0–9 . _ -`
/// (protocol §5). `.` separates NATS tokens, so it is mapped to `=`, which is
/// legal in subjects and KV keys and absent from channel names: the mapping
/// is injective. `laps/my.run` becomes the token pair `laps.my=run`.
struct ChannelAddress: Sendable, Equatable {
    /// The channel's name, `<kind>/<name>`.
    let channel: String
    /// The kind part.
    let kind: String
    /// `<kind>.<name with . mapped to =>`: the snapshot key and the subject's tail.
    let key: String
    /// The partition, `hash(channel) mod partitions`.
    let partition: Int

    /// The address of `channel`; throws ``StoreError/invalidEvents(channel:reason:)``
    /// for a name that is not `<kind>/<name>` with the allowed characters.
    init(_ channel: String, partitions: Int) throws(StoreError) {
        let parts = channel.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty,
              parts[0].utf8.allSatisfy(Self.isKindByte), parts[1].utf8.allSatisfy(Self.isNameByte)
        else {
            throw StoreError.invalidEvents(
                channel: channel, reason: "the channel name is not <kind>/<name> with a name of A-Z a-z 0-9 . _ -")
        }
        self.channel = channel
        kind = String(parts[0])
        key = "\(parts[0]).\(String(parts[1].map { $0 == "." ? "=" : $0 }))"
        partition = Int(Self.fnv1a(channel) % UInt32(max(partitions, 1)))
    }

    /// `ot.ev.<p>.<kind>.<name>`: the subject of the channel's event messages.
    var subject: String { "\(JetStreamStoreNames.eventSubjectPrefix).\(partition).\(key)" }

    /// `OT_EV_<p>`: the stream holding the subject.
    var stream: String { JetStreamStoreNames.eventStream(partition) }

    /// The channel name back from a snapshot key (`laps.my=run` → `laps/my.run`).
    static func channel(fromKey key: String) -> String? {
        guard let dot = key.firstIndex(of: ".") else { return nil }
        let name = key[key.index(after: dot)...].map { $0 == "=" ? "." : $0 }
        return "\(key[..<dot])/\(String(name))"
    }

    private static func isKindByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x5F || byte == 0x2D
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        isKindByte(byte) || (byte >= 0x41 && byte <= 0x5A) || byte == 0x2E
    }

    /// FNV-1a, 32 bits: stable across processes and releases (unlike `hashValue`).
    static func fnv1a(_ text: String) -> UInt32 {
        var hash: UInt32 = 0x811C_9DC5
        for byte in text.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        return hash
    }
}

/// The names of the JetStream assets the store uses.
public enum JetStreamStoreNames {
    /// Subjects of event messages start with this.
    public static let eventSubjectPrefix = "ot.ev"
    /// The snapshot bucket.
    public static let snapshotBucket = "OT_SNAP"
    /// The bucket of the server's own values (``StoreWrite/setMeta(key:value:)``).
    public static let metaBucket = "OT_META"
    /// The stream of partition `p`.
    public static func eventStream(_ partition: Int) -> String { "OT_EV_\(partition)" }

    /// A meta key as a KV key: bytes outside `A-Z a-z 0-9 _ -` become `=XX`.
    static func metaKey(_ key: String) -> String {
        var out = ""
        for byte in key.utf8 {
            let scalar = Unicode.Scalar(byte)
            if (byte < 0x80) && (Character(scalar).isLetter || Character(scalar).isNumber || byte == 0x5F || byte == 0x2D) {
                out.unicodeScalars.append(scalar)
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += "=" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out.isEmpty ? "=" : out
    }
}
