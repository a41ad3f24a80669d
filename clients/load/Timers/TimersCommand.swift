import ArgumentParser
import Foundation
import Histogram
import UV

/// `outatime-load timers`: T running countdowns over L lists, W watchers per list.
struct TimersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timers",
        abstract: "Many running countdowns watched by many connections: ticks/s, tick lateness, missed ticks.",
        discussion: """
        Setup: one viewer connection per list `timers/load-<run>-<n>` subscribes and adds the list's \
        share of --timers (--pipeline `add`s in flight); once every watcher is subscribed it views each \
        timer with `start`, so that the timer runs (a timer runs only while viewed: the viewer stays \
        connected). --watchers connections per list subscribe and check every `tick` (one per second \
        per list). The lists' first countdowns start spread over one second, as countdowns started by \
        people would be, so the lists' ticks are spread over the second too.

        Measured for --duration seconds after the setup: tick frames and timer updates (entries of \
        tick.timers) delivered per second to the watchers, and tick lateness: arrival versus the second \
        the tick stands for (its `at`, to the millisecond, read on this machine's clock: run the harness \
        on the server's machine).

        Exit status 1 on a missed tick (a countdown jumping by more than 1 between consecutive ticks), \
        a duplicated one (no change), a stall or any error. Needs an open-file limit of at least \
        lists × (watchers + 1) + 64 (`ulimit -n`).
        """
    )

    @OptionGroup var options: LoadOptions

    @Option(help: ArgumentHelp("Running timers in all (1…10000000), spread evenly over the lists.", valueName: "count"))
    var timers: Int = 100_000

    @Option(help: ArgumentHelp("Timer lists (channels), each with one viewer connection (1…timers).", valueName: "count"))
    var lists: Int = 1_000

    @Option(help: ArgumentHelp("Watcher connections subscribed to each list (1…1000).", valueName: "count"))
    var watchers: Int = 10

    @Option(help: ArgumentHelp("`add` commands in flight per viewer connection during setup (1…1000).", valueName: "count"))
    var pipeline: Int = 32

    @OptionGroup var opening: OpeningOptions

    @Option(help: ArgumentHelp("Give up when the setup (connect, add, subscribe, start) takes longer (seconds).", valueName: "seconds"))
    var setupTimeout: Double = 300

    func validate() throws {
        try options.validateShared()
        guard (1...10_000_000).contains(timers) else { throw ValidationError("--timers must be 1…10000000, got \(timers)") }
        guard (1...timers).contains(lists) else {
            throw ValidationError("--lists must be 1…\(timers) (every list needs at least one of the --timers), got \(lists)")
        }
        guard (1...1_000).contains(watchers) else { throw ValidationError("--watchers must be 1…1000 per list, got \(watchers)") }
        guard lists * (watchers + 1) <= 1_000_000 else {
            throw ValidationError("--lists × (--watchers + 1) connections must be at most 1000000, got \(lists * (watchers + 1))")
        }
        guard (1...1_000).contains(pipeline) else { throw ValidationError("--pipeline must be 1…1000, got \(pipeline)") }
        guard setupTimeout > 0 else { throw ValidationError("--setup-timeout must be positive, got \(setupTimeout)") }
    }

    func run() throws {
        let (address, fileLimit) = try options.prepareRun()
        let connections = lists * (watchers + 1)
        try LoadOptions.requireFiles(for: connections, limit: fileLimit,
                                     cause: "--lists \(lists) × (--watchers \(watchers) + 1) = \(connections) connections",
                                     remedy: "use fewer lists or watchers")
        let run = String(UUID().uuidString.lowercased().prefix(8))
        let prefix = "timers/load-\(run)"
        let loops = min(options.loops, connections)
        // Outlasts the whole setup and the measurement, with room to spare.
        let remainingS = Int((setupTimeout + options.duration).rounded(.up)) + 120
        let plans = (0..<loops).map { index in
            TimersPlan(
                index: index, address: address, channelPrefix: prefix,
                viewers: stride(from: index, to: lists, by: loops).map { list in
                    (list, LoadOptions.share(of: timers, loop: list, loops: lists))
                },
                watchers: stride(from: index, to: lists * watchers, by: loops).map { ($0 / watchers, $0 % watchers) },
                remainingS: remainingS, pipeline: pipeline,
                concurrency: LoadOptions.share(of: opening.concurrency, loop: index, loops: loops), totalLists: lists)
        }
        let tallies = (0..<loops).map { _ in TimersTally() }
        let directory = WorkerDirectory<TimersOrder>()
        let startNs = Loop.hrtime
        let threads = WorkerThreads(count: loops, makeWorker: { index, loop in
            let worker = TimersWorker(loop: loop, plan: plans[index], tally: tallies[index])
            directory.register(try worker.start(), at: index)
            return worker
        }, onStartFailure: { index, error in tallies[index].recordError("worker \(index) did not start: \(error)") })

        let outcome = drive(tallies: tallies, directory: directory, startNs: startNs)
        directory.broadcast(.finish)
        if !threads.join(within: 10) { tallies[0].recordError("workers did not stop within 10 s") }

        let lateness = WorkerTally.mergedLatency(tallies)
        let total = TimersCounts.sum(tallies)
        let (ticks, updates, started, errors) = (total.ticks, total.updates, total.started, total.errors)
        let (missedTicks, duplicatedTicks) = (total.missedTicks, total.duplicatedTicks)
        let (missedUpdates, duplicatedUpdates) = (total.missedUpdates, total.duplicatedUpdates)
        let firstError = tallies.lazy.compactMap(\.firstError).first
        let seconds = outcome.measuredSeconds
        let tickRate = seconds > 0 ? Double(ticks) / seconds : 0
        let updateRate = seconds > 0 ? Double(updates) / seconds : 0
        let summary = LatencySummary(lateness)
        let failed = errors > 0 || outcome.stalled || !outcome.measured || ticks == 0
            || missedTicks > 0 || duplicatedTicks > 0 || missedUpdates > 0 || duplicatedUpdates > 0
        func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }

        if options.json {
            var object: [String: Any] = [
                "scenario": "timers", "channel_prefix": prefix, "timers": timers, "lists": lists,
                "watchers": watchers, "connections": connections, "loops": loops, "pipeline": pipeline,
                "timers_started": started,
                "setup": ["connect_and_add_s": rounded(outcome.addSeconds), "subscribe_s": rounded(outcome.subscribeSeconds),
                          "start_s": rounded(outcome.startSeconds)],
                "elapsed_s": rounded(seconds),
                "ticks_delivered": ticks, "ticks_per_s": Int(tickRate), "expected_ticks_per_s": lists * watchers,
                "updates_delivered": updates, "updates_per_s": Int(updateRate),
                "expected_updates_per_s": timers * watchers,
                "lateness": summary.json,
                "missed_ticks": missedTicks, "duplicated_ticks": duplicatedTicks,
                "missed_updates": missedUpdates, "duplicated_updates": duplicatedUpdates,
                "late_ticks_over_50ms": total.lateTicks,
                "errors": errors, "stalled": outcome.stalled, "ok": !failed,
            ]
            if let fileLimit { object["open_file_limit"] = fileLimit }
            if let firstError { object["first_error"] = firstError }
            Report.printJSON(object)
        } else {
            var rows: [(String, String)] = [
                ("timers running", "\(Report.grouped(started)) of \(Report.grouped(timers))"),
                ("setup", String(format: "connect+add %.3f s, subscribe %.3f s, start %.3f s",
                                 outcome.addSeconds, outcome.subscribeSeconds, outcome.startSeconds)),
                ("measured", String(format: "%.3f s", seconds)),
                ("ticks/s", "\(Report.grouped(Int(tickRate))) (expected \(Report.grouped(lists * watchers)))"),
                ("updates/s", "\(Report.grouped(Int(updateRate))) (expected \(Report.grouped(timers * watchers)))"),
            ] + summary.rows.map { ($0.0.replacingOccurrences(of: "latency", with: "lateness"), $0.1) } + [
                ("missed ticks", Report.grouped(missedTicks)),
                ("duplicated ticks", Report.grouped(duplicatedTicks)),
                ("missed updates", Report.grouped(missedUpdates)),
                ("duplicated updates", Report.grouped(duplicatedUpdates)),
                ("ticks over 50 ms late", Report.grouped(total.lateTicks)),
                ("errors", Report.grouped(errors)),
            ]
            if outcome.stalled { rows.append(("stalled", "no tick for \(options.stallTimeout) s")) }
            if let firstError { rows.append(("first error", firstError)) }
            print(Report.table("timers \(prefix)-*: \(timers) timers over \(lists) lists, \(watchers) watchers each, \(loops) loops",
                               rows))
        }
        if failed { throw ExitCode(1) }
    }

    struct Outcome {
        var addSeconds = 0.0
        var subscribeSeconds = 0.0
        var startSeconds = 0.0
        var measured = false
        var measuredSeconds = 0.0
        var stalled = false
    }

    /// Runs the setup phases (each waits for the one before), then measures
    /// for --duration with a progress line every second.
    private func drive(tallies: [TimersTally], directory: WorkerDirectory<TimersOrder>, startNs: UInt64) -> Outcome {
        var outcome = Outcome()
        let setupDeadline = startNs + UInt64(setupTimeout * 1e9)
        func counts() -> TimersCounts { TimersCounts.sum(tallies) }
        var nextProgressNs = startNs + 1_000_000_000
        /// Waits until `done()`; false on an error or the setup deadline.
        func phase(_ name: String, done: () -> Bool) -> Bool {
            while !done() {
                if counts().errors > 0 { return false }
                let now = Loop.hrtime
                if now > setupDeadline {
                    tallies[0].recordError("setup did not finish within --setup-timeout \(setupTimeout) s (\(name))")
                    return false
                }
                if now >= nextProgressNs {
                    let c = counts()
                    Report.progress(String(format: "[%3.0fs] setup (%@): viewers %@/%@  added %@/%@  watchers %@+%@/%@  started %@/%@",
                                           Double(now - startNs) / 1e9, name,
                                           Report.grouped(c.viewersReady), Report.grouped(lists),
                                           Report.grouped(c.added), Report.grouped(timers),
                                           Report.grouped(c.watchersConnected), Report.grouped(c.watchersSubscribed),
                                           Report.grouped(lists * watchers),
                                           Report.grouped(c.started), Report.grouped(timers)))
                    nextProgressNs += 1_000_000_000
                }
                usleep(2_000)
            }
            return true
        }
        let watcherCount = lists * watchers
        guard phase("connect, add", done: {
            let c = counts()
            return c.viewersReady >= lists && c.added >= timers && c.watchersConnected >= watcherCount
        }) else { return outcome }
        let addedNs = Loop.hrtime
        outcome.addSeconds = Double(addedNs - startNs) / 1e9
        directory.broadcast(.subscribeWatchers)
        guard phase("subscribe", done: { counts().watchersSubscribed >= watcherCount }) else { return outcome }
        let subscribedNs = Loop.hrtime
        outcome.subscribeSeconds = Double(subscribedNs - addedNs) / 1e9
        directory.broadcast(.startTimers)
        guard phase("start", done: { counts().started >= timers }) else { return outcome }
        let measureNs = Loop.hrtime
        outcome.startSeconds = Double(measureNs - subscribedNs) / 1e9

        directory.broadcast(.measure(true))
        outcome.measured = true
        let deadline = measureNs + UInt64(options.duration * 1e9)
        let stallNs = UInt64(options.stallTimeout * 1e9)
        var lastSeen = counts().ticksSeen
        var lastChangeNs = measureNs
        nextProgressNs = measureNs + 1_000_000_000
        var previousTicks = 0
        var previousUpdates = 0
        while true {
            usleep(5_000)
            let now = Loop.hrtime
            if counts().errors > 0 || now >= deadline {
                directory.broadcast(.measure(false))
                outcome.measuredSeconds = Double(now - measureNs) / 1e9
                return outcome
            }
            let seen = counts().ticksSeen
            if seen != lastSeen {
                lastSeen = seen
                lastChangeNs = now
            } else if now - lastChangeNs > stallNs {
                directory.broadcast(.measure(false))
                outcome.measuredSeconds = Double(now - measureNs) / 1e9
                outcome.stalled = true
                return outcome
            }
            if now >= nextProgressNs {
                let c = counts()
                Report.progress(String(format: "[%3.0fs] ticks %@ (%@/s)  updates %@ (%@/s)  missed %@/%@  duplicated %@/%@  late>50ms %@  errors %@",
                                       Double(now - measureNs) / 1e9, Report.grouped(c.ticks),
                                       Report.grouped(c.ticks - previousTicks), Report.grouped(c.updates),
                                       Report.grouped(c.updates - previousUpdates),
                                       Report.grouped(c.missedTicks), Report.grouped(c.missedUpdates),
                                       Report.grouped(c.duplicatedTicks), Report.grouped(c.duplicatedUpdates),
                                       Report.grouped(c.lateTicks), Report.grouped(c.errors)))
                let (ticks, updates) = (c.ticks, c.updates)
                previousTicks = ticks
                previousUpdates = updates
                nextProgressNs += 1_000_000_000
            }
        }
    }
}
