import NATS
import NATSTestSupport
import Testing

@Suite("NATS connection")
struct ConnectionTests {
    @Test("connects, names itself, and reads the server's version from its INFO")
    func connectAndVersion() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let connection = try NATSConnection(NATSConnectionOptions(urls: server.url, name: "ot-test"))
        defer { connection.close() }
        #expect(connection.connectedURL == server.url)
        let version = try connection.serverVersion()
        #expect(version == NATSServerVersion("2.15.1"))
        #expect(version >= NATSServerVersion.clusterMinimum)
        try version.requireCluster(url: server.url)
    }

    @Test("versions parse and order by number; an old server is named in the error")
    func versionValues() throws {
        #expect(NATSServerVersion("v2.9.10") == NATSServerVersion(major: 2, minor: 9, patch: 10))
        #expect(NATSServerVersion("2.11.0-RC.1") == NATSServerVersion(major: 2, minor: 11, patch: 0))
        #expect(NATSServerVersion("2.9") == nil)
        #expect(NATSServerVersion("two.1.0") == nil)
        #expect(NATSServerVersion("2.9.10")! < NATSServerVersion("2.9.21")!)
        #expect(NATSServerVersion("2.10.0")! > NATSServerVersion("2.9.21")!)
        let old = NATSServerVersion("2.9.10")!
        let error = #expect(throws: NATSError.self) { try old.requireCluster(url: "nats://a:4222") }
        #expect("\(error!)".contains("2.9.10"))
        #expect("\(error!)".contains("2.9.21"))
    }

    @Test("bad URL lists and unreachable servers fail with errors naming them")
    func connectFailures() throws {
        #expect(throws: NATSError.self) { try NATSConnectionOptions(urls: " , ") }
        let bad = #expect(throws: NATSError.self) { try NATSConnectionOptions(urls: "nats://a:1,http://b:2") }
        #expect("\(bad!)".contains("http://b:2"))
        let port = try NATSServerProcess.freePort()
        var options = NATSConnectionOptions(servers: ["nats://127.0.0.1:\(port)"])
        options.maxReconnect = 0
        options.connectTimeout = .milliseconds(500)
        let error = #expect(throws: NATSError.self) { try NATSConnection(options) }
        #expect("\(error!)".contains("127.0.0.1:\(port)"))
    }

    @Test("close runs the closed closure once; calls after it fail as closed")
    func closeEvents() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let closed = Collector<Bool>()
        var options = NATSConnectionOptions(servers: [server.url])
        options.onClosed = { closed.add(true) }
        let connection = try NATSConnection(options)
        connection.close()
        connection.close()
        #expect(closed.wait(for: 1).count == 1)
        #expect(connection.isClosed)
        #expect(throws: NATSError.connectionClosed(operation: "publish to 'a'")) {
            try connection.publish("a", data: [1])
        }
    }

    @Test("a lost server is reported as disconnected, and reconnected when it is back")
    func disconnectAndReconnect() throws {
        let server = try NATSServerProcess.start()
        let disconnected = Collector<Bool>()
        let reconnected = Collector<Bool>()
        var options = NATSConnectionOptions(servers: [server.url])
        options.reconnectWait = .milliseconds(50)
        options.onDisconnected = { disconnected.add(true) }
        options.onReconnected = { reconnected.add(true) }
        let connection = try NATSConnection(options)
        defer { connection.close() }
        server.stop()
        #expect(disconnected.wait(for: 1).count == 1)
        let again = try NATSServerProcess(port: server.port)
        defer { again.stop() }
        try again.waitUntilReady()
        #expect(reconnected.wait(for: 1, timeout: .seconds(10)).count == 1)
        try connection.flush()
    }
}
