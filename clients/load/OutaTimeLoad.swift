import ArgumentParser
import OutaTimeProtocol

/// `outatime-load`: drives a running OutaTime server with many connections
/// from a few event loops and reports throughput and latency percentiles.
@main
struct OutaTimeLoad: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outatime-load",
        abstract: "Load-test an OutaTime server.",
        discussion: """
        Start a server first, then run a scenario against it, for example:

          outatime-server --port 19000 --db /tmp/load.sqlite &
          outatime-load fanout --port 19000 --subscribers 100 --size 64
          outatime-load commands --port 19000 --clients 50 --duration 10
          outatime-load timers --port 19000 --timers 100000 --lists 1000
          outatime-load connections --port 19000 --connections 10000
          outatime-load http-crowd --port 19000 --http-port 19080 --idle 10000

        A progress line goes to stderr once a second; the result table (or \
        --json) to stdout. Exit status 0 means every expected delivery arrived \
        exactly once and nothing failed; 64 means a bad option (the message names \
        it); 3 means the server cannot be reached. Runs of thousands of \
        connections need `ulimit -n` above the connection count.
        """,
        version: OutaTimeVersion.versionLine,
        subcommands: [FanoutCommand.self, CommandsCommand.self, TimersCommand.self, ConnectionsCommand.self,
                      HTTPCrowdCommand.self]
    )
}
