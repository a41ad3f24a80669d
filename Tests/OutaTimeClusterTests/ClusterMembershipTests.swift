import Dispatch
import Foundation
import Synchronization
import NATS
import NATSTestSupport
import OutaTimeCluster
import Testing

/// ClusterMembership against a real nats-server: three members share the
/// 256 slots, take over from a crashed one, receive a graceful handover,
/// fence a member whose heartbeats stop, and settle races by revision.
/// Ownership is checked by reading OT_OWNERS, not only the members' views.
@Suite("ClusterMembership", .serialized)
struct ClusterMembershipTests {
    static let nodes = ["n1", "n2", "n3"]

    /// Three members on `urls`, started together, settled (bounded).
    static func trio(urls: String, reader: OwnersReader, configure: (inout MembershipOptions) -> Void = { _ in }) throws -> [Member] {
        let members = try nodes.map { try Member($0, urls: urls, configure: configure) }
        // Started on three threads at once, so their claims overlap.
        let failures = Collector<String>()
        DispatchQueue.concurrentPerform(iterations: members.count) { index in
            do { try members[index].membership.start() } catch { failures.add("\(error)") }
        }
        #expect(failures.snapshot.isEmpty)
        let ok = try poll(timeout: .seconds(20)) { try settled(members, reader: reader) }
        let holders = try reader.holders().mapValues(\.count)
        #expect(ok, "the three members did not settle: \(holders)")
        return members
    }

    @Test("three members: every slot owned exactly once, spread by HRW, epoch 1, views agree with the store")
    func spread() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let reader = try OwnersReader(urls: server.url)
        defer { reader.close() }
        let members = try Self.trio(urls: server.url, reader: reader) { $0.policy.rebalanceAfter = nil }
        defer { members.forEach { $0.close() } }
        let table = try reader.table()
        let holders = try reader.holders()
        #expect(holders.values.map(\.count).reduce(0, +) == SlotMap.count)
        for member in members {
            let count = holders[member.node]?.count ?? 0
            #expect((60...120).contains(count), "\(member.node) owns \(count)")
            let snapshot = member.snapshot
            #expect(snapshot.liveNodes == Self.nodes)
            #expect(snapshot.table.map { $0?.node } == table.map { $0?.node })
        }
        #expect(table.allSatisfy { $0?.epoch == 1 })
        // Started together, each slot went to its HRW winner.
        for slot in 0..<SlotMap.count {
            #expect(table[slot]?.node == Rendezvous.ranking(slot: slot, among: Self.nodes)[0])
        }
        let stats = members.map { $0.membership.stats }
        print("spread: \(holders.mapValues(\.count)) claims won \(stats.map(\.claimsWon)) lost \(stats.map(\.claimsLost))")
    }

    @Test("a member killed (connection closed, nothing released): survivors take its slots with epoch + 1 (default intervals)")
    func crashTakeover() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let reader = try OwnersReader(urls: server.url)
        defer { reader.close() }
        let members = try Self.trio(urls: server.url, reader: reader)
        defer { members.forEach { $0.close() } }
        let before = try reader.table()
        let victim = members[1]
        let orphaned = Set(before.indices.filter { before[$0]?.node == victim.node })
        let killed = ContinuousClock.now
        victim.close()
        var firstClaim: ContinuousClock.Instant?
        let taken = try poll(timeout: .seconds(15), every: .milliseconds(10)) {
            let holders = try reader.holders()
            if firstClaim == nil, (holders[victim.node]?.count ?? 0) < orphaned.count { firstClaim = .now }
            return holders[victim.node] == nil
        }
        let lastClaim = ContinuousClock.now
        #expect(taken, "the dead member's slots were not all taken")
        let after = try reader.table()
        for slot in 0..<SlotMap.count {
            if orphaned.contains(slot) {
                #expect(after[slot]?.epoch == before[slot]!.epoch + 1)
                #expect(after[slot]?.node == Rendezvous.ranking(slot: slot, among: ["n1", "n3"])[0])
            } else {
                #expect(after[slot] == before[slot])
            }
        }
        #expect(try poll(timeout: .seconds(5)) { try settled([members[0], members[2]], reader: reader) })
        let first = milliseconds(firstClaim.map { $0 - killed } ?? .zero)
        let last = milliseconds(lastClaim - killed)
        print("crash takeover (default intervals, \(orphaned.count) slots): first claim \(first) ms, last claim \(last) ms after the kill")
        #expect(last >= 1000, "a takeover before the dead time would mean a live member was taken for dead")
    }

    @Test("graceful stop: the slots go at once to their HRW winner among the others, epoch + 1")
    func gracefulHandover() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let reader = try OwnersReader(urls: server.url)
        defer { reader.close() }
        let members = try Self.trio(urls: server.url, reader: reader)
        defer { members.forEach { $0.close() } }
        let before = try reader.table()
        let leaving = members[0]
        let handed = Set(before.indices.filter { before[$0]?.node == leaving.node })
        let began = ContinuousClock.now
        leaving.membership.stop()
        let returned = ContinuousClock.now
        #expect(try reader.holders()[leaving.node] == nil)
        let after = try reader.table()
        for slot in handed {
            #expect(after[slot]?.epoch == before[slot]!.epoch + 1)
            #expect(after[slot]?.node == Rendezvous.ranking(slot: slot, among: ["n2", "n3"])[0])
        }
        #expect(leaving.membership.stats.handovers == handed.count)
        var seen: ContinuousClock.Instant?
        let adopted = try poll(timeout: .seconds(5), every: .milliseconds(5)) {
            let done = try settled([members[1], members[2]], reader: reader)
            if done { seen = .now }
            return done
        }
        #expect(adopted)
        // When each survivor first reported owning its share (from its own reports, not the polling).
        let reported = members[1...].compactMap { member in
            member.firstReport { $0.ready && handed.filter { after[$0]?.node == member.node }.allSatisfy($0.owned.keys.contains) }
        }
        #expect(reported.count == 2)
        let adoptedAt = reported.max() ?? seen ?? returned
        print("graceful handover (\(handed.count) slots): stop() returned after \(milliseconds(returned - began)) ms; the survivors reported owning them \(milliseconds(adoptedAt - began)) ms after stop() began")
    }

    @Test("a member whose heartbeats stop fences itself before the others take its slots; back, it claims none of them while they live",
          arguments: [true, false])
    func selfFence(shrunk: Bool) throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let reader = try OwnersReader(urls: server.url)
        defer { reader.close() }
        let members = try Self.trio(urls: server.url, reader: reader) {
            if shrunk { $0.shrink() }
            $0.policy.rebalanceAfter = nil
        }
        defer { members.forEach { $0.close() } }
        let frozen = members[2]
        let before = try reader.table()
        let its = Set(before.indices.filter { before[$0]?.node == frozen.node })
        let paused = ContinuousClock.now
        frozen.membership.pauseHeartbeats(true)
        var firstTaken: ContinuousClock.Instant?
        var leaseEnd: ContinuousClock.Instant?  // the latest end of its lease seen while it still had one
        let allTaken = try poll(timeout: .seconds(10), every: .milliseconds(5)) {
            if let lease = frozen.membership.leaseValidUntil { leaseEnd = max(leaseEnd ?? lease, lease) }
            let holders = try reader.holders()
            if firstTaken == nil, (holders[frozen.node]?.count ?? 0) < its.count { firstTaken = .now }
            return holders[frozen.node] == nil
        }
        #expect(allTaken)
        let fencedAt = frozen.firstReport { $0.fenced }
        #expect(fencedAt != nil, "the member never reported itself fenced")
        // The safety fact: its lease (what the server checks before acting)
        // ended before any of its slots was taken. The report of the fence
        // comes on the decision thread, up to a tick later.
        if let leaseEnd, let firstTaken, let fencedAt {
            #expect(leaseEnd < firstTaken, "lease ended \(milliseconds(leaseEnd - paused)) ms, first slot taken \(milliseconds(firstTaken - paused)) ms after the pause")
            print("self-fence (\(shrunk ? "fence 600 ms, dead 900 ms" : "default: fence 1 s, dead 1.5 s")): lease ended \(milliseconds(leaseEnd - paused)) ms, fence reported \(milliseconds(fencedAt - paused)) ms, first slot taken \(milliseconds(firstTaken - paused)) ms after its heartbeats stopped")
        }
        #expect(frozen.membership.leaseValidUntil == nil && frozen.snapshot.owned.isEmpty)
        frozen.membership.pauseHeartbeats(false)
        let back = poll(timeout: .seconds(10)) { frozen.snapshot.ready }
        #expect(back, "the member did not come back after its heartbeats resumed")
        // Observe for a while: it claims nothing back while the others live.
        let deadline = ContinuousClock.now + .seconds(2)
        while ContinuousClock.now < deadline {
            #expect(try reader.holders()[frozen.node] == nil)
            #expect(frozen.snapshot.owned.isEmpty)
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(frozen.snapshot.liveNodes == Self.nodes)
        #expect(frozen.membership.stats.fences == 1 && frozen.membership.stats.claimsWon == its.count)
        #expect(try settled(members, reader: reader))
    }

    @Test("racing claims (no stagger): every slot created exactly once, the revision check refuses the rest")
    func race() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let reader = try OwnersReader(urls: server.url)
        defer { reader.close() }
        let members = try Self.trio(urls: server.url, reader: reader) {
            $0.policy.claimStagger = .zero
            $0.policy.rebalanceAfter = nil
        }
        defer { members.forEach { $0.close() } }
        let stats = members.map { $0.membership.stats }
        #expect(stats.map(\.claimsWon).reduce(0, +) == SlotMap.count)
        #expect(try reader.table().allSatisfy { $0?.epoch == 1 })
        let owned = members.map { Set($0.snapshot.owned.keys) }
        #expect(owned.map(\.count).reduce(0, +) == SlotMap.count && owned.reduce(Set<Int>()) { $0.union($1) }.count == SlotMap.count)
        print("race: claims won \(stats.map(\.claimsWon)), refused by the revision check \(stats.map(\.claimsLost))")
    }

    @Test("rebalancing: a member joining a lone owner gets its HRW share by handover once it has lived rebalanceAfter")
    func rebalance() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let reader = try OwnersReader(urls: server.url)
        defer { reader.close() }
        let configure: (inout MembershipOptions) -> Void = {
            $0.shrink()
            $0.policy.rebalanceAfter = .seconds(1)
        }
        let first = try Member("n1", urls: server.url, configure: configure)
        defer { first.close() }
        try first.membership.start()
        #expect(try poll(timeout: .seconds(10)) { try settled([first], reader: reader) })
        let joining = try Member("n2", urls: server.url, configure: configure)
        defer { joining.close() }
        let joined = ContinuousClock.now
        try joining.membership.start()
        let share = Set((0..<SlotMap.count).filter { Rendezvous.ranking(slot: $0, among: ["n1", "n2"])[0] == "n2" })
        let moved = try poll(timeout: .seconds(10)) {
            try settled([first, joining], reader: reader) && Set(joining.snapshot.owned.keys) == share
        }
        #expect(moved)
        #expect(try reader.table().enumerated().allSatisfy { share.contains($0.offset) ? $0.element?.epoch == 2 : $0.element?.epoch == 1 })
        print("rebalance: \(share.count) slots moved to the joining member \(milliseconds(ContinuousClock.now - joined)) ms after it started (rebalanceAfter 1 s)")
    }

    @Test("OT_NODES keeps a heartbeat for nodesMaxAge (the design's 10 s): a node gone for good leaves no key for ever; a max age under twice deadAfter is refused")
    func nodesBucketMaxAge() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let member = try Member("n1", urls: server.url) { $0.shrink() }
        defer { member.close() }
        try member.membership.start()
        let connection = try NATSConnection(NATSConnectionOptions(servers: [server.url], name: "reader"))
        defer { connection.close() }
        let nodes = try KeyValueBucket(try JetStream(connection, timeout: .seconds(2)), config: KeyValueConfig(bucket: "OT_NODES"))
        #expect(try nodes.maxAge() == .seconds(10))
        #expect(try nodes.get("n1") != nil)
        let refused = #expect(throws: MembershipError.self) {
            _ = try Member("n2", urls: server.url) { $0.shrink(); $0.nodesMaxAge = .seconds(1) }
        }
        #expect("\(String(describing: refused))".contains("nodesMaxAge"), "\(String(describing: refused))")
    }

    @Test("a live node that never claims (heartbeats only): the next node in its slots' HRW order claims them a stagger later")
    func silentWinner() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let reader = try OwnersReader(urls: server.url)
        defer { reader.close() }
        // "n0" beats every 100 ms through a bare bucket and never claims.
        let connection = try NATSConnection(NATSConnectionOptions(servers: [server.url], name: "n0"))
        defer { connection.close() }
        let beats = try KeyValueBucket(try JetStream(connection, timeout: .seconds(2)), config: KeyValueConfig(bucket: "OT_NODES"))
        let beating = Atomic(true)
        let beater = Thread {
            while beating.load(ordering: .acquiring) {
                _ = try? beats.put("n0", value: Array("{}".utf8))
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        beater.start()
        defer { beating.store(false, ordering: .releasing) }
        Thread.sleep(forTimeInterval: 0.2)
        let configure: (inout MembershipOptions) -> Void = {
            $0.shrink()
            $0.policy.rebalanceAfter = nil
        }
        let members = try ["n1", "n2"].map { try Member($0, urls: server.url, configure: configure) }
        defer { members.forEach { $0.close() } }
        let started = ContinuousClock.now
        for member in members { try member.membership.start() }
        let all = try poll(timeout: .seconds(15)) { try settled(members, reader: reader) }
        #expect(all)
        let table = try reader.table()
        let everyone = ["n0", "n1", "n2"]
        let n0Wins = (0..<SlotMap.count).filter { Rendezvous.ranking(slot: $0, among: everyone)[0] == "n0" }
        for slot in 0..<SlotMap.count {
            let ranking = Rendezvous.ranking(slot: slot, among: everyone)
            #expect(table[slot]?.node == (ranking[0] == "n0" ? ranking[1] : ranking[0]))
        }
        // The winners' own slots were claimed before any of n0's.
        let ownFirst = members.compactMap { member in member.firstReport { !$0.owned.isEmpty } }.max()
        let n0sTaken = members.compactMap { member in member.firstReport { snapshot in n0Wins.contains { snapshot.owned[$0] != nil } } }.min()
        if let ownFirst, let n0sTaken {
            #expect(ownFirst < n0sTaken)
            print("silent winner: own slots claimed \(milliseconds(ownFirst - started)) ms, the silent node's \(n0Wins.count) slots from \(milliseconds(n0sTaken - started)) ms after start (stagger 600 ms)")
        } else {
            Issue.record("no claim reported")
        }
    }
}
