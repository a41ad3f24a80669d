import ArgumentParser
import OutaTimeProtocol

/// `outatime`: the OutaTime terminal client.
@main
struct OutaTimeCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outatime",
        abstract: "Watch and operate OutaTime boards from a terminal, or script them.",
        discussion: """
            Every command connects to the server given by --host/--port (or OUTATIME_HOST, \
            OUTATIME_PORT), runs, prints a readable result (or --json) and exits non-zero on \
            an error: 1 when the server refused the request (its message is printed), \
            3 when the server cannot be reached (for a state-changing command: nothing was \
            sent), 4 when a state-changing \
            command was sent but no answer came before --timeout: it may or may not have been \
            applied. State-changing commands carry an idempotency key and are sent again on a \
            new connection if the link fails, so they apply at most once; after exit 4, run the \
            command again with the --idempotency-key it printed.

            Channels are named KIND/NAME: delorean/…, starport/…, timers/…, laps/…; \
            the kind-specific commands take the NAME alone (or the full channel).

            Examples:
              outatime list
              outatime get delorean/main
              outatime quote SWingV2 AC
              outatime delorean set-destination main 1955-11-12T22:04:00Z
              outatime timers add hill-valley --event "Clock tower" --in 10m
              outatime laps lap morning-run
              outatime watch delorean/main timers/hill-valley
              outatime top
            """,
        version: OutaTimeVersion.versionLine,
        subcommands: [
            List.self, Get.self, History.self, Stats.self, Publish.self,
            Catalog.self, Quote.self, Dispatch.self, Cancel.self,
            Timers.self, DeLorean.self, Laps.self, Watch.self, Top.self,
        ]
    )
}

/// `NAME` or `KIND/NAME` → `KIND/NAME`.
func channel(_ kind: String, _ name: String) -> String {
    name.contains("/") ? name : "\(kind)/\(name)"
}
