import Foundation
import Histogram

/// The result of a timers run, as a table or as one JSON object.
struct TimersReport {
    let command: TimersCommand
    let prefix: String
    let loops: Int
    let fileLimit: UInt64?
    let outcome: TimersOutcome
    let counts: TimersCounts
    let lateness: Histogram<UInt64>
    let firstError: String?

    private var summary: LatencySummary { LatencySummary(lateness) }
    private var tickRate: Double { outcome.measuredSeconds > 0 ? Double(counts.ticks) / outcome.measuredSeconds : 0 }
    private var updateRate: Double { outcome.measuredSeconds > 0 ? Double(counts.updates) / outcome.measuredSeconds : 0 }
    /// Timers added per second of the connect-and-add phase.
    private var addRate: Double { outcome.addSeconds > 0 ? Double(counts.added) / outcome.addSeconds : 0 }
    /// Timers started per second of the start phase.
    private var startRate: Double { outcome.startSeconds > 0 ? Double(counts.started) / outcome.startSeconds : 0 }

    var failed: Bool {
        counts.errors > 0 || outcome.stalled || !outcome.measured || counts.ticks == 0
            || counts.measured.anyWrong || counts.setup.anyWrong
    }

    private func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }

    var json: [String: Any] {
        let (timers, lists, watchers) = (command.timers, command.lists, command.watchers)
        var setup: [String: Any] = [
            "connect_and_add_s": rounded(outcome.addSeconds), "subscribe_s": rounded(outcome.subscribeSeconds),
            "start_s": rounded(outcome.startSeconds), "total_s": rounded(outcome.setupSeconds),
            "adds_per_s": Int(addRate), "starts_per_s": Int(startRate),
        ]
        if let failedPhase = outcome.failedPhase { setup["failed_in"] = failedPhase }
        var cpu: [String: Any] = [:]
        if let setupCPU = outcome.setupCPU { cpu["setup"] = setupCPU.json }
        if let measuredCPU = outcome.measuredCPU { cpu["measured"] = measuredCPU.json }
        var object: [String: Any] = [
            "scenario": "timers", "channel_prefix": prefix, "timers": timers, "lists": lists,
            "watchers": watchers, "connections": command.connections, "loops": loops,
            "setup_window": command.setupWindow,
            "timers_added": counts.added, "timers_started": counts.started,
            "setup": setup, "harness_cpu": cpu,
            "elapsed_s": rounded(outcome.measuredSeconds),
            "ticks_delivered": counts.ticks, "ticks_per_s": Int(tickRate), "expected_ticks_per_s": lists * watchers,
            "updates_delivered": counts.updates, "updates_per_s": Int(updateRate),
            "expected_updates_per_s": timers * watchers,
            "lateness": summary.json,
            "late_ticks_over_50ms": counts.lateTicks,
            "errors": counts.errors, "stalled": outcome.stalled, "ok": !failed,
        ]
        object.merge(counts.measured.json(prefix: ""), uniquingKeysWith: { $1 })
        object.merge(counts.setup.json(prefix: "setup_"), uniquingKeysWith: { $1 })
        if let fileLimit { object["open_file_limit"] = fileLimit }
        if let firstError { object["first_error"] = firstError }
        return object
    }

    var table: String {
        let (timers, lists, watchers) = (command.timers, command.lists, command.watchers)
        let failedIn = outcome.failedPhase.map { ", stopped in \($0)" } ?? ""
        var rows: [(String, String)] = [
            ("connections", "\(Report.grouped(command.connections)) (\(Report.grouped(lists)) viewers + \(Report.grouped(lists * watchers)) watchers)"
                + (fileLimit.map { ", open-file limit \(Report.grouped(Int($0)))" } ?? "")),
            ("timers added", "\(Report.grouped(counts.added)) of \(Report.grouped(timers))"),
            ("timers running", "\(Report.grouped(counts.started)) of \(Report.grouped(timers))"),
            ("setup", String(format: "%.3f s: connect+add %.3f s, subscribe %.3f s, start %.3f s",
                             outcome.setupSeconds, outcome.addSeconds, outcome.subscribeSeconds, outcome.startSeconds) + failedIn),
            ("setup rates", "\(Report.grouped(Int(addRate))) adds/s, \(Report.grouped(Int(startRate))) starts/s, "
                + "\(command.setupWindow) in flight per viewer"),
            ("measured", String(format: "%.3f s", outcome.measuredSeconds)),
            ("ticks/s", "\(Report.grouped(Int(tickRate))) (expected \(Report.grouped(lists * watchers)))"),
            ("updates/s", "\(Report.grouped(Int(updateRate))) (expected \(Report.grouped(timers * watchers)))"),
        ] + summary.rows.map { ($0.0.replacingOccurrences(of: "latency", with: "lateness"), $0.1) } + [
            ("missed ticks", Report.grouped(counts.measured.missedTicks)),
            ("duplicated ticks", Report.grouped(counts.measured.duplicatedTicks)),
            ("missed updates", Report.grouped(counts.measured.missedUpdates)),
            ("duplicated updates", Report.grouped(counts.measured.duplicatedUpdates)),
            ("during setup: missed, duplicated ticks", "\(Report.grouped(counts.setup.missedTicks)), "
                + "\(Report.grouped(counts.setup.duplicatedTicks)) (updates \(Report.grouped(counts.setup.missedUpdates)), "
                + "\(Report.grouped(counts.setup.duplicatedUpdates)))"),
            ("ticks over 50 ms late", Report.grouped(counts.lateTicks)),
            ("harness CPU, setup", outcome.setupCPU?.text ?? "?"),
            ("harness CPU, measured", outcome.measuredCPU?.text ?? "?"),
            ("errors", Report.grouped(counts.errors)),
        ]
        if outcome.stalled { rows.append(("stalled", "no tick for \(command.options.stallTimeout) s")) }
        if let firstError { rows.append(("first error", firstError)) }
        return Report.table("timers \(prefix)-*: \(timers) timers over \(lists) lists, \(watchers) watchers each, \(loops) loops",
                            rows)
    }
}
