import Foundation
import UV

/// Reads the server's `stats` counters over a short-lived connection on a
/// loop of its own (run on the coordinating thread, before and after a run).
enum StatsProbe {
    /// The integer counters of one `stats` reply.
    static func read(_ address: SocketAddress, timeoutMs: UInt64 = 10_000) throws -> [String: Int] {
        let loop = try Loop()
        let connection = LoadConnection(loop: loop)
        let timer = Timer(loop: loop)
        var outcome: Result<[String: Int], LoadFailure>?
        func finish(_ result: Result<[String: Int], LoadFailure>) {
            if outcome == nil { outcome = result }
            connection.close()
            timer.close()
        }
        connection.onFailure = { reason in finish(.failure(.unreachable("stats: \(reason)"))) }
        connection.onFrame = { body in
            guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
                  object["type"] as? String == "reply" else { return }
            guard object["ok"] as? Bool == true else {
                finish(.failure(.unreachable("stats refused: \(object["error"] ?? "?")")))
                return
            }
            if (object["id"] as? NSNumber)?.intValue == 2 {
                let result = object["result"] as? [String: Any] ?? [:]
                finish(.success(result.compactMapValues { ($0 as? NSNumber)?.intValue }))
            }
        }
        timer.start(timeoutMs: timeoutMs) { finish(.failure(.unreachable("stats: no reply within \(timeoutMs) ms"))) }
        connection.open(address) {
            connection.enqueue(body: Array(LoadConnection.hello(name: "load-stats").utf8))
            connection.send(#"{"type":"stats","id":2}"#)
        }
        loop.run()
        try? loop.close()
        switch outcome {
        case .success(let counters)?: return counters
        case .failure(let error)?: throw error
        case nil: throw LoadFailure.unreachable("stats: no answer")
        }
    }
}
