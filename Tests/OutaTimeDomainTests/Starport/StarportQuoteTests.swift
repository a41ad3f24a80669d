import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// The pure calculations of seed 002: ships, stations, paths and quotes.
@Suite struct StarportQuoteTests {
    typealias Ship = Starport.Ship
    typealias Station = Starport.Station

    /// One of the seed's worked examples.
    struct SeedExample: Sendable, CustomTestStringConvertible {
        var path: String
        var distanceKM: Int
        var flightS: Double
        var dockingS: Double
        var durationS: Double
        var durationH: Double
        var testDescription: String { "\(path) in SWingV2" }
    }

    static let seedExamples: [SeedExample] = [
        SeedExample(path: "AC", distanceKM: 70_000, flightS: 10_080, dockingS: 18_000, durationS: 28_080, durationH: 7.8),
        // The seed says 96,000 km / 49,824 s / 13.84 h, adding 4 × 24,000 km
        // for a path of 3 legs (A→B, B→A, A→B). These are the figures of
        // domain.md's own rule (sum of the legs); see seedABABArithmetic.
        SeedExample(path: "ABAB", distanceKM: 72_000, flightS: 10_368, dockingS: 36_000, durationS: 46_368, durationH: 12.88),
    ]

    /// The seed's two worked examples, to the second (ABAB: see below).
    @Test("seed examples in SWingV2", arguments: seedExamples)
    func seedExample(example: SeedExample) throws {
        let (path, distanceKM, flightS, dockingS, durationS, durationH) = (
            example.path, example.distanceKM, example.flightS, example.dockingS, example.durationS, example.durationH)
        let quote = try Starport.quote(model: "SWingV2", path: path)
        #expect(quote.distanceKM == distanceKM)
        #expect(Starport.distanceKM(of: quote.stations) == distanceKM)
        #expect(quote.flightS == flightS)
        #expect(quote.dockingS == dockingS)
        #expect(quote.durationS == durationS)
        #expect(quote.durationH == durationH)
        #expect(quote.wholeDurationS == Int(durationS))
        #expect(StarportFixture.field(quote.json, "duration_s") == .int(Int64(durationS)))
        #expect(StarportFixture.field(quote.json, "duration_h") == .double(durationH))
    }

    @Test("each model's speed and docking time", arguments: [(Ship, String, Int, Double, Double)]([
        (Ship.swingV1, "SWingV1", 20_000, 4.0, 14_400.0),
        (Ship.swingV2, "SWingV2", 25_000, 2.5, 9_000.0),
        (Ship.swingV3, "SWingV3", 34_000, 2.0, 7_200.0),
        (Ship.tearDrop, "TearDrop", 11_000, 1.0, 3_600.0),
    ]))
    func shipFigures(ship: Ship, name: String, speedKMH: Int, dockingHours: Double, dockingS: Double) throws {
        #expect(ship.rawValue == name)
        #expect(ship.speedKMH == speedKMH)
        #expect(ship.dockingHours == dockingHours)
        #expect(ship.dockingS == dockingS)
        // One hour of flight covers exactly the speed.
        #expect(ship.flightS(distanceKM: speedKMH) == 3_600)
        // Docking counts every station of the path, the origin included.
        #expect(try Starport.quote(model: name, path: "ABC").dockingS == 3 * dockingS)
        #expect(try Starport.ship(named: name.uppercased()) == ship)
    }

    @Test("station positions along the line", arguments: [(Station, Int)]([
        (.a, 0), (.b, 24_000), (.c, 70_000), (.d, 295_000), (.e, 332_000),
    ]))
    func stationPositions(station: Station, positionKM: Int) {
        #expect(station.positionKM == positionKM)
        #expect(Station.a.distanceKM(to: station) == positionKM)
        #expect(station.distanceKM(to: .a) == positionKM)
        #expect(station.distanceKM(to: station) == 0)
    }

    /// The seed's `distanceToStation:fromStation:` and `timeToStation:fromStation:`.
    @Test("one leg between two stations", arguments: [(Station, Station, Ship, Int, Double)]([
        (Station.a, Station.b, Ship.swingV2, 24_000, 3_456.0),
        (.b, .c, .swingV1, 46_000, 8_280.0),
        (.c, .d, .tearDrop, 225_000, 73_636.36363636363),
        (.e, .d, .swingV3, 37_000, 3_917.6470588235293),
        (.e, .a, .swingV2, 332_000, 47_808.0),
    ]))
    func leg(from: Station, to: Station, ship: Ship, distanceKM: Int, flightS: Double) {
        #expect(from.distanceKM(to: to) == distanceKM)
        #expect(ship.flightS(from: from, to: to) == flightS)
    }

    @Test("paths rejected with invalid_path, naming the problem", arguments: [(String, [String])]([
        ("A", ["'A'", "only 1 station", "at least 2"]),
        ("AF", ["'F'", "A–E"]),
        ("AA", ["'A'", "position 2", "consecutive"]),
        ("A1C", ["'1'", "A–E"]),
        ("", ["empty", "at least 2"]),
        ("  - > ", ["no stations"]),
        ("ab-ba", ["'B'", "position 3"]),
        ("A→B", ["'→'"]),
        ("f", ["'f'"]),
    ]))
    func invalidPaths(path: String, fragments: [String]) {
        #expect {
            _ = try Starport.quote(model: "SWingV2", path: path)
        } throws: { error in
            guard let error = error as? ProtocolError, error.code == .invalidPath else { return false }
            return fragments.allSatisfy { error.message.contains($0) }
        }
    }

    @Test("case-insensitive, separators ignored", arguments: [
        ("a-b > c, d", "ABCD"),
        ("ac", "AC"),
        ("A B A B", "ABAB"),
        ("e\td\nc", "EDC"),
        ("-A-C-", "AC"),
        ("a,,b>>c", "ABC"),
    ])
    func normalisedPaths(path: String, normalised: String) throws {
        let quote = try Starport.quote(model: "swingv2", path: path)
        #expect(quote.path == normalised)
        #expect(quote.model == "SWingV2")
        #expect(quote == (try Starport.quote(model: "SWingV2", path: normalised)))
    }

    @Test("model names match case-insensitively", arguments: ["swingv1", "SWINGV1", "sWiNgV1", "SWingV1"])
    func modelCase(name: String) throws {
        #expect(try Starport.ship(named: name) == .swingV1)
        #expect(try Starport.quote(model: name, path: "AB").model == "SWingV1")
    }

    @Test("unknown_model lists the valid names", arguments: ["SWingV4", "", " SWingV2", "Falcon", "TearDrops"])
    func unknownModel(name: String) {
        #expect {
            _ = try Starport.quote(model: name, path: "AC")
        } throws: { error in
            guard let error = error as? ProtocolError, error.code == .unknownModel else { return false }
            return error.message.contains("'\(name)'")
                && ["SWingV1", "SWingV2", "SWingV3", "TearDrop"].allSatisfy { error.message.contains($0) }
        }
    }

    @Test func modelIsCheckedBeforePath() {
        #expect(throws: ProtocolError(.unknownModel,
            "unknown ship model 'X'; valid models: SWingV1, SWingV2, SWingV3, TearDrop")) {
            _ = try Starport.quote(model: "X", path: "F")
        }
    }

    /// Fractions are kept: rounding each part would break flight + docking = duration.
    @Test("fractional flight seconds", arguments: [(String, String, Double, Int, Double)]([
        ("SWingV3", "AB", 2_541.176470588235, 16_942, 4.71),
        ("TearDrop", "AE", 108_654.54545454546, 115_855, 32.18),
        ("SWingV3", "CD", 23_823.529411764706, 38_224, 10.62),
    ]))
    func fractionalFlight(model: String, path: String, flightS: Double, wholeS: Int, hours: Double) throws {
        let quote = try Starport.quote(model: model, path: path)
        #expect(quote.flightS == flightS)
        #expect(quote.flightS.rounded() != quote.flightS)
        #expect(quote.durationS == flightS + quote.dockingS)
        #expect(quote.wholeDurationS == wholeS)
        #expect(quote.durationH == hours)
        #expect(StarportFixture.field(quote.json, "flight_s") == .double(flightS))
    }

    /// The seed's ABAB figures (96,000 km, 3.84 h + 10 h = 13.84 h) count one
    /// leg more than the path has. Its docking part (4 stations × 2.5 h) holds;
    /// its distance is exactly one A–B leg (24,000 km, 3,456 s) above ours.
    /// domain.md asks for both its rule and these figures; they cannot both
    /// hold, and the rule is what every other path is quoted by.
    @Test func seedABABArithmetic() throws {
        let quote = try Starport.quote(model: "SWingV2", path: "ABAB")
        #expect(quote.legs.count == 3)
        #expect(quote.dockingS == 10 * 3_600)
        #expect(quote.distanceKM + 24_000 == 96_000)
        #expect(quote.durationS + 3_456 == 49_824)
    }

    @Test func legsFollowThePath() throws {
        let quote = try Starport.quote(model: "SWingV2", path: "ABAB")
        #expect(quote.legs.map { "\($0.from.rawValue)\($0.to.rawValue)" } == ["AB", "BA", "AB"])
        #expect(quote.legs.allSatisfy { $0.distanceKM == 24_000 && $0.flightS == 3_456 })
        #expect(quote.legs.reduce(0) { $0 + $1.distanceKM } == quote.distanceKM)
    }

    @Test func quoteJSONHasExactlyTheContractKeys() throws {
        let json = try Starport.quote(model: "SWingV2", path: "AC").json
        #expect(StarportFixture.keys(json) == [
            "model", "path", "legs", "distance_km", "flight_s", "docking_s", "duration_s", "duration_h",
        ])
        let leg = StarportFixture.elements(StarportFixture.field(json, "legs")).first
        #expect(leg == .object([
            "from": .string("A"), "to": .string("C"), "distance_km": .int(70_000), "flight_s": .int(10_080),
        ]))
    }

    @Test("path length limit", arguments: [(100, true), (101, false)])
    func pathLimit(stations: Int, accepted: Bool) {
        let path = String(repeating: "AB", count: stations / 2) + (stations.isMultiple(of: 2) ? "" : "A")
        let result = Result { () throws(ProtocolError) in try Starport.parsePath(path) }
        switch result {
        case .success(let parsed): #expect(accepted && parsed.count == stations)
        case .failure(let error): #expect(!accepted && error.code == .invalidPath && error.message.contains("\(stations)"))
        }
    }
}
