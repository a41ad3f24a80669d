import Foundation
import Histogram

/// Latency percentiles from a histogram of microseconds.
struct LatencySummary {
    let count: UInt64
    let p50: UInt64
    let p99: UInt64
    let p999: UInt64
    let max: UInt64
    let mean: Double

    init(_ histogram: Histogram<UInt64>) {
        count = histogram.totalCount
        p50 = count > 0 ? histogram.valueAtPercentile(50) : 0
        p99 = count > 0 ? histogram.valueAtPercentile(99) : 0
        p999 = count > 0 ? histogram.valueAtPercentile(99.9) : 0
        max = count > 0 ? histogram.max : 0
        mean = count > 0 ? histogram.mean : 0
    }

    /// For `--json`: microseconds.
    var json: [String: Any] {
        ["p50_us": p50, "p99_us": p99, "p99_9_us": p999, "max_us": max, "mean_us": (mean * 10).rounded() / 10]
    }

    /// `0.412 ms`
    static func millis(_ micros: UInt64) -> String { String(format: "%.3f ms", Double(micros) / 1000) }

    /// The percentile rows of a readable report.
    var rows: [(String, String)] {
        [("latency p50", Self.millis(p50)), ("latency p99", Self.millis(p99)),
         ("latency p99.9", Self.millis(p999)), ("latency max", Self.millis(max))]
    }
}

/// Printing helpers shared by the scenarios.
enum Report {
    /// Writes one line to stderr (progress and diagnostics).
    static func progress(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// Pretty-prints `object` as sorted JSON on stdout.
    static func printJSON(_ object: [String: Any]) {
        var object = object
        // Every scenario's connections go through LoadConnection: say over what, and how many opened.
        object["transport"] = LoadConnection.transport.name
        object["connections_opened"] = LoadConnection.opened.load(ordering: .relaxed)
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        print(String(decoding: data, as: UTF8.self))
    }

    /// `1234567` → `1,234,567`.
    static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (offset, character) in digits.enumerated() {
            if offset > 0 && (digits.count - offset) % 3 == 0 { out.append(",") }
            out.append(character)
        }
        return value < 0 ? "-" + out : out
    }

    /// `tcp: 1,001 connections opened` or `ws (/ws): 1,001 WebSocket connections opened`.
    static var transportSummary: String {
        let opened = grouped(LoadConnection.opened.load(ordering: .relaxed))
        switch LoadConnection.transport {
        case .tcp: return "tcp: \(opened) connections opened"
        case .ws: return "ws (\(LoadConnection.webSocketTarget.path)): \(opened) WebSocket connections opened"
        }
    }

    /// A two-column table, with the transport row last.
    static func table(_ title: String, _ rows: [(String, String)]) -> String {
        let rows = rows + [("transport", transportSummary)]
        let width = rows.map(\.0.count).max() ?? 0
        return ([title] + rows.map { "  " + $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 })
            .joined(separator: "\n")
    }
}
