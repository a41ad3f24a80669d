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
        Start a server first, without the limits that protect it from one busy \
        client (--max-requests-per-second 0; the default 5,000 a second would set \
        the pace) and with room for the harness's connections, which all come from \
        one address (the default is 1,000 per address); then run a scenario against \
        it, for example:

          ulimit -n 20000
          outatime-server --port 19000 --db /tmp/load.sqlite --http 127.0.0.1:19080 \\
            --max-requests-per-second 0 --max-connections-per-address 15000 &
          outatime-load fanout --port 19000 --subscribers 100 --size 64
          outatime-load commands --port 19000 --clients 50 --duration 10
          outatime-load timers --port 19000 --timers 100000 --lists 1000
          outatime-load connections --port 19000 --connections 10000
          outatime-load http-crowd --port 19000 --http-port 19080 --idle 10000

        Against a server with a tokens file, give --token (every connection \
        sends it; role operate for fanout, commands and timers).

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
