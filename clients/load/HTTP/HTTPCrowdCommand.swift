import ArgumentParser
import Foundation
import Histogram
import Synchronization
import UV

/// `outatime-load http-crowd`: bad and idle HTTP against `--http`, while a
/// protocol client's pings are timed, interleaved with rounds without it.
struct HTTPCrowdCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "http-crowd",
        abstract: "Idle and bad HTTP connections on --http-port while a protocol client's ping p50/p99 is timed (A/B).",
        discussion: """
        Needs a server started with --http. One protocol client sends a `ping` every --ping-interval-ms \
        (never two outstanding) for the whole run. Each of --rounds rounds is a baseline phase of \
        --phase-seconds without HTTP, then a load phase as long: --idle HTTP connections opened (at most \
        --concurrency connecting at a time) that send nothing, or half a request head (every 10th), \
        and every 10 ms --bad-per-tick requests on fresh connections with a 9 KiB header field (431), \
        the method POST (405) or a protocol frame (400). At the end of each load phase the harness \
        closes what is still open and waits for the server to count it gone.

        Reports the ping round trips of both phases (p50, p99, p99.9, max), and how every HTTP \
        connection ended: closed by the server (with the time from connect to close), still open at \
        the end (held by the server or waiting in its listener's queue), still connecting at the end, \
        answered with which status, or unanswered at the end. The server holds at most 256 HTTP \
        connections and leaves newer ones in the kernel's queue until one closes, and at most \
        --http-max-connections-per-address (16) from one address: as the crowd comes from one \
        address, the others are answered 503 and closed (start the server with a higher value to \
        load the global cap instead); a connection that sends nothing is handed to it only after 5 s. Exit status 1 when a ping failed or none was \
        timed in a phase. The run lasts --rounds × 2 × --phase-seconds: --duration and \
        --stall-timeout do not apply here. \
        Needs `ulimit -n` above --idle + 64.
        """
    )

    @OptionGroup var options: LoadOptions

    @Option(help: ArgumentHelp("The server's --http port.", valueName: "port"))
    var httpPort: Int

    @Option(help: ArgumentHelp("Idle HTTP connections opened in each load phase (0…100000).", valueName: "count"))
    var idle: Int = 10_000

    @Option(help: ArgumentHelp("HTTP connections connecting at a time (1…10000).", valueName: "count"))
    var concurrency: Int = 500

    @Option(help: ArgumentHelp("Bad requests sent every 10 ms in a load phase (0…100).", valueName: "count"))
    var badPerTick: Int = 3

    @Option(help: ArgumentHelp("Baseline/load round pairs (1…100).", valueName: "count"))
    var rounds: Int = 3

    @Option(help: ArgumentHelp("Seconds each phase lasts (1…600).", valueName: "seconds"))
    var phaseSeconds: Double = 5

    @Option(help: ArgumentHelp("Milliseconds between pings (1…1000).", valueName: "ms"))
    var pingIntervalMs: Int = 1

    func validate() throws {
        try options.validateShared()
        guard (1...65535).contains(httpPort) else { throw ValidationError("--http-port must be 1…65535, got \(httpPort)") }
        guard (0...100_000).contains(idle) else { throw ValidationError("--idle must be 0…100000, got \(idle)") }
        guard (1...10_000).contains(concurrency) else { throw ValidationError("--concurrency must be 1…10000, got \(concurrency)") }
        guard (0...100).contains(badPerTick) else { throw ValidationError("--bad-per-tick must be 0…100, got \(badPerTick)") }
        guard (1...100).contains(rounds) else { throw ValidationError("--rounds must be 1…100, got \(rounds)") }
        guard (1...600).contains(phaseSeconds) else { throw ValidationError("--phase-seconds must be 1…600, got \(phaseSeconds)") }
        guard (1...1000).contains(pingIntervalMs) else {
            throw ValidationError("--ping-interval-ms must be 1…1000, got \(pingIntervalMs)")
        }
    }

    func run() throws {
        let (address, fileLimit) = try options.prepareRun()
        try LoadOptions.requireFiles(for: idle + badPerTick * 100, limit: fileLimit,
                                     cause: "\(idle) idle connections (--idle)", remedy: "open fewer (--idle)")
        let httpAddress = try AddressLookup.resolve(host: options.host, port: httpPort)
        let ping = PingTally()
        let crowd = HTTPCrowdTally()
        let pingInbox = WorkerDirectory<PingOrder>()
        let crowdInbox = WorkerDirectory<HTTPCrowdOrder>()
        let plan = HTTPCrowdWorker.Plan(address: httpAddress, idle: idle, concurrency: concurrency, badPerTick: badPerTick)
        let interval = UInt64(pingIntervalMs)
        let threads = WorkerThreads(count: 2, makeWorker: { index, loop in
            if index == 0 {
                let worker = PingWorker(loop: loop, address: address, intervalMs: interval, tally: ping)
                pingInbox.register(try worker.start(), at: 0)
                return worker
            }
            let worker = HTTPCrowdWorker(loop: loop, plan: plan, tally: crowd)
            crowdInbox.register(try worker.start(), at: 0)
            return worker
        }, onStartFailure: { _, error in ping.recordError("worker did not start: \(error)") })

        for _ in 0..<500 where !ping.ready.load(ordering: .relaxed) && ping.errors.load(ordering: .relaxed) == 0 {
            usleep(10_000)
        }
        guard ping.ready.load(ordering: .relaxed) else {
            Report.progress("outatime-load: the pinger got no hello reply: \(ping.firstError ?? "timed out")")
            pingInbox.broadcast(.finish)
            crowdInbox.broadcast(.finish)
            _ = threads.join(within: 10)
            throw ExitCode(3)
        }
        let phaseMicros = UInt32(phaseSeconds * 1_000_000)
        for round in 1...rounds {
            ping.phase.store(PingPhase.baseline(round: round), ordering: .relaxed)
            usleep(phaseMicros)
            ping.phase.store(PingPhase.none, ordering: .relaxed)
            crowd.idle.store(false, ordering: .relaxed)
            crowdInbox.broadcast(.start)
            ping.phase.store(PingPhase.load(round: round), ordering: .relaxed)
            usleep(phaseMicros)
            ping.phase.store(PingPhase.none, ordering: .relaxed)
            crowdInbox.broadcast(.stop)
            for _ in 0..<1_000 where !crowd.idle.load(ordering: .relaxed) { usleep(10_000) }
            // Let the server see the closes before the next baseline.
            usleep(500_000)
            Report.progress("round \(round)/\(rounds): opened \(Report.grouped(crowd.opened.load(ordering: .relaxed))), closed by the server \(Report.grouped(crowd.closedByServer.load(ordering: .relaxed))), open at the end \(Report.grouped(crowd.heldAtEnd.load(ordering: .relaxed))), connecting at the end \(Report.grouped(crowd.connectingAtEnd.load(ordering: .relaxed)))")
        }
        let stats = try? StatsProbe.read(address)
        pingInbox.broadcast(.finish)
        crowdInbox.broadcast(.finish)
        if !threads.join(within: 10) { ping.recordError("workers did not stop within 10 s") }

        let byPhase = ping.results ?? [:]
        var baselineHistogram = Histogram<UInt64>.microseconds()
        var loadHistogram = Histogram<UInt64>.microseconds()
        var perRound: [(baseline: LatencySummary, load: LatencySummary)] = []
        for round in 1...rounds {
            let b = byPhase[PingPhase.baseline(round: round)] ?? .microseconds()
            let l = byPhase[PingPhase.load(round: round)] ?? .microseconds()
            baselineHistogram.add(b)
            loadHistogram.add(l)
            perRound.append((LatencySummary(b), LatencySummary(l)))
        }
        let baseline = LatencySummary(baselineHistogram)
        let load = LatencySummary(loadHistogram)
        let closeTimes = LatencySummary(crowd.finalLatency ?? Histogram<UInt64>.microseconds())
        func value(_ counter: borrowing Atomic<Int>) -> Int { counter.load(ordering: .relaxed) }
        let failed = ping.errors.load(ordering: .relaxed) > 0 || baseline.count == 0 || load.count == 0
        if options.json {
            var object: [String: Any] = [
                "scenario": "http-crowd", "rounds": rounds, "phase_s": phaseSeconds, "idle": idle,
                "bad_per_tick": badPerTick, "ping_interval_ms": pingIntervalMs,
                "ping_baseline": baseline.json.merging(["count": baseline.count]) { $1 },
                "ping_load": load.json.merging(["count": load.count]) { $1 },
                "ping_rounds": perRound.map { ["baseline_p50_us": $0.baseline.p50, "baseline_p99_us": $0.baseline.p99,
                                               "load_p50_us": $0.load.p50, "load_p99_us": $0.load.p99] },
                "http_opened": value(crowd.opened), "http_connect_failures": value(crowd.connectFailures),
                "http_closed_by_server": value(crowd.closedByServer), "http_held_to_end": value(crowd.heldAtEnd),
                "http_connecting_at_end": value(crowd.connectingAtEnd),
                "http_close_after": closeTimes.json, "slow_heads_408": value(crowd.slowHeads408),
                "bad_sent": value(crowd.badSent), "bad_400": value(crowd.bad400), "bad_405": value(crowd.bad405),
                "bad_431": value(crowd.bad431), "bad_other_status": value(crowd.badOtherStatus),
                "bad_closed_without_status": value(crowd.badClosedBare),
                "bad_unanswered_at_end": value(crowd.badUnansweredAtEnd), "ping_errors": ping.errors.load(ordering: .relaxed),
                "ok": !failed,
            ]
            if let stats { object["server_rss_bytes"] = stats["rss_bytes"] }
            if let first = ping.firstError { object["first_error"] = first }
            Report.printJSON(object)
        } else {
            var rows: [(String, String)] = [
                ("ping baseline", "\(Report.grouped(Int(baseline.count))) pings, p50 \(LatencySummary.millis(baseline.p50)), p99 \(LatencySummary.millis(baseline.p99)), p99.9 \(LatencySummary.millis(baseline.p999)), max \(LatencySummary.millis(baseline.max))"),
                ("ping under HTTP", "\(Report.grouped(Int(load.count))) pings, p50 \(LatencySummary.millis(load.p50)), p99 \(LatencySummary.millis(load.p99)), p99.9 \(LatencySummary.millis(load.p999)), max \(LatencySummary.millis(load.max))"),
            ]
            for (index, round) in perRound.enumerated() {
                rows.append(("round \(index + 1) p50 / p99", "baseline \(LatencySummary.millis(round.baseline.p50)) / \(LatencySummary.millis(round.baseline.p99)), under HTTP \(LatencySummary.millis(round.load.p50)) / \(LatencySummary.millis(round.load.p99))"))
            }
            rows += [
                ("idle HTTP opened", Report.grouped(value(crowd.opened))),
                ("closed by server", "\(Report.grouped(value(crowd.closedByServer))) (connect → close p50 \(LatencySummary.millis(closeTimes.p50)), p99 \(LatencySummary.millis(closeTimes.p99)), max \(LatencySummary.millis(closeTimes.max)))"),
                ("open at the end", Report.grouped(value(crowd.heldAtEnd))),
                ("connecting at end", Report.grouped(value(crowd.connectingAtEnd))),
                ("slow heads → 408", Report.grouped(value(crowd.slowHeads408))),
                ("connect failures", Report.grouped(value(crowd.connectFailures))),
                ("bad requests", "\(Report.grouped(value(crowd.badSent))): 431 \(value(crowd.bad431)), 405 \(value(crowd.bad405)), 400 \(value(crowd.bad400)), other \(value(crowd.badOtherStatus)), closed without status \(value(crowd.badClosedBare)), unanswered at the end \(value(crowd.badUnansweredAtEnd))"),
            ]
            if let first = ping.firstError { rows.append(("first error", first)) }
            print(Report.table("http-crowd: \(rounds) rounds of \(phaseSeconds) s baseline + \(phaseSeconds) s with \(idle) idle HTTP connections and \(badPerTick * 100) bad requests/s", rows))
        }
        if failed { throw ExitCode(1) }
    }
}
