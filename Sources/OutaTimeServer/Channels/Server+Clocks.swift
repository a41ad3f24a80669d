import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeStore
import UV

extension Server {
    /// Running countdowns are saved at least this often (domain: ≤ 5 s lost).
    static let checkpointEveryTicks: UInt64 = 5

    /// Re-plans `channel`'s next wake-up after its state changed: the next
    /// tick of a running clock, a countdown's finish, a dispatch's departure
    /// or arrival. One scheduler entry per channel, never one timer each.
    func clockChanged(_ channel: Channel) {
        let key = channel.key
        switch channel.state {
        case .delorean(let state) where state.isAccelerating:
            scheduler.schedule(key, at: nextTick(channel, every: UInt64(config.deloreanTickMs)))
        case .laps(let state) where state.status == .running:
            scheduler.schedule(key, at: nextTick(channel, every: UInt64(config.lapTickMs)))
        case .timers(let state):
            guard let finish = state.nextFinish() else { return stopClock(channel) }
            if channel.tickBase == nil, let since = state.runningTimers.compactMap(\.countdown?.since).min() {
                // Tick on the countdowns' own seconds, so each tick shows a
                // whole second gone.
                channel.tickBase = loopDeadline(for: since)
                channel.ticksDone = 0
            }
            scheduler.schedule(key, at: min(nextTick(channel, every: 1000), loopDeadline(for: finish)))
        case .starport(let state):
            guard let change = state.nextStatusChange() else { return stopClock(channel) }
            scheduler.schedule(key, at: loopDeadline(for: change))
        default:
            stopClock(channel)
        }
    }

    /// The scheduler woke `key` at loop time `now`.
    func clockDue(_ key: String, now: UInt64) {
        guard let channel = channels[key] else { return }
        let time = clock.now
        switch channel.state {
        case .delorean:
            // Every due tick is played (catch-up after a stall), so a trip is
            // always 88 rising speeds and then the time travel.
            let interval = UInt64(config.deloreanTickMs)
            while case .delorean(var state) = channel.state, state.isAccelerating,
                  let base = channel.tickBase, base + (channel.ticksDone + 1) * interval <= now {
                channel.ticksDone += 1
                counters.countTick(due: base + channel.ticksDone * interval, now: Loop.hrtime / 1_000_000)
                let (tick, events) = state.accelerate(at: time)
                channel.state = .delorean(state)
                broadcast(TickPush(channel: key, data: tick), to: key)
                commitSystemEvents(events, on: channel)
            }
        case .laps(let state):
            // Ticks are ephemeral: after a stall only the newest is sent.
            if let base = channel.tickBase {
                channel.ticksDone = (now - base) / UInt64(config.lapTickMs)
                if let tick = state.tick(at: time) {
                    counters.countTick(due: base + channel.ticksDone * UInt64(config.lapTickMs), now: Loop.hrtime / 1_000_000)
                    broadcast(TickPush(channel: key, data: tick), to: key)
                }
            }
        case .timers(var state):
            let events = state.advance(to: time)
            channel.state = .timers(state)
            commitSystemEvents(events, on: channel)
            if let base = channel.tickBase, base + (channel.ticksDone + 1) * 1000 <= now {
                let before = channel.ticksDone
                channel.ticksDone = (now - base) / 1000
                // Values of the tick's own second, not of the moment it is
                // processed: a late tick still shows each countdown exactly
                // one second on from the previous one. (Half a millisecond
                // past it, so rounding never puts it before its second; the
                // loop only runs this once that second has passed.)
                let second = clock.date(atLoopMilliseconds: base + channel.ticksDone * 1000).addingTimeInterval(0.0005)
                if let tick = state.tickData(at: second) {
                    counters.countTick(due: base + channel.ticksDone * 1000, now: Loop.hrtime / 1_000_000)
                    broadcast(TickPush(channel: key, data: tick), to: key)
                }
                let phase = channel.checkpointPhase
                if (channel.ticksDone + phase) / Self.checkpointEveryTicks != (before + phase) / Self.checkpointEveryTicks {
                    checkpoint(channel, at: time)
                }
            }
        case .starport(var state):
            let events = state.advance(to: time)
            channel.state = .starport(state)
            commitSystemEvents(events, on: channel)
        }
        clockChanged(channel)
    }

    /// A session stopped watching `key`: release the timers it viewed.
    func release(_ session: Session, from key: String) {
        guard let channel = channels[key], channel.name.kind == .timers else { return }
        let events = channel.state.release(session: session.id, at: clock.now)
        commitSystemEvents(events, on: channel)
        if events.isEmpty { clockChanged(channel) }
    }

    /// At start: apply what a restart changes (aborted trips, stopped
    /// countdowns, passed departures) as durable events, then start clocks.
    func recoverChannelsAfterRestart() {
        let time = clock.now
        for channel in channels.values.sorted(by: { $0.key < $1.key }) {
            let events = channel.state.recoverAfterRestart(at: time)
            if !events.isEmpty {
                logger.info("recovered after restart", metadata: ["channel": "\(channel.key)", "events": "\(events.count)"])
            }
            commitSystemEvents(events, on: channel)
            if events.isEmpty { clockChanged(channel) }
        }
    }

    /// Saves a running countdown's remaining time without an event.
    private func checkpoint(_ channel: Channel, at time: Date) {
        let state = channel.state
        submit([.saveState(channel: channel.key, state: JSONText(deferred: { state.storedText(at: time) }))]) { _ in }
    }

    /// The deadline of the tick after the last one played; starts a series
    /// (tick 0 = now) when none runs.
    private func nextTick(_ channel: Channel, every interval: UInt64) -> UInt64 {
        if channel.tickBase == nil {
            channel.tickBase = loop.now
            channel.ticksDone = 0
        }
        return channel.tickBase! + (channel.ticksDone + 1) * interval
    }

    private func stopClock(_ channel: Channel) {
        channel.tickBase = nil
        channel.ticksDone = 0
        scheduler.cancel(channel.key)
    }

    /// The loop time at which the domain time `date` arrives.
    func loopDeadline(for date: Date) -> UInt64 {
        clock.loopMilliseconds(for: date)
    }
}
