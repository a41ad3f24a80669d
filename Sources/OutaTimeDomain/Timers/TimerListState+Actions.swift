import Foundation
import OutaTimeProtocol

/// The timer list's commands: `add`, `update`, `remove`, and the viewer
/// commands `start` and `stop` below. Each one validates everything
/// before it changes anything, so a thrown error leaves the state unchanged.
extension TimerListState: ChannelBehaviour {
    /// Every action changes state (viewing is state too), so all need `operate`.
    public static let actions: [String: ActionAccess] = [
        "add": .mutating, "update": .mutating, "remove": .mutating,
        "start": .mutating, "stop": .mutating,
    ]

    /// Longest `event` and `location`, in characters.
    public static let maxTextLength = 100
    /// Largest `remaining_s`: 10,000 years. A bound keeps deadlines within
    /// what a scheduler can turn into milliseconds without overflow, and any
    /// ISO time up to year 9999 still fits.
    public static let maxRemainingS = 315_576_000_000

    /// Performs a timer command. Results: the affected timer's wire form at
    /// `context.now` (`remove`: `{id}`).
    public mutating func perform(
        _ action: String, _ args: ActionArgs, _ context: ActionContext
    ) throws(ProtocolError) -> ActionOutcome {
        switch action {
        case "add": try add(args, context)
        case "update": try update(args, context)
        case "remove": try remove(args, context)
        case "start": try start(args, context)
        case "stop": try stop(args, context)
        default: throw Self.unknownAction(action, kind: .timers)
        }
    }

    private mutating func add(_ args: ActionArgs, _ context: ActionContext) throws(ProtocolError) -> ActionOutcome {
        let event = try args.string("event", length: 1...Self.maxTextLength, freeText: true)
        let location = try args.optionalString("location", length: 0...Self.maxTextLength, freeText: true) ?? ""
        guard let remaining = try Self.remainingArgument(args, now: context.now) else {
            throw ProtocolError(.invalidArgs,
                "add needs exactly one of 'remaining_s' (whole seconds ≥ 0) and 'at' (an ISO 8601 time), got neither")
        }
        try context.itemLimit.checkRoom(holding: list.count, of: "timers", remedy: "remove a timer first")
        // 0 left means the moment has come: finished, like an `at` in the past.
        let timer = CountdownTimer(id: nextID, event: event, location: location, remainingS: remaining,
                                   status: remaining == 0 ? .finished : .stopped)
        let added = record(.added(timer), at: context.now)
        return ActionOutcome(reply: timer.view(at: context.now), events: [added])
    }

    private mutating func update(_ args: ActionArgs, _ context: ActionContext) throws(ProtocolError) -> ActionOutcome {
        let position = try existingTimer(args)
        let event = try args.optionalString("event", length: 1...Self.maxTextLength, freeText: true)
        let location = try args.optionalString("location", length: 0...Self.maxTextLength, freeText: true)
        let remaining = try Self.remainingArgument(args, now: context.now)
        guard event != nil || location != nil || remaining != nil else {
            throw ProtocolError(.invalidArgs,
                "update needs at least one of 'event', 'location', 'remaining_s' or 'at'; got none")
        }
        // The timer as it will be, frozen at `now` for the event's data.
        var timer = list[position]
        timer.remainingS = timer.remaining(at: context.now)
        timer.countdown = nil
        var fields: [String] = []
        if let event { timer.event = event; fields.append("event") }
        if let location { timer.location = location; fields.append("location") }
        if let remaining {
            timer.remainingS = remaining
            fields.append("remaining_s")
            // A running timer keeps running from the new value; a finished one
            // given time again is stopped (finishing cleared its viewers, so
            // someone must `start` it); any timer given 0 is finished.
            if remaining == 0 {
                timer.status = .finished
            } else if timer.status == .finished {
                timer.status = .stopped
            }
        }
        if timer.status == .finished { timer.viewers = 0 }
        let updated = record(.updated(timer, fields: fields), at: context.now)
        return ActionOutcome(reply: list[position].view(at: context.now), events: [updated])
    }

    private mutating func remove(_ args: ActionArgs, _ context: ActionContext) throws(ProtocolError) -> ActionOutcome {
        let id = list[try existingTimer(args)].id
        let removed = record(.removed(id: id), at: context.now)
        return ActionOutcome(result: .object(["id": .int(Int64(id))]), events: [removed])
    }

    /// The position of the timer named by the `id` argument, or `not_found`.
    func existingTimer(_ args: ActionArgs) throws(ProtocolError) -> Int {
        let id = try args.int("id", in: 1...Int.max)
        guard let position = index(of: id) else {
            throw ProtocolError(.notFound, "no timer with id \(id) on this list; \(describeIDs())")
        }
        return position
    }

    /// "ids here: 1, 2, 4" (the first ten), or "the list is empty".
    private func describeIDs() -> String {
        if list.isEmpty { return "the list is empty" }
        let ids = list.prefix(10).map { String($0.id) }.joined(separator: ", ")
        return "ids here: " + ids + (list.count > 10 ? ", …" : "")
    }

    /// The remaining seconds given by `remaining_s` or `at` (exactly one of
    /// them; both is `invalid_args`), or nil when neither is given. An `at`
    /// gives the whole seconds until that moment rounded up, so a countdown
    /// never reaches 0 before the event; a past `at` gives 0.
    static func remainingArgument(_ args: ActionArgs, now: Date) throws(ProtocolError) -> Int? {
        let remaining = try args.optionalInt("remaining_s", in: 0...maxRemainingS)
        let at = try args.optionalTime("at")
        switch (remaining, at) {
        case (.some, .some):
            throw ProtocolError(.invalidArgs,
                "give exactly one of 'remaining_s' (whole seconds ≥ 0) and 'at' (an ISO 8601 time), not both")
        case (let seconds?, nil):
            return seconds
        case (nil, let moment?):
            let seconds = moment.timeIntervalSince(now).rounded(.up)
            guard seconds <= Double(maxRemainingS) else {
                throw ProtocolError(.invalidArgs,
                    "argument 'at' must be at most \(maxRemainingS) seconds (10,000 years) ahead, got \(ISOTime.format(moment))")
            }
            return max(0, Int(seconds))
        case (nil, nil):
            return nil
        }
    }
}

/// Viewing: in the seed, a countdown runs only while its view is on screen.
/// Here each session that sent `start` is a viewer; the countdown runs while
/// a timer has at least one. Only the first arrival and the last departure
/// are durable events; who the viewers are is runtime state (see
/// `TimerListState+Events.swift`).
extension TimerListState {
    /// `start {id}`: the caller becomes a viewer. The first viewer of a
    /// stopped timer starts it (`timer_started`); a caller already viewing,
    /// or a further viewer of a running timer, changes no durable state.
    /// A finished timer is a `conflict`.
    mutating func start(_ args: ActionArgs, _ context: ActionContext) throws(ProtocolError) -> ActionOutcome {
        let position = try existingTimer(args)
        let timer = list[position]
        guard timer.status != .finished else {
            throw ProtocolError(.conflict,
                "timer \(timer.id) has finished and cannot be started; give it a new 'remaining_s' or 'at' with update first")
        }
        guard addViewer(context.session, at: position) else {
            return ActionOutcome(reply: timer.view(at: context.now))
        }
        var events: [DomainEvent] = []
        if timer.status == .stopped {
            events.append(record(Self.started(timer, at: context.now), at: context.now))
        }
        return ActionOutcome(reply: list[position].view(at: context.now), events: events)
    }

    /// `stop {id}`: the caller stops viewing. When the last viewer leaves,
    /// the countdown pauses (`timer_stopped`). A caller that was not viewing
    /// gets an ordinary reply and nothing changes: stopping is idempotent,
    /// which suits a client that retries after a reconnect.
    mutating func stop(_ args: ActionArgs, _ context: ActionContext) throws(ProtocolError) -> ActionOutcome {
        let position = try existingTimer(args)
        let events = leave(position, session: context.session, at: context.now)
        return ActionOutcome(reply: list[position].view(at: context.now), events: events)
    }

    /// The session unsubscribed from the list or disconnected: it stops
    /// viewing every timer of the list, and each timer it was the last viewer
    /// of pauses with a `timer_stopped` event (in list order). Costs what
    /// the session viewed, not the size of the list.
    public mutating func release(session: String, at now: Date) -> [DomainEvent] {
        takeViewedPositions(of: session).flatMap { leave($0, session: session, at: now) }
    }

    /// Removes `session` from the viewers of the timer at `position`; when
    /// it was the last one, returns the pause event (already applied).
    private mutating func leave(_ position: Int, session: String, at now: Date) -> [DomainEvent] {
        guard removeViewer(session, at: position),
              list[position].viewerSessions.isEmpty,
              list[position].status == .running
        else { return [] }
        return [record(Self.paused(list[position], at: now), at: now)]
    }
}
