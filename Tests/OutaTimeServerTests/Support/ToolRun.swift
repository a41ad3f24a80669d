import Foundation

/// One run of a bundled executable (`outatime`, `outatime-load`), as a user
/// would run it: its exit status and everything it printed.
struct ToolRun {
    let status: Int32
    let stdout: String
    let stderr: String

    /// Runs `tool` (built next to the test binary) with `arguments`, reading
    /// both pipes while it runs so a full pipe cannot block it; terminated
    /// after `timeout` seconds. `environment` is added to the test's own.
    static func run(_ tool: String, _ arguments: [String], environment: [String: String] = [:],
                    timeout: Double = 60) throws -> ToolRun {
        let process = Process()
        process.executableURL = ServerProcess.executableURL.deletingLastPathComponent().appendingPathComponent(tool)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let stdout = Collected()
        let stderr = Collected()
        let readers = DispatchGroup()
        for (pipe, sink) in [(out, stdout), (err, stderr)] {
            readers.enter()
            Thread.detachNewThread {
                sink.set(pipe.fileHandleForReading.readDataToEndOfFile())
                readers.leave()
            }
        }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        _ = readers.wait(timeout: .now() + 10)
        return ToolRun(status: process.terminationStatus,
                       stdout: String(decoding: stdout.get(), as: UTF8.self),
                       stderr: String(decoding: stderr.get(), as: UTF8.self))
    }

    /// A lock-protected `Data`, filled by a reader thread.
    private final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var data = Data()
        func set(_ value: Data) { lock.withLock { data = value } }
        func get() -> Data { lock.withLock { data } }
    }
}
