import Foundation
import OutaTimeTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A real haproxy (Debian's 2.6, `/usr/sbin/haproxy`) in TCP mode in front
/// of a test server, started with a generated configuration on free
/// loopback ports and killed when released.
final class HAProxy {
    /// One frontend: its port and how it forwards.
    struct Route {
        /// The server port behind it.
        let serverPort: Int
        /// `send-proxy` (v1) or `send-proxy-v2`.
        let sendProxy: String
    }

    static let executable = "/usr/sbin/haproxy"
    private let process = Process()
    private let folder: TemporaryFolder
    /// The frontends' ports, in the order of the routes.
    let ports: [Int]

    /// Starts haproxy with one frontend per route and waits until each accepts.
    init(_ routes: [Route]) throws {
        folder = try TemporaryFolder()
        ports = try routes.map { _ in try HAProxy.freePort() }
        var config = """
            global
                maxconn 200
            defaults
                mode tcp
                timeout connect 5s
                timeout client 30s
                timeout server 30s

            """
        for (index, route) in routes.enumerated() {
            config += """
                frontend in\(index)
                    bind 127.0.0.1:\(ports[index])
                    default_backend out\(index)
                backend out\(index)
                    server outatime 127.0.0.1:\(route.serverPort) \(route.sendProxy)

                """
        }
        let path = folder.path("haproxy.cfg")
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = ["-db", "-f", path]  // -db: foreground, no daemon
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: {
            let log = folder.path("haproxy.log")
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            return log
        }()))
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        for port in ports {
            while !Self.accepts(port) {
                guard process.isRunning, Date() < deadline else {
                    throw TestClientError.timedOut("haproxy listening on \(port): \(log)")
                }
                usleep(20_000)
            }
        }
    }

    /// What haproxy wrote to stderr.
    var log: String { (try? String(contentsOfFile: folder.path("haproxy.log"), encoding: .utf8)) ?? "" }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// A port the kernel just gave out on 127.0.0.1 (free again once closed).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestClientError.socket("socket", errno) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr = in_addr(s_addr: inet_addr("127.0.0.1"))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw TestClientError.socket("bind", errno) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func accepts(_ port: Int) -> Bool {
        (try? TestClient(port: port, timeout: 1)) != nil
    }
}
