/// What the server keeps per client IP address (loop thread only).
///
/// How many connections each address holds (`--max-connections-per-address`)
/// and its failed `hello`s (`--max-failed-hellos`). One lookup serves every
/// per-address limit; an address's entry goes when nothing is left in it:
/// no connection, and no failure window still running (those are dropped
/// by ``forgetExpiredFailures(now:)``, from the server's sweep). Loopback
/// addresses count like any other.
struct AddressTable {
    /// One address's bookkeeping.
    struct Entry {
        /// Connections from this address the server holds (open or closing).
        var connections = 0
        /// Failed `hello`s in the window ending at ``failureWindowEnd``.
        var failedHellos = 0
        /// Loop time (ms) the failure window ends; it starts at the first
        /// failure after the previous window ended (a fixed window: neither
        /// more failures nor refusals during it extend it).
        var failureWindowEnd: UInt64 = 0

        /// Failures counted at loop time `now` (0 once the window ended).
        func failures(now: UInt64) -> Int { now < failureWindowEnd ? failedHellos : 0 }

        /// Nothing left to remember at `now`: the entry can go.
        func isEmpty(now: UInt64) -> Bool { connections == 0 && failures(now: now) == 0 }
    }

    private var entries: [String: Entry] = [:]
    /// Addresses with a failure window, whatever their connections: the
    /// only entries the sweep has to look at.
    private var withFailures: Set<String> = []

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

    /// Records that a connection from `address` is gone (at loop time `now`).
    mutating func connectionClosed(from address: String, now: UInt64) {
        guard var entry = entries[address] else {
            assertionFailure("closing a connection of an address with none recorded")
            return
        }
        entry.connections -= 1
        store(entry, for: address, now: now)
    }

    // MARK: Failed hellos

    /// When `address` is locked out at `now` — more than `limit` failed
    /// `hello`s in its window — the milliseconds until its window ends;
    /// nil when it may try.
    func lockout(of address: String, now: UInt64, limit: Int) -> UInt64? {
        guard let entry = entries[address], entry.failures(now: now) >= limit else { return nil }
        return entry.failureWindowEnd - now
    }

    /// Records a failed `hello` from `address` at `now`; a new window of
    /// `windowMs` starts when none is running.
    mutating func helloFailed(from address: String, now: UInt64, windowMs: UInt64) {
        var entry = entries[address, default: Entry()]
        if entry.failures(now: now) == 0 {
            entry.failedHellos = 0
            entry.failureWindowEnd = now + windowMs
        }
        entry.failedHellos += 1
        withFailures.insert(address)
        entries[address] = entry
    }

    /// Forgets the failure windows that ended by `now` (and the entries left
    /// empty by that). O(addresses with a failure window).
    mutating func forgetExpiredFailures(now: UInt64) {
        for address in withFailures {
            guard var entry = entries[address] else { withFailures.remove(address); continue }
            guard entry.failures(now: now) == 0 else { continue }
            entry.failedHellos = 0
            entry.failureWindowEnd = 0
            withFailures.remove(address)
            store(entry, for: address, now: now)
        }
    }

    private mutating func store(_ entry: Entry, for address: String, now: UInt64) {
        if entry.isEmpty(now: now) {
            entries[address] = nil
            withFailures.remove(address)
        } else {
            entries[address] = entry
        }
    }
}
