import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// The readouts of seed 000: `MMM dd yyyy hh:mm a` upper case, and "% MPH".
@Suite struct DeLoreanDisplayTests {
    @Test("times read out in UTC, upper case", arguments: [
        ("1985-10-26T01:21:00Z", "OCT 26 1985 01:21 AM"),
        ("1955-11-12T22:04:00Z", "NOV 12 1955 10:04 PM"),
        ("2015-10-21T16:29:00Z", "OCT 21 2015 04:29 PM"),
        ("1885-09-02T08:00:00Z", "SEP 02 1885 08:00 AM"),
        ("2000-01-01T00:00:00Z", "JAN 01 2000 12:00 AM"),
        ("2000-01-01T12:00:00Z", "JAN 01 2000 12:00 PM"),
        ("1985-10-26T09:21:00+08:00", "OCT 26 1985 01:21 AM"),
        ("1985-10-26T01:21:59.999Z", "OCT 26 1985 01:21 AM"),
    ])
    func display(iso: String, readout: String) {
        #expect(DeLoreanState.display(iso) == readout)
    }

    @Test("text that is not a time is shown as it is", arguments: ["", "next tuesday", "1985-10-26"])
    func unparsable(text: String) {
        #expect(DeLoreanState.display(text) == text)
    }

    @Test("speed reads \"% MPH\"", arguments: [(0, "0 MPH"), (1, "1 MPH"), (42, "42 MPH"), (88, "88 MPH")])
    func speed(mph: Int, readout: String) {
        #expect(DeLoreanState.displaySpeed(mph) == readout)
    }

    /// The readouts of a whole trip, as a client renders them at each stage.
    @Test func tripReadouts() throws {
        var car = DeLoreanFixtures.ready
        #expect(DeLoreanState.display(car.presentTime) == "OCT 26 1985 01:21 AM")
        #expect(car.destinationTime.map(DeLoreanState.display) == "NOV 12 1955 10:04 PM")
        (car, _) = try DeLoreanFixtures.perform(car, "travel")
        let (speeds, _) = DeLoreanFixtures.accelerate(&car, ticks: 88)
        #expect(speeds.map(DeLoreanState.displaySpeed).last == "88 MPH")
        #expect(DeLoreanState.display(car.presentTime) == "NOV 12 1955 10:04 PM")
        #expect(car.lastDeparted.map(DeLoreanState.display) == "OCT 26 1985 01:21 AM")
        #expect(DeLoreanState.displaySpeed(car.speedMPH) == "0 MPH")
    }
}
