import OutaTimeTestSupport
import OutaTimeTestKit
import Foundation
import OutaTimeProtocol
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The executable under systemd `Type=notify`: the test binds the
/// notification socket as systemd does and starts the real
/// `outatime-server` with `NOTIFY_SOCKET` pointing at it.
@Suite("systemd notifications", .timeLimit(.minutes(3)))
struct ServiceNotifyTests {
    @Test("READY=1 once listening, RELOADING=1 then READY=1 around SIGHUP, STOPPING=1 on SIGTERM")
    func lifecycle() throws {
        let folder = try TemporaryFolder()
        let socket = try NotifySocket(address: folder.path("notify.sock"))
        let file = try TokensFile([tokenEntry("otto-1955", "Otto", "operate")])
        let server = try ServerProcess(["--port", "0", "--tokens", file.path, "--log-level", "error"],
                                       environment: ["NOTIFY_SOCKET": socket.address])

        let ready = try #require(socket.receive(), "no notification; stderr: \(server.stderrText)")
        #expect(ready.first?.key == "READY" && ready.first?.value == "1", "\(ready)")
        // Ready means listening: the listening line is out and a client gets in at once.
        let listening = try #require(server.awaitListening(timeout: 1), "READY=1 before the listening line")
        #expect(ready.contains { $0.key == "STATUS" && $0.value == "listening on 127.0.0.1:\(listening.port)" }, "\(ready)")
        let otto = try TestClient(port: listening.port)
        #expect(try otto.hello(token: "otto-1955")["role"] as? String == "operate")
        try otto.call("subscribe", ["channel": "laps/notify"])

        // SIGHUP: RELOADING=1 with this moment's CLOCK_MONOTONIC, then
        // READY=1 once the new file is in force.
        try file.write([tokenEntry("otto-1955", "Otto", "operate"), tokenEntry("ada-2015", "Ada", "admin")])
        let beforeHangup = monotonicMicroseconds()
        server.send(signal: SIGHUP)
        let reloading = try #require(socket.receive(), "no RELOADING=1; stderr: \(server.stderrText)")
        let afterReloading = monotonicMicroseconds()
        #expect(reloading.map(\.key) == ["RELOADING", "MONOTONIC_USEC"], "\(reloading)")
        #expect(reloading.first?.value == "1")
        let stamp = try #require(reloading.last.flatMap { UInt64($0.value) }, "\(reloading)")
        #expect(stamp >= beforeHangup && stamp <= afterReloading, "MONOTONIC_USEC \(stamp) not in [\(beforeHangup), \(afterReloading)]")
        let reloaded = try #require(socket.receive(), "no READY=1 after the reload; stderr: \(server.stderrText)")
        #expect(reloaded.first?.key == "READY" && reloaded.first?.value == "1", "\(reloaded)")
        #expect(reloaded.contains { $0.key == "STATUS" && $0.value.hasPrefix("reloaded: tokens=reloaded(entries: 2") },
                "\(reloaded)")
        let ada = try TestClient(port: listening.port)
        #expect(try ada.hello(token: "ada-2015")["role"] as? String == "admin", "READY=1 came before the new file was in force")
        #expect(try otto.request("ping").isOK, "the reload dropped a connection it should keep")

        // SIGTERM: STOPPING=1 as the drain begins, then bye and exit 0.
        server.send(signal: SIGTERM)
        let stopping = try #require(socket.receive(), "no STOPPING=1; stderr: \(server.stderrText)")
        #expect(stopping.first?.key == "STOPPING" && stopping.first?.value == "1", "\(stopping)")
        #expect(try otto.readUntil(type: "bye")["reason"] as? String == "server_shutdown")
        #expect(server.waitForExit() == 0, "stderr: \(server.stderrText)")
        #expect(!socket.hasPending(timeout: 0.1), "a notification after STOPPING=1")
    }

    /// One case only: each costs a server process. An address refused
    /// outright (`relative.sock`) is ServiceNotifierTests' (UVTests).
    @Test("a NOTIFY_SOCKET nobody listens on is logged as a warning and the server runs")
    func unusableSocket() throws {
        let address = "/nonexistent-outatime/notify.sock"
        let logged = "service manager notification failed"
        let reason = "ENOENT"
        let server = try ServerProcess(["--port", "0", "--log-level", "warning"], environment: ["NOTIFY_SOCKET": address])
        let listening = try #require(server.awaitListening(), "stderr: \(server.stderrText)")
        let client = try TestClient(port: listening.port)
        #expect(try client.hello()["role"] as? String == "operate")
        var line: Substring?
        for _ in 0..<250 where line == nil {  // up to 5 s
            line = server.stderrText.split(separator: "\n").first { $0.contains(logged) }
            if line == nil { usleep(20_000) }
        }
        #expect(line?.contains("warning") == true && line?.contains(reason) == true && line?.contains(address) == true,
                "stderr: \(server.stderrText)")
        server.send(signal: SIGTERM)
        #expect(server.waitForExit() == 0, "stderr: \(server.stderrText)")
    }

    private func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }
}
