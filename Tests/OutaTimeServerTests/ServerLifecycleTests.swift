import Foundation
import Logging
import OutaTimeTestSupport
import Testing
@testable import OutaTimeServer
import UV

/// A server's own libuv handles are made with its loop (no implicitly
/// unwrapped handles made in `start`): a server dropped without running
/// its loop to the end — never started, or its start failed — still closes
/// every one of them. A handle left open keeps itself and its loop alive
/// (libuv holds it until its close callback), so the loop outliving the
/// server is the leak these tests look for.
@Suite("server lifecycle without a run")
struct ServerLifecycleTests {
    private static func config(_ folder: TemporaryFolder, port: Int = 0) -> ServerConfig {
        var config = ServerConfig()
        config.host = "127.0.0.1"
        config.port = port
        config.databasePath = folder.path("outatime.sqlite")
        return config
    }

    private static var quiet: Logger {
        var logger = Logger(label: "outatime.tests")
        logger.logLevel = .critical
        return logger
    }

    @Test("a server made and dropped without start closes its handles and its loop")
    func neverStarted() throws {
        let folder = try TemporaryFolder()
        weak var loop: Loop?
        weak var presence: UV.Timer?
        do {
            let server = try Server(config: Self.config(folder), logger: Self.quiet)
            loop = server.loop
            presence = server.presenceTimer
            #expect(server.loop.openHandleCount > 0)
        }
        #expect(presence == nil, "a handle made in init stayed open")
        #expect(loop == nil, "the loop stayed alive: a handle of the unstarted server leaked")
    }

    @Test("a start that fails (port in use) closes every handle; so does a started server whose loop never ran")
    func startFails() throws {
        let folder = try TemporaryFolder()
        weak var firstLoop: Loop?
        weak var secondLoop: Loop?
        do {
            let first = try Server(config: Self.config(folder), logger: Self.quiet)
            firstLoop = first.loop
            let port = try #require(try first.start(handleSignals: false).plain?.port)
            let other = try TemporaryFolder()
            do {
                let second = try Server(config: Self.config(other, port: port), logger: Self.quiet)
                secondLoop = second.loop
                #expect(throws: (any Error).self) { _ = try second.start(handleSignals: false) }
            }
            #expect(secondLoop == nil, "the server whose start failed left a handle open")
        }
        #expect(firstLoop == nil, "the started server dropped before its loop ran left a handle open")
    }

    /// `Server.init` can fail after its loop, handles and store exist: a
    /// tokens file that cannot be read (before `self` is whole: `abandon()`
    /// closes what was made) or TLS files that cannot be loaded (after it:
    /// `deinit` does). Either way nothing stays open: the loop goes, and the
    /// database's lock is free for the next server at once.
    @Test("an init that fails half-way (tokens file, TLS files) leaves no handle open and the database free",
          arguments: ["tokens", "tls"])
    func initFailsHalfWay(stage: String) throws {
        let folder = try TemporaryFolder()
        var config = Self.config(folder)
        switch stage {
        case "tokens": config.tokensFile = folder.path("no-such-tokens")
        default:
            config.tlsPort = 0
            config.tls = TLSFiles(certificateFile: folder.path("no-such.crt"), privateKeyFile: folder.path("no-such.key"))
        }
        weak var loop: Loop?
        var failure: (any Error)?
        do {
            _ = try Server(config: config, logger: Self.quiet)
        } catch {
            failure = error
        }
        let error = try #require(failure, "init with a missing \(stage) file succeeded")
        #expect("\(error)".contains("no-such"), "the error names the file: \(error)")
        // The next server on the same database opens (the lock was released).
        do {
            let next = try Server(config: Self.config(folder), logger: Self.quiet)
            loop = next.loop
        }
        #expect(loop == nil, "the second server's loop stayed alive")
    }
}
