import ArgumentParser
import Foundation
import Histogram
import UV

/// `outatime-load fanout`: S subscribers on one channel, one publisher.
struct FanoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout",
        abstract: "One publisher, many subscribers on one channel: deliveries/s and delivery latency.",
        discussion: """
        Every subscriber subscribes to a fresh channel `starport/load-<random>`; the publisher sends \
        --messages publishes whose data carries a sequence number and the send time. Each subscriber \
        checks every sequence number arrives exactly once; latency is send → receive in this process. \
        Without --rate the publisher stays at most --window messages ahead of the slowest subscriber.

        With --subscriber-ports P1,P2,… the subscribers connect round-robin to those ports on --host \
        (subscriber i to port i mod n), while the publisher stays on --port: for the nodes of a cluster, \
        which all serve every channel. --channel names the channel instead of a fresh one (say, one whose \
        owner node is known); it must carry no earlier messages of a load run.
        """
    )

    @OptionGroup var options: LoadOptions

    @Option(help: ArgumentHelp("Subscriber connections.", valueName: "count"))
    var subscribers: Int = 100

    @Option(help: ArgumentHelp("Messages to publish.", valueName: "count"))
    var messages: Int = 10_000

    @Option(help: ArgumentHelp("Bytes of each message's data string.", valueName: "bytes"))
    var size: Int = 64

    @Option(help: ArgumentHelp("Publishes per second (default: as fast as the window allows).", valueName: "per-second"))
    var rate: Double?

    @Option(help: ArgumentHelp("Most messages the publisher may be ahead of the slowest subscriber.", valueName: "count"))
    var window: Int = 1_000

    @Option(help: ArgumentHelp("""
        Comma-separated ports on --host the subscribers connect to, round-robin (default: --port, as the \
        publisher); the publisher always uses --port.
        """, valueName: "ports"))
    var subscriberPorts: String?

    @Option(help: ArgumentHelp("Channel to use (default: a fresh starport/load-<random>).", valueName: "channel"))
    var channel: String?

    /// --subscriber-ports as numbers; empty when not given.
    var subscriberPortList: [Int] {
        get throws {
            guard let subscriberPorts else { return [] }
            return try subscriberPorts.split(separator: ",", omittingEmptySubsequences: false).map { text in
                let trimmed = text.trimmingCharacters(in: .whitespaces)
                guard let port = Int(trimmed), (1...65535).contains(port) else {
                    throw ValidationError("--subscriber-ports: '\(trimmed)' is not a port 1…65535")
                }
                return port
            }
        }
    }

    func validate() throws {
        try options.validateShared()
        guard subscribers >= 1 else { throw ValidationError("--subscribers must be at least 1, got \(subscribers)") }
        guard messages >= 1 else { throw ValidationError("--messages must be at least 1, got \(messages)") }
        guard (0...60_000).contains(size) else { throw ValidationError("--size must be 0…60000 bytes, got \(size)") }
        guard window >= 1 else { throw ValidationError("--window must be at least 1, got \(window)") }
        if let rate, rate <= 0 { throw ValidationError("--rate must be positive, got \(rate)") }
        _ = try subscriberPortList
        if let channel, channel.isEmpty || channel.contains("\"") || channel.contains("\\") {
            throw ValidationError("--channel must be a non-empty channel name without quotes or backslashes")
        }
    }

    func run() throws {
        let (address, fileLimit) = try options.prepareRun()
        let ports = try subscriberPortList
        let subscriberAddresses: [SocketAddress]
        do {
            subscriberAddresses = ports.isEmpty ? [address]
                : try ports.map { try AddressLookup.resolve(host: options.host, port: $0) }
        } catch {
            Report.progress("outatime-load: \(error)")
            throw ExitCode(3)
        }
        let channel = self.channel ?? "starport/load-" + String(UUID().uuidString.lowercased().prefix(8))
        let loops = min(options.loops, subscribers)
        let tallies = (0..<loops).map { index in
            FanoutTally(subscriberCount: LoadOptions.share(of: subscribers, loop: index, loops: loops))
        }
        var firstSubscriber = 0
        let plans = tallies.enumerated().map { index, tally in
            defer { firstSubscriber += tally.subscriberCount }
            return FanoutPlan(index: index, address: address, subscriberAddresses: subscriberAddresses,
                              firstSubscriber: firstSubscriber, channel: channel,
                              subscribers: tally.subscriberCount, messages: messages, payloadSize: size,
                              window: window, rate: rate, hostsPublisher: index == 0)
        }
        let directory = WorkerDirectory<WorkerOrder>()
        let threads = WorkerThreads(count: loops, makeWorker: { index, loop in
            let worker = FanoutWorker(loop: loop, plan: plans[index], tally: tallies[index], tallies: tallies,
                                      directory: directory)
            let sender = try worker.start()
            directory.register(sender, at: index)
            return worker
        }, onStartFailure: { index, error in tallies[index].recordError("worker \(index) did not start: \(error)") })

        let outcome = drive(tallies: tallies, directory: directory)
        directory.broadcast(.finish)
        if !threads.join(within: 10) { tallies[0].recordError("workers did not stop within 10 s") }

        let latency = WorkerTally.mergedLatency(tallies)
        let published = tallies[0].published.load(ordering: .relaxed)
        let delivered = tallies.reduce(0) { $0 + $1.delivered.load(ordering: .relaxed) }
        let duplicated = tallies.reduce(0) { $0 + $1.duplicated.load(ordering: .relaxed) }
        let errors = tallies.reduce(0) { $0 + $1.errors.load(ordering: .relaxed) }
        let firstError = tallies.lazy.compactMap(\.firstError).first
        let expected = published * subscribers
        let lost = max(0, expected - delivered)
        let lastNs = tallies.map { $0.lastDeliveryNs.load(ordering: .relaxed) }.max() ?? 0
        let seconds = lastNs > outcome.startNs ? Double(lastNs - outcome.startNs) / 1e9 : 0
        let rateSeen = seconds > 0 ? Double(delivered) / seconds : 0
        let summary = LatencySummary(latency)
        let failed = lost > 0 || duplicated > 0 || errors > 0 || outcome.stalled || published < messages && !outcome.timedOut

        if options.json {
            var object: [String: Any] = [
                "scenario": "fanout", "channel": channel, "subscribers": subscribers, "messages": messages,
                "size": size, "loops": loops, "window": window, "published": published, "expected": expected,
                "delivered": delivered, "lost": lost, "duplicated": duplicated, "errors": errors,
                "elapsed_s": (seconds * 1000).rounded() / 1000, "deliveries_per_s": Int(rateSeen),
                "latency": summary.json, "stalled": outcome.stalled, "duration_reached": outcome.timedOut,
                "ok": !failed,
            ]
            if let rate { object["rate"] = rate }
            if !ports.isEmpty { object["subscriber_ports"] = ports }
            if let fileLimit { object["open_file_limit"] = fileLimit }
            if let firstError { object["first_error"] = firstError }
            Report.printJSON(object)
        } else {
            var rows: [(String, String)] = [
                ("published", "\(Report.grouped(published)) of \(Report.grouped(messages))"),
                ("delivered", "\(Report.grouped(delivered)) of \(Report.grouped(expected)) expected"),
                ("elapsed", String(format: "%.3f s", seconds)),
                ("deliveries/s", Report.grouped(Int(rateSeen))),
            ] + summary.rows + [
                ("lost", Report.grouped(lost)),
                ("duplicated", Report.grouped(duplicated)),
                ("errors", Report.grouped(errors)),
            ]
            if outcome.stalled { rows.append(("stalled", "no delivery for \(options.stallTimeout) s")) }
            if let firstError { rows.append(("first error", firstError)) }
            let spread = ports.isEmpty ? "" : ", subscribers over ports " + ports.map(String.init).joined(separator: ",")
            print(Report.table("fanout \(channel): \(subscribers) subscribers × \(messages) messages of \(size) B, \(loops) loops\(spread)",
                               rows))
        }
        if failed { throw ExitCode(1) }
    }

    struct Outcome {
        var startNs: UInt64 = 0
        var stalled = false
        var timedOut = false
    }

    /// Waits for setup, starts the publisher, prints progress, and returns
    /// when everything arrived, the duration and drain are over, or something failed.
    private func drive(tallies: [FanoutTally], directory: WorkerDirectory<WorkerOrder>) -> Outcome {
        var outcome = Outcome()
        let setupDeadline = Loop.hrtime + UInt64(max(options.duration, 30) * 1e9)
        let needed = subscribers + 1
        func errors() -> Int { tallies.reduce(0) { $0 + $1.errors.load(ordering: .relaxed) } }
        while tallies.reduce(0, { $0 + $1.ready.load(ordering: .relaxed) }) < needed {
            if errors() > 0 { return outcome }
            if Loop.hrtime > setupDeadline {
                tallies[0].recordError("only \(tallies.reduce(0) { $0 + $1.ready.load(ordering: .relaxed) }) of \(needed) connections were ready in time")
                return outcome
            }
            usleep(2_000)
        }
        outcome.startNs = Loop.hrtime
        directory.post(.startPublishing, to: 0)
        let deadline = outcome.startNs + UInt64(options.duration * 1e9)
        let stallNs = UInt64(options.stallTimeout * 1e9)
        var lastDelivered = 0
        var lastChangeNs = outcome.startNs
        var nextProgressNs = outcome.startNs + 1_000_000_000
        var previousDelivered = 0
        while true {
            usleep(5_000)
            let now = Loop.hrtime
            let published = tallies[0].published.load(ordering: .relaxed)
            let delivered = tallies.reduce(0) { $0 + $1.delivered.load(ordering: .relaxed) }
            if errors() > 0 { return outcome }
            if published == messages && delivered >= messages * subscribers { return outcome }
            if outcome.timedOut && delivered >= published * subscribers { return outcome }
            if !outcome.timedOut && now >= deadline {
                outcome.timedOut = true
                directory.post(.stopPublishing, to: 0)
            }
            if delivered != lastDelivered {
                lastDelivered = delivered
                lastChangeNs = now
            } else if now - lastChangeNs > stallNs {
                outcome.stalled = true
                return outcome
            }
            if now >= nextProgressNs {
                let duplicated = tallies.reduce(0) { $0 + $1.duplicated.load(ordering: .relaxed) }
                let slowest = tallies.filter { $0.subscriberCount > 0 }.map { $0.slowest.load(ordering: .relaxed) }.min() ?? 0
                Report.progress(String(format: "[%3.0fs] published %@/%@  delivered %@ (%@/s)  slowest subscriber %@  dup %@",
                                       Double(now - outcome.startNs) / 1e9, Report.grouped(published),
                                       Report.grouped(messages), Report.grouped(delivered),
                                       Report.grouped(delivered - previousDelivered), Report.grouped(slowest),
                                       Report.grouped(duplicated)))
                previousDelivered = delivered
                nextProgressNs += 1_000_000_000
            }
        }
    }
}
