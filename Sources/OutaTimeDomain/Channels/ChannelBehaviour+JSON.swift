import Foundation
import OutaTimeProtocol

/// The stored form of any kind's state, for a server that holds states as
/// `any ChannelBehaviour`: the same `Codable` conformances as ``ChannelState``.
extension ChannelBehaviour {
    /// The state as stored at `now` (``stored(at:)``), as compact JSON text.
    public func storedText(at now: Date) -> String {
        stored(at: now).jsonText()
    }

    /// Compact JSON text, keys in the order the kind's `encode(to:)` writes them.
    public func jsonText() -> String {
        // The states hold only strings, integers and arrays: nothing JSON
        // cannot represent, so a failure is a programming error.
        guard let bytes = try? CompactJSONEncoder().encode(self) else {
            preconditionFailure("\(Self.kind.rawValue) state failed to encode")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension ChannelKind {
    /// A new channel's state.
    public func initialState(now: Date) -> any ChannelBehaviour {
        behaviour.initialState(now: now)
    }

    /// Reads a stored state of this kind (as written by `jsonText()`).
    /// Throws ``StateDecodingError`` naming the bad key.
    public func decodeState(jsonText: String) throws(StateDecodingError) -> any ChannelBehaviour {
        try behaviour.decodeStored(jsonText: jsonText)
    }

    /// The access of `action` on this kind, or nil if it has no such action.
    public func access(of action: String) -> ActionAccess? {
        behaviour.actions[action]
    }
}
