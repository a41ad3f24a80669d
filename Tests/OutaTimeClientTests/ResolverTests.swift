import Foundation
import Testing
import UV

/// Host names resolved on libuv's thread pool (`Resolver`, added to the UV
/// layer for the client): a remote server is one `--host` away without
/// blocking the loop.
@Suite("Resolver")
struct ResolverTests {
    @Test("the resolver finds this machine's host name off the loop thread")
    func resolvesHostName() throws {
        let loop = try Loop()
        var outcome: Result<[SocketAddress], UVError>?
        Resolver.resolve(host: ProcessInfo.processInfo.hostName, port: 1985, on: loop) { outcome = $0 }
        #expect(outcome == nil, "a host name is looked up on the thread pool, not inline")
        loop.run()
        let resolved = try outcome?.get()
        let addresses = try #require(resolved)
        #expect(!addresses.isEmpty)
        #expect(addresses.allSatisfy { $0.port == 1985 })
        var numeric: Result<[SocketAddress], UVError>?
        Resolver.resolve(host: "127.0.0.1", port: 7, on: loop) { numeric = $0 }
        let numericNames = try numeric?.get().map(\.description)
        #expect(numericNames == ["127.0.0.1:7"])
        #expect(throws: Never.self) { try loop.close() }
    }

    @Test("an empty host name is refused at once, without a lookup")
    func unresolvable() throws {
        let loop = try Loop()
        var outcome: Result<[SocketAddress], UVError>?
        // Empty: refused before any lookup, so the test needs no DNS.
        Resolver.resolve(host: "", port: 1985, on: loop) { outcome = $0 }
        loop.run()
        guard case .failure(let error)? = outcome else {
            Issue.record("expected a failure, got \(String(describing: outcome))")
            return
        }
        #expect(error.name == "EINVAL")
        #expect(throws: Never.self) { try loop.close() }
    }
}
