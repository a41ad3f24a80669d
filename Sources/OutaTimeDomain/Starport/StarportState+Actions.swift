import Foundation
import OutaTimeProtocol

/// The `starport` actions (domain.md): `catalog` and `quote` read, `dispatch`
/// and `cancel` change the board through events (see `StarportState+Events`).
extension StarportState: ChannelBehaviour {
    /// The longest `note` a dispatch accepts, in characters: 100, like a
    /// timer's `event`, so that a board of `--max-channel-items` worst-case
    /// dispatches fits the 16 MiB a client accepts (PROTOCOL.md §11,
    /// "Frame bounds"; it was 200).
    public static let maxNoteLength = 100

    /// `catalog` and `quote` are read-only (allowed to `watch`); `dispatch`
    /// and `cancel` need `operate`.
    public static let actions: [String: ActionAccess] = [
        "catalog": .readOnly,
        "quote": .readOnly,
        "dispatch": .mutating,
        "cancel": .mutating,
    ]

    /// The arguments each action accepts. Others are refused with
    /// `invalid_args` rather than ignored: a misspelt `departs_at` would
    /// otherwise silently dispatch the ship now.
    static let allowedArgs: [String: [String]] = [
        "catalog": [],
        "quote": ["model", "path"],
        "dispatch": ["model", "path", "departs_at", "note"],
        "cancel": ["id"],
    ]

    /// Performs one action. Arguments are checked for shape first
    /// (`invalid_args`, `invalid_time`), then the model (`unknown_model`),
    /// then the path (`invalid_path`); nothing changes when one fails.
    public mutating func perform(
        _ action: String, _ args: ActionArgs, _ context: ActionContext
    ) throws(ProtocolError) -> ActionOutcome {
        guard let allowed = Self.allowedArgs[action] else {
            throw Self.unknownAction(action, kind: .starport)
        }
        try Self.checkNoExtraArgs(args, allowed: allowed, action: action)
        switch action {
        case "catalog":
            return ActionOutcome(result: Starport.catalog)
        case "quote":
            return ActionOutcome(result: try Self.quote(args).json)
        case "dispatch":
            return try dispatch(args, context)
        case "cancel":
            return try cancel(args, context)
        default:
            throw Self.unknownAction(action, kind: .starport)
        }
    }

    /// `dispatch {model, path, departs_at?, note?}`: a new scheduled dispatch
    /// with the next id; the result is the dispatch, the event `dispatched`.
    private mutating func dispatch(_ args: ActionArgs, _ context: ActionContext) throws(ProtocolError) -> ActionOutcome {
        let model = try args.string("model")
        let path = try args.string("path")
        let departsAt = try args.optionalTime("departs_at") ?? context.now
        let note = try args.optionalString("note", length: 0...Self.maxNoteLength, freeText: true)
        let quote = try Starport.quote(model: model, path: path)
        // Every stored time must read back (ISOTime: years 0000…9999).
        let arrival = departsAt.timeIntervalSince1970.rounded(.down) + TimeInterval(quote.wholeDurationS)
        guard arrival <= ISOTime.latest.timeIntervalSince1970 else {
            throw ProtocolError(.invalidTime,
                "argument 'departs_at' \(ISOTime.format(departsAt)) is too late: the flight of \(quote.wholeDurationS) s would land after 9999-12-31T23:59:59Z, the last time the server keeps")
        }
        // Dispatches are never removed: a full board stays full.
        try context.itemLimit.checkRoom(holding: dispatches.count, of: "dispatches",
                                        remedy: "dispatches are kept for good, so use another board")
        let dispatch = Dispatch(
            id: nextID, quote: quote, departsAt: departsAt,
            createdBy: context.actor.isEmpty ? nil : context.actor, note: note)
        let event = record(.dispatched(dispatch))
        return ActionOutcome(reply: dispatch, events: [event])
    }

    /// `cancel {id}`: a scheduled or in-flight dispatch becomes cancelled;
    /// the result is the cancelled dispatch, the event `cancelled`.
    private mutating func cancel(_ args: ActionArgs, _ context: ActionContext) throws(ProtocolError) -> ActionOutcome {
        let id = try args.int("id", in: 1...Int.max)
        guard let index = positions[id] else {
            let known = board.isEmpty ? "the board has no dispatches" : "known ids: \(Self.describeIDs(board))"
            throw ProtocolError(.notFound, "no dispatch with id \(id) on this board; \(known)")
        }
        // The status as of now, not as last stored: a ship whose arrival time
        // has passed has landed even if the scheduler has not said so yet.
        switch board[index].status(at: context.now) {
        case .arrived:
            throw ProtocolError(.conflict,
                "dispatch \(id) arrived at \(board[index].arrivesAt); only scheduled or in-flight dispatches can be cancelled")
        case .cancelled:
            throw ProtocolError(.conflict,
                "dispatch \(id) is already cancelled; only scheduled or in-flight dispatches can be cancelled")
        case .scheduled, .inFlight:
            let event = record(.cancelled(id: id))
            return ActionOutcome(reply: board[index], events: [event])
        }
    }

    /// The id the next dispatch gets: one above the highest so far. Nothing
    /// is ever removed from the board, so ids only rise, and they survive a
    /// restart with the stored state without a separate counter.
    var nextID: Int { highestID + 1 }

    /// The quote named by `quote`'s or `dispatch`'s `model` and `path`.
    private static func quote(_ args: ActionArgs) throws(ProtocolError) -> Starport.Quote {
        let model = try args.string("model")
        let path = try args.string("path")
        return try Starport.quote(model: model, path: path)
    }

    private static func checkNoExtraArgs(_ args: ActionArgs, allowed: [String], action: String) throws(ProtocolError) {
        guard let extra = args.values.keys.sorted().first(where: { !allowed.contains($0) }) else { return }
        let valid = allowed.isEmpty ? "it takes no arguments" : "allowed: \(allowed.joined(separator: ", "))"
        throw ProtocolError(.invalidArgs, "action '\(action)' has no argument '\(extra)'; \(valid)")
    }

    /// `1, 2, 3` — or the first and last few when the board is long.
    private static func describeIDs(_ dispatches: [Dispatch]) -> String {
        func ids(_ part: ArraySlice<Dispatch>) -> String { part.map { String($0.id) }.joined(separator: ", ") }
        guard dispatches.count > 10 else { return ids(dispatches[...]) }
        return "\(ids(dispatches.prefix(3))) … \(ids(dispatches.suffix(3)))"
    }
}
