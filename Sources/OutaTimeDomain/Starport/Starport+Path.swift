import OutaTimeProtocol

/// Travel paths (domain.md, starport rules): a string of station letters,
/// case-insensitive, with spaces, `-`, `>` and `,` ignored so that operators
/// can write `A-B-C`, `a > b > c` or `A, B, C`. At least two stations, only
/// A–E, never the same station twice in a row.
extension Starport {
    /// Characters that only separate stations. Any whitespace counts as a
    /// space (a tab pasted from a spreadsheet should not be a "station").
    static let pathSeparators: Set<Character> = ["-", ">", ","]

    /// The longest path accepted, in stations. domain.md sets no limit; this
    /// one only keeps a quote's `legs` (and a stored dispatch) small.
    public static let maxPathStations = 100

    /// Reads a travel path into its stations, e.g. `a-b > c, d` → A B C D.
    ///
    /// Throws `invalid_path` naming the problem, checked in this order: a
    /// character that is not a station (`'F'`, `'1'`), no station at all,
    /// a single station, more than ``maxPathStations``, then the first
    /// station repeated in a row (with its 1-based position among the
    /// stations).
    public static func parsePath(_ text: String) throws(ProtocolError) -> [Station] {
        let shown = JSONValue.string(text).shortDescription
        var stations: [Station] = []
        for character in text where !isPathSeparator(character) {
            let upper = character.uppercased()
            guard upper.count == 1, let station = Station(letter: Character(upper)) else {
                throw ProtocolError(.invalidPath,
                    "station '\(character)' in path \(shown) is not on the route A–E; use the letters A, B, C, D, E")
            }
            stations.append(station)
        }
        switch stations.count {
        case 0 where text.isEmpty:
            throw ProtocolError(.invalidPath, "path is empty: give at least 2 stations from A–E, e.g. 'AC'")
        case 0:
            throw ProtocolError(.invalidPath,
                "path \(shown) has no stations, only separators: give at least 2 stations from A–E, e.g. 'AC'")
        case 1:
            throw ProtocolError(.invalidPath,
                "path \(shown) has only 1 station (\(stations[0].rawValue)): a path needs at least 2 stations from A–E, e.g. 'AC'")
        case (maxPathStations + 1)...:
            throw ProtocolError(.invalidPath,
                "path has \(stations.count) stations; at most \(maxPathStations) are allowed")
        default:
            break
        }
        for index in 1..<stations.count where stations[index] == stations[index - 1] {
            let letter = stations[index].rawValue
            throw ProtocolError(.invalidPath,
                "path \(shown) repeats station '\(letter)' at position \(index + 1): a ship cannot fly from \(letter) to \(letter); consecutive stations must differ")
        }
        return stations
    }

    /// The normalised form of a path: upper-case letters only, e.g. `ABAB`.
    public static func pathText(_ stations: [Station]) -> String {
        stations.map(\.rawValue).joined()
    }

    /// The distance of a whole path (the seed's `distanceForTravelPath:`):
    /// the sum of its legs along the line.
    public static func distanceKM(of stations: [Station]) -> Int {
        zip(stations, stations.dropFirst()).reduce(0) { total, leg in
            total + leg.0.distanceKM(to: leg.1)
        }
    }

    private static func isPathSeparator(_ character: Character) -> Bool {
        character.isWhitespace || pathSeparators.contains(character)
    }
}
