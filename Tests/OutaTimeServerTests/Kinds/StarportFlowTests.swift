import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import OutaTimeServer
import Testing

/// `starport/<board>` over TCP: read-only actions for watchers, quotes and
/// their errors, dispatches moved along by the server's clock, cancels
/// (domain.md, "starport/<board>").
@Suite("starport flow", .timeLimit(.minutes(3)))
struct StarportFlowTests {
    static let channel = "starport/hill-valley"
    static let tokens = [
        AccessToken(token: "board-1885", name: "Lobby board", role: .watch),
        AccessToken(token: "doc-1955", name: "Doc Brown", role: .operate),
    ]

    static func withTokens(_ config: inout ServerConfig) { config.tokens = tokens }

    /// A connection that said `hello` with `token`.
    static func connect(_ server: TestServer, token: String) throws -> TestClient {
        let client = try server.connect()
        try client.hello(token: token)
        return client
    }

    @Test("catalog and quote are allowed to watch; dispatch and cancel are forbidden to it")
    func watchRole() throws {
        try withTestServer(Self.withTokens) { server in
            let board = try Self.connect(server, token: "board-1885")
            let catalog = try board.perform(Self.channel, "catalog")
            let ships = catalog[objects: "ships"] ?? []
            var models: [String: [Int]] = [:]
            for ship in ships { models[ship["model"] as? String ?? "?"] = [ship[int: "speed_kmh"] ?? -1, ship[int: "docking_s"] ?? -1] }
            #expect(models == ["SWingV1": [20_000, 14_400], "SWingV2": [25_000, 9_000],
                               "SWingV3": [34_000, 7_200], "TearDrop": [11_000, 3_600]], "\(describe(ships))")
            let stations = catalog[objects: "stations"] ?? []
            #expect(stations.map { $0["name"] as? String ?? "?" } == ["A", "B", "C", "D", "E"])
            #expect(stations.map { $0[int: "position_km"] ?? -1 } == [0, 24_000, 70_000, 295_000, 332_000])

            let quote = try board.perform(Self.channel, "quote", ["model": "SWingV2", "path": "AC"])
            #expect(quote[int: "distance_km"] == 70_000, "\(describe([quote]))")
            #expect(quote[int: "flight_s"] == 10_080)
            #expect(quote[int: "docking_s"] == 18_000)
            #expect(quote[int: "duration_s"] == 28_080)
            #expect((quote["duration_h"] as? NSNumber)?.doubleValue == 7.8)
            #expect(quote["model"] as? String == "SWingV2")
            #expect(quote["path"] as? String == "AC")
            #expect((quote[objects: "legs"] ?? []).reduce(0) { $0 + ($1[int: "distance_km"] ?? 0) } == 70_000)

            let dispatch = try board.command(Self.channel, "dispatch", ["model": "SWingV2", "path": "AC"])
            #expect(dispatch.errorCode == .forbidden, "\(describe([dispatch]))")
            #expect(try board.failure(Self.channel, "cancel", ["id": 1]) == .forbidden)
            #expect(try board.call("get", ["channel": Self.channel])[int: "seq"] == 0, "nothing was dispatched")

            let doc = try Self.connect(server, token: "doc-1955")
            let made = try doc.perform(Self.channel, "dispatch", ["model": "SWingV2", "path": "AC"])
            #expect(made["created_by"] as? String == "Doc Brown", "\(describe([made]))")
        }
    }

    /// The read-only cases of `protocol/vectors/starport.json` (they need no
    /// state and no clock), found from this file's path.
    static func readOnlyVectors() throws -> [[String: Any]] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let data = try Data(contentsOf: root.appendingPathComponent("protocol/vectors/starport.json"))
        let cases = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        return cases.filter { ["catalog", "quote"].contains($0["action"] as? String ?? "") && $0["state_before"] == nil }
    }

    @Test("every read-only starport vector gives the same answer over the wire")
    func readOnlyVectorsOverTheWire() throws {
        let cases = try Self.readOnlyVectors()
        #expect(cases.count >= 10, "too few read-only vectors: \(cases.count)")
        try withTestServer { server in
            let client = try server.connectReady()
            for vector in cases {
                let name = vector["name"] as? String ?? "?"
                let expect = vector[object: "expect"] ?? [:]
                let reply = try client.command(Self.channel, vector["action"] as? String ?? "?",
                                               vector[object: "args"] ?? [:])
                if expect["ok"] as? Bool == true {
                    #expect(reply.isOK && jsonEqual(reply["result"], expect["result"]),
                            "\(name): \(describe([reply])) expected \(describe([expect]))")
                } else {
                    #expect(reply.errorCode?.rawValue == expect["code"] as? String, "\(name): \(describe([reply]))")
                    for part in expect["message_contains"] as? [String] ?? [] {
                        #expect(reply.errorMessage?.contains(part) == true, "\(name): '\(part)' in \(describe([reply]))")
                    }
                }
            }
        }
    }

    @Test("quotes match model and path case-insensitively, ignoring separators")
    func caseInsensitiveQuote() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let quote = try client.perform(Self.channel, "quote", ["model": "swingv2", "path": "a - c"])
            #expect(quote["model"] as? String == "SWingV2")
            #expect(quote["path"] as? String == "AC")
            #expect(quote[int: "distance_km"] == 70_000)
            #expect(quote[int: "duration_s"] == 28_080)
        }
    }

    @Test("quote errors: invalid_path and unknown_model", arguments: [
        ("SWingV2", "A", ErrorCode.invalidPath), ("SWingV2", "AF", .invalidPath), ("SWingV2", "AA", .invalidPath),
        ("SWingV2", "A1C", .invalidPath), ("SWingV2", "", .invalidPath), ("SWingV9", "AC", .unknownModel),
    ])
    func quoteErrors(model: String, path: String, code: ErrorCode) throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let reply = try client.command(Self.channel, "quote", ["model": model, "path": path])
            #expect(reply.errorCode == code, "\(model) '\(path)': \(describe([reply]))")
            #expect(reply.errorMessage?.isEmpty == false)
        }
    }

    @Test("a dispatch whose moments passed: dispatched, then status_changed in_flight, then arrived")
    func pastDispatch() throws {
        try withTestServer { server in
            let client = try server.connectReady(name: "Doc")
            let seq0 = try #require(try client.subscribe(Self.channel)[int: "seq"])
            let departs = Date().addingTimeInterval(-100 * 3600)
            client.pushes.removeAll()
            let result = try client.perform(Self.channel, "dispatch", [
                "model": "SWingV2", "path": "AC", "departs_at": ISOTime.format(departs), "note": "Hill Valley express",
            ])
            let id = try #require(result[int: "id"], "\(describe([result]))")
            let dispatched = try #require(client.pushes.first { $0.isEvent("dispatched", on: Self.channel) },
                                          "dispatched arrives before the reply: \(describe(client.transcript))")
            let made = try #require(dispatched.data?[object: "dispatch"], "\(describe([dispatched]))")
            #expect(made[int: "id"] == id)
            #expect(made[int: "distance_km"] == 70_000)
            #expect(made[int: "duration_s"] == 28_080)
            #expect(made["departs_at"] as? String == ISOTime.format(departs))
            #expect(made["arrives_at"] as? String == ISOTime.format(departs.addingTimeInterval(28_080)))
            #expect(made["note"] as? String == "Hill Valley express")
            #expect(dispatched[int: "seq"] == seq0 + 1)

            let frames = try client.collect(until: "status_changed arrived", timeout: 3) {
                $0.isEvent("status_changed", on: Self.channel) && $0.data?["status"] as? String == "arrived"
            }
            let changes = frames.filter { $0.isEvent("status_changed", on: Self.channel) }
            #expect(changes.map { $0.data?["status"] as? String ?? "?" } == ["in_flight", "arrived"], "\(describe(frames))")
            #expect(changes.allSatisfy { $0.data?[int: "id"] == id })
            #expect(changes.map { $0[int: "seq"] ?? -1 } == [seq0 + 2, seq0 + 3])

            let board = try client.state(Self.channel)
            #expect(board[objects: "dispatches"]?.first?["status"] as? String == "arrived")
            #expect(try client.failure(Self.channel, "cancel", ["id": id]) == .conflict, "an arrived dispatch")
        }
    }

    @Test("a dispatch departing in about a second goes in_flight on time; cancel, cancel again, cancel unknown")
    func upcomingDispatchAndCancel() throws {
        try withTestServer { server in
            let client = try server.connectReady(name: "Doc")
            try client.subscribe(Self.channel)
            // A whole second 0.5…1.5 s ahead (wire times have whole seconds).
            let now = Date()
            var departs = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down) + 1)
            if departs.timeIntervalSince(now) < 0.5 { departs.addTimeInterval(1) }
            let delay = departs.timeIntervalSince(now)

            let clock = ContinuousClock()
            let sent = clock.now
            let result = try client.perform(Self.channel, "dispatch", [
                "model": "TearDrop", "path": "DE", "departs_at": ISOTime.format(departs),
            ])
            let id = try #require(result[int: "id"], "\(describe([result]))")
            let dispatched = try client.awaitEvent("dispatched", on: Self.channel)
            #expect(dispatched.data?[object: "dispatch"]?["status"] as? String == "scheduled")

            let inFlight = try client.awaitFrame("status_changed in_flight", timeout: 3) {
                $0.isEvent("status_changed", on: Self.channel) && $0.data?[int: "id"] == id
            }
            let elapsed = seconds(clock.now - sent)
            #expect(inFlight.data?["status"] as? String == "in_flight")
            #expect(elapsed >= delay - 0.1 && elapsed <= delay + 0.3,
                    "in_flight after \(elapsed) s; departure was \(delay) s ahead")

            client.pushes.removeAll()
            try client.perform(Self.channel, "cancel", ["id": id])
            let cancelled = try #require(client.pushes.first { $0.isEvent("cancelled", on: Self.channel) },
                                         "\(describe(client.transcript))")
            #expect(cancelled.data?[int: "id"] == id)
            #expect(try client.failure(Self.channel, "cancel", ["id": id]) == .conflict, "cancel twice")
            #expect(try client.failure(Self.channel, "cancel", ["id": 999]) == .notFound)
            #expect(try client.state(Self.channel)[objects: "dispatches"]?.first?["status"] as? String == "cancelled")
        }
    }

    @Test("dispatch errors: invalid_time, invalid_path, unknown_model, invalid_args", arguments: [
        (#"{"model":"SWingV2","path":"AC","departs_at":"soon"}"#, ErrorCode.invalidTime),
        (#"{"model":"SWingV2","path":"AZ"}"#, .invalidPath),
        (#"{"model":"Hoverboard","path":"AC"}"#, .unknownModel),
        (#"{"path":"AC"}"#, .invalidArgs),
    ])
    func dispatchErrors(args: String, code: ErrorCode) throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let fields = try #require(try JSONSerialization.jsonObject(with: Data(args.utf8)) as? [String: Any])
            let reply = try client.command(Self.channel, "dispatch", fields)
            #expect(reply.errorCode == code, "\(args): \(describe([reply]))")
            #expect(try client.state(Self.channel)[objects: "dispatches"]?.isEmpty == true)
        }
    }
}
