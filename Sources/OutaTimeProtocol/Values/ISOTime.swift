import Foundation

/// Wire times: ISO 8601 UTC with whole seconds, e.g. `1985-10-26T01:21:00Z`.
public enum ISOTime {
    private static let style = Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!)

    /// Formats a date as `yyyy-MM-ddTHH:mm:ssZ` (fractions dropped).
    public static func format(_ date: Date) -> String {
        style.format(date)
    }

    /// Parses an ISO 8601 time with a time zone designator (`Z` or `±hh:mm`),
    /// with or without fractional seconds. Returns nil when it does not parse.
    public static func parse(_ text: String) -> Date? {
        if let date = try? style.parse(text) { return date }
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        return nil
    }
}
