import ArgumentParser
import OutaTimeClient
import OutaTimeProtocol

/// The starport board most commands act on unless --board says otherwise.
struct BoardOption: ParsableArguments {
    @Option(help: ArgumentHelp("Starport board: NAME or starport/NAME.", valueName: "board"))
    var board = "main"

    var channelName: String { channel("starport", board) }
}

struct Catalog: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the ship models and the stations A–E.")

    @OptionGroup var board: BoardOption
    @OptionGroup var options: ConnectionOptions

    func run() throws {
        try options.run({ client throws(ClientError) in try client.command(board.channelName, "catalog") }) { result in
            let ships = (result["ships"]?.array ?? []).map { ship in
                "  \(ship["model"]?.text ?? "")  \(ship["speed_kmh"]?.text ?? "") km/h, docking \(Output.hours(ship["docking_s"]))"
            }
            let stations = (result["stations"]?.array ?? []).map { "\($0["name"]?.text ?? "")@\($0["position_km"]?.text ?? "") km" }
            return "Ships:\n" + ships.joined(separator: "\n") + "\nStations: " + stations.joined(separator: "  ")
        }
    }
}

struct Quote: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Quote distance and duration of a flight.",
        discussion: "PATH is station letters A–E, e.g. AC or A-B-A-B (case and separators ignored).")

    @Argument(help: "Ship model: SWingV1, SWingV2, SWingV3 or TearDrop.")
    var model: String

    @Argument(help: "Travel path, e.g. AC.")
    var path: String

    @OptionGroup var board: BoardOption
    @OptionGroup var options: ConnectionOptions

    func run() throws {
        try options.run({ client throws(ClientError) in
            try client.command(board.channelName, "quote", ["model": .string(model), "path": .string(path)])
        }) { result in
            let legs = (result["legs"]?.array ?? []).map {
                "  \($0["from"]?.text ?? "")→\($0["to"]?.text ?? "")  \($0["distance_km"]?.text ?? "") km  \(Output.hours($0["flight_s"]))"
            }
            return """
                \(result["model"]?.text ?? model) \(result["path"]?.text ?? path)
                \(legs.joined(separator: "\n"))
                distance  \(result["distance_km"]?.text ?? "?") km
                flight    \(Output.hours(result["flight_s"]))
                docking   \(Output.hours(result["docking_s"]))
                duration  \(Output.hours(result["duration_s"]))
                """
        }
    }
}

struct Dispatch: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Dispatch a ship on the board (needs role operate).")

    @Argument(help: "Ship model.")
    var model: String

    @Argument(help: "Travel path, e.g. AC.")
    var path: String

    @Option(help: ArgumentHelp("Departure, ISO 8601 with a zone, e.g. 2015-10-21T16:29:00Z (default: now).", valueName: "time"))
    var departsAt: String?

    @Option(help: "A note for the board (up to 100 characters and 400 bytes of UTF-8, no control characters).")
    var note: String?

    @OptionGroup var board: BoardOption
    @OptionGroup var key: CommandKeyOption
    @OptionGroup var options: ConnectionOptions

    func run() throws {
        var args: [String: JSONValue] = ["model": .string(model), "path": .string(path)]
        if let departsAt { args["departs_at"] = .string(departsAt) }
        if let note { args["note"] = .string(note) }
        try RetriedCommand.run(board.channelName, "dispatch", args, key: key, options: options) { result in
            "dispatch #\(result["id"]?.text ?? "?"): \(result["model"]?.text ?? "") \(result["path"]?.text ?? "")"
                + "  \(result["distance_km"]?.text ?? "") km  \(Output.hours(result["duration_s"]))"
                + "\n  departs \(result["departs_at"]?.text ?? "")  arrives \(result["arrives_at"]?.text ?? "")  \(result["status"]?.text ?? "")"
        }
    }
}

struct Cancel: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Cancel a dispatch by id.")

    @Argument(help: "The dispatch id.")
    var id: Int

    @OptionGroup var board: BoardOption
    @OptionGroup var key: CommandKeyOption
    @OptionGroup var options: ConnectionOptions

    func run() throws {
        try RetriedCommand.run(board.channelName, "cancel", ["id": .int(Int64(id))], key: key, options: options) { _ in
            "dispatch #\(id) cancelled"
        }
    }
}
