import Dispatch
import Foundation
import NATS
import NATSTestSupport
@testable import OutaTimeCluster
import OutaTimeServer
import Synchronization
import Testing

/// NATSClusterFabric against a real nats-server (JetStream on, membership
/// intervals shrunk): ownership shared by two nodes, request/reply with
/// timeouts and failures answered exactly once, pushes relayed in order to
/// followers only, and the takeover after a crash.
@Suite("NATSClusterFabric", .serialized)
struct NATSClusterFabricTests {
    /// Two started fabrics on one server, settled (bounded).
    static func pair(_ server: NATSServerProcess,
                     responder: (@Sendable (ClusterRequest) -> [UInt8]?)? = nil) throws -> (FabricNode, FabricNode) {
        let a = try FabricNode("a", url: server.url, responder: responder)
        let b = try FabricNode("b", url: server.url, responder: responder)
        try a.start()
        try b.start()
        let settled = poll(timeout: .seconds(20)) { fabricsSettled([a, b]) }
        #expect(settled, "a owns \(a.ownership?.owned.count ?? -1), b owns \(b.ownership?.owned.count ?? -1)")
        return (a, b)
    }

    @Test("two fabrics: ownership events first, every slot owned by a or b, disjoint, union all 256, mayOwn")
    func ownershipShared() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let began = ContinuousClock.now
        let (a, b) = try Self.pair(server)
        defer { a.fabric.stop(); b.fabric.stop() }
        let settledAfter = ContinuousClock.now - began
        for node in [a, b] {
            #expect(node.events.snapshot.first == "ownership")
            let first = try #require(node.firstOwnershipAt.withLock { $0 })
            let started = try #require(node.startedAt.withLock { $0 })
            #expect(first - started < .seconds(1), "the first ownership event came \(first - started) after start")
            let ownership = try #require(node.ownership)
            #expect(ownership.liveNodes == ["a", "b"])
            #expect(node.fabric.mayOwn)
            #expect(!ownership.owned.isEmpty)
            #expect(node.fabric.slot(of: "timers/x.y") == SlotMap.slot(of: "timers/x.y"))
        }
        let ownedA = try #require(a.ownership).owned
        let ownedB = try #require(b.ownership).owned
        #expect(ownedA.isDisjoint(with: ownedB))
        #expect(ownedA.union(ownedB) == Set(0..<SlotMap.count))
        // Both see the same table.
        #expect(a.ownership?.owners == b.ownership?.owners)
        print("fabric ownership: settled in \(settledAfter), a owns \(ownedA.count), b owns \(ownedB.count), claims \(a.fabric.membershipStats.claimsWon)+\(b.fabric.membershipStats.claimsWon)")
    }

    @Test("send/answer: round trip a→b with tickets matched; a node that does not exist times out once; a late reply is dropped; sends at and after stop fail once")
    func requestReply() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let held = Collector<ClusterRequest>()
        // b echoes the payload reversed, after "b:"; a request "hold" is left to the test.
        let (a, b) = try Self.pair(server) { request in
            if request.payload == Array("hold".utf8) {
                held.add(request)
                return nil
            }
            return Array("b:".utf8) + request.payload.reversed()
        }
        defer { a.fabric.stop(); b.fabric.stop() }

        // 200 round trips, answered in any order, each ticket exactly once with its own payload.
        let count = 200
        let began = ContinuousClock.now
        for ticket in 1...UInt64(count) {
            a.fabric.send(Array("request \(ticket)".utf8), to: "b", ticket: ticket, timeoutMs: 5000)
        }
        let answers = a.answers.wait(for: count, timeout: .seconds(10))
        let roundTrips = ContinuousClock.now - began
        #expect(answers.count == count)
        #expect(Set(answers.map(\.ticket)) == Set(1...UInt64(count)))
        for answer in answers {
            let payload = try answer.result.get()
            #expect(payload == Array("b:".utf8) + Array("request \(answer.ticket)".utf8).reversed())
        }
        #expect(b.requests.snapshot.allSatisfy { $0.from == "a" })
        #expect(b.requests.count == count)

        // A node nobody serves: NATS says "no responders" at once, and the
        // send fails unreachable, well before its timeout.
        let sent = ContinuousClock.now
        a.fabric.send(Array("anyone?".utf8), to: "nobody", ticket: 1000, timeoutMs: 3000)
        #expect(a.answers.wait(for: count + 1, timeout: .seconds(5)).count == count + 1)
        let waited = ContinuousClock.now - sent
        #expect(a.answers(for: 1000).count == 1)
        if case .failure(.unreachable(let node, _))? = a.answers(for: 1000).first {
            #expect(node == "nobody")
        } else {
            Issue.record("ticket 1000 was answered \(a.answers(for: 1000))")
        }
        #expect(waited < .milliseconds(1500), "the failure came after \(waited)")
        #expect(a.fabric.stats.noResponders == 1)

        // A reply after the timeout is dropped: b holds the request until a timed out.
        a.fabric.send(Array("hold".utf8), to: "b", ticket: 1001, timeoutMs: 200)
        #expect(a.answers.wait(for: count + 2, timeout: .seconds(5)).count == count + 2)
        #expect(a.answers(for: 1001).count == 1)
        #expect(a.answers(for: 1001).first.map { if case .failure(.timeout) = $0 { true } else { false } } == true)
        let request = try #require(held.wait(for: 1, timeout: .seconds(5)).first)
        b.fabric.answer(request.id, payload: Array("too late".utf8))
        #expect(poll(timeout: .seconds(5)) { a.fabric.stats.lateReplies == 1 })

        // A duplicate ticket while the first waits: the second send fails at once, the first is still answered.
        a.fabric.send(Array("hold".utf8), to: "b", ticket: 1002, timeoutMs: 400)
        a.fabric.send(Array("hold".utf8), to: "b", ticket: 1002, timeoutMs: 400)
        #expect(a.answers.wait(for: count + 4, timeout: .seconds(5)).count == count + 4)
        let duplicates = a.answers(for: 1002)
        #expect(duplicates.count == 2)
        #expect(duplicates.contains { if case .failure(.unreachable) = $0 { true } else { false } })
        #expect(duplicates.contains { if case .failure(.timeout) = $0 { true } else { false } })

        // Waiting at stop: answered unreachable by stop; after stop: unreachable at once.
        a.fabric.send(Array("hold".utf8), to: "b", ticket: 1003, timeoutMs: 60_000)
        let stopping = ContinuousClock.now
        a.fabric.stop()
        #expect(ContinuousClock.now - stopping < .seconds(5))
        a.fabric.send(Array("after".utf8), to: "b", ticket: 1004, timeoutMs: 60_000)
        #expect(a.answers.wait(for: count + 6, timeout: .seconds(2)).count == count + 6)
        for ticket: UInt64 in [1003, 1004] {
            let results = a.answers(for: ticket)
            #expect(results.count == 1)
            #expect(results.first.map { if case .failure(.unreachable(node: "b", _)) = $0 { true } else { false } } == true,
                    "ticket \(ticket): \(results)")
        }
        // Nothing more comes: every ticket answered once (a bounded wait for an extra answer).
        #expect(a.answers.wait(for: count + 7, timeout: .milliseconds(500)).count == count + 6)
        let stats = a.fabric.stats
        #expect(stats.sends == count + 6)
        #expect(stats.answered == count)
        #expect(stats.timeouts == 2)
        #expect(stats.unreachable == 4)
        print("fabric request/reply: \(count) round trips in \(roundTrips), timeout after \(waited), stats \(stats)")
    }

    @Test("exactly one answer per send when timeouts race replies (half with 0–3 ms timeouts, sends from 4 threads)")
    func timeoutsRaceReplies() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let (a, b) = try Self.pair(server) { request in request.payload }
        defer { a.fabric.stop(); b.fabric.stop() }
        let count = 2000
        DispatchQueue.concurrentPerform(iterations: 4) { lane in
            for index in stride(from: lane, to: count, by: 4) {
                // Odd tickets race their reply (0–3 ms); even ones wait long enough to be answered.
                a.fabric.send(Array("\(index)".utf8), to: "b", ticket: UInt64(index), timeoutMs: index % 2 == 0 ? 5000 : (index / 2) % 4)
            }
        }
        let answers = a.answers.wait(for: count, timeout: .seconds(10))
        #expect(answers.count == count)
        #expect(Set(answers.map(\.ticket)).count == count)
        for answer in answers {
            if case .success(let payload) = answer.result { #expect(payload == Array("\(answer.ticket)".utf8)) }
        }
        // Every reply came back, matched or late; nothing more is delivered.
        #expect(poll(timeout: .seconds(5)) { let stats = a.fabric.stats; return stats.answered + stats.lateReplies == count })
        #expect(a.answers.wait(for: count + 1, timeout: .milliseconds(300)).count == count)
        let stats = a.fabric.stats
        #expect(stats.answered + stats.timeouts == count)
        #expect(stats.answered >= count / 2)
        for answer in answers where answer.ticket % 2 == 0 {
            #expect((try? answer.result.get()) != nil, "ticket \(answer.ticket): \(answer.result)")
        }
        print("fabric race: \(stats.answered) answered, \(stats.timeouts) timed out, \(stats.lateReplies) late replies dropped")
    }

    @Test("the NATS link down: a send fails at once with unreachable, not after its timeout")
    func linkDown() throws {
        let server = try NATSServerProcess.start()
        let (a, b) = try Self.pair(server)
        defer { a.fabric.abandon(); b.fabric.abandon() }
        server.stop()
        #expect(poll(timeout: .seconds(5)) { !a.fabric.isConnected })
        let sent = ContinuousClock.now
        a.fabric.send(Array("x".utf8), to: "b", ticket: 7, timeoutMs: 10_000)
        let answers = a.answers.wait(for: 1, timeout: .seconds(2))
        #expect(ContinuousClock.now - sent < .seconds(1))
        #expect(answers.count == 1)
        #expect(answers.first.map { if case .failure(.unreachable(node: "b", _)) = $0.result { true } else { false } } == true)
        // The lease lapses without heartbeats.
        #expect(poll(timeout: .seconds(5)) { !a.fabric.mayOwn })
    }

    @Test("follow/publish: 1,000 pushes arrive in order with seq, except and from; an unfollowed or never followed channel delivers nothing")
    func pushes() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let (a, b) = try Self.pair(server)
        defer { a.fabric.stop(); b.fabric.stop() }
        let channel = "timers/x.y"
        #expect(FabricSubjects.push(channel) == "ot.push.timers.x=y")
        b.fabric.follow(channel)
        b.fabric.follow(channel)  // idempotent: one subscription
        b.fabric.follow("timers/sentinel")
        #expect(b.fabric.followedChannels == ["timers/sentinel", channel])
        try b.fabric.flush()

        // A channel nobody follows, published first: b never gets it.
        for index in 1...10 {
            a.fabric.publish(channel: "timers/other", body: Array("other \(index)".utf8), seq: Int64(index), except: nil)
        }
        let count = 1000
        let began = ContinuousClock.now
        for seq in 1...count {
            a.fabric.publish(channel: channel, body: Array("{\"n\":\(seq)}".utf8), seq: Int64(seq),
                             except: seq % 10 == 0 ? "s-\(seq)" : nil)
        }
        let received = b.pushes.wait(for: count, timeout: .seconds(10))
        let elapsed = ContinuousClock.now - began
        #expect(received.count == count)
        #expect(received.map(\.seq) == (1...count).map { Int64($0) })
        #expect(received.map(\.except) == (1...count).map { $0 % 10 == 0 ? "s-\($0)" : nil })
        #expect(received.allSatisfy { $0.channel == channel && $0.from == "a" })
        #expect(received.map(\.body) == (1...count).map { Array("{\"n\":\($0)}".utf8) })

        // A push without seq has none.
        a.fabric.publish(channel: channel, body: Array("tick".utf8), seq: nil, except: nil)
        let tick = try #require(b.pushes.wait(for: count + 1, timeout: .seconds(5)).last)
        #expect(tick.seq == nil && tick.except == nil && tick.body == Array("tick".utf8))

        // Unfollowed: what a publishes next is not delivered. The sentinel,
        // published after it from the same connection, proves the server sent it all.
        b.fabric.unfollow(channel)
        b.fabric.unfollow(channel)
        try b.fabric.flush()
        for seq in 1...100 {
            a.fabric.publish(channel: channel, body: Array("late".utf8), seq: Int64(count + seq), except: nil)
        }
        a.fabric.publish(channel: "timers/sentinel", body: Array("end".utf8), seq: nil, except: nil)
        let all = b.pushes.wait(for: count + 2, timeout: .seconds(5))
        #expect(all.count == count + 2)
        #expect(all.last?.channel == "timers/sentinel")
        #expect(all.filter { $0.channel == channel }.count == count + 1)
        #expect(!all.contains { $0.channel == "timers/other" })
        #expect(b.fabric.followedChannels == ["timers/sentinel"])
        #expect(b.fabric.stats.pushesReceived == count + 2)
        #expect(a.fabric.stats.pushesPublished == 10 + count + 1 + 100 + 1)
        print("fabric pushes: \(count) relayed in order in \(elapsed)")
    }

    @Test("a fabric abandoned (a crash): the other takes every slot within a bounded time")
    func takeoverAfterAbandon() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let (a, b) = try Self.pair(server)
        defer { b.fabric.stop() }
        let orphaned = try #require(a.ownership).owned
        #expect(!orphaned.isEmpty)
        let killed = ContinuousClock.now
        a.fabric.abandon()
        let taken = poll(timeout: .seconds(15), every: .milliseconds(10)) {
            guard let ownership = b.ownership else { return false }
            return ownership.owned == Set(0..<SlotMap.count) && ownership.liveNodes == ["b"] && ownership.ready
        }
        let tookOver = ContinuousClock.now - killed
        #expect(taken, "b owns \(b.ownership?.owned.count ?? -1) slots, sees \(b.ownership?.liveNodes ?? [])")
        #expect(b.fabric.mayOwn)
        // Shrunk intervals: dead after 0.9 s, then claims (b is every slot's only candidate).
        #expect(tookOver < .seconds(6), "the takeover took \(tookOver)")
        #expect(!a.fabric.mayOwn)
        print("fabric takeover: \(orphaned.count) slots taken in \(tookOver)")
    }

    @Test("a fabric stopped gracefully hands its slots over: the other owns them all at once")
    func handoverAtStop() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let (a, b) = try Self.pair(server)
        defer { b.fabric.stop() }
        let stopping = ContinuousClock.now
        a.fabric.stop()
        let stopTook = ContinuousClock.now - stopping
        let taken = poll(timeout: .seconds(10), every: .milliseconds(10)) {
            b.ownership?.owned == Set(0..<SlotMap.count) && b.ownership?.liveNodes == ["b"]
        }
        let handedOver = ContinuousClock.now - stopping
        #expect(taken)
        #expect(stopTook < .seconds(5))
        #expect(a.fabric.membershipStats.handovers > 0)
        print("fabric handover: stop took \(stopTook), b owned all after \(handedOver), handovers \(a.fabric.membershipStats.handovers)")
    }

    @Test("names: push subjects map . to =, reply subjects carry the ticket, bad channel names are refused")
    func subjects() {
        #expect(FabricSubjects.push("timers/my.list") == "ot.push.timers.my=list")
        #expect(FabricSubjects.push("laps/a") == "ot.push.laps.a")
        for bad in ["timers", "timers/a b", "timers/>", "timers/*", "Timers/x", "timers/a/b"] {
            #expect(FabricSubjects.push(bad) == nil, "\(bad)")
        }
        #expect(FabricSubjects.request("n-1") == "ot.node.n-1.req")
        #expect(FabricSubjects.ticket(ofReply: FabricSubjects.replyPrefix("a") + "18446744073709551615") == UInt64.max)
        #expect(FabricSubjects.ticket(ofReply: "ot.reply.a.x") == nil)
    }

    @Test("a bad node name is refused by init, and no connection is left open")
    func badNodeName() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        #expect(throws: MembershipError.self) {
            _ = try NATSClusterFabric(options: ClusterFabricOptions(servers: [server.url], node: "a.b", replicas: 1))
        }
    }
}
