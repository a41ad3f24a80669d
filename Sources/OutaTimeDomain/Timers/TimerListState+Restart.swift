import Foundation
import OutaTimeProtocol

/// Loading a list after a restart (or after a failed commit), in this order:
/// 1. decode the stored state and call ``resumeCountdowns(storedAt:)`` with
///    the moment it was stored: its running timers count down from there;
/// 2. apply the events stored after it, each at its `at` (whole seconds);
/// 3. after a restart only, ``recoverAfterRestart(at:aliveUntil:)``: no
///    viewer survives, so every running timer pauses.
///
/// Precision: the stored form and the events' `at` have whole seconds, so a
/// countdown rebuilt this way is based less than a second away from the live
/// one (a `timer_started` replayed at its truncated `at` runs up to 1 s
/// ahead; one resumed from a stored `remaining_s` up to 1 s either way). Its
/// `remaining_s` differs from the live value by at most 1, at any moment; a
/// timer that stops or finishes is exact again, since those events carry the
/// value. The wire has no place for the fraction, so this is kept.
extension TimerListState {
    /// Gives each running timer that has no countdown base (read from
    /// storage, where bases are not kept) one that starts at `storedAt`
    /// from its stored `remaining_s`, so it counts down, finishes and ticks
    /// again. `storedAt` is when that value was measured: the time the state
    /// was stored (`checkpoint(at:)`), or the `at` of the last event it
    /// includes (up to 1 s earlier; see the type's note on precision).
    /// Timers that already have a base are left alone. O(n), once per load.
    public mutating func resumeCountdowns(storedAt: Date) {
        for position in list.indices where list[position].status == .running && list[position].countdown == nil {
            changeTimer(at: position) { timer in
                timer.countdown = .init(since: storedAt, remainingS: max(0, timer.remainingS))
            }
        }
        dropStaleMoments()
    }

    /// After a restart no viewer is left: every running timer pauses with
    /// `timer_stopped {id, remaining_s}` at its remaining time as of
    /// `aliveUntil`, the last moment the server is known to have been up,
    /// read with its rebuilt base a second early (it may be up to 1 s early
    /// itself), so a restart loses at most the time between that moment and
    /// the crash plus a second, and never shows less than the live value.
    /// A timer at 0 by then (it was due) gets `timer_finished {id}` instead,
    /// since starting it again would only finish it. The events happen at
    /// `now`. Viewer counts on other timers are reset without an event:
    /// they are presence, not durable state.
    ///
    /// With `aliveUntil` nil, and for a running timer without a countdown
    /// base (see ``resumeCountdowns(storedAt:)``), the value is the stored
    /// `remaining_s`: the last checkpoint's, or the one its countdown
    /// (re)started from.
    public mutating func recoverAfterRestart(at now: Date, aliveUntil: Date?) -> [DomainEvent] {
        var events: [DomainEvent] = []
        for position in list.indices {
            let timer = list[position]
            guard timer.status == .running else {
                list[position].clearViewers()
                continue
            }
            // A base rebuilt from storage may start up to 1 s before the live
            // one did (whole seconds: see the type's note), and would then
            // count a second the live countdown had not yet counted: read it
            // 1 s earlier, so a timer never comes back below the value it had
            // at the crash (nor finished when it had a second left).
            let remaining: Int = if let aliveUntil, timer.countdown != nil {
                timer.remaining(at: aliveUntil.addingTimeInterval(-1))
            } else {
                max(0, timer.remainingS)
            }
            events.append(record(Self.paused(id: timer.id, remainingS: remaining), at: now))
        }
        viewing = [:]
        return events
    }

    /// ``recoverAfterRestart(at:aliveUntil:)`` with the stored values: each
    /// running timer pauses at its last checkpointed `remaining_s`.
    public mutating func recoverAfterRestart(at now: Date) -> [DomainEvent] {
        recoverAfterRestart(at: now, aliveUntil: nil)
    }
}
