import Foundation

/// Wire times: ISO 8601 UTC with whole seconds, e.g. `1985-10-26T01:21:00Z`.
///
/// The canonical forms this server writes (`yyyy-MM-ddTHH:mm:ssZ`, and
/// `yyyy-MM-ddTHH:mm:ss.SSSZ` for the lap stopwatch's milliseconds) are read
/// and written with integer calendar arithmetic; anything else (other
/// offsets, other fraction lengths, years outside 1583…9999) goes to
/// Foundation's `Date.ISO8601FormatStyle`. Why: every lap command and
/// reply reads its measuring point, and Foundation's parser, tried first
/// without and then with fractions, was a fifth of the event loop's work
/// per command (docs/BENCHMARKS.md). The tests compare both paths over
/// thousands of moments.
public enum ISOTime {
    private static let style = Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!)

    /// Formats a date as `yyyy-MM-ddTHH:mm:ssZ` (fractions dropped).
    public static func format(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds >= Double(CivilTime.firstSecond), seconds <= Double(CivilTime.lastSecond) else {
            return style.format(date)
        }
        return CivilTime.format(seconds: Int64(seconds), milliseconds: nil)
    }

    /// Parses an ISO 8601 time with a time zone designator (`Z` or `±hh:mm`),
    /// with or without fractional seconds. Returns nil when it does not parse.
    public static func parse(_ text: String) -> Date? {
        if let (seconds, milliseconds) = CivilTime.parse(text), milliseconds == nil {
            return Date(timeIntervalSince1970: TimeInterval(seconds))
        }
        if let date = try? style.parse(text) { return date }
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        return nil
    }

    /// Parses like ``parse(_:)`` and rounds to whole milliseconds since
    /// 1970; exact (no trip through a binary fraction) for the
    /// `yyyy-MM-ddTHH:mm:ss.SSSZ` form.
    public static func parseMilliseconds(_ text: String) -> Int64? {
        if let (seconds, milliseconds) = CivilTime.parse(text) {
            return seconds * 1_000 + Int64(milliseconds ?? 0)
        }
        return parse(text).map { Int64(($0.timeIntervalSince1970 * 1_000).rounded()) }
    }

    /// `yyyy-MM-ddTHH:mm:ss.SSSZ` for a moment in milliseconds since 1970.
    public static func format(milliseconds: Int64) -> String {
        // Floor division keeps the fraction positive before 1970 too.
        let remainder = milliseconds % 1_000
        let (seconds, fraction) = remainder < 0
            ? (milliseconds / 1_000 - 1, remainder + 1_000) : (milliseconds / 1_000, remainder)
        guard seconds >= CivilTime.firstSecond, seconds <= CivilTime.lastSecond else {
            let whole = style.format(Date(timeIntervalSince1970: TimeInterval(seconds)))
            let digits = String(fraction)
            return String(whole.dropLast()) + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
        }
        return CivilTime.format(seconds: seconds, milliseconds: Int(fraction))
    }
}

/// UTC calendar arithmetic on whole seconds since 1970 for years
/// 1583…9999, after the days-from-civil method: a year counted from March,
/// so the leap day ends it. Gregorian only: Foundation's calendar switches to
/// the Julian one before October 1582, so earlier years are left to it.
enum CivilTime {
    /// 1583-01-01T00:00:00Z, the first whole year of the Gregorian calendar.
    static let firstSecond: Int64 = days(year: 1583, month: 1, day: 1) * 86_400
    /// 9999-12-31T23:59:59Z.
    static let lastSecond: Int64 = 253_402_300_799

    /// Days since 1970-01-01 of a proleptic Gregorian date.
    static func days(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let monthFromMarch = Int64(month > 2 ? month - 3 : month + 9)
        let dayOfYear = (153 * monthFromMarch + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of a day since 1970-01-01.
    static func date(days: Int64) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * monthFromMarch + 2) / 5 + 1)
        let month = Int(monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9)
        let year = Int(yearOfEra + era * 400) + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// `yyyy-MM-ddTHH:mm:ssZ`, or with `.SSS` before the `Z`.
    static func format(seconds: Int64, milliseconds: Int?) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = date(days: days)
        // Written straight into the string's storage: this runs for every
        // event's `at` and every lap moment.
        return String(unsafeUninitializedCapacity: 24) { bytes in
            var count = 0
            func append(_ byte: UInt8) {
                bytes[count] = byte
                count += 1
            }
            func append(_ value: Int, digits: Int) {
                var divisor = 1
                for _ in 1..<digits { divisor *= 10 }
                while divisor > 0 {
                    append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                    divisor /= 10
                }
            }
            append(year, digits: 4)
            append(UInt8(ascii: "-"))
            append(month, digits: 2)
            append(UInt8(ascii: "-"))
            append(day, digits: 2)
            append(UInt8(ascii: "T"))
            append(secondOfDay / 3_600, digits: 2)
            append(UInt8(ascii: ":"))
            append(secondOfDay / 60 % 60, digits: 2)
            append(UInt8(ascii: ":"))
            append(secondOfDay % 60, digits: 2)
            if let milliseconds {
                append(UInt8(ascii: "."))
                append(milliseconds, digits: 3)
            }
            append(UInt8(ascii: "Z"))
            return count
        }
    }

    /// Reads exactly `yyyy-MM-ddTHH:mm:ssZ` or `yyyy-MM-ddTHH:mm:ss.SSSZ`
    /// with a valid date and time; nil for anything else (which the caller
    /// leaves to Foundation).
    static func parse(_ text: String) -> (seconds: Int64, milliseconds: Int?)? {
        var text = text
        return text.withUTF8 { utf8 -> (Int64, Int?)? in
            guard utf8.count == 20 || utf8.count == 24 else { return nil }
            func number(_ start: Int, _ count: Int) -> Int? {
                var value = 0
                for index in start..<(start + count) {
                    let digit = Int(utf8[index]) - 48
                    guard digit >= 0, digit <= 9 else { return nil }
                    value = value * 10 + digit
                }
                return value
            }
            guard utf8[4] == UInt8(ascii: "-"), utf8[7] == UInt8(ascii: "-"), utf8[10] == UInt8(ascii: "T"),
                  utf8[13] == UInt8(ascii: ":"), utf8[16] == UInt8(ascii: ":"), utf8[utf8.count - 1] == UInt8(ascii: "Z"),
                  let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
                  let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
                  year >= 1583, (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
                  hour < 24, minute < 60, second < 60
            else { return nil }
            var milliseconds: Int?
            if utf8.count == 24 {
                guard utf8[19] == UInt8(ascii: "."), let fraction = number(20, 3) else { return nil }
                milliseconds = fraction
            }
            let seconds = days(year: year, month: month, day: day) * 86_400
                + Int64(hour * 3_600 + minute * 60 + second)
            return (seconds, milliseconds)
        }
    }
}
