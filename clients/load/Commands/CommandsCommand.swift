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
        Each client drives its own stopwatch `laps/load-<run>-<loop>-<n>` through the valid cycle \
        start → lap → lap → stop → reset. With --pipeline 1 (the default) it sends the next command \
        when the previous reply arrives; with --pipeline N it sends N at once and then one more per \
        reply, so that N commands are always in flight on the connection (the server runs them in \
        order, so the cycle stays valid). Every command is one durable event, acknowledged only after \
        commit. Latency is send → reply per command, in this process (with a pipeline it includes the \
        wait behind the commands ahead). The server's `stats` are read before and after the run to \
        report events per storage batch. Bounded by --duration and/or --commands.

        The report also gives the harness's own CPU while sending: a busiest loop near 100 % means \
        the harness, not the server, set the pace (use more --loops, or fewer clients per loop).

        Example, one connection with 100 durable commands in flight (compare with \
        `redis-benchmark -c 1 -P 100 -t set` against Redis with appendfsync always; \
        `PIPELINE=100 CLIENTS=1 make bench-commands` runs both, interleaved):

          outatime-load commands --clients 1 --pipeline 100 --duration 10
        """
    )

    @OptionGroup var options: LoadOptions

    @Option(help: ArgumentHelp("Client connections, each with its own stopwatch.", valueName: "count"))
    var clients: Int = 50

    @Option(help: ArgumentHelp("Durable commands each client keeps in flight (1…10000): it sends this many, then one more per reply.", valueName: "count"))
    var pipeline: Int = 1

    @Option(help: ArgumentHelp("Commands to send in total (default: until --duration is over).", valueName: "count"))
    var commands: Int?

    func validate() throws {
        try options.validateShared()
        guard clients >= 1 else { throw ValidationError("--clients must be at least 1, got \(clients)") }
        guard (1...10_000).contains(pipeline) else { throw ValidationError("--pipeline must be 1…10000, got \(pipeline)") }
        if let commands, commands < 1 { throw ValidationError("--commands must be at least 1, got \(commands)") }
    }

    func run() throws {
        let (address, fileLimit) = try options.prepareRun()
        let run = String(UUID().uuidString.lowercased().prefix(8))
        let prefix = "laps/load-\(run)"
        let loops = min(options.loops, clients)
        let tallies = (0..<loops).map { index in
            CommandsTally(clientCount: LoadOptions.share(of: clients, loop: index, loops: loops))
        }
        let budget = CommandBudget(limit: commands)
        let plans = tallies.enumerated().map { index, tally in
            CommandsPlan(index: index, address: address, channelPrefix: prefix, clients: tally.clientCount,
                         pipeline: pipeline)
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
            do {
                before = try StatsProbe.read(address)
                let cpuBefore = CPUSample.now(threads)
                outcome = drive(tallies: tallies, directory: directory)
                cpu = CPUSample.now(threads).since(cpuBefore)
            } catch {
                tallies[0].recordError("\(error)")
            }
        }
        directory.broadcast(.finish)
        if !threads.join(within: 10) { tallies[0].recordError("workers did not stop within 10 s") }
        if !before.isEmpty {
            do { after = try StatsProbe.read(address) } catch { tallies[0].recordError("\(error)") }
        }

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
        let largest = after["store_largest_batch"]
        let failed = errors > 0 || acknowledged != sent || outcome.stalled
            || (commands.map { acknowledged < $0 } ?? false) && !outcome.timedOut

        if options.json {
            var object: [String: Any] = [
                "scenario": "commands", "channel_prefix": prefix, "clients": clients, "pipeline": pipeline, "loops": loops,
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
            var rows: [(String, String)] = [
                ("in flight per client", Report.grouped(pipeline)),
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
            print(Report.table("commands \(prefix)-*: \(clients) clients, \(inFlight) in flight each, \(loops) loops", rows))
        }
        if failed { throw ExitCode(1) }
    }

    struct Outcome {
        var startNs: UInt64 = 0
        var stalled = false
        var timedOut = false
    }

    private func errors(_ tallies: [CommandsTally]) -> Int { tallies.reduce(0) { $0 + $1.errors.load(ordering: .relaxed) } }

    /// Waits until every client's `hello` was answered; false on an error or timeout.
    private func waitForReady(_ tallies: [CommandsTally]) -> Bool {
        let deadline = Loop.hrtime + UInt64(max(options.duration, 30) * 1e9)
        while true {
            let ready = tallies.reduce(0) { $0 + $1.ready.load(ordering: .relaxed) }
            if ready >= clients { return true }
            if errors(tallies) > 0 { return false }
            if Loop.hrtime > deadline {
                tallies[0].recordError("only \(ready) of \(clients) connections were ready in time")
                return false
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
