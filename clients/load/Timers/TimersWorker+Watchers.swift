import struct Foundation.Date
import UV

/// The watchers: connections that subscribe to one list once it is filled
/// and check every tick: each timer's countdown and the list's reference
/// countdown step by exactly one second per tick, and how late it came.
extension TimersWorker {
    func openWatcher(list: Int, number: Int) {
        let connection = LoadConnection(loop: loop)
        let watcher = Watcher(connection: connection, list: list, number: number)
        watchers.append(watcher)
        handshake(connection, name: "watcher \(number) of list \(list)") { [unowned self, unowned watcher] body in
            self.watcherReceived(body, watcher)
        }
        connection.open(plan.address) { [unowned self] in connection.send(LoadConnection.hello(name: "load-watch-\(list)-\(number)")) }
    }

    func subscribe(_ watcher: Watcher) {
        watcher.connection.send(#"{"type":"subscribe","id":2,"channel":"\#(plan.channelPrefix)-\#(watcher.list)"}"#)
    }

    /// Handles one frame to a watcher; true once its `hello` is answered.
    private func watcherReceived(_ body: UnsafeRawBufferPointer, _ watcher: Watcher) -> Bool {
        switch TimerFrame.classify(body) {
        case .tick(let entries, let at):
            tick(entries, due: at, to: watcher, arrived: Date().timeIntervalSince1970)
        case .started(let id, let remaining):
            if watcher.anchorID == nil {
                watcher.anchorID = id
                watcher.anchorRemaining = remaining
            }
        case .reply(id: 1?, _, error: nil):
            helloAnswered(body, on: watcher.connection)
            tally.watchersConnected.add(1, ordering: .relaxed)
            return true
        case .reply(id: 2?, _, error: nil):
            tally.watchersSubscribed.add(1, ordering: .relaxed)
        case .reply(let id, _, let error):
            tally.recordError("watcher \(watcher.number) of list \(watcher.list): request \(id.map(String.init) ?? "?") \(error.map { "refused: \($0)" } ?? "unexpected")")
            return id == 1
        case .failure(let reason):
            tally.recordError("watcher \(watcher.number) of list \(watcher.list): \(reason)")
        case .tickNotRead, .other:
            break
        }
        return false
    }

    /// Checks one tick: every timer's countdown moves by exactly one second
    /// since the previous tick, and so does the list's reference countdown
    /// (the first started timer), whose seconds give the tick's due time.
    private func tick(_ entries: [(id: Int, remaining: Int)], due: Double?, to watcher: Watcher, arrived: Double) {
        tally.ticksSeen.add(1, ordering: .relaxed)
        if measuring {
            tally.ticks.add(1, ordering: .relaxed)
            tally.updates.add(entries.count, ordering: .relaxed)
        }
        // Counted apart during the setup, when the figures are not measured.
        let checks = measuring ? tally.measured : tally.setup
        var missed = 0
        var duplicated = 0
        for (id, remaining) in entries {
            guard id >= 0, id < 100_000_000 else {
                tally.recordError("list \(watcher.list): tick with timer id \(id)")
                continue
            }
            if id >= watcher.last.count {
                watcher.last.append(contentsOf: repeatElement(-1, count: id + 1 - watcher.last.count))
            }
            let previous = watcher.last[id]
            watcher.last[id] = remaining
            if previous >= 0 {
                switch previous - remaining {
                case 1: break
                case 0: duplicated += 1
                case let gone where gone > 1: missed += gone - 1
                default: tally.recordError("list \(watcher.list) timer \(id): remaining_s rose from \(previous) to \(remaining)")
                }
            }
            guard id == watcher.anchorID else { continue }
            let second = watcher.anchorRemaining - remaining
            if let lastSecond = watcher.lastSecond {
                switch second - lastSecond {
                case 1: break
                case 0: checks.duplicatedTicks.add(1, ordering: .relaxed)
                case let gone where gone > 1: checks.missedTicks.add(gone - 1, ordering: .relaxed)
                default: tally.recordError("list \(watcher.list): tick for second \(second) after second \(lastSecond)")
                }
            }
            watcher.lastSecond = second
        }
        // Lateness: arrival (this machine's wall clock, which the server's
        // clock also follows) against the second the tick stands for.
        if measuring, let due {
            _ = lateness.record(UInt64(max(1, ((arrived - due) * 1_000_000).rounded())))
            if arrived - due > TimersTally.lateThresholdSeconds { tally.lateTicks.add(1, ordering: .relaxed) }
        }
        if missed > 0 { checks.missedUpdates.add(missed, ordering: .relaxed) }
        if duplicated > 0 { checks.duplicatedUpdates.add(duplicated, ordering: .relaxed) }
    }
}
