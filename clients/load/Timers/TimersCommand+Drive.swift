import Foundation
import UV

/// How a timers run went, as the coordinating thread saw it.
struct TimersOutcome {
    /// Seconds each setup phase took; for the phase the setup stopped in,
    /// until it stopped (0 for phases never reached).
    var addSeconds = 0.0
    var subscribeSeconds = 0.0
    var startSeconds = 0.0
    /// The setup phase that failed (error or --setup-timeout), nil when the setup completed.
    var failedPhase: String?
    var measured = false
    var measuredSeconds = 0.0
    var stalled = false
    /// The harness's CPU during the setup (up to where it stopped) and the measurement.
    var setupCPU: HarnessCPU?
    var measuredCPU: HarnessCPU?

    var setupSeconds: Double { addSeconds + subscribeSeconds + startSeconds }
}

extension TimersCommand {
    /// Runs the setup phases (each waits for the one before), then measures
    /// for --duration with a progress line every second.
    func drive(tallies: [TimersTally], directory: WorkerDirectory<TimersOrder>, threads: WorkerThreads,
               from cpuAtStart: CPUSample) -> TimersOutcome {
        var outcome = TimersOutcome()
        let startNs = cpuAtStart.wallNs
        let setupDeadline = startNs + UInt64(setupTimeout * 1e9)
        func counts() -> TimersCounts { TimersCounts.sum(tallies) }
        var phaseStartNs = startNs
        var nextProgressNs = startNs + 1_000_000_000
        var previous = TimersCounts()
        /// Waits until `done()`, then stores the phase's seconds with `store`;
        /// false on an error or the setup deadline (the seconds so far stored too).
        func phase(_ name: String, _ store: (inout TimersOutcome, Double) -> Void, done: () -> Bool) -> Bool {
            var completed = true
            while !done() {
                if counts().errors > 0 {
                    completed = false
                    break
                }
                let now = Loop.hrtime
                if now > setupDeadline {
                    tallies[0].recordError("setup did not finish within --setup-timeout \(setupTimeout) s (\(name))")
                    completed = false
                    break
                }
                if now >= nextProgressNs {
                    let c = counts()
                    Report.progress(String(format: "[%3.0fs] setup (%@): viewers %@/%@  added %@/%@ (%@/s)  watchers %@+%@/%@  started %@/%@ (%@/s)  errors %@",
                                           Double(now - startNs) / 1e9, name,
                                           Report.grouped(c.viewersReady), Report.grouped(lists),
                                           Report.grouped(c.added), Report.grouped(timers), Report.grouped(c.added - previous.added),
                                           Report.grouped(c.watchersConnected), Report.grouped(c.watchersSubscribed),
                                           Report.grouped(lists * watchers),
                                           Report.grouped(c.started), Report.grouped(timers), Report.grouped(c.started - previous.started),
                                           Report.grouped(c.errors)))
                    previous = c
                    nextProgressNs += 1_000_000_000
                }
                usleep(2_000)
            }
            let now = Loop.hrtime
            store(&outcome, Double(now - phaseStartNs) / 1e9)
            phaseStartNs = now
            if !completed {
                outcome.failedPhase = name
                outcome.setupCPU = CPUSample.now(threads).since(cpuAtStart)
            }
            return completed
        }
        let watcherCount = lists * watchers
        guard phase("connect, add", { $0.addSeconds = $1 }, done: {
            let c = counts()
            return c.viewersReady >= lists && c.added >= timers && c.watchersConnected >= watcherCount
        }) else { return outcome }
        directory.broadcast(.subscribeWatchers)
        guard phase("subscribe", { $0.subscribeSeconds = $1 }, done: { counts().watchersSubscribed >= watcherCount }) else {
            return outcome
        }
        directory.broadcast(.startTimers)
        guard phase("start", { $0.startSeconds = $1 }, done: { counts().started >= timers }) else { return outcome }
        let cpuAtMeasure = CPUSample.now(threads)
        outcome.setupCPU = cpuAtMeasure.since(cpuAtStart)
        measure(tallies: tallies, directory: directory, from: cpuAtMeasure, threads: threads, into: &outcome)
        return outcome
    }

    /// The measured phase: --duration seconds, or until an error or a stall.
    private func measure(tallies: [TimersTally], directory: WorkerDirectory<TimersOrder>, from cpuAtMeasure: CPUSample,
                         threads: WorkerThreads, into outcome: inout TimersOutcome) {
        func counts() -> TimersCounts { TimersCounts.sum(tallies) }
        let measureNs = cpuAtMeasure.wallNs
        directory.broadcast(.measure(true))
        outcome.measured = true
        let deadline = measureNs + UInt64(options.duration * 1e9)
        let stallNs = UInt64(options.stallTimeout * 1e9)
        var lastSeen = counts().ticksSeen
        var lastChangeNs = measureNs
        var nextProgressNs = measureNs + 1_000_000_000
        var previous = counts()
        func stop(stalled: Bool) {
            directory.broadcast(.measure(false))
            let cpu = CPUSample.now(threads)
            outcome.measuredCPU = cpu.since(cpuAtMeasure)
            outcome.measuredSeconds = Double(cpu.wallNs - measureNs) / 1e9
            outcome.stalled = stalled
        }
        while true {
            usleep(5_000)
            let now = Loop.hrtime
            let c = counts()
            if c.errors > 0 || now >= deadline { return stop(stalled: false) }
            if c.ticksSeen != lastSeen {
                lastSeen = c.ticksSeen
                lastChangeNs = now
            } else if now - lastChangeNs > stallNs {
                return stop(stalled: true)
            }
            if now >= nextProgressNs {
                Report.progress(String(format: "[%3.0fs] ticks %@ (%@/s)  updates %@ (%@/s)  missed %@/%@  duplicated %@/%@  late>50ms %@  errors %@",
                                       Double(now - measureNs) / 1e9, Report.grouped(c.ticks),
                                       Report.grouped(c.ticks - previous.ticks), Report.grouped(c.updates),
                                       Report.grouped(c.updates - previous.updates),
                                       Report.grouped(c.measured.missedTicks), Report.grouped(c.measured.missedUpdates),
                                       Report.grouped(c.measured.duplicatedTicks), Report.grouped(c.measured.duplicatedUpdates),
                                       Report.grouped(c.lateTicks), Report.grouped(c.errors)))
                previous = c
                nextProgressNs += 1_000_000_000
            }
        }
    }
}
