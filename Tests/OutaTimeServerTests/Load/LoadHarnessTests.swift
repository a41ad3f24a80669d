import OutaTimeTestSupport
import Foundation
import Testing

/// `outatime-load`, run as a user would run it, for a short bounded run
/// against a real in-process server. Correctness only: no timing thresholds.
@Suite("outatime-load harness")
struct LoadHarnessTests {
    struct Run {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs `outatime-load ARGS --port PORT` and waits (bounded) for it to exit.
    static func load(_ arguments: [String], port: Int) throws -> Run {
        let process = Process()
        process.executableURL = ServerProcess.executableURL.deletingLastPathComponent().appendingPathComponent("outatime-load")
        process.arguments = arguments + ["--port", "\(port)"]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read while it runs so a full pipe cannot block it.
        let stdout = Mutexed()
        let stderr = Mutexed()
        let readers = DispatchGroup()
        for (pipe, sink) in [(out, stdout), (err, stderr)] {
            readers.enter()
            Thread.detachNewThread {
                sink.set(pipe.fileHandleForReading.readDataToEndOfFile())
                readers.leave()
            }
        }
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        _ = readers.wait(timeout: .now() + 10)
        return Run(status: process.terminationStatus,
                   stdout: String(decoding: stdout.get(), as: UTF8.self),
                   stderr: String(decoding: stderr.get(), as: UTF8.self))
    }

    /// A lock-protected `Data`, filled by a reader thread.
    final class Mutexed: @unchecked Sendable {
        private let lock = NSLock()
        private var data = Data()
        func set(_ value: Data) { lock.withLock { data = value } }
        func get() -> Data { lock.withLock { data } }
    }

    @Test("fanout: 10 subscribers × 200 messages, each delivered exactly once")
    func fanout() throws {
        try withTestServer { server in
            let run = try Self.load(["fanout", "--subscribers", "10", "--messages", "200", "--size", "64",
                                     "--duration", "10", "--stall-timeout", "10", "--json"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try #require(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            #expect(result["published"] as? Int == 200)
            #expect(result["delivered"] as? Int == 10 * 200)
            #expect(result["lost"] as? Int == 0)
            #expect(result["duplicated"] as? Int == 0)
            #expect(result["errors"] as? Int == 0)
            #expect(result["ok"] as? Bool == true)
            let latency = try #require(result["latency"] as? [String: Any])
            #expect((latency["max_us"] as? Int ?? 0) >= (latency["p50_us"] as? Int ?? 1))
        }
    }

    @Test("fanout: the readable table names every figure; a paced run also completes")
    func fanoutTableAndRate() throws {
        try withTestServer { server in
            let run = try Self.load(["fanout", "--subscribers", "3", "--messages", "50", "--rate", "500",
                                     "--duration", "10"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)")
            for label in ["deliveries/s", "latency p99", "latency p99.9", "lost", "duplicated"] {
                #expect(run.stdout.contains(label))
            }
            #expect(run.stdout.contains("150 of 150 expected"))
        }
    }

    @Test("fanout: an unreachable server is an error, not a pass")
    func unreachable() throws {
        try withTestServer { server in
            let port = server.port
            server.stop()
            let run = try Self.load(["fanout", "--subscribers", "2", "--messages", "10", "--duration", "5", "--json"],
                                    port: port)
            #expect(run.status != 0)
        }
    }
}
