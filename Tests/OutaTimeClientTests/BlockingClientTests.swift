import OutaTimeTestSupport
import Foundation
import OutaTimeClient
import OutaTimeProtocol
import Testing

/// The synchronous facade for one-shot commands.
@Suite("Blocking client")
struct BlockingClientTests {
    @Test("one-shot requests return results and throw server errors with their code")
    func oneShot() throws {
        try withTestServer { server in
            let client = try BlockingClient(options: ClientOptions(port: server.port, name: "script"))
            defer { client.close() }
            #expect(client.hello?.role == "operate")
            let state = try client.send(.command("timers/kitchen", action: "add",
                                                 args: ["event": .string("Tea"), "remaining_s": .int(60)]))
            #expect(state.object?["event"] == .string("Tea"))
            let list = try client.send(.list(kind: .timers))
            #expect(list.channels.map(\.channel) == ["timers/kitchen"])
            #expect(list.channels.first?.seq == 1)
            let history = try client.send(.history("timers/kitchen"))
            #expect(history.events.map(\.event) == ["timer_added"])
            #expect {
                _ = try client.send(.command("timers/kitchen", action: "remove", args: ["id": .int(99)]))
            } throws: { error in
                guard case ClientError.server(let refusal)? = error as? ClientError else { return false }
                return refusal.errorCode == .notFound && refusal.message.contains("99")
            }
        }
    }

    @Test("connecting to a port where nothing listens throws the reason, quickly")
    func connectRefused() throws {
        let port = try unusedPort()
        let started = Date()
        #expect {
            _ = try BlockingClient(options: ClientOptions(port: port), timeoutMs: 5_000)
        } throws: { error in
            guard case ClientError.closed(.connectFailed?)? = error as? ClientError else { return false }
            return true
        }
        #expect(Date().timeIntervalSince(started) < 4)
    }
}
