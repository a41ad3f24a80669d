import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeStore
import UV

/// Channel clocks on ONE scheduler: each channel has at most one wake-up,
/// planned from its kind's ``ClockPlan`` (the next tick of a running series,
/// a countdown's finish, a departure). The server plays what the kind says a
/// wake produces; it never asks which kind it is.
extension Server {
    /// The tick intervals the kinds run at (server settings).
    var tickIntervals: TickIntervals {
        TickIntervals(deloreanMs: UInt64(config.deloreanTickMs), lapsMs: UInt64(config.lapTickMs))
    }

    /// Re-plans `channel`'s next wake-up after its state changed. A tick
    /// series not yet running starts only when `startingTicks`.
    func replanClock(_ channel: Channel, startingTicks: Bool = true) {
        let plan = channel.state.clockPlan(tickIntervals)
        var wake = plan.nextChange.map(loopDeadline(for:))
        if let series = plan.ticks {
            if channel.ticks == nil, startingTicks {
                channel.ticks = TickProgress(base: series.anchor.map(loopDeadline(for:)) ?? time.now)
            }
            if let progress = channel.ticks {
                let next = progress.due(progress.done + 1, every: series.intervalMs)
                wake = min(wake ?? next, next)
            }
        } else {
            channel.ticks = nil
        }
        if let wake {
            scheduler.schedule(channel.key, at: wake)
        } else {
            scheduler.cancel(channel.key)
        }
    }

    /// The scheduler woke `key` at loop time `now`: what happened on its own
    /// (finished countdowns, departures), then the due ticks.
    func clockDue(_ key: String, now: UInt64) {
        assertOnLoopThread()
        guard let channel = channels[key] else { return }
        commitSystemEvents(channel.state.advance(to: clock.now), on: channel)
        if let series = channel.state.clockPlan(tickIntervals).ticks, var progress = channel.ticks,
           progress.due(progress.done + 1, every: series.intervalMs) <= now {
            let newest = (now - progress.base) / series.intervalMs
            let first = series.catchUp == .everyTick ? progress.done + 1 : newest
            for k in first...newest {
                progress.done = k
                channel.ticks = progress
                playTick(of: channel, due: progress.due(k, every: series.intervalMs))
                // A tick may end the series (the DeLorean reaching 88 mph).
                if series.catchUp == .everyTick, channel.state.clockPlan(tickIntervals).ticks == nil { break }
            }
        }
        replanClock(channel)
    }

    /// The tick of `channel`'s series due at loop time `due`: its push to
    /// the watchers and its events to storage.
    private func playTick(of channel: Channel, due: UInt64) {
        let outcome = channel.state.tick(at: clock.date(atLoopMilliseconds: due))
        if let push = outcome.push {
            let now = time.hrtime / 1_000_000
            let lateness = now > due ? now - due : 0
            counters.countTick(latenessMs: lateness)
            channel.tickLateness.record(latenessMs: lateness, at: now, windowMs: UInt64(config.slowChannelWindowMs))
            if recordsMetrics { metrics.tickLateness.record(Double(lateness) / 1000) }
            broadcastTick(push, to: channel.key)
        }
        commitSystemEvents(outcome.events, on: channel)
    }

    /// A session stopped watching `key`: what it viewed may pause.
    func release(_ session: Connection, from key: String) {
        guard let channel = channels[key] else { return }
        commitSystemEvents(channel.state.release(session: session.id, at: clock.now), on: channel)
        replanClock(channel)
        if watcherCount(of: key) == 0 { noteMaybeIdle(channel) }
    }

    /// The store key of the last moment the server is known to have run.
    static let aliveUntilKey = "alive_until"

    /// Records that the server runs now: one small write a second while
    /// any clock runs, and one at shutdown. After a crash, a running
    /// countdown resumes as of this moment (``recoverChannelsAfterRestart()``):
    /// at most about a second is lost, for a million countdowns as for one,
    /// with no per-channel checkpoint.
    func recordAlive(force: Bool = false) {
        guard force || scheduler.count > 0 else { return }
        submit([.setMeta(key: Self.aliveUntilKey, value: ISOTime.format(clock.now))], for: .meta)
    }

    /// At start: apply what a restart changes (aborted trips, stopped
    /// countdowns, passed departures) as durable events, then start clocks.
    func recoverChannelsAfterRestart() {
        let time = clock.now
        let aliveUntil = (try? store.meta(Self.aliveUntilKey)).flatMap { $0 }.flatMap(ISOTime.parse)
        for channel in channels.values.sorted(by: { $0.key < $1.key }) {
            let events = channel.state.recoverAfterRestart(at: time, aliveUntil: aliveUntil)
            if !events.isEmpty {
                logger.info("recovered after restart", metadata: ["channel": "\(channel.key)", "events": "\(events.count)"])
            }
            commitSystemEvents(events, on: channel)
            replanClock(channel)
        }
    }

    /// The loop time at which the domain time `date` arrives.
    func loopDeadline(for date: Date) -> UInt64 {
        clock.loopMilliseconds(for: date)
    }
}
