import OutaTimeProtocol

extension Starport {
    /// One leg of a path: the flight between two consecutive stations.
    public struct Leg: Sendable, Equatable {
        /// Where the leg starts.
        public var from: Station
        /// Where the leg ends.
        public var to: Station
        /// Distance along the line.
        public var distanceKM: Int
        /// Flight time; fractional when the speed does not divide the distance.
        public var flightS: Double

        /// `{from, to, distance_km, flight_s}`.
        public var json: JSONValue {
            .object([
                "from": .string(from.rawValue),
                "to": .string(to.rawValue),
                "distance_km": .int(Int64(distanceKM)),
                "flight_s": Starport.number(flightS),
            ])
        }
    }

    /// Distance and duration of a path flown by one ship model (domain.md):
    /// the result of the read-only `quote` action and the basis of a dispatch.
    ///
    /// Times stay `Double`: 24,000 km at 34,000 km/h is 2,541.17… s, and
    /// rounding each part would make flight + docking ≠ duration. Only a
    /// dispatch rounds, once, in ``wholeDurationS``.
    public struct Quote: Sendable, Equatable {
        /// The ship model.
        public var ship: Ship
        /// The stations in order, origin first.
        public var stations: [Station]
        /// One leg per pair of consecutive stations.
        public var legs: [Leg]
        /// Sum of the legs' distances.
        public var distanceKM: Int
        /// distance_km × 3600 / speed_kmh, computed from the total (not as a
        /// sum of the legs' rounded values).
        public var flightS: Double
        /// Docking time × number of stations, origin included.
        public var dockingS: Double
        /// flight_s + docking_s.
        public var durationS: Double

        /// The canonical model name, e.g. `SWingV2`.
        public var model: String { ship.rawValue }

        /// The normalised path, e.g. `ABAB`.
        public var path: String { Starport.pathText(stations) }

        /// duration_s in hours rounded half away from zero to two decimals
        /// (seed 002, 7: "a max of two decimal places"): 7.8, 13.84.
        public var durationH: Double {
            (durationS / Starport.secondsPerHour * 100).rounded(.toNearestOrAwayFromZero) / 100
        }

        /// The duration a dispatch stores: whole seconds, rounded up, so a
        /// ship is never shown as arrived before its exact arrival.
        public var wholeDurationS: Int { Int(durationS.rounded(.up)) }

        /// `{model, path, legs, distance_km, flight_s, docking_s, duration_s,
        /// duration_h}`; integral numbers are written without a fraction.
        public var json: JSONValue {
            .object([
                "model": .string(model),
                "path": .string(path),
                "legs": .array(legs.map(\.json)),
                "distance_km": .int(Int64(distanceKM)),
                "flight_s": Starport.number(flightS),
                "docking_s": Starport.number(dockingS),
                "duration_s": Starport.number(durationS),
                "duration_h": Starport.number(durationH),
            ])
        }
    }

    /// Quotes `path` for the model named `model` (both case-insensitive).
    /// The model is checked first: `unknown_model`, then the path rules:
    /// `invalid_path` (see ``parsePath(_:)``).
    public static func quote(model: String, path: String) throws(ProtocolError) -> Quote {
        let ship = try ship(named: model)
        return quote(ship: ship, stations: try parsePath(path))
    }

    /// Quotes already validated stations (at least two, none repeated in a row).
    public static func quote(ship: Ship, stations: [Station]) -> Quote {
        let legs = zip(stations, stations.dropFirst()).map { origin, destination in
            Leg(from: origin, to: destination,
                distanceKM: origin.distanceKM(to: destination),
                flightS: ship.flightS(from: origin, to: destination))
        }
        let distanceKM = legs.reduce(0) { $0 + $1.distanceKM }
        let flightS = ship.flightS(distanceKM: distanceKM)
        let dockingS = ship.dockingS * Double(stations.count)
        return Quote(ship: ship, stations: stations, legs: legs, distanceKM: distanceKM,
                     flightS: flightS, dockingS: dockingS, durationS: flightS + dockingS)
    }
}

