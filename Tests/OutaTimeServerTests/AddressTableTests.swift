@testable import OutaTimeServer
import Testing

/// The per-address connection counts behind `--max-connections-per-address`.
@Suite("address table")
struct AddressTableTests {
    @Test("an entry goes with its last connection")
    func entriesForgotten() {
        var table = AddressTable()
        table.connectionOpened(from: "10.0.0.1")
        table.connectionOpened(from: "10.0.0.1")
        table.connectionOpened(from: "10.0.0.2")
        #expect(table.count == 2)
        #expect(table.connections(of: "10.0.0.1") == 2)
        table.connectionClosed(from: "10.0.0.1")
        #expect(table.connections(of: "10.0.0.1") == 1)
        table.connectionClosed(from: "10.0.0.1")
        table.connectionClosed(from: "10.0.0.2")
        #expect(table.count == 0)
        #expect(table.connections(of: "10.0.0.1") == 0)
    }
}
