import Foundation
import NATSTestSupport
import OutaTimeTestSupport
import Testing

/// Several `outatime-server --cluster` executables on one real nats-server
/// (JetStream on, loopback, a temporary store): every channel served by its
/// owner and reached through any node (docs/CLUSTER.md §4.3–4.4).
@Suite("cluster: several nodes share every channel", .serialized, .timeLimit(.minutes(4)))
struct ClusterNodesTests {
    /// A node started for a test, with its client port.
    final class Node {
        let name: String
        let process: ServerProcess
        let port: Int

        init(_ name: String, nats: NATSServerProcess, logLevel: String = "error") throws {
            self.name = name
            process = try ServerProcess(ClusterModeTests.nodeArguments(nats, node: name).filter { $0 != "error" && $0 != "--log-level" }
                + ["--lap-tick-ms", "100", "--log-level", logLevel])
            let listening = try #require(process.awaitListening(), "node \(name): \(process.stderrText)")
            port = listening.port
        }

        /// A client that said hello to this node.
        func client(_ name: String) throws -> TestClient {
            let client = try TestClient(port: port)
            let hello = try client.hello(name: name)
            #expect(hello["node"] as? String == self.name)
            return client
        }

        /// The `cluster` object of this node's `stats`.
        func cluster() throws -> [String: Any] {
            let client = try TestClient(port: port)
            defer { client.closeCleanly() }
            try client.hello(name: "stats")
            return try #require(try client.call("stats")[object: "cluster"])
        }
    }

    /// Waits until the nodes agree that all of them are alive and every
    /// slot is owned by one of them, each owning some.
    static func awaitSettled(_ nodes: [Node], timeout: Double = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        var last = ""
        while Date() < deadline {
            let figures = try nodes.map { try $0.cluster() }
            let slots = figures.map { ($0["slots_owned"] as? Int) ?? 0 }
            let live = figures.map { ($0["live_nodes"] as? [String]) ?? [] }
            last = "slots \(slots), live \(live)"
            if slots.reduce(0, +) == 256, slots.allSatisfy({ $0 > 0 }), live.allSatisfy({ $0.count == nodes.count }) { return }
            Thread.sleep(forTimeInterval: 0.2)
        }
        Issue.record("the slot table did not settle within \(timeout) s: \(last)")
    }

    /// The node that owns `channel` (it holds it once it was used).
    static func owner(of channel: String, among nodes: [Node], timeout: Double = 10) throws -> Node {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            for node in nodes where ((try node.cluster())["owned_channels"] as? [String] ?? []).contains(channel) {
                return node
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw TestClientError.timedOut("an owner of \(channel)")
    }

    @Test("subscribe, commands, events, ticks, publish and presence cross nodes; commands are forwarded to the owner and answered in order, after their event")
    func crossNode() throws {
        let nats = try NATSServerProcess.start()
        defer { nats.stop() }
        let nodes = try ["n1", "n2", "n3"].map { try Node($0, nats: nats) }
        defer { for node in nodes { node.process.send(signal: SIGTERM); _ = node.process.waitForExit() } }
        try Self.awaitSettled(nodes)

        let channel = "laps/cross-node"
        let creator = try nodes[0].client("Doc")
        try creator.call("subscribe", ["channel": channel])
        try creator.call("unsubscribe", ["channel": channel])
        let owner = try Self.owner(of: channel, among: nodes)
        let others = nodes.filter { $0 !== owner }
        // Two watchers on the two nodes that do not own the channel, one on the owner.
        let marty = try others[0].client("Marty")
        let jennifer = try others[1].client("Jennifer")
        let biff = try owner.client("Biff")
        let martyJoin = try marty.call("subscribe", ["channel": channel])
        #expect(martyJoin[int: "seq"] == 0)
        let jenniferJoin = try jennifer.call("subscribe", ["channel": channel])
        #expect(jenniferJoin[int: "watcher_count"] == 2)
        #expect(Set(jenniferJoin[objects: "watchers"]?.compactMap { $0["name"] as? String } ?? []) == ["Marty", "Jennifer"])
        // Marty (on another node than the owner) hears of Jennifer's join.
        let joined = try marty.readUntil(type: "presence")
        #expect(joined[objects: "joined"]?.first?["name"] as? String == "Jennifer")
        try biff.call("subscribe", ["channel": channel])
        _ = try marty.readUntil(type: "presence")
        _ = try jennifer.readUntil(type: "presence")

        // A command through a non-owner: forwarded, its event reaches every
        // node's watchers, and the issuer's event comes before its reply.
        let id = 7_001
        try marty.sendFrame(["type": "command", "id": id, "channel": channel, "action": "start", "args": [:]])
        var sawEventFirst = false
        for _ in 0..<20 {
            let frame = try marty.readFrame()
            if frame.type == "event" { sawEventFirst = frame[int: "seq"] == 1 }
            if frame.type == "reply", frame["id"] as? Int == id {
                #expect(frame["ok"] as? Bool == true, "\(frame)")
                break
            }
        }
        #expect(sawEventFirst, "the issuer saw its event (seq 1) before its reply")
        for watcher in [jennifer, biff] {
            let event = try watcher.readUntil(type: "event")
            #expect(event[int: "seq"] == 1 && event["event"] as? String == "started")
        }
        // Ticks of the running stopwatch reach the watchers on every node.
        for watcher in [marty, jennifer, biff] {
            #expect(try watcher.readUntil(type: "tick")["channel"] as? String == channel)
        }
        // Pipelined commands through two nodes: gap-free, in seq order, the same everywhere.
        for _ in 0..<5 {
            try marty.sendFrame(["type": "command", "channel": channel, "action": "lap", "args": [:]])
            try jennifer.sendFrame(["type": "command", "channel": channel, "action": "lap", "args": [:]])
        }
        for watcher in [marty, jennifer, biff] {
            var seqs: [Int] = []
            while seqs.count < 10 {
                let event = try watcher.readUntil(type: "event")
                seqs.append(event[int: "seq"] ?? -1)
            }
            #expect(seqs == Array(2...11), "seqs seen: \(seqs)")
        }
        // publish from a non-owner reaches the watchers of the other nodes.
        let published = try jennifer.call("publish", ["channel": channel, "data": ["note": "1.21 GW"]])
        #expect(published[int: "delivered"] == 3)
        for watcher in [marty, biff] {
            let message = try watcher.readUntil(type: "message")
            #expect((message["from"] as? [String: Any])?["name"] as? String == "Jennifer")
        }
        // get and history through a non-owner; list from any node.
        #expect(try jennifer.call("get", ["channel": channel])[int: "seq"] == 11)
        let history = try marty.call("history", ["channel": channel, "after": 9])
        #expect(history[objects: "events"]?.compactMap { $0[int: "seq"] } == [10, 11])
        let listed = try jennifer.call("list", ["kind": "laps"])
        #expect(listed[objects: "channels"]?.first(where: { $0["channel"] as? String == channel })?[int: "seq"] == 11)
        // A watcher leaving from a non-owner node is announced to the others.
        marty.closeAbruptly()
        let left = try biff.readUntil(type: "presence")
        #expect(left[objects: "left"]?.first?["name"] as? String == "Marty")
        #expect(left[int: "watcher_count"] == 2)
        for client in [creator, jennifer, biff] { client.closeCleanly() }
    }

    @Test("the owner is killed: another node takes the channel over within 5 s, watchers on surviving nodes see the seq go on without a gap, and a client recovers with since through another node")
    func takeover() throws {
        let nats = try NATSServerProcess.start()
        defer { nats.stop() }
        let nodes = try ["n1", "n2", "n3"].map { try Node($0, nats: nats) }
        defer { for node in nodes { node.process.send(signal: SIGTERM); _ = node.process.waitForExit() } }
        try Self.awaitSettled(nodes)

        let channel = "timers/takeover"
        let first = try nodes[0].client("Doc")
        for index in 1...3 {
            try first.call("command", ["channel": channel, "action": "add", "args": ["event": "T\(index)", "remaining_s": 600]])
        }
        let owner = try Self.owner(of: channel, among: nodes)
        let survivors = nodes.filter { $0 !== owner }
        let watcher = try survivors[0].client("Marty")
        #expect(try watcher.call("subscribe", ["channel": channel])[int: "seq"] == 3)
        let operatorClient = try survivors[1].client("Jennifer")

        owner.process.send(signal: SIGKILL)
        _ = owner.process.waitForExit()
        let killedAt = Date()
        // Commands through a surviving node: refused (unavailable) until the takeover, then acknowledged.
        var acknowledged: [String: Any]?
        while acknowledged == nil, Date().timeIntervalSince(killedAt) < 10 {
            let reply = try operatorClient.request("command", ["channel": channel, "action": "add",
                                                               "args": ["event": "after", "remaining_s": 60]])
            if reply["ok"] as? Bool == true {
                acknowledged = reply
            } else {
                #expect((reply[object: "error"])?["code"] as? String == "unavailable", "\(reply)")
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        let takeover = Date().timeIntervalSince(killedAt)
        #expect(acknowledged != nil && takeover <= 5, "takeover took \(takeover) s")
        // The watcher on a surviving node: the seq goes on from 3 without a gap.
        let now = try #require(try operatorClient.call("get", ["channel": channel])[int: "seq"])
        var seqs: [Int] = []
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, (seqs.last ?? 0) < now {
            let event = try watcher.readUntil(type: "event", timeout: max(0.1, deadline.timeIntervalSinceNow))
            seqs.append(event[int: "seq"] ?? -1)
        }
        #expect(seqs == Array(4...now), "seqs after the kill: \(seqs), channel at \(now)")

        // A client of the dead node reconnects elsewhere and recovers with since.
        let returning = try survivors[1].client("Biff")
        let recovered = try returning.call("subscribe", ["channel": channel, "since": 3])
        #expect(recovered["recovered"] as? Bool == true)
        #expect(recovered[objects: "events"]?.first?[int: "seq"] == 4)
        for client in [first, watcher, operatorClient, returning] { client.closeCleanly() }
    }

    @Test("a node dies: its watchers leave the owner's channel within a few seconds (no ghosts), and a countdown only it viewed stops")
    func deadNodeWatchersLeave() throws {
        let nats = try NATSServerProcess.start()
        defer { nats.stop() }
        let nodes = try ["n1", "n2", "n3"].map { try Node($0, nats: nats) }
        defer { for node in nodes { node.process.send(signal: SIGTERM); _ = node.process.waitForExit() } }
        try Self.awaitSettled(nodes)

        let channel = "timers/ghosts"
        let doc = try nodes[0].client("Doc")
        try doc.call("command", ["channel": channel, "action": "add", "args": ["event": "Lightning", "remaining_s": 600]])
        let owner = try Self.owner(of: channel, among: nodes)
        let away = try #require(nodes.first { $0 !== owner })
        let marty = try away.client("Marty")
        try marty.call("subscribe", ["channel": channel])
        let biff = try owner.client("Biff")
        #expect(try biff.call("subscribe", ["channel": channel])[int: "watcher_count"] == 2)
        // Marty, on a node that does not own the list, runs the countdown: he is its only viewer.
        let timerID = try #require(try doc.call("get", ["channel": channel])[object: "state"]?[objects: "timers"]?.first?[int: "id"])
        try marty.call("command", ["channel": channel, "action": "start", "args": ["id": timerID]])
        #expect(try biff.readUntil(type: "event")["event"] as? String == "timer_started")

        away.process.send(signal: SIGKILL)
        _ = away.process.waitForExit()
        let killedAt = Date()
        let left = try biff.readUntil(type: "presence", timeout: 10)
        let gone = Date().timeIntervalSince(killedAt)
        #expect(left[objects: "left"]?.first?["name"] as? String == "Marty" && left[int: "watcher_count"] == 1, "\(left)")
        #expect(gone < 5, "Marty's ghost stayed \(gone) s")
        let stopped = try biff.readUntil(type: "event", timeout: 5)
        #expect(stopped["event"] as? String == "timer_stopped", "\(stopped)")
        for client in [doc, biff] { client.closeCleanly() }
    }

    @Test("nodes join a lone node under load: slots move by handover, commands go on (acknowledged or refused unavailable, never lost), and a watcher on the first node sees every event once, in order")
    func rebalanceUnderLoad() throws {
        let nats = try NATSServerProcess.start()
        defer { nats.stop() }
        let first = try Node("n1", nats: nats, logLevel: "debug")
        var nodes = [first]
        defer { for node in nodes { node.process.send(signal: SIGTERM); _ = node.process.waitForExit() } }
        try Self.awaitSettled(nodes)

        let channels = (1...6).map { "laps/rebalance-\($0)" }
        let watcher = try first.client("Marty")
        for channel in channels { try watcher.call("subscribe", ["channel": channel]) }
        let writer = try first.client("Doc")
        var acknowledged: [String: Int] = [:]
        var refusals: [String: Int] = [:]
        func lap(_ channel: String) throws {
            let reply = try writer.request("command", ["channel": channel, "action": "lap", "args": [:]], timeout: 15)
            if reply["ok"] as? Bool == true {
                acknowledged[channel, default: 0] += 1
            } else {
                #expect((reply[object: "error"])?["code"] as? String == "unavailable", "\(reply)")
                refusals[channel, default: 0] += 1
            }
        }
        for channel in channels { try writer.call("command", ["channel": channel, "action": "start", "args": [:]]) }
        nodes.append(try Node("n2", nats: nats, logLevel: "debug"))
        nodes.append(try Node("n3", nats: nats, logLevel: "debug"))
        // Laps through n1 while the others take their shares (rebalancing after 3 s).
        let deadline = Date().addingTimeInterval(30)
        var settled = false
        var round = 0
        while Date() < deadline, !settled || round < 10 {
            for channel in channels { try lap(channel) }
            round += 1
            if !settled {
                let slots = try nodes.map { ((try $0.cluster())["slots_owned"] as? Int) ?? 0 }
                settled = slots.allSatisfy { $0 > 0 } && slots.reduce(0, +) == 256
                if settled { round = 0 }
            }
        }
        #expect(settled, "the slots did not spread over the three nodes")
        let owners = try Set(channels.map { try Self.owner(of: $0, among: nodes).name })
        #expect(owners.count > 1, "every channel stayed on one node: \(owners)")
        // The watcher on n1: for each channel, seq 1 (started) and then every event once, in order, up to its seq now.
        for channel in channels {
            let now = try #require(try writer.call("get", ["channel": channel])[int: "seq"])
            var seen: [Int] = []
            var frames = watcher.pushes.filter { $0.type == "event" && $0["channel"] as? String == channel }
            watcher.pushes.removeAll { $0.type == "event" && $0["channel"] as? String == channel }
            let readDeadline = Date().addingTimeInterval(10)
            while (frames.last?[int: "seq"] ?? 0) < now, Date() < readDeadline {
                let frame = try watcher.readFrame(timeout: max(0.1, readDeadline.timeIntervalSinceNow))
                if frame.type == "event", frame["channel"] as? String == channel { frames.append(frame) } else { watcher.pushes.append(frame) }
            }
            seen = frames.compactMap { $0[int: "seq"] }
            if seen != Array(1...now) {
                let figures = try nodes.map { node in
                    let cluster = try node.cluster()
                    return "\(node.name): relays \(cluster["relays"] ?? "-"), pushes \(cluster["relayed_pushes"] ?? "-"), "
                        + "dups \(cluster["relay_duplicates"] ?? "-"), gaps \(cluster["relay_gap_fills"] ?? "-"), "
                        + "remote \(cluster["remote_watchers"] ?? "-"), gained \(cluster["channels_gained"] ?? "-"), "
                        + "dropped \(cluster["channels_dropped"] ?? "-"), owns \((cluster["owned_channels"] as? [String])?.contains(channel) == true)"
                }
                for node in nodes {
                    print("=== \(node.name)")
                    print(node.process.stderrText.split(separator: "\n").filter { $0.contains(channel) && $0.contains("cluster") }.suffix(30).joined(separator: "\n"))
                }
                Issue.record("\(channel): seqs \(seen.prefix(3))…\(seen.suffix(5)) (\(seen.count)), channel at \(now); \(figures)")
            }
            // Every acknowledged lap is stored (a refusal may or may not have been applied only when its answer was lost).
            let laps = try writer.call("get", ["channel": channel])[object: "state"]?[objects: "laps"]?.count ?? -1
            let acked = acknowledged[channel, default: 0]
            #expect(laps >= acked && laps <= acked + refusals[channel, default: 0] && now == 1 + laps,
                    "\(channel): \(acked) laps acknowledged, \(laps) stored, seq \(now)")
        }
        print("rebalance under load: \(acknowledged.values.reduce(0, +)) laps acknowledged, \(refusals.values.reduce(0, +)) refused unavailable; owners \(owners.sorted())")
        for client in [watcher, writer] { client.closeCleanly() }
    }

    @Test("a node frozen past its lease (SIGSTOP 3 s): the owner drops its watchers, and once it runs again they are subscribed again: its watcher sees every event once, in order")
    func frozenNodeComesBack() throws {
        let nats = try NATSServerProcess.start()
        defer { nats.stop() }
        let nodes = try ["n1", "n2", "n3"].map { try Node($0, nats: nats) }
        defer { for node in nodes { node.process.send(signal: SIGCONT); node.process.send(signal: SIGTERM); _ = node.process.waitForExit() } }
        try Self.awaitSettled(nodes)

        let channel = "laps/frozen-relay"
        let doc = try nodes[0].client("Doc")
        try doc.call("command", ["channel": channel, "action": "start", "args": [:]])
        let owner = try Self.owner(of: channel, among: nodes)
        let frozen = try #require(nodes.first { $0 !== owner })
        let marty = try frozen.client("Marty")
        try marty.call("subscribe", ["channel": channel])
        let writer = try owner.client("Biff")
        try writer.call("subscribe", ["channel": channel])

        frozen.process.send(signal: SIGSTOP)
        // The owner takes Marty for gone once the frozen node's heartbeats stop.
        let left = try writer.readUntil(type: "presence", timeout: 10)
        #expect(left[objects: "left"]?.first?["name"] as? String == "Marty", "\(left)")
        for _ in 0..<5 { try writer.call("command", ["channel": channel, "action": "lap", "args": [:]]) }
        frozen.process.send(signal: SIGCONT)
        // Back: Marty joins again (announced), and later laps reach him too.
        let back = try writer.readUntil(type: "presence", timeout: 10)
        #expect(back[objects: "joined"]?.first?["name"] as? String == "Marty", "\(back)")
        for _ in 0..<5 { try writer.call("command", ["channel": channel, "action": "lap", "args": [:]]) }
        let now = try #require(try writer.call("get", ["channel": channel])[int: "seq"])
        var seen: [Int] = []
        let deadline = Date().addingTimeInterval(10)
        while (seen.last ?? 0) < now, Date() < deadline {
            seen.append(try marty.readUntil(type: "event", timeout: max(0.1, deadline.timeIntervalSinceNow))[int: "seq"] ?? -1)
        }
        #expect(seen == Array(2...now), "Marty saw \(seen), the channel is at \(now)")
        for client in [doc, marty, writer] { client.closeCleanly() }
    }
}
