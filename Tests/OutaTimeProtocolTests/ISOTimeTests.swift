import Foundation
import Testing
import OutaTimeProtocol
import OutaTimeTestKit

/// ISOTime: the one strict reader of every time (no rolling over, nothing
/// after the zone, fractions truncated), and its writer, checked against
/// Foundation's ISO8601FormatStyle and Calendar where those are right.
@Suite("ISOTime")
struct ISOTimeTests {
    private static let whole = Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!)
    private static let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// Moments spread over years 1583…9999 (where Foundation's calendar is
    /// the Gregorian one too), plus the edges that break calendar code.
    static let seconds: [Int64] = {
        var generator = SeededGenerator(seed: 1985)
        var values: [Int64] = [
            0, -1, 1, 86_399, 86_400, -86_400, -86_401,
            951_782_400, 951_868_799, 951_868_800,  // 2000-02-29 (a leap day of a /400 year)
            4_107_542_400, 4_107_628_800,  // 2100-02-28, 2100-03-01 (no leap day)
            499_137_660,  // 1985-10-26T01:21:00Z
            -12_212_553_600, -12_212_553_601,  // 1583-01-01 and the second before
            253_402_300_799,  // 9999-12-31T23:59:59
        ]
        for _ in 0..<2_000 {
            values.append(Int64.random(in: -12_212_553_600...253_402_300_799, using: &generator))
        }
        return values
    }()

    @Test("whole seconds are written as Foundation writes them")
    func formatMatches() {
        for second in Self.seconds {
            let date = Date(timeIntervalSince1970: TimeInterval(second))
            #expect(ISOTime.format(date) == Self.whole.format(date), "\(second)")
            // Fractions are dropped the same way, before and after 1970.
            let later = date.addingTimeInterval(0.75)
            #expect(ISOTime.format(later) == Self.whole.format(later), "\(second) + 0.75")
        }
    }

    @Test("whole-second and millisecond texts read back as Foundation reads them")
    func parseMatches() throws {
        for second in Self.seconds {
            let text = Self.whole.format(Date(timeIntervalSince1970: TimeInterval(second)))
            #expect(ISOTime.parse(text) == (try Self.whole.parse(text)), "\(text)")
            let milliseconds = second * 1_000 + (second & 0x3FF) % 1_000
            let withFraction = ISOTime.format(milliseconds: milliseconds)
            #expect(ISOTime.parseMilliseconds(withFraction) == milliseconds, "\(withFraction)")
            let reference = try Self.fractional.parse(withFraction)
            #expect(Int64((reference.timeIntervalSince1970 * 1_000).rounded()) == milliseconds, "\(withFraction)")
            #expect(ISOTime.parse(withFraction).map { Int64(($0.timeIntervalSince1970 * 1_000).rounded()) } == milliseconds)
        }
    }

    @Test("milliseconds are written with exactly three digits, before 1970 too")
    func millisecondForm() {
        #expect(ISOTime.format(milliseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(ISOTime.format(milliseconds: -1) == "1969-12-31T23:59:59.999Z")
        #expect(ISOTime.format(milliseconds: 499_137_660_007) == "1985-10-26T01:21:00.007Z")
        #expect(ISOTime.parseMilliseconds("1985-10-26T01:21:00.007Z") == 499_137_660_007)
        #expect(ISOTime.parseMilliseconds("1985-10-26T01:21:00Z") == 499_137_660_000)
    }

    /// Texts in every accepted form and the milliseconds they read as.
    static let validTimes: [(String, Int64)] = [
        ("1985-10-26T03:21:00+02:00", 499_137_660_000),
        ("1985-10-25T17:21:00-08:00", 499_137_660_000),
        ("1985-10-26T01:21:00-00:00", 499_137_660_000),
        ("1985-10-26T01:21:00.5Z", 499_137_660_500),
        ("1985-10-26T01:21:00.123456Z", 499_137_660_123),
        // Any number of fraction digits, truncated (never rounded) to milliseconds.
        ("1985-10-26T01:21:00.99999999Z", 499_137_660_999),
        ("1985-10-26T01:21:00.123456789012Z", 499_137_660_123),
        ("1985-10-26T01:21:00.\(String(repeating: "9", count: 400))Z", 499_137_660_999),
        ("1985-10-26T01:21:59.9999+00:00", 499_137_719_999),
        ("1969-12-31T23:59:59.9999Z", -1),
        // Leap days: every fourth year, not every hundredth, every four-hundredth.
        ("2000-02-29T00:00:00Z", 951_782_400_000),
        ("1904-02-29T00:00:00Z", -2_077_747_200_000),
        ("1600-02-29T00:00:00Z", -11_670_998_400_000),
        // The edges of the range, in UTC, and the last second of a day.
        ("0000-01-01T00:00:00Z", -62_167_219_200_000),
        ("9999-12-31T23:59:59.999Z", 253_402_300_799_999),
        ("9999-12-31T23:59:59+00:00", 253_402_300_799_000),
        ("1985-10-26T23:59:59Z", 499_219_199_000),
    ]

    @Test("valid times in every accepted form", arguments: validTimes)
    func valid(text: String, milliseconds: Int64) throws {
        #expect(ISOTime.parseMilliseconds(text) == milliseconds, "\(text)")
        #expect(try ISOTime.read(text).get() == milliseconds, "\(text)")
        let date = try #require(ISOTime.parse(text))
        #expect(Int64((date.timeIntervalSince1970 * 1_000).rounded()) == milliseconds, "\(text)")
    }

    /// The adversarial corpus of issue 13 and the boundaries around it: each
    /// is refused, never rolled over, with a reason naming the part.
    @Test("impossible dates, times and shapes are refused, with a reason", arguments: [
        ("1985-02-29T00:00:00Z", "February 1985 has 28 days, got day 29"),
        ("1900-02-29T00:00:00Z", "February 1900 has 28 days"),
        ("2100-02-29T00:00:00Z", "February 2100 has 28 days"),
        ("2000-02-30T00:00:00Z", "February 2000 has 29 days, got day 30"),
        ("1985-04-31T00:00:00Z", "April 1985 has 30 days"),
        ("1985-10-32T00:00:00Z", "October 1985 has 31 days"),
        ("1985-10-00T00:00:00Z", "got day 0"),
        ("1985-13-01T00:00:00Z", "the month must be 01–12, got 13"),
        ("1985-00-01T00:00:00Z", "the month must be 01–12, got 0"),
        ("1985-10-26T25:00:00Z", "the hour must be 00–23, got 25"),
        ("1985-10-26T24:00:00Z", "the hour must be 00–23, got 24"),
        ("1985-10-26T01:61:00Z", "the minute must be 00–59, got 61"),
        ("1985-10-26T01:60:00Z", "the minute must be 00–59, got 60"),
        ("1985-10-26T01:21:60Z", "leap seconds are not accepted"),
        ("1985-12-31T23:59:60Z", "leap seconds are not accepted"),
        ("1985-10-26T01:21:00Zjunk", "nothing may follow the zone designator, got 'junk'"),
        ("1985-10-26T01:21:00Z ", "nothing may follow the zone designator"),
        ("1985-10-26T01:21:00+02:00Z", "nothing may follow the zone designator"),
        ("1985-10-26T01:21:00", "the zone designator is missing"),
        ("1985-10-26T01:21:00.5", "the zone designator is missing"),
        ("1985-10-26T01:21:00.Z", "the fraction after '.' needs at least one digit"),
        ("1985-10-26T01:21:00,5Z", "followed by a fraction (.SSS…) or a zone designator"),
        ("1985-10-26T01:21:00z", "followed by a fraction (.SSS…) or a zone designator"),
        ("1985-10-26T01:21:00+0200", "the zone offset must be ±hh:mm"),
        ("1985-10-26T01:21:00+24:00", "the zone offset must be ±hh:mm with hh 00–23"),
        ("1985-10-26T01:21:00+02:60", "the zone offset must be ±hh:mm"),
        ("1985-10-26T01:21Z", "the time of day must be HH:mm:ss"),
        ("1985-10-26t01:21:00Z", "followed by 'T'"),
        ("1985-10-26 01:21:00Z", "followed by 'T'"),
        ("1985-10-26", "followed by 'T'"),
        ("1985-1-26T01:21:00Z", "the date must be yyyy-MM-dd"),
        ("+1985-10-26T01:21:00Z", "the year must be four digits"),
        ("19850-10-26T01:21:00Z", "the year must be four digits"),
        ("0000-01-01T00:00:00+00:01", "falls outside 0000-01-01T00:00:00Z … 9999-12-31T23:59:59Z"),
        ("9999-12-31T23:59:59-00:01", "falls outside"),
        ("", "the year must be four digits"),
        ("tomorrow", "the year must be four digits"),
        ("1985-10-26T01:21:00.12xZ", "followed by a fraction (.SSS…) or a zone designator"),
    ])
    func refused(text: String, reason: String) {
        #expect(ISOTime.parse(text) == nil, "\(text)")
        #expect(ISOTime.parseMilliseconds(text) == nil, "\(text)")
        guard case .failure(let error) = ISOTime.read(text) else {
            Issue.record("\(text) was read")
            return
        }
        #expect(error.reason.contains(reason), "\(text): \(error.reason)")
    }

    /// Every day of every month of years 1583…2100 (and some later) against Foundation's
    /// Gregorian calendar: a day exists iff ISOTime reads it, at the moment
    /// Foundation computes.
    @Test("the days of each month agree with Foundation's calendar")
    func monthLengths() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        for year in Array(1583...2100) + [2400, 2800, 3000, 9999] {
            for month in 1...12 {
                let first = try #require(calendar.date(from: DateComponents(year: year, month: month, day: 1)))
                let length = try #require(calendar.range(of: .day, in: .month, for: first)).count
                for day in [1, 28, 29, 30, 31] {
                    let text = String(format: "%04d-%02d-%02dT12:00:00Z", year, month, day)
                    let expected = day <= length
                        ? calendar.date(from: DateComponents(year: year, month: month, day: day, hour: 12)) : nil
                    #expect(ISOTime.parse(text) == expected, "\(text)")
                }
            }
        }
    }

    /// Before 1583, where Foundation's calendar is the Julian one, the
    /// proleptic Gregorian days (ISO 8601's) still write and read back.
    @Test("years 0000…1582 write and read back on the proleptic Gregorian calendar")
    func earlyYears() {
        #expect(ISOTime.format(Date(timeIntervalSince1970: -62_167_219_200)) == "0000-01-01T00:00:00Z")
        #expect(ISOTime.format(Date(timeIntervalSince1970: -62_135_596_800)) == "0001-01-01T00:00:00Z")
        #expect(ISOTime.format(Date(timeIntervalSince1970: -12_219_292_800)) == "1582-10-15T00:00:00Z")
        #expect(ISOTime.parse("0000-02-29T00:00:00Z") != nil, "year 0 is a leap year (divisible by 400)")
        var generator = SeededGenerator(seed: 88)
        for _ in 0..<2_000 {
            let second = Int64.random(in: -62_167_219_200...(-12_212_553_601), using: &generator)
            let text = ISOTime.format(Date(timeIntervalSince1970: TimeInterval(second)))
            #expect(ISOTime.parseMilliseconds(text) == second * 1_000, "\(text)")
        }
    }
}
