import ArgumentParser
import Foundation
import OutaTimeClient
import OutaTimeProtocol

struct Timers: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage a list of event countdowns.",
        discussion: """
            A countdown runs only while someone views it: `outatime timers start LIST ID` \
            views it and prints the countdown until it finishes (or Ctrl-C, which stops viewing).
            """,
        subcommands: [Add.self, Update.self, Remove.self, Start.self, Stop.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a countdown (give --in or --at).")
        @Argument(help: "The list: NAME or timers/NAME.") var list: String
        @Option(help: "What happens (1–100 characters, at most 400 bytes of UTF-8).") var event: String
        @Option(help: "Where (up to 100 characters and 400 bytes of UTF-8).") var location = ""
        @Option(name: .customLong("in"), help: ArgumentHelp("Time left, e.g. 90, 90s, 10m, 1h30m.", valueName: "duration"))
        var remaining: String?
        @Option(help: ArgumentHelp("When it happens, ISO 8601 with a zone, e.g. 1985-11-12T22:04:00Z.", valueName: "time")) var at: String?
        @OptionGroup var key: CommandKeyOption
        @OptionGroup var options: ConnectionOptions

        func validate() throws {
            guard (remaining == nil) != (at == nil) else { throw ValidationError("give exactly one of --in and --at") }
            if let remaining, Duration.seconds(remaining) == nil {
                throw ValidationError("--in '\(remaining)' is not a duration like 90, 90s, 10m or 1h30m")
            }
        }

        func run() throws {
            var args: [String: JSONValue] = ["event": .string(event), "location": .string(location)]
            if let remaining, let seconds = Duration.seconds(remaining) { args["remaining_s"] = .int(Int64(seconds)) }
            if let at { args["at"] = .string(at) }
            try SimpleAction.run("timers", list, "add", args, key: key, options: options)
        }
    }

    struct Update: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a countdown's event, location or time left.")
        @Argument(help: "The list.") var list: String
        @Argument(help: "The timer id.") var id: Int
        @Option(help: "New event text.") var event: String?
        @Option(help: "New location.") var location: String?
        @Option(name: .customLong("in"), help: ArgumentHelp("New time left, e.g. 10m.", valueName: "duration"))
        var remaining: String?
        @OptionGroup var key: CommandKeyOption
        @OptionGroup var options: ConnectionOptions

        func run() throws {
            var args: [String: JSONValue] = ["id": .int(Int64(id))]
            if let event { args["event"] = .string(event) }
            if let location { args["location"] = .string(location) }
            if let remaining {
                guard let seconds = Duration.seconds(remaining) else {
                    throw ValidationError("--in '\(remaining)' is not a duration like 90, 90s, 10m or 1h30m")
                }
                args["remaining_s"] = .int(Int64(seconds))
            }
            try SimpleAction.run("timers", list, "update", args, key: key, options: options)
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a countdown.")
        @Argument(help: "The list.") var list: String
        @Argument(help: "The timer id.") var id: Int
        @OptionGroup var key: CommandKeyOption
        @OptionGroup var options: ConnectionOptions
        func run() throws { try SimpleAction.run("timers", list, "remove", ["id": .int(Int64(id))], key: key, options: options) }
    }

    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "View a countdown: it runs, and is printed, until it finishes or you press Ctrl-C.")
        @Argument(help: "The list.") var list: String
        @Argument(help: "The timer id.") var id: Int
        @Option(help: ArgumentHelp("Stop viewing after this many seconds (default: until it finishes).", valueName: "seconds"))
        var seconds: Double?
        @OptionGroup var options: ConnectionOptions

        func run() throws {
            let name = channel("timers", list)
            let client = try options.connect { $0.heartbeatIntervalMs = 5_000 }  // stay connected while viewing
            defer { client.close() }
            var finished = false
            client.connection.onTick = { tick in
                guard tick.channel == name else { return }
                for timer in tick.data["timers"]?.array ?? [] where timer["id"]?.number == Double(id) {
                    let remaining = Int(timer["remaining_s"]?.number ?? 0)
                    Output.print(options.json ? Output.json(tick.data)
                        : String(format: "%d:%02d:%02d", remaining / 3600, remaining / 60 % 60, remaining % 60))
                }
            }
            client.connection.onEvent = { event in
                guard event.channel == name, event.data["id"]?.number == Double(id) else { return }
                if event.event == "timer_finished" {
                    finished = true
                    Output.print(options.json ? Output.json(event.data) : "finished")
                }
            }
            do {
                _ = try client.request("subscribe", fields: ["channel": .string(name)])
                let timer = try client.command(name, "start", ["id": .int(Int64(id))])
                Output.print(options.json ? Output.json(timer)
                    : "viewing #\(id) \(timer["event"]?.text ?? "") — \(timer["remaining_s"]?.text ?? "?") s left (Ctrl-C stops viewing)")
            } catch {
                throw options.failed(error, on: client)
            }
            let limit = seconds.map { UInt64(max(0, $0) * 1000) } ?? UInt64.max / 2
            client.run(timeoutMs: limit) { finished || !client.connection.isReady }
            if !finished && !client.connection.isReady {
                throw options.failed(.closed(client.connection.lastDisconnect), on: client)
            }
        }
    }

    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop viewing a countdown from this connection.",
            discussion: "A countdown kept running by `outatime timers start` pauses when that command exits.")
        @Argument(help: "The list.") var list: String
        @Argument(help: "The timer id.") var id: Int
        @OptionGroup var options: ConnectionOptions
        func run() throws {
            let name = channel("timers", list)
            try options.run({ client throws(ClientError) in
                _ = try client.request("subscribe", fields: ["channel": .string(name)])
                return try client.command(name, "stop", ["id": .int(Int64(id))])
            }) { Output.text($0) }
        }
    }
}

/// `90`, `90s`, `10m`, `2h`, `1h30m` → seconds.
enum Duration {
    static func seconds(_ text: String) -> Int? {
        if let plain = Int(text), plain >= 0 { return plain }
        var total = 0
        var digits = ""
        for character in text.lowercased() {
            if character.isNumber {
                digits.append(character)
                continue
            }
            guard let value = Int(digits) else { return nil }
            switch character {
            case "h": total += value * 3600
            case "m": total += value * 60
            case "s": total += value
            default: return nil
            }
            digits = ""
        }
        return digits.isEmpty && !text.isEmpty ? total : nil
    }
}
