import Foundation
import OutaTimeProtocol
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads of `event` and `tick` pushes, for the channel kinds' end-to-end tests.
extension Dictionary where Key == String, Value == Any {
    /// The event name of an `event` push, nil for any other frame.
    var eventName: String? { type == "event" ? self["event"] as? String : nil }

    /// The `data` object of an `event` or `tick` push.
    var data: [String: Any]? { self[object: "data"] }

    /// The `channel` a push is about.
    var channel: String? { self["channel"] as? String }

    /// Whether this is the `event` push `name` on `channel`.
    func isEvent(_ name: String, on channel: String) -> Bool {
        eventName == name && self.channel == channel
    }

    /// Whether this is a `tick` push on `channel`.
    func isTick(on channel: String) -> Bool { type == "tick" && self.channel == channel }
}

extension TestClient {
    /// Sends `command` (`action` on `channel` with `args`) and returns the
    /// reply, ok or not.
    @discardableResult
    func command(_ channel: String, _ action: String, _ args: [String: Any] = [:],
                 timeout: Double = TestClient.defaultTimeout) throws -> [String: Any] {
        try request("command", ["channel": channel, "action": action, "args": args], timeout: timeout)
    }

    /// Like ``command(_:_:_:timeout:)`` but requires `ok: true`; returns the
    /// result when it is an object (`[:]` otherwise).
    @discardableResult
    func perform(_ channel: String, _ action: String, _ args: [String: Any] = [:]) throws -> [String: Any] {
        let reply = try command(channel, action, args)
        guard reply.isOK else {
            throw TestClientError.failed("\(action) \(args) on \(channel): \(describe([reply]))")
        }
        return reply[object: "result"] ?? [:]
    }

    /// The error code of `action` on `channel`, which is expected to fail.
    func failure(_ channel: String, _ action: String, _ args: [String: Any] = [:]) throws -> ErrorCode? {
        let reply = try command(channel, action, args)
        return reply.isOK ? nil : reply.errorCode
    }

    /// The channel's `state` from `get`.
    func state(_ channel: String) throws -> [String: Any] {
        let result = try call("get", ["channel": channel])
        guard let state = result[object: "state"] else {
            throw TestClientError.failed("get \(channel) has no state: \(describe([result]))")
        }
        return state
    }

    /// The next frame in arrival order: frames kept in ``pushes`` first.
    func nextFrame(timeout: Double = TestClient.defaultTimeout) throws -> [String: Any] {
        if !pushes.isEmpty { return pushes.removeFirst() }
        return try readFrame(timeout: timeout)
    }

    /// The first frame (kept or read) for which `match` holds; the others
    /// stay in ``pushes`` in their order. `what` names it in a timeout.
    func awaitFrame(_ what: String, timeout: Double = TestClient.defaultTimeout,
                    where match: ([String: Any]) -> Bool) throws -> [String: Any] {
        if let index = pushes.firstIndex(where: match) { return pushes.remove(at: index) }
        let deadline = Date().addingTimeInterval(timeout)
        for _ in 0..<TestClient.frameBudget {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { break }
            let frame = try readFrame(timeout: remaining)
            if match(frame) { return frame }
            pushes.append(frame)
        }
        throw TestClientError.timedOut("\(what); seen: \(describe(transcript))")
    }

    /// The first `event` push `name` on `channel`.
    func awaitEvent(_ name: String, on channel: String, timeout: Double = TestClient.defaultTimeout) throws -> [String: Any] {
        try awaitFrame("event '\(name)' on \(channel)", timeout: timeout) { $0.isEvent(name, on: channel) }
    }

    /// The first `tick` push on `channel` for whose data `match` holds.
    func awaitTick(on channel: String, timeout: Double = TestClient.defaultTimeout,
                   where match: ([String: Any]) -> Bool = { _ in true }) throws -> [String: Any] {
        try awaitFrame("a matching tick on \(channel)", timeout: timeout) {
            $0.isTick(on: channel) && match($0.data ?? [:])
        }
    }

    /// Every frame in arrival order (kept ones first) up to and including
    /// the first for which `last` holds.
    func collect(until what: String, timeout: Double = TestClient.defaultTimeout,
                 _ last: ([String: Any]) -> Bool) throws -> [[String: Any]] {
        var frames: [[String: Any]] = []
        let deadline = Date().addingTimeInterval(timeout)
        for _ in 0..<TestClient.frameBudget {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { break }
            let frame = try nextFrame(timeout: remaining)
            frames.append(frame)
            if last(frame) { return frames }
        }
        throw TestClientError.timedOut("\(what); collected: \(describe(frames))")
    }

    /// Every frame that arrives (kept ones first) during `seconds`; silence
    /// is not an error.
    func drain(for seconds: Double) throws -> [[String: Any]] {
        var frames = pushes
        pushes = []
        let deadline = Date().addingTimeInterval(seconds)
        for _ in 0..<TestClient.frameBudget {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { break }
            do {
                frames.append(try readFrame(timeout: remaining))
            } catch TestClientError.timedOut(_) {
                break
            }
        }
        return frames
    }

    /// `subscribe`'s result; requires `ok`.
    @discardableResult
    func subscribe(_ channel: String, since: Int? = nil) throws -> [String: Any] {
        var fields: [String: Any] = ["channel": channel]
        if let since { fields["since"] = since }
        return try call("subscribe", fields)
    }

    /// `history` events of `channel` after `after` (up to `limit`).
    func history(_ channel: String, after: Int = 0, limit: Int = 1000) throws -> [[String: Any]] {
        let result = try call("history", ["channel": channel, "after": after, "limit": limit])
        return result[objects: "events"] ?? []
    }
}

/// Seconds of a `ContinuousClock` duration, as a Double.
func seconds(_ duration: Duration) -> Double {
    let parts = duration.components
    return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
}

/// A server started from the real executable on `databasePath`, waiting for
/// its `listening on` line; returns the process and its port.
func startServerProcess(databasePath: String, _ flags: [String] = [],
                        sourceLocation: SourceLocation = #_sourceLocation) throws -> (ServerProcess, Int) {
    let server = try ServerProcess(["--port", "0", "--db", databasePath, "--log-level", "error"] + flags)
    let listening = try #require(server.awaitListening(), "no 'listening on' line; stderr: \(server.stderrText)",
                                 sourceLocation: sourceLocation)
    return (server, listening.port)
}

/// SIGKILLs `server` and waits until it is gone.
func killHard(_ server: ServerProcess, sourceLocation: SourceLocation = #_sourceLocation) {
    kill(server.process.processIdentifier, SIGKILL)
    let status = server.waitForExit()
    #expect(status != nil, "the server survived SIGKILL", sourceLocation: sourceLocation)
    #expect(server.process.terminationReason == .uncaughtSignal, sourceLocation: sourceLocation)
}
