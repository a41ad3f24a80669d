import Foundation
import OutaTimeTestKit
import Testing
import UV

/// ``ServiceNotifier``: the datagrams as systemd reads them (from a bound
/// socket, path or abstract), the address rules and send errors. The real
/// executable's notifications are OutaTimeServerTests' `ServiceNotifyTests`.
@Suite struct ServiceNotifierTests {
    @Test("one datagram per notification, KEY=VALUE lines, to a path or an @abstract name",
          arguments: ["path", "abstract"])
    func delivers(kind: String) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outatime-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let address = kind == "path" ? folder.appendingPathComponent("notify.sock").path : "@outatime-\(UUID().uuidString)"
        let socket = try NotifySocket(address: address)
        let notifier = try #require(try ServiceNotifier.fromEnvironment(["NOTIFY_SOCKET": address]))

        try notifier.ready(status: "listening on 127.0.0.1:1985")
        try notifier.reloading()
        try notifier.ready()
        try notifier.stopping(status: "draining connections")

        let ready = try #require(socket.receive(timeout: 5))
        #expect(ready.map { "\($0.key)=\($0.value)" } == ["READY=1", "STATUS=listening on 127.0.0.1:1985"])
        let reloading = try #require(socket.receive(timeout: 5))
        #expect(reloading.map(\.key) == ["RELOADING", "MONOTONIC_USEC"] && reloading.first?.value == "1")
        let stamp = try #require(reloading.last.flatMap { UInt64($0.value) })
        #expect(stamp <= ServiceNotifier.monotonicMicroseconds())
        #expect(try #require(socket.receive(timeout: 5)).map { "\($0.key)=\($0.value)" } == ["READY=1"])
        let stopping = try #require(socket.receive(timeout: 5))
        #expect(stopping.map { "\($0.key)=\($0.value)" } == ["STOPPING=1", "STATUS=draining connections"])
        #expect(!socket.hasPending(timeout: 0))
    }

    @Test("no NOTIFY_SOCKET, or an empty one: no notifier")
    func absent() throws {
        #expect(try ServiceNotifier.fromEnvironment([:]) == nil)
        #expect(try ServiceNotifier.fromEnvironment(["NOTIFY_SOCKET": ""]) == nil)
        #expect(try ServiceNotifier.fromEnvironment(["NOTIFY_SOCKET": "/run/systemd/notify"])?.address == "/run/systemd/notify")
    }

    @Test("addresses systemd would never pass are refused, naming the address", arguments: [
        "relative.sock", "@", "/", "vsock:2:1234", "/" + String(repeating: "a", count: 107),
        "@" + String(repeating: "a", count: 108),
    ])
    func unsupported(address: String) {
        #expect(throws: ServiceNotifier.Failure.unsupportedAddress(address)) { try ServiceNotifier(address: address) }
        let message = ServiceNotifier.Failure.unsupportedAddress(address).description
        #expect(message.contains("'\(address)'") && message.contains("absolute path or an @abstract name"))
    }

    @Test("the longest path and abstract name fit")
    func longest() throws {
        _ = try ServiceNotifier(address: "/" + String(repeating: "a", count: 106))
        _ = try ServiceNotifier(address: "@" + String(repeating: "a", count: 107))
    }

    @Test("a send to a socket nobody bound fails with the errno, naming the address")
    func nobodyListening() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("outatime-\(UUID().uuidString).sock").path
        let notifier = try ServiceNotifier(address: path)
        do {
            try notifier.ready()
            Issue.record("a send to \(path) succeeded")
        } catch {
            guard case .send(let address, let cause) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(address == path)
            #expect(cause.name == "ENOENT", "\(cause)")
            #expect(error.description.contains(path))
        }
    }
}
