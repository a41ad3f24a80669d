import Foundation

/// The value of a slot key in `OT_OWNERS`: `{"node":"n1","epoch":3}`, or
/// `{"epoch":3}` for a slot released with no successor.
///
/// The epoch goes up by one with every change of owner and is never reset
/// (a release keeps it; a slot is never deleted), so a push stamped with an
/// older epoch than the table's is a zombie's.
public struct SlotRecord: Sendable, Equatable, Codable {
    /// The owning node, or nil when the slot is free.
    public var node: String?
    /// The slot's epoch.
    public var epoch: UInt64

    /// A record from its fields.
    public init(node: String?, epoch: UInt64) {
        self.node = node
        self.epoch = epoch
    }

    /// The JSON stored in the key.
    public var encoded: [UInt8] {
        // Encoding two plain fields cannot fail.
        Array((try? JSONEncoder().encode(self)) ?? Data())
    }

    /// The record in `bytes`, or nil when they are not one (then the slot
    /// is treated as free, and its next claim starts from epoch 1).
    public init?(decoding bytes: [UInt8]) {
        guard let record = try? JSONDecoder().decode(SlotRecord.self, from: Data(bytes)) else { return nil }
        self = record
    }
}

/// One slot as a node last saw it.
public struct SlotEntry: Sendable, Equatable {
    /// The stored record; nil when the key is absent (never claimed) or unreadable.
    public var record: SlotRecord?
    /// The key's revision, the expected revision of the next update; 0 when absent.
    public var revision: UInt64
    /// When this node saw the entry take this revision (its monotonic clock).
    public var since: ContinuousClock.Instant

    /// The holding node, if any.
    public var holder: String? { record?.node }
    /// The epoch the next claim must carry.
    public var nextEpoch: UInt64 { (record?.epoch ?? 0) + 1 }
}

/// The 256 slots as seen through the `OT_OWNERS` watch (and this node's
/// own successful writes, which may arrive before their watch event).
public struct SlotTable: Sendable, Equatable {
    /// The entries, indexed by slot.
    public private(set) var entries: [SlotEntry]

    /// A table with every slot absent, seen at `now`.
    public init(now: ContinuousClock.Instant) {
        entries = Array(repeating: SlotEntry(record: nil, revision: 0, since: now), count: SlotMap.count)
    }

    /// The entry of `slot`.
    public subscript(slot: Int) -> SlotEntry { entries[slot] }

    /// Records that `slot` holds `record` at `revision`, seen at `now`.
    /// Older revisions than the one held are ignored (the watch may report
    /// a write this node already applied); returns whether anything changed.
    @discardableResult
    public mutating func apply(slot: Int, record: SlotRecord?, revision: UInt64, at now: ContinuousClock.Instant) -> Bool {
        guard revision > entries[slot].revision else { return false }
        entries[slot] = SlotEntry(record: record, revision: revision, since: now)
        return true
    }

    /// The slots `node` holds, with their epochs.
    public func slots(heldBy node: String) -> [Int: UInt64] {
        var held: [Int: UInt64] = [:]
        for (slot, entry) in entries.enumerated() where entry.holder == node {
            held[slot] = entry.record?.epoch
        }
        return held
    }
}
