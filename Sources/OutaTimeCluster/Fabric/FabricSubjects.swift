/// The core NATS subjects of the fabric (docs/CLUSTER.md §4.2) and its headers.
enum FabricSubjects {
    /// `ot.node.<node>.req`: where `node` receives forwarded requests.
    static func request(_ node: String) -> String { "ot.node.\(node).req" }

    /// `ot.reply.<node>.`: the prefix of `node`'s reply subjects.
    static func replyPrefix(_ node: String) -> String { "ot.reply.\(node)." }

    /// `ot.push.<kind>.<name with . as =>` (`timers/my.list` →
    /// `ot.push.timers.my=list`), or nil for a name that is not a channel
    /// name (it would not be one subject).
    static func push(_ channel: String) -> String? {
        guard let address = try? ChannelAddress(channel, partitions: 1) else { return nil }
        return "ot.push.\(address.key)"
    }

    /// The ticket at the end of a reply subject (`ot.reply.a.42` → 42).
    static func ticket(ofReply subject: String) -> UInt64? {
        let utf8 = subject.utf8
        guard let dot = utf8.lastIndex(of: UInt8(ascii: ".")) else { return nil }
        return UInt64(Substring(subject[utf8.index(after: dot)...]))
    }

    /// The sending node (requests and pushes).
    static let fromHeader = "OT-From"
    /// A push's event seq.
    static let seqHeader = "OT-Seq"
    /// A push's excluded session.
    static let exceptHeader = "OT-Except"
    /// The status header NATS puts on a "no responders" notice (503).
    static let statusHeader = "Status"
}
