import ArgumentParser
import Foundation
import Histogram
import UV

/// `outatime-load connections`: N idle subscribed connections, server memory per connection.
struct ConnectionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connections",
        abstract: "Many idle subscribed connections: time to open them and server memory (RSS) per connection.",
        discussion: """
        Reads the server's `stats` on one probe connection, then opens --connections connections (at \
        most --concurrency in their handshake at a time, so the server's accept backlog is not \
        overrun), each `hello` + `subscribe` to one of --channels channels `starport/load-<run>-<n>`. \
        When all are subscribed it waits --settle seconds, reads `stats` again and reports \
        (rss_after − rss_before) / connections. The connections stay idle but for a heartbeat ping \
        every 5 s. Use a freshly started server: memory it freed earlier is reused and lowers the figure.

        Every subscribe sends a `presence` push to the channel's earlier subscribers, so a channel with \
        m connections costs about m²/2 presence deliveries while opening (reported as \
        presence_deliveries).

        --duration bounds the opening phase. Exit status 1 when any connection failed. Needs an \
        open-file limit of at least connections + 64 (`ulimit -n`).
        """
    )

    @OptionGroup var options: LoadOptions

    @Option(help: ArgumentHelp("Idle connections to open and keep subscribed (1…1000000).", valueName: "count"))
    var connections: Int = 10_000

    @Option(help: ArgumentHelp("Channels to spread the connections over, round-robin (1…connections).", valueName: "count"))
    var channels: Int = 100

    @OptionGroup var opening: OpeningOptions

    @Option(help: ArgumentHelp("Seconds to wait after the last subscribe before reading the server's memory (0…3600).", valueName: "seconds"))
    var settle: Double = 2

    func validate() throws {
        try options.validateShared()
        guard (1...1_000_000).contains(connections) else {
            throw ValidationError("--connections must be 1…1000000, got \(connections)")
        }
        guard (1...connections).contains(channels) else {
            throw ValidationError("--channels must be 1…\(connections) (at most one channel per connection), got \(channels)")
        }
        guard (0...3600).contains(settle) else { throw ValidationError("--settle must be 0…3600 seconds, got \(settle)") }
    }

    func run() throws {
        let (address, fileLimit) = try options.prepareRun()
        try LoadOptions.requireFiles(for: connections, limit: fileLimit, cause: "\(connections) connections (--connections)",
                                     remedy: "open fewer connections")
        let run = String(UUID().uuidString.lowercased().prefix(8))
        let prefix = "starport/load-\(run)"
        let loops = min(options.loops, connections)
        let tallies = (0..<loops).map { index in
            ConnectionsTally(connectionCount: LoadOptions.share(of: connections, loop: index, loops: loops))
        }
        let plans = (0..<loops).map { index in
            ConnectionsPlan(index: index, address: address, channelPrefix: prefix, channels: channels,
                            numbers: Array(stride(from: index, to: connections, by: loops)),
                            concurrency: LoadOptions.share(of: opening.concurrency, loop: index, loops: loops))
        }

        let before: [String: Int]
        do {
            before = try StatsProbe.read(address)
        } catch {
            Report.progress("outatime-load: \(error)")
            throw ExitCode(3)
        }
        let startNs = Loop.hrtime
        let directory = WorkerDirectory<ConnectionsOrder>()
        let threads = WorkerThreads(count: loops, makeWorker: { index, loop in
            let worker = ConnectionsWorker(loop: loop, plan: plans[index], tally: tallies[index])
            directory.register(try worker.start(), at: index)
            return worker
        }, onStartFailure: { index, error in tallies[index].recordError("worker \(index) did not start: \(error)") })

        let outcome = waitForOpen(tallies, startNs: startNs)
        var after: [String: Int] = [:]
        if outcome.complete {
            if settle > 0 { usleep(UInt32(settle * 1_000_000)) }
            do { after = try StatsProbe.read(address) } catch { tallies[0].recordError("\(error)") }
        }
        directory.broadcast(.finish)
        if !threads.join(within: 10) { tallies[0].recordError("workers did not stop within 10 s") }

        let latency = WorkerTally.mergedLatency(tallies)
        let opened = tallies.reduce(0) { $0 + $1.subscribed.load(ordering: .relaxed) }
        let failedCount = tallies.reduce(0) { $0 + $1.failed.load(ordering: .relaxed) }
        let errors = tallies.reduce(0) { $0 + $1.errors.load(ordering: .relaxed) }
        let firstError = tallies.lazy.compactMap(\.firstError).first
        let lastNs = tallies.map { $0.lastOpenNs.load(ordering: .relaxed) }.max() ?? 0
        let openSeconds = lastNs > startNs ? Double(lastNs - startNs) / 1e9 : 0
        let openRate = openSeconds > 0 ? Double(opened) / openSeconds : 0
        func delta(_ key: String) -> Int? {
            guard let a = after[key], let b = before[key] else { return nil }
            return a - b
        }
        let rssBefore = before["rss_bytes"]
        let rssAfter = after["rss_bytes"]
        let rssDelta = delta("rss_bytes")
        let perConnection = rssDelta.map { Double($0) / Double(connections) }
        let summary = LatencySummary(latency)
        let failed = failedCount > 0 || errors > 0 || opened < connections

        if options.json {
            var object: [String: Any] = [
                "scenario": "connections", "channel_prefix": prefix, "connections": connections,
                "channels": channels, "concurrency": opening.concurrency, "loops": loops, "settle_s": settle,
                "opened": opened, "failed": failedCount, "errors": errors,
                "open_s": (openSeconds * 1000).rounded() / 1000, "opens_per_s": Int(openRate),
                "open_latency": summary.json, "stalled": outcome.stalled, "ok": !failed,
            ]
            if let rssBefore { object["rss_before_bytes"] = rssBefore }
            if let rssAfter { object["rss_after_bytes"] = rssAfter }
            if let perConnection { object["rss_per_connection_bytes"] = Int(perConnection.rounded()) }
            if let value = before["connections"] { object["server_connections_before"] = value }
            if let value = after["connections"] { object["server_connections_after"] = value }
            if let value = delta("subscriptions") { object["server_subscriptions_added"] = value }
            if let value = delta("deliveries") { object["presence_deliveries"] = value }
            if let fileLimit { object["open_file_limit"] = fileLimit }
            if let firstError { object["first_error"] = firstError }
            Report.printJSON(object)
        } else {
            let connectionsBefore = before["connections"].map(Report.grouped) ?? "?"
            let connectionsAfter = after["connections"].map(Report.grouped) ?? "?"
            let perConnectionText = perConnection.map { "\(Report.grouped(Int($0.rounded()))) B" } ?? "?"
            var rows: [(String, String)] = [
                ("opened", "\(Report.grouped(opened)) of \(Report.grouped(connections)) (subscribed)"),
                ("failed", Report.grouped(failedCount)),
                ("time to open", String(format: "%.3f s", openSeconds)),
                ("opens/s", Report.grouped(Int(openRate))),
            ]
            for (label, value) in summary.rows { rows.append(("open " + label, value)) }
            rows.append(("server RSS before", rssBefore.map(Self.mebibytes) ?? "?"))
            rows.append(("server RSS after", rssAfter.map(Self.mebibytes) ?? "?"))
            rows.append(("RSS per connection", perConnectionText))
            rows.append(("server connections", "\(connectionsBefore) → \(connectionsAfter)"))
            rows.append(("presence deliveries", delta("deliveries").map(Report.grouped) ?? "?"))
            rows.append(("errors", Report.grouped(errors)))
            if outcome.stalled { rows.append(("stalled", "no connection completed for \(options.stallTimeout) s")) }
            if let firstError { rows.append(("first error", firstError)) }
            print(Report.table("connections \(prefix)-*: \(connections) idle connections over \(channels) channels, \(loops) loops",
                               rows))
        }
        if failed { throw ExitCode(1) }
    }

    /// `14.2 MiB (14,876,672 B)`
    static func mebibytes(_ bytes: Int) -> String {
        String(format: "%.1f MiB (%@ B)", Double(bytes) / 1_048_576, Report.grouped(bytes))
    }

    struct Outcome {
        var complete = false
        var stalled = false
    }

    /// Waits until every connection is subscribed or failed, printing progress;
    /// bounded by --duration and --stall-timeout.
    private func waitForOpen(_ tallies: [ConnectionsTally], startNs: UInt64) -> Outcome {
        var outcome = Outcome()
        let deadline = startNs + UInt64(options.duration * 1e9)
        let stallNs = UInt64(options.stallTimeout * 1e9)
        var nextProgressNs = startNs + 1_000_000_000
        var lastDone = 0
        var lastChangeNs = startNs
        var previousOpened = 0
        while true {
            usleep(5_000)
            let now = Loop.hrtime
            let opened = tallies.reduce(0) { $0 + $1.subscribed.load(ordering: .relaxed) }
            let failed = tallies.reduce(0) { $0 + $1.failed.load(ordering: .relaxed) }
            if opened + failed >= connections {
                outcome.complete = failed == 0
                return outcome
            }
            if now >= deadline {
                tallies[0].recordError("only \(opened) of \(connections) connections were subscribed within --duration \(options.duration) s")
                return outcome
            }
            if opened + failed != lastDone {
                lastDone = opened + failed
                lastChangeNs = now
            } else if now - lastChangeNs > stallNs {
                outcome.stalled = true
                return outcome
            }
            if now >= nextProgressNs {
                Report.progress(String(format: "[%3.0fs] subscribed %@/%@ (%@/s)  failed %@",
                                       Double(now - startNs) / 1e9, Report.grouped(opened), Report.grouped(connections),
                                       Report.grouped(opened - previousOpened), Report.grouped(failed)))
                previousOpened = opened
                nextProgressNs += 1_000_000_000
            }
        }
    }
}
