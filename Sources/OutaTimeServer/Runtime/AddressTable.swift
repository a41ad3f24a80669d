/// How many connections the server holds per client IP address (loop
/// thread only), for `--max-connections-per-address`. An address's entry
/// goes with its last connection. Loopback addresses count like any other;
/// behind a trusted proxy (`--proxy-from`) the address is the client's from
/// the PROXY header. Failed `hello`s are counted by ``HelloThrottle``.
struct AddressTable {
    private var connections: [String: Int] = [:]

    /// Connections `address` holds now.
    func connections(of address: String) -> Int {
        connections[address] ?? 0
    }

    /// Addresses with a connection.
    var count: Int { connections.count }

    /// Records a connection accepted from `address`.
    mutating func connectionOpened(from address: String) {
        connections[address, default: 0] += 1
    }

    /// Records that a connection from `address` is gone.
    mutating func connectionClosed(from address: String) {
        guard let held = connections[address] else {
            assertionFailure("closing a connection of an address with none recorded")
            return
        }
        connections[address] = held > 1 ? held - 1 : nil
    }
}
