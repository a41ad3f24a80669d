import Foundation
import ArgumentParser
import OutaTimeClient
import OutaTimeProtocol

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List channels with their seq and watcher count.")

    @Argument(help: "Only channels of this kind (delorean, starport, timers, laps).")
    var kind: String?

    @OptionGroup var options: ConnectionOptions

    func run() throws {
        var fields: [String: JSONValue] = [:]
        if let kind { fields["kind"] = .string(kind) }
        try options.run({ client throws(ClientError) in try client.request("list", fields: fields) }) { result in
            let rows = result["channels"]?.array ?? []
            if rows.isEmpty { return "no channels" }
            let width = max(7, rows.map { $0["channel"]?.text.count ?? 0 }.max() ?? 0)
            let header = "CHANNEL".padding(toLength: width, withPad: " ", startingAt: 0) + "  KIND       SEQ  WATCHERS"
            return ([header] + rows.map { row in
                (row["channel"]?.text ?? "").padding(toLength: width, withPad: " ", startingAt: 0) + "  "
                    + (row["kind"]?.text ?? "").padding(toLength: 9, withPad: " ", startingAt: 0)
                    + String(repeating: " ", count: max(0, 5 - (row["seq"]?.text.count ?? 0))) + (row["seq"]?.text ?? "")
                    + "  " + (row["watchers"]?.text ?? "")
            }).joined(separator: "\n")
        }
    }
}

struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show a channel's current state (creates it if new).")

    @Argument(help: "The channel, e.g. delorean/main.")
    var channel: String

    @OptionGroup var options: ConnectionOptions

    func run() throws {
        try options.run({ client throws(ClientError) in
            try client.request("get", fields: ["channel": .string(channel)])
        }) { result in
            "\(result["channel"]?.text ?? channel)  (\(result["kind"]?.text ?? "?"), seq \(result["seq"]?.text ?? "?"))\n"
                + Output.text(result["state"] ?? .null, indent: "  ")
        }
    }
}

struct History: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Page through a channel's durable events.")

    @Argument(help: "The channel.")
    var channel: String

    @Option(help: "Only events after this seq.")
    var after = 0

    @Option(help: "At most this many events (1–1000).")
    var limit = 100

    @OptionGroup var options: ConnectionOptions

    func run() throws {
        try options.run({ client throws(ClientError) in
            try client.request("history", fields: ["channel": .string(channel), "after": .int(Int64(after)),
                                                   "limit": .int(Int64(limit))])
        }) { result in
            let events = result["events"]?.array ?? []
            if events.isEmpty { return "no events after seq \(after) (channel seq \(result["seq"]?.text ?? "0"))" }
            return events.map { event in
                "#\(event["seq"]?.text ?? "?")  \(event["at"]?.text ?? "")  \(event["event"]?.text ?? "")  \(event["data"]?.text ?? "")"
            }.joined(separator: "\n")
        }
    }
}

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the server's counters.",
        discussion: """
            For live rates (deliveries/s, commands/s, commit time) use `outatime top`. \
            With --prometheus the server renders its counters in the Prometheus text format: \
            the same text its --http listener serves at /metrics (no --http needed), e.g. for \
            node_exporter's textfile collector: outatime stats --prometheus > outatime.prom
            """)

    @Flag(help: "Print the Prometheus text format, as the server's /metrics serves it (rendered by the server).")
    var prometheus = false

    @OptionGroup var options: ConnectionOptions

    func run() throws {
        let fields: [String: JSONValue] = prometheus ? ["format": .string("prometheus")] : [:]
        try options.run({ client throws(ClientError) in try client.request("stats", fields: fields) }) { result in
            prometheus ? (result["text"]?.text ?? "") : Output.text(result)
        }
    }
}

struct Publish: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send an ephemeral message to a channel's subscribers.",
        discussion: "DATA is parsed as JSON when it is valid JSON, else sent as a string.")

    @Argument(help: "The channel.")
    var channel: String

    @Argument(help: "The message: JSON, or text.")
    var data: String

    @OptionGroup var options: ConnectionOptions

    func run() throws {
        let value = (try? JSONValue.parse(Data(data.utf8))) ?? .string(data)
        try options.run({ client throws(ClientError) in
            try client.request("publish", fields: ["channel": .string(channel), "data": value])
        }) { result in "delivered to \(result["delivered"]?.text ?? "0") subscriber(s)" }
    }
}
