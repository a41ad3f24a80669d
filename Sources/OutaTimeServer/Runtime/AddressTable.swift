/// What the server keeps per client IP address (loop thread only).
///
/// Today: how many connections each address holds, for
/// `--max-connections-per-address`. Per-address limits added later (failed
/// `hello`s, request rates) belong here too, in ``Entry``, so that one
/// lookup serves them all and an address's entry goes when nothing is left
/// in it. Loopback addresses count like any other.
struct AddressTable {
    /// One address's bookkeeping.
    struct Entry {
        /// Connections from this address the server holds (open or closing).
        var connections = 0

        /// Nothing left to remember: the entry can go.
        var isEmpty: Bool { connections == 0 }
    }

    private var entries: [String: Entry] = [:]

    /// Connections `address` holds now.
    func connections(of address: String) -> Int {
        entries[address]?.connections ?? 0
    }

    /// Addresses with something recorded.
    var count: Int { entries.count }

    /// Records a connection accepted from `address`.
    mutating func connectionOpened(from address: String) {
        entries[address, default: Entry()].connections += 1
    }

    /// Records that a connection from `address` is gone.
    mutating func connectionClosed(from address: String) {
        guard var entry = entries[address] else {
            assertionFailure("closing a connection of an address with none recorded")
            return
        }
        entry.connections -= 1
        entries[address] = entry.isEmpty ? nil : entry
    }
}
