import ArgumentParser
import Foundation
import OutaTimeClient
import OutaTimeProtocol

/// A state-changing action on `kind/NAME`, printing the result: sent with
/// an idempotency key and retried across reconnects (``RetriedCommand``).
struct SimpleAction {
    static func run(_ kind: String, _ name: String, _ action: String, _ args: [String: JSONValue] = [:],
                    key: CommandKeyOption, options: ConnectionOptions) throws {
        try RetriedCommand.run(channel(kind, name), action, args, key: key, options: options) { Output.text($0) }
    }
}

struct DeLorean: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delorean", abstract: "Operate a DeLorean's time circuits.",
        subcommands: [SetDestination.self, Travel.self])

    struct SetDestination: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set the destination time (while parked).")
        @Argument(help: "The car: NAME or delorean/NAME.") var car: String
        @Argument(help: "Destination, ISO 8601 with a zone (Z or ±hh:mm), e.g. 1955-11-12T22:04:00Z.") var time: String
        @OptionGroup var key: CommandKeyOption
        @OptionGroup var options: ConnectionOptions
        func run() throws { try SimpleAction.run("delorean", car, "set_destination", ["time": .string(time)], key: key, options: options) }
    }

    struct Travel: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Accelerate to 88 mph and travel to the destination.")
        @Argument(help: "The car.") var car: String
        @OptionGroup var key: CommandKeyOption
        @OptionGroup var options: ConnectionOptions
        func run() throws { try SimpleAction.run("delorean", car, "travel", key: key, options: options) }
    }
}

struct Laps: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Operate a lap stopwatch.", subcommands: [Start.self, Stop.self, Lap.self, Reset.self])

    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Start (or resume) the stopwatch.")
        @Argument(help: "The session: NAME or laps/NAME.") var session: String
        @OptionGroup var key: CommandKeyOption
        @OptionGroup var options: ConnectionOptions
        func run() throws { try SimpleAction.run("laps", session, "start", key: key, options: options) }
    }

    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Pause the stopwatch.")
        @Argument(help: "The session.") var session: String
        @OptionGroup var key: CommandKeyOption
        @OptionGroup var options: ConnectionOptions
        func run() throws { try SimpleAction.run("laps", session, "stop", key: key, options: options) }
    }

    struct Lap: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Complete the current lap.")
        @Argument(help: "The session.") var session: String
        @OptionGroup var key: CommandKeyOption
        @OptionGroup var options: ConnectionOptions
        func run() throws { try SimpleAction.run("laps", session, "lap", key: key, options: options) }
    }

    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Erase laps and times (stop first).")
        @Argument(help: "The session.") var session: String
        @OptionGroup var key: CommandKeyOption
        @OptionGroup var options: ConnectionOptions
        func run() throws { try SimpleAction.run("laps", session, "reset", key: key, options: options) }
    }
}
