import OutaTimeProtocol
import UV

extension SlowChannel {
    /// Worst first: the larger lateness, then more late ticks, then the
    /// name, so that equal channels come in a stable order.
    func isWorse(than other: SlowChannel) -> Bool {
        (tickLatenessMaxMs, ticksLate, other.channel) > (other.tickLatenessMaxMs, other.ticksLate, channel)
    }
}

extension Server {
    /// At most this many entries in `slowest_channels`: the result stays
    /// bounded however many channels tick.
    static let slowestChannelsShown = 5

    /// Lateness at or under this many ms is not listed: a tick is built
    /// within the millisecond it is due, and reading the clocks in whole
    /// milliseconds makes nearly every ticking channel 1 ms "late", which
    /// would fill the list with noise on a healthy server.
    static let slowestChannelsFloorMs: UInt64 = 1

    /// The channels of `scope` whose ticks were late recently (a worst
    /// lateness over ``slowestChannelsFloorMs`` in the window), worst first, at most
    /// ``slowestChannelsShown``. One pass over the channels, keeping the
    /// few worst: O(channels), paid by `stats` only (never per tick, never
    /// by `/metrics`, which names no channel). Scoped like `list`, so a
    /// scoped token learns nothing of channels outside its scope.
    func slowestChannels(in scope: ChannelScope) -> [SlowChannel] {
        let now = time.hrtime / 1_000_000
        let windowMs = UInt64(config.slowChannelWindowMs)
        var worst: [SlowChannel] = []
        worst.reserveCapacity(Self.slowestChannelsShown + 1)
        for channel in channels.values {
            let reading = channel.tickLateness.reading(at: now, windowMs: windowMs)
            guard reading.maxMs > Self.slowestChannelsFloorMs else { continue }
            let entry = SlowChannel(channel: channel.key, tickLatenessMaxMs: reading.maxMs, ticksLate: reading.late)
            if worst.count == Self.slowestChannelsShown, let last = worst.last, !entry.isWorse(than: last) { continue }
            guard scope.allows(channel.name) else { continue }
            let at = worst.firstIndex { entry.isWorse(than: $0) } ?? worst.endIndex
            worst.insert(entry, at: at)
            if worst.count > Self.slowestChannelsShown { worst.removeLast() }
        }
        return worst
    }
}
