import NATS
@testable import OutaTimeCluster
import Testing

/// The pure core of membership: slots, HRW, liveness, the planner and the
/// lifecycle with its fence, driven by an injected clock (no NATS, no sleep).
@Suite("Membership core")
struct MembershipCoreTests {
    let t0 = ContinuousClock.now

    @Test("slot keys, and slot(of:) is pinned: every node and release must agree")
    func slotMap() {
        #expect(SlotMap.key(of: 0) == "s000" && SlotMap.key(of: 7) == "s007" && SlotMap.key(of: 255) == "s255")
        #expect(SlotMap.slot(ofKey: "s042") == 42 && SlotMap.slot(ofKey: "s256") == nil && SlotMap.slot(ofKey: "n1") == nil)
        #expect(SlotMap.fnv1a64("".utf8) == 0xCBF2_9CE4_8422_2325)
        #expect(SlotMap.fnv1a64("a".utf8) == 0xAF63_DC4C_8601_EC8C)  // the published FNV-1a 64 test vector
        #expect(SlotMap.slot(of: "laps/demo") == Self.pinned["laps/demo"])
        #expect(SlotMap.slot(of: "timers/my.run") == Self.pinned["timers/my.run"])
        var counts = [Int](repeating: 0, count: SlotMap.count)
        for n in 0..<25_600 { counts[SlotMap.slot(of: "laps/run-\(n)")] += 1 }
        #expect(counts.min()! >= 50 && counts.max()! <= 150, "100 a slot expected, got \(counts.min()!)…\(counts.max()!)")
    }

    static let pinned = ["laps/demo": 86, "timers/my.run": 229]

    @Test("HRW: deterministic, spread over three nodes, and a node leaving moves only its slots")
    func rendezvous() {
        let nodes = ["n1", "n2", "n3"]
        var share: [String: Int] = [:]
        var moved = 0
        for slot in 0..<SlotMap.count {
            let ranking = Rendezvous.ranking(slot: slot, among: nodes)
            #expect(ranking == Rendezvous.ranking(slot: slot, among: nodes.reversed()))
            #expect(Set(ranking) == Set(nodes))
            share[ranking[0], default: 0] += 1
            let without = Rendezvous.ranking(slot: slot, among: ["n1", "n3"])
            if ranking[0] != "n2" { #expect(without[0] == ranking[0]) } else { moved += 1; #expect(without[0] == ranking[1]) }
        }
        #expect(share.values.allSatisfy { (60...120).contains($0) }, "\(share)")
        #expect(moved == share["n2"])
    }

    @Test("liveness: alive while revisions arrive within deadAfter; a deleted key is dead at once; a stale key dies")
    func view() {
        var view = MembershipView(deadAfter: .milliseconds(1500), started: t0)
        view.observe(node: "n1", revision: 5, at: t0)
        view.observe(node: "n2", revision: 6, at: t0)
        #expect(view.isAlive("n1", at: t0 + .milliseconds(1499)))
        #expect(!view.isAlive("n1", at: t0 + .milliseconds(1500)))
        let news = view.observe(node: "n1", revision: 5, at: t0 + .seconds(1))
        #expect(!news)  // same revision: no news
        #expect(!view.isAlive("n1", at: t0 + .milliseconds(1600)))
        view.observe(node: "n1", revision: 9, at: t0 + .seconds(1))
        #expect(view.isAlive("n1", at: t0 + .milliseconds(2400)))
        #expect(view.aliveSince("n1", at: t0 + .seconds(2)) == t0)
        view.observe(node: "n1", revision: 12, at: t0 + .seconds(5))  // back after a death: a new run
        #expect(view.aliveSince("n1", at: t0 + .seconds(5)) == t0 + .seconds(5))
        view.observeDeleted(node: "n2", revision: 13, at: t0 + .milliseconds(100))
        #expect(!view.isAlive("n2", at: t0 + .milliseconds(100)))
        #expect(view.deathTime(of: "ghost") == t0 + .milliseconds(1500))
        var blind = view
        blind.renew(at: t0 + .seconds(9))  // after a fence: n1 gets a fresh dead time, n2 stays gone
        #expect(blind.liveNodes(at: t0 + .seconds(10)) == ["n1"] && blind.aliveSince("n1", at: t0 + .seconds(9)) == t0 + .seconds(9))
        #expect(view.liveNodes(at: t0 + .seconds(5)) == ["n1"])
    }

    func live(_ nodes: [String], at time: ContinuousClock.Instant, deadAfter: Duration = .milliseconds(1500)) -> MembershipView {
        var view = MembershipView(deadAfter: deadAfter, started: t0)
        for (index, node) in nodes.enumerated() { view.observe(node: node, revision: UInt64(index + 1), at: time) }
        return view
    }

    @Test("free slots: the HRW winner claims after the startup grace (create), the next one a stagger later")
    func freeSlots() {
        let view = live(["n1", "n2", "n3"], at: t0)
        let table = SlotTable(now: t0)
        let planner = OwnershipPlanner(node: "n2", policy: OwnershipPolicy())
        #expect(planner.writes(table: table, view: view, owned: [], startedAt: t0, now: t0 + .milliseconds(100)).isEmpty)
        let first = planner.writes(table: table, view: view, owned: [], startedAt: t0, now: t0 + .milliseconds(600))
        let won = (0..<SlotMap.count).filter { Rendezvous.ranking(slot: $0, among: ["n1", "n2", "n3"])[0] == "n2" }
        #expect(first.map(\.slot) == won)
        #expect(first.allSatisfy { $0.expectedRevision == 0 && $0.record == SlotRecord(node: "n2", epoch: 1) && $0.reason == .claim })
        let second = planner.writes(table: table, view: view, owned: [], startedAt: t0, now: t0 + .milliseconds(1100))
        let secondOrBetter = (0..<SlotMap.count).filter { Rendezvous.ranking(slot: $0, among: ["n1", "n2", "n3"]).prefix(2).contains("n2") }
        #expect(second.map(\.slot) == secondOrBetter)
    }

    @Test("orphans: a dead holder's slot goes to the first live node in HRW order, epoch + 1, revision-checked")
    func orphans() {
        var table = SlotTable(now: t0)
        for slot in 0..<SlotMap.count { table.apply(slot: slot, record: SlotRecord(node: "n3", epoch: 4), revision: UInt64(100 + slot), at: t0) }
        var view = live(["n1", "n2", "n3"], at: t0)
        view.observe(node: "n1", revision: 10, at: t0 + .seconds(1))
        view.observe(node: "n2", revision: 11, at: t0 + .seconds(1))
        let n1 = OwnershipPlanner(node: "n1", policy: OwnershipPolicy())
        #expect(n1.writes(table: table, view: view, owned: [], startedAt: t0, now: t0 + .milliseconds(1400)).isEmpty)  // n3 still alive
        // Dead by the clock, but n1's own beat has not come back since: its watch may have stalled.
        #expect(n1.writes(table: table, view: view, owned: [], startedAt: t0, now: t0 + .milliseconds(1600)).isEmpty)
        let now = t0 + .milliseconds(1600)
        view.observe(node: "n1", revision: 30, at: now)
        let writes = n1.writes(table: table, view: view, owned: [], startedAt: t0, now: now)
        let mine = (0..<SlotMap.count).filter { Rendezvous.ranking(slot: $0, among: ["n1", "n2"])[0] == "n1" }
        #expect(writes.map(\.slot) == mine)
        #expect(writes.allSatisfy { $0.expectedRevision == UInt64(100 + $0.slot) && $0.record == SlotRecord(node: "n1", epoch: 5) })
        // n2 lives but has not claimed its share: a stagger (1 s) later n1 claims it too.
        view.observe(node: "n2", revision: 31, at: t0 + .seconds(2))
        #expect(n1.writes(table: table, view: view, owned: [], startedAt: t0, now: now + .milliseconds(899)).count == mine.count)
        #expect(n1.writes(table: table, view: view, owned: [], startedAt: t0, now: now + .seconds(1)).count == SlotMap.count)
    }

    @Test("a holder that left gracefully (heartbeat deleted) is left handoverWait to hand its slots over")
    func leftGracefully() {
        var table = SlotTable(now: t0)
        table.apply(slot: 9, record: SlotRecord(node: "n3", epoch: 1), revision: 4, at: t0)
        var view = live(["n1", "n3"], at: t0)
        view.observeDeleted(node: "n3", revision: 20, at: t0 + .milliseconds(100))
        view.observe(node: "n1", revision: 21, at: t0 + .milliseconds(200))
        let planner = OwnershipPlanner(node: "n1", policy: OwnershipPolicy())
        let early = planner.writes(table: table, view: view, owned: [], startedAt: t0, now: t0 + .milliseconds(1099))
        let due = planner.writes(table: table, view: view, owned: [], startedAt: t0, now: t0 + .milliseconds(1100))
        #expect(!early.contains { $0.slot == 9 })
        #expect(due.first { $0.slot == 9 } == SlotWrite(slot: 9, expectedRevision: 4, record: SlotRecord(node: "n1", epoch: 2), reason: .claim))
    }

    @Test("own slots: kept while owned, claimed again (epoch + 1) when held by name only; rebalanced to a winner alive long enough")
    func ownSlots() {
        var table = SlotTable(now: t0)
        for slot in 0..<SlotMap.count { table.apply(slot: slot, record: SlotRecord(node: "n1", epoch: 2), revision: UInt64(slot + 1), at: t0) }
        let view = live(["n1", "n2"], at: t0)
        var policy = OwnershipPolicy()
        policy.rebalanceAfter = nil
        let kept = OwnershipPlanner(node: "n1", policy: policy)
        #expect(kept.writes(table: table, view: view, owned: Set(0..<SlotMap.count), startedAt: t0, now: t0 + .seconds(1)).isEmpty)
        let again = kept.writes(table: table, view: view, owned: [], startedAt: t0, now: t0 + .seconds(1))
        #expect(again.count == SlotMap.count && again.allSatisfy { $0.record == SlotRecord(node: "n1", epoch: 3) && $0.reason == .claim })
        policy.rebalanceAfter = .milliseconds(800)
        let rebalancing = OwnershipPlanner(node: "n1", policy: policy)
        #expect(rebalancing.writes(table: table, view: view, owned: Set(0..<SlotMap.count), startedAt: t0, now: t0 + .milliseconds(700)).isEmpty)
        let moves = rebalancing.writes(table: table, view: view, owned: Set(0..<SlotMap.count), startedAt: t0, now: t0 + .milliseconds(900))
        let n2wins = (0..<SlotMap.count).filter { Rendezvous.ranking(slot: $0, among: ["n1", "n2"])[0] == "n2" }
        #expect(moves.map(\.slot) == n2wins)
        #expect(moves.allSatisfy { $0.record == SlotRecord(node: "n2", epoch: 3) && $0.reason == .handover })
    }

    @Test("graceful stop: owned slots go to their winner among the others (epoch + 1), or are released when alone (same epoch)")
    func handovers() {
        var table = SlotTable(now: t0)
        for slot in 0..<4 { table.apply(slot: slot, record: SlotRecord(node: "n1", epoch: 7), revision: 50, at: t0) }
        table.apply(slot: 4, record: SlotRecord(node: "n9", epoch: 8), revision: 51, at: t0)  // taken meanwhile: left alone
        let planner = OwnershipPlanner(node: "n1", policy: OwnershipPolicy())
        let toOthers = planner.handovers(table: table, view: live(["n1", "n2", "n3"], at: t0), owned: [0, 1, 2, 3, 4], now: t0)
        #expect(toOthers.map(\.slot) == [0, 1, 2, 3])
        for write in toOthers {
            #expect(write.record == SlotRecord(node: Rendezvous.ranking(slot: write.slot, among: ["n2", "n3"])[0], epoch: 8))
            #expect(write.expectedRevision == 50 && write.reason == .handover)
        }
        let alone = planner.handovers(table: table, view: live(["n1"], at: t0), owned: [0, 1], now: t0)
        #expect(alone.map(\.record) == [SlotRecord(node: nil, epoch: 7), SlotRecord(node: nil, epoch: 7)])
    }

    func entry(_ key: String, _ value: String, _ revision: UInt64) -> MembershipState.Change {
        .put(key: key, value: Array(value.utf8), revision: revision)
    }

    @Test("lifecycle: running once acked and caught up; fenced when no put sent within fenceAfter was acked; re-read before running again")
    func fence() {
        var policy = OwnershipPolicy()
        policy.startupGrace = .zero
        var state = MembershipState(node: "n1", policy: policy, deadAfter: .milliseconds(1500), fenceAfter: .seconds(1), now: t0)
        state.heartbeatAcked(sentAt: t0, revision: 1)
        state.apply(.caughtUp, from: .owners, generation: 0, at: t0)
        let step1 = state.step(at: t0)
        #expect(step1 == .none && state.phase == .starting)
        state.apply(entry("n1", "{}", 1), from: .nodes, generation: 0, at: t0)
        state.apply(.caughtUp, from: .nodes, generation: 0, at: t0)
        guard case .write(let claims) = state.step(at: t0 + .milliseconds(10)) else { Issue.record("no claims"); return }
        #expect(claims.count == SlotMap.count && state.phase == .running)  // alone: every free slot
        for claim in claims { state.stored(claim, revision: UInt64(claim.slot + 10), at: t0) }
        #expect(state.snapshot(at: t0).owned.count == SlotMap.count)
        #expect(state.leaseValidUntil(at: t0 + .milliseconds(999)) == t0 + .seconds(1))
        let step2 = state.step(at: t0 + .milliseconds(999))
        #expect(step2 == .none && state.phase == .running)
        let step3 = state.step(at: t0 + .seconds(1))
        #expect(step3 == .none && state.phase == .fenced)
        let fenced = state.snapshot(at: t0 + .seconds(1))
        #expect(fenced.fenced && !fenced.ready && fenced.owned.isEmpty && fenced.table.compactMap { $0 }.count == SlotMap.count)
        #expect(state.leaseValidUntil(at: t0 + .seconds(1)) == nil && state.stats.fences == 1)
        let step4 = state.step(at: t0 + .seconds(2))
        #expect(step4 == .none)  // no ack: stays fenced
        state.heartbeatAcked(sentAt: t0 + .seconds(2), revision: 2)
        let step5 = state.step(at: t0 + .seconds(2))
        #expect(step5 == .restartWatches && state.phase == .rereading && state.generation == 1)
        // Meanwhile n2 took slot 0; an event of the old watch is ignored.
        state.apply(entry("s001", #"{"node":"n2","epoch":2}"#, 900), from: .owners, generation: 0, at: t0 + .seconds(2))
        state.apply(entry("s000", #"{"node":"n2","epoch":2}"#, 901), from: .owners, generation: 1, at: t0 + .seconds(2))
        state.apply(entry("n2", "{}", 902), from: .nodes, generation: 1, at: t0 + .seconds(2))
        state.apply(.caughtUp, from: .owners, generation: 1, at: t0 + .seconds(2))
        state.apply(.caughtUp, from: .nodes, generation: 1, at: t0 + .seconds(2))
        guard case .write(let reclaims) = state.step(at: t0 + .seconds(2)) else { Issue.record("no re-claims"); return }
        #expect(reclaims.count == SlotMap.count - 1 && !reclaims.contains { $0.slot == 0 })
        #expect(reclaims.allSatisfy { $0.record.epoch == 2 })
        state.refused(reclaims[0])
        guard case .write(let retry) = state.step(at: t0 + .seconds(2)) else { Issue.record("no retry"); return }
        #expect(retry.count == reclaims.count - 1)  // the refused one waits for the table to move
        #expect(state.stats.claimsLost == 1 && state.stats.claimsWon == SlotMap.count)
    }

    @Test("a member whose own acknowledged beats stop coming back through its nodes watch (a stalled watch) re-reads as after a fence")
    func staleWatch() {
        var policy = OwnershipPolicy()
        policy.startupGrace = .zero
        var state = MembershipState(node: "n1", policy: policy, deadAfter: .milliseconds(1500), fenceAfter: .seconds(1), now: t0)
        state.heartbeatAcked(sentAt: t0, revision: 1)
        state.apply(.put(key: "n1", value: [], revision: 1), from: .nodes, generation: 0, at: t0)
        state.apply(.caughtUp, from: .nodes, generation: 0, at: t0)
        state.apply(.caughtUp, from: .owners, generation: 0, at: t0)
        _ = state.step(at: t0)
        #expect(state.phase == .running)
        // Beats keep being acked every 250 ms, but the watch shows none of them.
        var time = t0
        for revision in 2...7 {
            time = t0 + .milliseconds(250 * (revision - 1))
            state.heartbeatAcked(sentAt: time, revision: UInt64(revision))
            _ = state.step(at: time)
        }
        #expect(state.phase == .running)  // 1.5 s after the first unechoed beat (at 250 ms) is 1,750 ms
        state.heartbeatAcked(sentAt: t0 + .milliseconds(1750), revision: 9)
        _ = state.step(at: t0 + .milliseconds(1750))
        #expect(state.phase == .fenced && state.stats.staleWatches == 1 && state.stats.fences == 0)
        let next = state.step(at: t0 + .milliseconds(1760))
        #expect(next == .restartWatches)
    }

    @Test("records: JSON shape, a free slot keeps its epoch, garbage reads as free")
    func records() {
        #expect(String(decoding: SlotRecord(node: "n1", epoch: 3).encoded, as: UTF8.self).contains(#""node":"n1""#))
        #expect(SlotRecord(decoding: Array(#"{"node":"n2","epoch":9}"#.utf8)) == SlotRecord(node: "n2", epoch: 9))
        #expect(SlotRecord(decoding: SlotRecord(node: nil, epoch: 4).encoded) == SlotRecord(node: nil, epoch: 4))
        #expect(SlotRecord(decoding: Array("junk".utf8)) == nil)
    }
}
