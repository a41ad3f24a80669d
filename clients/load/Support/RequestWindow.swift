/// The requests one connection has sent and not yet seen answered, oldest
/// first, with their send times. The server answers a connection's requests
/// in request order, each reply carrying its request's id (PROTOCOL.md §2),
/// whether it commits them one by one or together; so the next reply must
/// answer the oldest request, and a reply to any other id is an error the
/// caller reports. A ring that grows when full; lives on one loop thread.
struct RequestWindow<Tag> {
    /// One request in flight.
    struct Entry {
        let id: Int
        /// `Loop.hrtime` when it was queued for sending.
        let sentNs: UInt64
        /// What the caller needs to know about it when its reply comes.
        let tag: Tag
    }

    private var slots: [Entry?]
    private var head = 0
    /// Requests in flight.
    private(set) var count = 0

    /// Room for `capacity` requests before the ring grows.
    init(capacity: Int = 16) {
        slots = Array(repeating: nil, count: max(1, capacity))
    }

    var isEmpty: Bool { count == 0 }

    /// The request the next reply must answer.
    var oldest: Entry? { count > 0 ? slots[head] : nil }

    /// Records a request just queued for sending.
    mutating func append(id: Int, sentNs: UInt64, tag: Tag) {
        if count == slots.count { grow() }
        slots[(head + count) % slots.count] = Entry(id: id, sentNs: sentNs, tag: tag)
        count += 1
    }

    /// Takes the oldest request if the reply with `id` answers it; nil (and
    /// nothing taken) when the window is empty or the oldest has another id.
    mutating func removeOldest(answeredBy id: Int) -> Entry? {
        guard let entry = oldest, entry.id == id else { return nil }
        slots[head] = nil
        head = (head + 1) % slots.count
        count -= 1
        return entry
    }

    /// `reply 7 while request 5 was the oldest in flight`: the error text for
    /// a reply that ``removeOldest(answeredBy:)`` refused.
    func mismatch(_ id: Int) -> String {
        if let oldest { return "reply to request \(id) while request \(oldest.id) was the oldest in flight" }
        return "reply to request \(id) with no request in flight"
    }

    private mutating func grow() {
        var larger = [Entry?](repeating: nil, count: slots.count * 2)
        for offset in 0..<count { larger[offset] = slots[(head + offset) % slots.count] }
        slots = larger
        head = 0
    }
}
