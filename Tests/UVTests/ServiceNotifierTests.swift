import Foundation
import Testing
import UV

/// ``ServiceNotifier``'s address rules and send errors. Delivery to a real
/// socket, by the real executable, is in OutaTimeServerTests
/// (`ServiceNotifyTests`).
@Suite struct ServiceNotifierTests {
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
