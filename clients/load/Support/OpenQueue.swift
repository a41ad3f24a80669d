/// Bounds how many connections one worker has in their opening handshake
/// (connect, `hello`, maybe `subscribe`) at a time, so that thousands of
/// connections do not hit the server's accept backlog (511) at once: a
/// connection refused or dropped there costs a SYN retry of a second or more.
/// Lives on its worker's loop thread only.
final class OpenQueue {
    private let limit: Int
    private var waiting: [() -> Void] = []
    private var next = 0
    /// Handshakes started and not yet ended with `finished()`.
    private(set) var inFlight = 0

    /// `limit` handshakes at most at a time (at least 1).
    init(limit: Int) { self.limit = max(1, limit) }

    /// Queues `open` (which starts one handshake) and starts what the limit allows.
    func add(_ open: @escaping () -> Void) {
        waiting.append(open)
        pump()
    }

    /// One handshake ended (completed or failed): start the next one.
    func finished() {
        inFlight = max(0, inFlight - 1)
        pump()
    }

    /// Drops every handshake not started yet.
    func cancel() {
        waiting = []
        next = 0
    }

    private func pump() {
        while inFlight < limit, next < waiting.count {
            let open = waiting[next]
            next += 1
            inFlight += 1
            open()
        }
        if next == waiting.count && next > 0 {
            waiting = []
            next = 0
        }
    }
}
