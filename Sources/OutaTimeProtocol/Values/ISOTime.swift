import Foundation

/// Wire times: ISO 8601 UTC, e.g. `1985-10-26T01:21:00Z`; the one reader of
/// every time the server takes in, from a client or from its own storage.
///
/// **Read strictly** (PROTOCOL.md, "Times"): exactly
/// `yyyy-MM-ddTHH:mm:ss`, an optional fraction (`.` and one or more digits,
/// any number of them), then a zone designator, `Z` or `±hh:mm`, and nothing
/// after it. Years 0000…9999 of the proleptic Gregorian calendar (ISO 8601's),
/// month 01–12, a day that exists in that month (leap years: every fourth,
/// not every hundredth, every four-hundredth: 1900 has no 29 February, 2000
/// has), hour 00–23, minute and second 00–59. A leap second (`:60`) is
/// refused: the server's clock (POSIX time) has none, and rolling it into
/// the next minute is exactly the normalising this reader exists to stop.
/// The fraction is **truncated** (never rounded) to whole milliseconds, the
/// finest the server keeps; fields kept in whole seconds then drop the rest
/// of it (truncated toward the past). The time in UTC must lie within
/// 0000-01-01T00:00:00Z … 9999-12-31T23:59:59.999Z.
///
/// Foundation's `ISO8601FormatStyle` is not used to read: it rolls invalid
/// dates and times over (29 February 1985 becomes 1 March), ignores text
/// after the `Z`, rounds long fractions up to the next second and switches
/// to the Julian calendar before 1582. Reading and writing are integer
/// calendar arithmetic, also because Foundation's parser was a fifth of the
/// event loop's work per lap command (docs/BENCHMARKS.md).
public enum ISOTime {
    private static let style = Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!)

    /// The accepted form, for error messages.
    public static let form =
        "an ISO 8601 time yyyy-MM-ddTHH:mm:ss, optionally with a fraction (.SSS…), then Z or ±hh:mm, such as 1985-10-26T01:21:00Z"

    /// Reads a time strictly (see the type's documentation) as whole
    /// milliseconds since 1970, the fraction truncated.
    ///
    /// - Returns: the milliseconds, or the reason the text is not a time.
    public static func read(_ text: String) -> Result<Int64, ISOTimeError> {
        var text = text
        return text.withUTF8 { CivilTime.read($0) }
    }

    /// Reads a time strictly, like ``read(_:)``; nil when it is not one.
    /// The date holds whole milliseconds (the fraction truncated).
    public static func parse(_ text: String) -> Date? {
        guard case .success(let milliseconds) = read(text) else { return nil }
        if milliseconds % 1_000 == 0 { return Date(timeIntervalSince1970: TimeInterval(milliseconds / 1_000)) }
        return Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1_000)
    }

    /// Reads a time strictly, like ``read(_:)``, as whole milliseconds since
    /// 1970 (exact: no trip through a binary fraction); nil when it is not one.
    public static func parseMilliseconds(_ text: String) -> Int64? {
        try? read(text).get()
    }

    /// Formats a date as `yyyy-MM-ddTHH:mm:ssZ` (the fraction dropped,
    /// toward the past). Outside years 0000…9999 (which nothing the server
    /// reads can produce) Foundation writes it.
    public static func format(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds >= Double(CivilTime.firstSecond), seconds <= Double(CivilTime.lastSecond) else {
            return style.format(date)
        }
        return CivilTime.format(seconds: Int64(seconds), milliseconds: nil)
    }

    /// ``format(_:)`` for a run of moments that mostly fall in the same
    /// second (each event's `at`): the text of the last second is kept and
    /// reused, so a second's events share one string.
    public struct SecondCache {
        private var second = Double.nan
        private var cached = ""

        /// Creates an empty cache.
        public init() {}

        /// `ISOTime.format(date)`, reused while `date` is in the same second.
        public mutating func text(for date: Date) -> String {
            let second = date.timeIntervalSince1970.rounded(.down)
            if second != self.second {
                self.second = second
                cached = ISOTime.format(date)
            }
            return cached
        }
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

    /// The last moment the server reads and writes, 9999-12-31T23:59:59Z.
    public static let latest = Date(timeIntervalSince1970: TimeInterval(CivilTime.lastSecond))
}

/// Why a text is not a time, e.g. `February 1985 has 28 days, got day 29`.
public struct ISOTimeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, in words.
    public let reason: String

    /// Creates an error.
    public init(_ reason: String) {
        self.reason = reason
    }

    /// The reason.
    public var description: String { reason }
}

/// UTC calendar arithmetic on whole seconds since 1970 for years
/// 0000…9999 of the proleptic Gregorian calendar, after the
/// days-from-civil method: a year counted from March, so the leap day ends it.
enum CivilTime {
    /// 0000-01-01T00:00:00Z.
    static let firstSecond: Int64 = days(year: 0, month: 1, day: 1) * 86_400
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

    static let monthNames = ["January", "February", "March", "April", "May", "June", "July",
                             "August", "September", "October", "November", "December"]

    /// Reads `yyyy-MM-ddTHH:mm:ss[.f…](Z|±hh:mm)` strictly (see ``ISOTime``)
    /// as milliseconds since 1970, the fraction truncated.
    static func read(_ utf8: UnsafeBufferPointer<UInt8>) -> Result<Int64, ISOTimeError> {
        func fail(_ reason: String) -> Result<Int64, ISOTimeError> { .failure(ISOTimeError(reason)) }
        func isDigit(_ index: Int) -> Bool { index < utf8.count && utf8[index] &- 48 <= 9 }
        func number(_ start: Int, _ count: Int) -> Int? {
            var value = 0
            for index in start..<(start + count) {
                guard isDigit(index) else { return nil }
                value = value * 10 + Int(utf8[index] - 48)
            }
            return value
        }
        func byte(_ index: Int, is ascii: Unicode.Scalar) -> Bool {
            index < utf8.count && utf8[index] == UInt8(ascii: ascii)
        }
        // The shape first, part by part, so the message says which part is off.
        guard let year = number(0, 4), !isDigit(4) else { return fail("the year must be four digits 0000–9999 at the start") }
        guard byte(4, is: "-"), let month = number(5, 2), byte(7, is: "-"), let day = number(8, 2) else {
            return fail("the date must be yyyy-MM-dd, with two-digit month and day")
        }
        guard byte(10, is: "T") else { return fail("the date must be followed by 'T' and the time of day") }
        guard let hour = number(11, 2), byte(13, is: ":"), let minute = number(14, 2), byte(16, is: ":"),
              let second = number(17, 2)
        else { return fail("the time of day must be HH:mm:ss, with two digits each") }
        var index = 19
        var milliseconds = 0
        if byte(index, is: ".") {
            index += 1
            let start = index
            while isDigit(index) {
                // Digits past the third are read and dropped: truncation.
                if index - start < 3 { milliseconds = milliseconds * 10 + Int(utf8[index] - 48) }
                index += 1
            }
            guard index > start else { return fail("the fraction after '.' needs at least one digit") }
            for _ in min(index - start, 3)..<3 { milliseconds *= 10 }
        }
        var offsetSeconds = 0
        if byte(index, is: "Z") {
            index += 1
        } else if byte(index, is: "+") || byte(index, is: "-") {
            let sign = byte(index, is: "-") ? -1 : 1
            guard let offsetHours = number(index + 1, 2), byte(index + 3, is: ":"),
                  let offsetMinutes = number(index + 4, 2), offsetHours <= 23, offsetMinutes <= 59
            else { return fail("the zone offset must be ±hh:mm with hh 00–23 and mm 00–59") }
            offsetSeconds = sign * (offsetHours * 3_600 + offsetMinutes * 60)
            index += 6
        } else if index == utf8.count {
            return fail("the zone designator is missing: end with Z (UTC) or ±hh:mm")
        } else {
            return fail("the seconds must be followed by a fraction (.SSS…) or a zone designator, Z or ±hh:mm")
        }
        guard index == utf8.count else {
            let rest = String(decoding: UnsafeBufferPointer(rebasing: utf8[index...]).prefix(20), as: UTF8.self)
            return fail("nothing may follow the zone designator, got '\(rest)'")
        }
        // Then the values: never rolled over into the next unit.
        guard (1...12).contains(month) else { return fail("the month must be 01–12, got \(month)") }
        let monthDays = daysInMonth(year: year, month: month)
        guard (1...monthDays).contains(day) else {
            return fail("\(monthNames[month - 1]) \(year) has \(monthDays) days, got day \(day)")
        }
        guard hour <= 23 else { return fail("the hour must be 00–23, got \(hour)") }
        guard minute <= 59 else { return fail("the minute must be 00–59, got \(minute)") }
        guard second <= 59 else { return fail("the second must be 00–59 (leap seconds are not accepted), got \(second)") }
        let seconds = days(year: year, month: month, day: day) * 86_400
            + Int64(hour * 3_600 + minute * 60 + second - offsetSeconds)
        guard seconds >= firstSecond, seconds <= lastSecond else {
            return fail("in UTC it falls outside 0000-01-01T00:00:00Z … 9999-12-31T23:59:59Z")
        }
        return .success(seconds * 1_000 + Int64(milliseconds))
    }
}
