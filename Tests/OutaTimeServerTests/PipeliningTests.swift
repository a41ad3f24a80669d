import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import Testing

/// Requests sent back to back on one connection (PROTOCOL.md §17,
/// "Pipelining"): applied in order, committed together, answered in request
/// order, each reply after its own commit; reads see the commands before them;
/// a failed commit fails exactly the commands it held.
@Suite("pipelining", .timeLimit(.minutes(3)))
struct PipeliningTests {
    /// Every frame `client` reads until the replies to `ids` have all come,
    /// and those replies in arrival order.
    static func replies(_ client: TestClient, ids: [Int]) throws -> [[String: Any]] {
        var replies: [[String: Any]] = []
        while replies.count < ids.count {
            let frame = try client.readFrame()
            if frame.type == "reply" { replies.append(frame) }
        }
        return replies
    }

    /// Frame bodies for `command add` requests on `channel`, ids from `first`.
    static func adds(_ channel: String, ids: Range<Int>, prefix: String = "timer") -> [[String: Any]] {
        ids.map { id in
            ["type": "command", "id": id, "channel": channel, "action": "add",
             "args": ["event": "\(prefix) \(id)", "remaining_s": 1000 + id]]
        }
    }

    @Test("200 commands sent in one write: replies in request order, committed in fewer groups than commands")
    func orderAndGrouping() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let channel = "timers/pipelined"
            try client.call("get", ["channel": channel])
            let before = try client.call("stats")
            let frames = Self.adds(channel, ids: 1..<201)
            try client.sendFrames(frames)
            let replies = try Self.replies(client, ids: Array(1..<201))
            #expect(replies.compactMap { $0[int: "id"] } == Array(1..<201), "replies out of order")
            #expect(replies.allSatisfy { $0.isOK }, "\(describe(replies.filter { !$0.isOK }))")
            // Each reply names the timer its own command added.
            #expect(replies.map { $0[object: "result"]?["event"] as? String } == (1..<201).map { "timer \($0)" })
            let after = try client.call("stats")
            let events = try #require(after[int: "events_committed"]) - (before[int: "events_committed"] ?? 0)
            let groups = try #require(after[int: "store_batches"]) - (before[int: "store_batches"] ?? 0)
            #expect(events == 200)
            #expect(groups < 200, "pipelined commands must share commits: \(groups) groups for 200 commands")
        }
    }

    @Test("reads after commands in the same write see them: subscribe, get and history")
    func readYourWrites() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let channel = "timers/ryw"
            var frames = Self.adds(channel, ids: 1..<6)
            frames.append(["type": "subscribe", "id": 6, "channel": channel])
            frames += Self.adds(channel, ids: 7..<10)
            frames.append(["type": "get", "id": 10, "channel": channel])
            frames.append(["type": "history", "id": 11, "channel": channel])
            frames.append(["type": "ping", "id": 12])
            try client.sendFrames(frames)
            let replies = try Self.replies(client, ids: Array(1..<13))
            #expect(replies.compactMap { $0[int: "id"] } == Array(1..<13))
            #expect(replies.allSatisfy { $0.isOK }, "\(describe(replies))")
            let subscribed = try #require(replies[5][object: "result"])
            #expect(subscribed[int: "seq"] == 5)
            #expect(subscribed[object: "state"]?[objects: "timers"]?.count == 5)
            let got = try #require(replies[9][object: "result"])
            #expect(got[int: "seq"] == 8)
            #expect(got[object: "state"]?[objects: "timers"]?.count == 8)
            let history = try #require(replies[10][object: "result"]?[objects: "events"])
            #expect(history.compactMap { $0[int: "seq"] } == Array(1...8))
        }
    }

    @Test("commands on two channels interleaved, and one that fails, keep request order")
    func twoChannelsAndAFailure() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            try client.call("get", ["channel": "timers/a"])
            try client.call("get", ["channel": "laps/b"])
            var frames: [[String: Any]] = []
            for id in 1..<41 {
                switch id % 4 {
                case 0: frames.append(["type": "command", "id": id, "channel": "laps/b", "action": "reset"])
                case 1: frames.append(["type": "command", "id": id, "channel": "timers/a", "action": "remove", "args": ["id": 999]])
                default: frames += Self.adds("timers/a", ids: id..<(id + 1))
                }
            }
            try client.sendFrames(frames)
            let replies = try Self.replies(client, ids: Array(1..<41))
            #expect(replies.compactMap { $0[int: "id"] } == Array(1..<41))
            for reply in replies where reply[int: "id"]! % 4 == 1 {
                #expect(reply.errorCode == .notFound)
            }
            #expect(replies.filter { $0[int: "id"]! % 4 != 1 }.allSatisfy { $0.isOK })
            #expect(try client.call("get", ["channel": "timers/a"])[int: "seq"] == 20)
        }
    }

    @Test("a client that half-closes after 100 pipelined commands still gets every reply, then the close")
    func halfCloseAfterPipelinedCommands() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let channel = "timers/half-closed"
            try client.call("get", ["channel": channel])
            try client.sendFrames(Self.adds(channel, ids: 1..<101))
            client.finishSending()
            let replies = try Self.replies(client, ids: Array(1..<101))
            #expect(replies.compactMap { $0[int: "id"] } == Array(1..<101))
            #expect(replies.allSatisfy { $0.isOK })
            #expect(client.expectClosed())
            let other = try server.connectReady()
            #expect(try other.call("get", ["channel": channel])[int: "seq"] == 100)
        }
    }

    @Test("a commit that fails fails exactly the commands it held; the channel goes on from storage")
    func failedCommitFailsItsCommands() throws {
        let folder = try TemporaryFolder()
        let database = folder.path("outatime.sqlite")
        let server = try TestServer(databasePath: database)
        defer { server.stop(); withExtendedLifetime(folder) {} }
        let client = try server.connectReady()
        let channel = "timers/locked"
        try client.call("command", ["channel": channel, "action": "add", "args": ["event": "before", "remaining_s": 5]])

        // Another process takes the database's write lock: the server's
        // commits fail with SQLITE_BUSY until it lets go.
        let locker = try DatabaseLocker(path: database)
        try client.sendFrames(Self.adds(channel, ids: 10..<15, prefix: "while locked"))
        let failed = try Self.replies(client, ids: Array(10..<15))
        #expect(failed.compactMap { $0[int: "id"] } == Array(10..<15))
        #expect(failed.allSatisfy { $0.errorCode == .internal }, "\(describe(failed))")
        try locker.release()

        try client.sendFrames(Self.adds(channel, ids: 20..<23, prefix: "after"))
        let later = try Self.replies(client, ids: Array(20..<23))
        #expect(later.allSatisfy { $0.isOK }, "\(describe(later))")
        let state = try client.call("get", ["channel": channel])
        #expect(state[int: "seq"] == 4)
        let events = (state[object: "state"]?[objects: "timers"] ?? []).compactMap { $0["event"] as? String }
        #expect(events == ["before", "after 20", "after 21", "after 22"])
        let history = try client.history(channel)
        #expect(history.compactMap { $0[int: "seq"] } == [1, 2, 3, 4])
    }
}

/// A second process holding SQLite's write lock on a database (Python's
/// `sqlite3`, `BEGIN EXCLUSIVE`) until ``release()``.
final class DatabaseLocker {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()

    init(path: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute('BEGIN EXCLUSIVE')
            print('locked', flush=True)
            sys.stdin.readline()
            c.execute('ROLLBACK')
            print('released', flush=True)
            """, path]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        try expectLine("locked")
    }

    /// Lets go of the lock and waits for the process to end.
    func release() throws {
        input.fileHandleForWriting.write(Data("\n".utf8))
        try expectLine("released")
        process.waitUntilExit()
    }

    private func expectLine(_ line: String) throws {
        var text = ""
        while !text.contains("\n") {
            let data = output.fileHandleForReading.availableData
            guard !data.isEmpty else { break }
            text += String(decoding: data, as: UTF8.self)
        }
        guard text.trimmingCharacters(in: .whitespacesAndNewlines) == line else {
            throw TestClientError.failed("the database locker said '\(text)', expected '\(line)'")
        }
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}
