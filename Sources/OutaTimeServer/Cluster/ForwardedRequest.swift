import Foundation
import OutaTimeProtocol

/// A request one node forwards to a channel's owner (docs/CLUSTER.md §4.4):
/// one line of JSON saying who asks, a newline, then the client's request
/// as JSON. The caller's scope was checked by the node the client is
/// connected to; the owner checks the role again, and everything the
/// channel's rules say.
struct ForwardedRequest: Codable, Equatable {
    /// What the owner does.
    enum Operation: String, Codable {
        case subscribe, unsubscribe, get, history, command, publish
        /// The session left these channels (it closed): ``ForwardedRequest/channels``.
        case leave
        /// From an owner: it had taken the sender for dead and dropped its
        /// watchers of these channels; the sender is alive after all, so
        /// it subscribes them again (``ForwardedRequest/channels``).
        case resync
    }

    var op: Operation
    /// The client's session id (`<boot-id>-<n>`), unique in the cluster.
    var session: String
    /// Its display name.
    var name: String
    var role: Role
    /// For ``Operation/leave``: the channels it leaves.
    var channels: [String]?
    /// A `subscribe` sent again by the forwarding node after the owner
    /// changed: the session was subscribed already (its client learns of
    /// no new reply), and only the events after `since` matter.
    var rejoin: Bool?
    /// With `rejoin`: the owner announces the watcher as joined again (it
    /// had announced it as gone: ``Operation/resync``).
    var announce: Bool?

    /// Header line, newline, the request's JSON.
    func encoded(with request: JSONValue?) -> [UInt8] {
        var bytes = (try? JSONEncoder().encode(self)).map(Array.init) ?? []
        bytes.append(UInt8(ascii: "\n"))
        if let request, let body = try? CompactJSONEncoder().encode(request) { bytes += body }
        return bytes
    }

    /// The header and the request of a payload; nil when it is not one.
    static func decode(_ payload: [UInt8]) -> (ForwardedRequest, Request?)? {
        guard let newline = payload.firstIndex(of: UInt8(ascii: "\n")),
              let header = try? JSONDecoder().decode(ForwardedRequest.self, from: Data(payload[..<newline])) else { return nil }
        let rest = payload[(newline + 1)...]
        guard !rest.isEmpty else { return (header, nil) }
        let request = rest.withUnsafeBytes { try? Request.parse($0) }
        return request.map { (header, $0) }
    }
}

/// The owner's answer: one line of JSON, a newline, then the frame body
/// for the client (its reply, or an `error` push for a request without
/// `id`), or nothing.
struct ForwardedAnswer: Codable, Equatable {
    /// The owner no longer owns the channel (it moved): nothing was done.
    var moved: Bool?
    /// For `subscribe`: the channel's seq the reply is as of; for a
    /// `command`: its last event's seq (the reply follows that event).
    var seq: Int64?
    /// The body is an `error` push, not a reply.
    var push: Bool?
    /// For `subscribe`: the reply succeeded (the session is a watcher now).
    var joined: Bool?

    func encoded(body: [UInt8]) -> [UInt8] {
        var bytes = (try? JSONEncoder().encode(self)).map(Array.init) ?? []
        bytes.append(UInt8(ascii: "\n"))
        bytes += body
        return bytes
    }

    static func decode(_ payload: [UInt8]) -> (ForwardedAnswer, ArraySlice<UInt8>)? {
        guard let newline = payload.firstIndex(of: UInt8(ascii: "\n")),
              let header = try? JSONDecoder().decode(ForwardedAnswer.self, from: Data(payload[..<newline])) else { return nil }
        return (header, payload[(newline + 1)...])
    }
}
