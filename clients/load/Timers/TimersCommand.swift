import ArgumentParser
import Foundation
import UV

/// `outatime-load timers`: T running countdowns over L lists, W watchers per list.
struct TimersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timers",
        abstract: "Many running countdowns watched by many connections: ticks/s, tick lateness, missed ticks.",
        discussion: """
        Connections: one viewer per list `timers/load-<run>-<n>` and --watchers per list, so \
        lists × (watchers + 1) in all, whatever the number of timers (1,000 lists of 1,000 timers with \
        one watcher each: 2,000 connections). The open-file limit must hold them plus 64 (`ulimit -n`); \
        the harness raises its soft limit to the hard limit and refuses a run that does not fit.

        Setup, in three phases, each reported with its seconds and rate: (1) connect and add: every \
        viewer subscribes to its list and adds the list's share of --timers, with up to --setup-window \
        `add`s in flight; (2) subscribe: every watcher subscribes to its list; (3) start: every viewer \
        views each of its timers with `start` (a timer runs only while viewed, and `start` needs the \
        subscription), again with up to --setup-window in flight. The lists' first countdowns start \
        spread over one second, as countdowns started by people would be, so the lists' ticks are \
        spread over the second too. Every connection whose `hello` was answered sends a `ping` (no \
        reply) three times per server heartbeat interval (every 5 s at the default 15 s), through the \
        setup and the measurement, spread so that they do not come in one burst.

        Measured for --duration seconds after the setup: tick frames and timer updates (entries of \
        tick.timers) delivered per second to the watchers, and tick lateness: arrival versus the second \
        the tick stands for (its `at`, to the millisecond, read on this machine's clock: run the harness \
        on the server's machine). The harness's CPU during the setup and the measurement is reported: \
        a busiest loop near 100 % means the harness may have set the pace, not the server.

        Exit status 1 on a missed tick (a countdown jumping by more than 1 between consecutive ticks), \
        a duplicated one (no change), a stall or any error. Missed and duplicated ticks are counted \
        apart for the setup (lists started first tick while the rest are still added and started) \
        and for the measured run (missed_ticks, setup_missed_ticks, … in --json).

        Example, a million timers:

          outatime-load timers --timers 1000000 --lists 1000 --watchers 1 --duration 60
        """
    )

    @OptionGroup var options: LoadOptions

    @Option(help: ArgumentHelp("Running timers in all (1…10000000), spread evenly over the lists.", valueName: "count"))
    var timers: Int = 100_000

    @Option(help: ArgumentHelp("Timer lists (channels), each with one viewer connection (1…timers).", valueName: "count"))
    var lists: Int = 1_000

    @Option(help: ArgumentHelp("Watcher connections subscribed to each list (1…1000).", valueName: "count"))
    var watchers: Int = 10

    @Option(help: ArgumentHelp("""
        Requests (`add`s, then `start`s) each viewer keeps in flight during the setup (1…1000). \
        A server that stops reading a connection with 16 requests waiting (PROTOCOL.md §2) and \
        commits them one at a time does not see the pings behind them, and closes a viewer as \
        idle when they take over 2 × its heartbeat: use 8 against such a server.
        """, valueName: "count"))
    var setupWindow: Int = 64

    @OptionGroup var opening: OpeningOptions

    @Option(help: ArgumentHelp("Give up when the setup (connect, add, subscribe, start) takes longer (seconds).", valueName: "seconds"))
    var setupTimeout: Double = 300

    func validate() throws {
        try options.validateShared()
        guard (1...10_000_000).contains(timers) else { throw ValidationError("--timers must be 1…10000000, got \(timers)") }
        guard (1...timers).contains(lists) else {
            throw ValidationError("--lists must be 1…\(timers) (every list needs at least one of the --timers), got \(lists)")
        }
        guard (1...1_000).contains(watchers) else { throw ValidationError("--watchers must be 1…1000 per list, got \(watchers)") }
        guard lists * (watchers + 1) <= 1_000_000 else {
            throw ValidationError("--lists × (--watchers + 1) connections must be at most 1000000, got \(lists * (watchers + 1))")
        }
        guard (1...1_000).contains(setupWindow) else {
            throw ValidationError("--setup-window must be 1…1000, got \(setupWindow)")
        }
        guard setupTimeout > 0 else { throw ValidationError("--setup-timeout must be positive, got \(setupTimeout)") }
    }

    /// Viewer plus watcher connections.
    var connections: Int { lists * (watchers + 1) }

    func run() throws {
        let (address, fileLimit) = try options.prepareRun()
        try LoadOptions.requireFiles(for: connections, limit: fileLimit,
                                     cause: "--lists \(lists) × (--watchers \(watchers) + 1) = \(connections) connections",
                                     remedy: "use fewer lists or watchers")
        let run = String(UUID().uuidString.lowercased().prefix(8))
        let prefix = "timers/load-\(run)"
        let loops = min(options.loops, connections)
        // Outlasts the whole setup and the measurement, with room to spare.
        let remainingS = Int((setupTimeout + options.duration).rounded(.up)) + 120
        let plans = (0..<loops).map { index in
            TimersPlan(
                index: index, address: address, channelPrefix: prefix,
                viewers: stride(from: index, to: lists, by: loops).map { list in
                    (list, LoadOptions.share(of: timers, loop: list, loops: lists))
                },
                watchers: stride(from: index, to: lists * watchers, by: loops).map { ($0 / watchers, $0 % watchers) },
                remainingS: remainingS, setupWindow: setupWindow,
                concurrency: LoadOptions.share(of: opening.concurrency, loop: index, loops: loops), totalLists: lists)
        }
        let tallies = (0..<loops).map { _ in TimersTally() }
        let directory = WorkerDirectory<TimersOrder>()
        let cpuAtStart = CPUSample.now(nil)
        let threads = WorkerThreads(count: loops, makeWorker: { index, loop in
            let worker = TimersWorker(loop: loop, plan: plans[index], tally: tallies[index])
            directory.register(try worker.start(), at: index)
            return worker
        }, onStartFailure: { index, error in tallies[index].recordError("worker \(index) did not start: \(error)") })

        let outcome = drive(tallies: tallies, directory: directory, threads: threads, from: cpuAtStart)
        directory.broadcast(.finish)
        if !threads.join(within: 10) { tallies[0].recordError("workers did not stop within 10 s") }

        let report = TimersReport(command: self, prefix: prefix, loops: loops, fileLimit: fileLimit, outcome: outcome,
                                  counts: TimersCounts.sum(tallies), lateness: WorkerTally.mergedLatency(tallies),
                                  firstError: tallies.lazy.compactMap(\.firstError).first)
        if options.json {
            Report.printJSON(report.json)
        } else {
            print(report.table)
        }
        if report.failed { throw ExitCode(1) }
    }
}
