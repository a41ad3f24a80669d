import OutaTimeProtocol

/// The starport reference data of seed 002 and domain.md: the four ship
/// models and the five stations on one line. Everything here is a constant,
/// so quotes can be computed without a board (``Starport/quote(model:path:)``)
/// and every client sees the same catalog.
public enum Starport {
    /// Seconds in an hour: speeds are per hour, wire durations in seconds.
    static let secondsPerHour = 3_600.0

    /// A ship model with its cruising speed and its docking time per station.
    /// The raw value is the canonical name used on the wire.
    public enum Ship: String, Sendable, Equatable, CaseIterable {
        /// 20,000 km/h, docks 4 h.
        case swingV1 = "SWingV1"
        /// 25,000 km/h, docks 2.5 h.
        case swingV2 = "SWingV2"
        /// 34,000 km/h, docks 2 h.
        case swingV3 = "SWingV3"
        /// 11,000 km/h, docks 1 h.
        case tearDrop = "TearDrop"

        /// The model whose name matches `name` ignoring case, e.g. `swingv2`;
        /// nil when there is none. Surrounding spaces are not trimmed: a
        /// client that sends them has a bug worth seeing.
        public init?(named name: String) {
            guard let ship = Self.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) else {
                return nil
            }
            self = ship
        }

        /// Cruising speed in km/h (seed 002, 3.a).
        public var speedKMH: Int {
            switch self {
            case .swingV1: 20_000
            case .swingV2: 25_000
            case .swingV3: 34_000
            case .tearDrop: 11_000
            }
        }

        /// Docking time at each station, in hours as the seed gives it (3.b).
        public var dockingHours: Double {
            switch self {
            case .swingV1: 4
            case .swingV2: 2.5
            case .swingV3: 2
            case .tearDrop: 1
            }
        }

        /// Docking time at each station in seconds; whole for every model.
        public var dockingS: Double { dockingHours * Starport.secondsPerHour }

        /// Seconds of flight for `distanceKM`: distance × 3600 / speed, in
        /// that order, so that the seed's examples come out exact.
        public func flightS(distanceKM: Int) -> Double {
            Double(distanceKM) * Starport.secondsPerHour / Double(speedKMH)
        }

        /// Seconds of flight between two stations (the seed's
        /// `timeToStation:fromStation:`), docking not included.
        public func flightS(from origin: Station, to destination: Station) -> Double {
            flightS(distanceKM: origin.distanceKM(to: destination))
        }
    }

    /// A station on the line `A —24,000— B —46,000— C —225,000— D —37,000— E`.
    /// The raw value is the station's letter.
    public enum Station: String, Sendable, Equatable, CaseIterable {
        /// The start of the line, position 0.
        case a = "A"
        /// 24,000 km from A.
        case b = "B"
        /// 46,000 km from B.
        case c = "C"
        /// 225,000 km from C.
        case d = "D"
        /// 37,000 km from D, the end of the line.
        case e = "E"

        /// Kilometres between neighbours, in line order (seed 002, 4.b).
        static let gapsKM = [24_000, 46_000, 225_000, 37_000]

        /// The station for an upper-case letter such as `C`, nil for others.
        public init?(letter: Character) {
            self.init(rawValue: String(letter))
        }

        /// Distance from A along the line, in km.
        public var positionKM: Int {
            let index = Self.allCases.firstIndex(of: self)!
            return Self.gapsKM.prefix(index).reduce(0, +)
        }

        /// Distance to `other` along the line (the seed's
        /// `distanceToStation:fromStation:`); 0 for the station itself.
        public func distanceKM(to other: Station) -> Int {
            abs(positionKM - other.positionKM)
        }
    }

    /// `unknown_model` for `name`, listing the valid names.
    static func unknownModel(_ name: String) -> ProtocolError {
        ProtocolError(.unknownModel,
            "unknown ship model \(JSONValue.string(name).shortDescription); valid models: \(Ship.allCases.map(\.rawValue).joined(separator: ", "))")
    }

    /// The model named `name` (case-insensitive), else `unknown_model`.
    public static func ship(named name: String) throws(ProtocolError) -> Ship {
        guard let ship = Ship(named: name) else { throw unknownModel(name) }
        return ship
    }

    /// The result of the read-only `catalog` action:
    /// `{ships: [{model, speed_kmh, docking_s}], stations: [{name, position_km}]}`.
    public static var catalog: JSONValue {
        .object([
            "ships": .array(Ship.allCases.map { ship in
                .object([
                    "model": .string(ship.rawValue),
                    "speed_kmh": .int(Int64(ship.speedKMH)),
                    "docking_s": number(ship.dockingS),
                ])
            }),
            "stations": .array(Station.allCases.map { station in
                .object(["name": .string(station.rawValue), "position_km": .int(Int64(station.positionKM))])
            }),
        ])
    }

    /// A number for the wire: integral values as `.int` (so `70000.0` is
    /// written and compared as `70000`), anything else as `.double`.
    static func number(_ value: Double) -> JSONValue {
        if let integral = Int64(exactly: value) { return .int(integral) }
        return .double(value)
    }
}
