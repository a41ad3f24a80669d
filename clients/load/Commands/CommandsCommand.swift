import ArgumentParser
import Foundation
import Histogram
import UV

/// `outatime-load commands`: C clients sending durable lap-stopwatch commands.
struct CommandsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "commands",
        abstract: "Many clients sending durable commands: acknowledged commands/s and reply latency.",
        discussion: """
        Each client drives its own channel. With --workload laps (the default) that is a stopwatch \
        `laps/load-<run>-<loop>-<n>`, driven through the valid cycle start → lap → lap → stop → reset; \
        with timer-add a timer list `timers/load-<run>-<loop>-<n>` it adds timers to (`add`, a day to go); \
        with timer-update the same list, whose timers it renames round-robin (`update`, a new `event` \
        each time); with dispatch a board `starport/load-<run>-<loop>-<n>` it dispatches ships on \
        (`dispatch`, departing in 2099, so nothing departs during the run).

        --preload N first fills each client's channel with N timers (timer-add, timer-update) or N \
        dispatches, pipelined (max(--pipeline, 64) in flight), before the measured phase: not counted, \
        not in the latency, its events not in the batch figures; the report gives how long it took. \
        timer-update needs a preload of at least 1 (the timers it updates); laps takes none. Compare \
        a run on a full channel with one on an empty one to see whether the channel's size slows a command. \
        The server refuses items beyond its --max-channel-items (default 10000; largest 12452): a preload \
        of 10,000 then leaves no room for a timer-add or dispatch run unless the server was started with \
        a larger cap (and --commands keeps the run within it). Every refusal is counted in `errors`, \
        the first one is printed, and the run exits 1.

        With --pipeline 1 (the default) it sends the next command \
        when the previous reply arrives; with --pipeline N it sends N at once and then one more per \
        reply, so that N commands are always in flight on the connection (the server runs them in \
        order, so the cycle stays valid). With --refill burst it sends N, waits for all N replies, then \
        sends N again, as `redis-benchmark -P N` does. Every command is one durable event, acknowledged only after \
        commit. Latency is send → reply per command, in this process (with a pipeline it includes the \
        wait behind the commands ahead). The server's `stats` are read before and after the run to \
        report events per storage batch. Bounded by --duration and/or --commands.

        The report also gives the harness's own CPU while sending: a busiest loop near 100 % means \
        the harness, not the server, set the pace (use more --loops, or fewer clients per loop).

        Example, one connection with 100 durable commands in flight (compare with \
        `redis-benchmark -c 1 -P 100 -t set` against Redis with appendfsync always; \
        `PIPELINE=100 CLIENTS=1 make bench-commands` runs both, interleaved):

          outatime-load commands --clients 1 --pipeline 100 --duration 10

        The same on a list that already holds 10,000 timers, against a server started with \
        --max-channel-items 12452 (its largest value: the default, 10,000, refuses every add past \
        the preload with channel_full):

          outatime-load commands --workload timer-add --preload 10000 --clients 1 --pipeline 100 --commands 2400
        """
    )

    @OptionGroup var options: LoadOptions

    @Option(help: ArgumentHelp("Client connections, each with its own stopwatch.", valueName: "count"))
    var clients: Int = 50

    @Option(help: ArgumentHelp("Durable commands each client keeps in flight (1…10000): it sends this many, then one more per reply.", valueName: "count"))
    var pipeline: Int = 1

    @Option(help: ArgumentHelp("When a client sends more: window (one more per reply, --pipeline always in flight) or burst (--pipeline again once all replies are in, as redis-benchmark -P does).", valueName: "mode"))
    var refill: CommandsRefill = .window

    @Option(help: ArgumentHelp("Commands to send in total (default: until --duration is over).", valueName: "count"))
    var commands: Int?

    @Option(help: ArgumentHelp("What each command does: \(CommandsWorkload.names).", valueName: "workload"))
    var workload: CommandsWorkload = .laps

    @Option(help: ArgumentHelp("Timers or dispatches each client adds to its channel before the measured phase (0…1000000).", valueName: "count"))
    var preload: Int = 0

    func validate() throws {
        try options.validateShared()
        guard clients >= 1 else { throw ValidationError("--clients must be at least 1, got \(clients)") }
        guard (1...10_000).contains(pipeline) else { throw ValidationError("--pipeline must be 1…10000, got \(pipeline)") }
        if let commands, commands < 1 { throw ValidationError("--commands must be at least 1, got \(commands)") }
        guard (0...1_000_000).contains(preload) else { throw ValidationError("--preload must be 0…1000000, got \(preload)") }
        if workload == .timerUpdate && preload < 1 {
            throw ValidationError("--workload timer-update needs --preload of at least 1: the timers it updates")
        }
        if !workload.preloads && preload > 0 {
            throw ValidationError("--preload does not apply to --workload \(workload.rawValue); it fills timer lists and dispatch boards")
        }
    }

    func run() throws {
        let (address, fileLimit) = try options.prepareRun()
        let run = String(UUID().uuidString.lowercased().prefix(8))
        let prefix = "\(workload.kind)/load-\(run)"
        let loops = min(options.loops, clients)
        let tallies = (0..<loops).map { index in
            CommandsTally(clientCount: LoadOptions.share(of: clients, loop: index, loops: loops))
        }
        let budget = CommandBudget(limit: commands)
        let plans = tallies.enumerated().map { index, tally in
            CommandsPlan(index: index, address: address, channelPrefix: prefix, clients: tally.clientCount,
                         pipeline: pipeline, refill: refill, workload: workload, preload: preload)
        }
        let directory = WorkerDirectory<WorkerOrder>()
        let threads = WorkerThreads(count: loops, makeWorker: { index, loop in
            let worker = CommandsWorker(loop: loop, plan: plans[index], tally: tallies[index], budget: budget)
            directory.register(try worker.start(), at: index)
            return worker
        }, onStartFailure: { index, error in tallies[index].recordError("worker \(index) did not start: \(error)") })

        var before: [String: Int] = [:]
        var after: [String: Int] = [:]
        var outcome = Outcome()
        var cpu: HarnessCPU?
        if waitForReady(tallies) {
            if preload > 0 {
                let first: UInt64 = tallies.map { $0.preloadStartNs.load(ordering: .relaxed) }.filter { $0 > 0 }.min() ?? 0
                let last: UInt64 = tallies.map { $0.preloadEndNs.load(ordering: .relaxed) }.max() ?? 0
                Report.progress(String(format: "preload: %@ %@ per client in %.3f s", Report.grouped(preload),
                                       workload == .dispatch ? "dispatches" : "timers",
                                       last > first ? Double(last - first) / 1e9 : 0))
            }
            do {
                before = try StatsProbe.read(address)
                let cpuBefore = CPUSample.now(threads)
                outcome = drive(tallies: tallies, directory: directory)
                cpu = CPUSample.now(threads).since(cpuBefore)
            } catch {
                tallies[0].recordError("\(error)")
            }
        }
        // Read before the workers' closing stops (CommandsWorker.close), which are not the run's.
        if !before.isEmpty {
            do { after = try StatsProbe.read(address) } catch { tallies[0].recordError("\(error)") }
        }
        directory.broadcast(.finish)
        if !threads.join(within: 10) { tallies[0].recordError("workers did not stop within 10 s") }

        let latency = WorkerTally.mergedLatency(tallies)
        let sent = tallies.reduce(0) { $0 + $1.sent.load(ordering: .relaxed) }
        let acknowledged = tallies.reduce(0) { $0 + $1.acknowledged.load(ordering: .relaxed) }
        let errors = tallies.reduce(0) { $0 + $1.errors.load(ordering: .relaxed) }
        let firstError = tallies.lazy.compactMap(\.firstError).first
        let lastNs = tallies.map { $0.lastAckNs.load(ordering: .relaxed) }.max() ?? 0
        let seconds = lastNs > outcome.startNs && outcome.startNs > 0 ? Double(lastNs - outcome.startNs) / 1e9 : 0
        let rate = seconds > 0 ? Double(acknowledged) / seconds : 0
        let summary = LatencySummary(latency)
        func delta(_ key: String) -> Int? {
            guard let a = after[key], let b = before[key] else { return nil }
            return a - b
        }
        let events = delta("events_committed")
        let batches = delta("store_batches")
        let perBatch = events.flatMap { e in batches.flatMap { $0 > 0 ? Double(e) / Double($0) : nil } }
        let preloaded = tallies.reduce(0) { $0 + $1.preloaded.load(ordering: .relaxed) }
        let preloadStart: UInt64 = tallies.map { $0.preloadStartNs.load(ordering: .relaxed) }.filter { $0 > 0 }.min() ?? 0
        let preloadEnd: UInt64 = tallies.map { $0.preloadEndNs.load(ordering: .relaxed) }.max() ?? 0
        let preloadSeconds = preloadEnd > preloadStart && preloadStart > 0 ? Double(preloadEnd - preloadStart) / 1e9 : 0
        let preloadRate = preloadSeconds > 0 ? Double(preloaded) / preloadSeconds : 0
        let largest = after["store_largest_batch"]
        let failed = errors > 0 || acknowledged != sent || outcome.stalled
            || (commands.map { acknowledged < $0 } ?? false) && !outcome.timedOut

        if options.json {
            var object: [String: Any] = [
                "scenario": "commands", "workload": workload.rawValue, "preload": preload, "preloaded": preloaded,
                "preload_s": (preloadSeconds * 1000).rounded() / 1000, "preload_per_s": Int(preloadRate),
                "channel_prefix": prefix, "clients": clients, "pipeline": pipeline, "refill": refill.rawValue, "loops": loops,
                "sent": sent, "acknowledged": acknowledged, "errors": errors,
                "elapsed_s": (seconds * 1000).rounded() / 1000, "commands_per_s": Int(rate),
                "latency": summary.json, "stalled": outcome.stalled, "duration_reached": outcome.timedOut,
                "ok": !failed,
            ]
            if let commands { object["commands"] = commands }
            if let events { object["events_committed"] = events }
            if let batches { object["store_batches"] = batches }
            if let perBatch { object["events_per_batch"] = (perBatch * 100).rounded() / 100 }
            if let largest { object["store_largest_batch"] = largest }
            if let fileLimit { object["open_file_limit"] = fileLimit }
            if let cpu { object["harness_cpu"] = cpu.json }
            if let firstError { object["first_error"] = firstError }
            Report.printJSON(object)
        } else {
            let preloadText = preload == 0 ? "none"
                : "\(Report.grouped(preload)) per client, \(Report.grouped(preloaded)) in "
                  + String(format: "%.3f s", preloadSeconds) + " (\(Report.grouped(Int(preloadRate)))/s)"
            var rows: [(String, String)] = [
                ("workload", workload.rawValue),
                ("preload", preloadText),
                ("in flight per client", "\(Report.grouped(pipeline)), refill \(refill.rawValue)"),
                ("acknowledged", "\(Report.grouped(acknowledged)) of \(Report.grouped(sent)) sent"),
                ("elapsed", String(format: "%.3f s", seconds)),
                ("commands/s", Report.grouped(Int(rate))),
            ] + summary.rows + [
                ("errors", Report.grouped(errors)),
                ("events committed", events.map(Report.grouped) ?? "?"),
                ("store batches", batches.map(Report.grouped) ?? "?"),
                ("events per batch", perBatch.map { String(format: "%.2f", $0) } ?? "?"),
                ("largest batch", largest.map { "\(Report.grouped($0)) (since server start)" } ?? "?"),
                ("harness CPU", cpu?.text ?? "?"),
            ]
            if outcome.stalled { rows.append(("stalled", "no reply for \(options.stallTimeout) s")) }
            if let firstError { rows.append(("first error", firstError)) }
            let inFlight = pipeline == 1 ? "one command" : "\(Report.grouped(pipeline)) commands"
            print(Report.table("commands \(workload.rawValue) \(prefix)-* (preload \(Report.grouped(preload))): \(clients) clients, \(inFlight) in flight each, \(loops) loops", rows))
        }
        if failed { throw ExitCode(1) }
    }

    struct Outcome {
        var startNs: UInt64 = 0
        var stalled = false
        var timedOut = false
    }

    private func errors(_ tallies: [CommandsTally]) -> Int { tallies.reduce(0) { $0 + $1.errors.load(ordering: .relaxed) } }

    /// Waits until every client's `hello` was answered and its preload
    /// acknowledged; false on an error or timeout. A preload may take longer
    /// than the usual deadline as long as it advances (no stall of
    /// --stall-timeout); progress is printed each second while it runs.
    private func waitForReady(_ tallies: [CommandsTally]) -> Bool {
        let startNs = Loop.hrtime
        let deadline = startNs + UInt64(max(options.duration, 30) * 1e9)
        let stallNs = UInt64(options.stallTimeout * 1e9)
        var lastProgress = -1
        var lastChangeNs = startNs
        var nextProgressNs = startNs + 1_000_000_000
        while true {
            let ready = tallies.reduce(0) { $0 + $1.ready.load(ordering: .relaxed) }
            if ready >= clients { return true }
            if errors(tallies) > 0 { return false }
            let now = Loop.hrtime
            let preloaded = tallies.reduce(0) { $0 + $1.preloaded.load(ordering: .relaxed) }
            if preloaded + ready != lastProgress {
                lastProgress = preloaded + ready
                lastChangeNs = now
            }
            if now > deadline && now - lastChangeNs > stallNs {
                tallies[0].recordError("only \(ready) of \(clients) connections were ready in time"
                                       + (preload > 0 ? " (\(Report.grouped(preloaded)) of \(Report.grouped(preload * clients)) preloaded)" : ""))
                return false
            }
            if preload > 0 && now >= nextProgressNs {
                Report.progress(String(format: "[preload %3.0fs] %@ of %@ added, %@ of %@ clients ready",
                                       Double(now - startNs) / 1e9, Report.grouped(preloaded),
                                       Report.grouped(preload * clients), Report.grouped(ready), Report.grouped(clients)))
                nextProgressNs += 1_000_000_000
            }
            usleep(2_000)
        }
    }

    /// Starts sending, prints progress, stops at the duration or when the
    /// budget is acknowledged, then waits for the commands in flight.
    private func drive(tallies: [CommandsTally], directory: WorkerDirectory<WorkerOrder>) -> Outcome {
        var outcome = Outcome()
        outcome.startNs = Loop.hrtime
        directory.broadcast(.startPublishing)
        let deadline = outcome.startNs + UInt64(options.duration * 1e9)
        let stallNs = UInt64(options.stallTimeout * 1e9)
        var lastAcked = 0
        var lastChangeNs = outcome.startNs
        var nextProgressNs = outcome.startNs + 1_000_000_000
        var previousAcked = 0
        while true {
            usleep(5_000)
            let now = Loop.hrtime
            let sent = tallies.reduce(0) { $0 + $1.sent.load(ordering: .relaxed) }
            let acked = tallies.reduce(0) { $0 + $1.acknowledged.load(ordering: .relaxed) }
            if errors(tallies) > 0 { return outcome }
            if let commands, acked >= commands { return outcome }
            if outcome.timedOut && acked >= sent { return outcome }
            if !outcome.timedOut && now >= deadline {
                outcome.timedOut = true
                directory.broadcast(.stopPublishing)
            }
            if acked != lastAcked {
                lastAcked = acked
                lastChangeNs = now
            } else if now - lastChangeNs > stallNs {
                outcome.stalled = true
                return outcome
            }
            if now >= nextProgressNs {
                Report.progress(String(format: "[%3.0fs] acknowledged %@ (%@/s)  in flight %@  errors %@",
                                       Double(now - outcome.startNs) / 1e9, Report.grouped(acked),
                                       Report.grouped(acked - previousAcked), Report.grouped(sent - acked),
                                       Report.grouped(errors(tallies))))
                previousAcked = acked
                nextProgressNs += 1_000_000_000
            }
        }
    }
}
