/// The 256 ownership slots channels are spread over (design §4.3), and the
/// stable hash that puts a channel in its slot.
///
/// Every node must compute the same slot for a channel, across processes,
/// machines and releases: so this is not `hashValue`, and it must never
/// change once a cluster has run.
public enum SlotMap {
    /// How many slots there are: `s000 … s255` in `OT_OWNERS`.
    public static let count = 256

    /// The channel's slot: FNV-1a 64 over the name's UTF-8 bytes, xor-folded
    /// to 8 bits (`h ^= h >> 32; h ^= h >> 16; h ^= h >> 8; h & 0xFF`).
    ///
    /// The fold matters: the low byte of FNV-1a alone depends only on the
    /// low bytes of its steps, so names differing in a high-order way would
    /// cluster.
    public static func slot(of channel: String) -> Int {
        var hash = fnv1a64(channel.utf8)
        hash ^= hash >> 32
        hash ^= hash >> 16
        hash ^= hash >> 8
        return Int(hash & 0xFF)
    }

    /// The slot's key in `OT_OWNERS`: `s` and three digits (`s007`).
    public static func key(of slot: Int) -> String {
        precondition((0..<count).contains(slot), "slot \(slot) is outside 0..<\(count)")
        return keys[slot]
    }

    /// Made once: the planner looks keys up for every slot on every step.
    private static let keys: [String] = (0..<count).map { slot in
        let digits = String(slot)
        return "s" + String(repeating: "0", count: 3 - digits.count) + digits
    }

    /// The slot a key of `OT_OWNERS` names, or nil for any other key.
    public static func slot(ofKey key: String) -> Int? {
        guard key.utf8.count == 4, key.first == "s", let slot = Int(key.dropFirst()),
              (0..<count).contains(slot) else { return nil }
        return slot
    }

    /// FNV-1a, 64 bits (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
    static func fnv1a64<Bytes: Sequence>(_ bytes: Bytes, seed: UInt64 = 0xCBF2_9CE4_8422_2325) -> UInt64 where Bytes.Element == UInt8 {
        var hash = seed
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}

/// Rendezvous (highest random weight) hashing: for each slot, a ranking of
/// the live nodes that every node computes alike. The first is the slot's
/// preferred owner; when nodes come and go, only the slots whose winner
/// changed move.
public enum Rendezvous {
    /// The weight of `node` for `slot`: FNV-1a 64 over the node id's UTF-8
    /// bytes, a zero byte and the slot key (`s007`), then the SplitMix64
    /// finalizer so that every bit depends on every input bit.
    public static func weight(node: String, slot: Int) -> UInt64 {
        var hash = SlotMap.fnv1a64(node.utf8)
        hash = SlotMap.fnv1a64(CollectionOfOne(0), seed: hash)
        hash = SlotMap.fnv1a64(SlotMap.key(of: slot).utf8, seed: hash)
        hash = (hash ^ (hash >> 30)) &* 0xBF58_476D_1CE4_E5B9
        hash = (hash ^ (hash >> 27)) &* 0x94D0_49BB_1331_11EB
        return hash ^ (hash >> 31)
    }

    /// `nodes` ordered for `slot`, highest weight first (ties, which need
    /// a 64-bit collision, by node id).
    public static func ranking(slot: Int, among nodes: some Sequence<String>) -> [String] {
        nodes.map { (node: $0, weight: weight(node: $0, slot: slot)) }
            .sorted { $0.weight != $1.weight ? $0.weight > $1.weight : $0.node < $1.node }
            .map(\.node)
    }
}
