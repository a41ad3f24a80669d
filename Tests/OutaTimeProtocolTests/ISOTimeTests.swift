import Foundation
import Testing
import OutaTimeProtocol
import OutaTimeTestKit

/// ISOTime's integer fast paths against Foundation's ISO8601FormatStyle,
/// which they stand in for.
@Suite("ISOTime")
struct ISOTimeTests {
    private static let whole = Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!)
    private static let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// Moments spread over years 1583…9999 (the fast path's range), plus the
    /// edges that break calendar code and a few earlier ones (Foundation's).
    static let seconds: [Int64] = {
        var generator = SeededGenerator(seed: 1985)
        var values: [Int64] = [
            0, -1, 1, 86_399, 86_400, -86_400, -86_401,
            951_782_400, 951_868_799, 951_868_800,  // 2000-02-29 (a leap day of a /400 year)
            4_107_542_400, 4_107_628_800,  // 2100-02-28, 2100-03-01 (no leap day)
            499_137_660,  // 1985-10-26T01:21:00Z
            -12_212_553_600, -12_212_553_601,  // 1583-01-01 and the second before
            -62_135_596_800, 253_402_300_799,  // 0001-01-01 (Julian in Foundation), 9999-12-31T23:59:59
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

    @Test("other forms go to Foundation", arguments: [
        ("1985-10-26T03:21:00+02:00", Int64(499_137_660_000)),
        ("1985-10-26T01:21:00.5Z", 499_137_660_500),
        ("1985-10-26T01:21:00.123456Z", 499_137_660_123),
    ])
    func fallback(text: String, milliseconds: Int64) {
        #expect(ISOTime.parseMilliseconds(text) == milliseconds)
        #expect(ISOTime.parse(text) != nil)
    }

    @Test("texts that are not times are not read", arguments: [
        "", "1985-10-26", "1985-13-01T00:00:00Z", "1985-10-32T00:00:00Z", "1985-10-26 01:21:00Z",
        "1985-10-26T01:21:00.12xZ", "tomorrow", "1985-10-26T01:21:00",
    ])
    func invalid(_ text: String) {
        #expect(ISOTime.parse(text) == nil, "\(text)")
        #expect(ISOTime.parseMilliseconds(text) == nil, "\(text)")
    }

    @Test("impossible days and times are left to Foundation, which rolls them over", arguments: [
        "1985-02-29T00:00:00Z", "2100-02-29T00:00:00Z", "1985-10-26T24:00:00Z", "1985-10-26T01:60:00Z",
    ])
    func rolledOver(_ text: String) throws {
        #expect(ISOTime.parse(text) == (try Self.whole.parse(text)), "\(text)")
    }
}
