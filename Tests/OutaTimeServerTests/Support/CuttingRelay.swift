import Foundation

/// A TCP relay between a client and the real server on 127.0.0.1 that cuts
/// the link under the first `command`: it passes that request on, drops the
/// server's reply, and closes both sides once the server has had time to
/// apply it — the "path cut mid-request" of issue 27. Later connections pass
/// through unchanged, or, with `refuseAfterCut`, are closed at once (the path
/// stays down).
final class CuttingRelay: @unchecked Sendable {
    let port: Int
    private let serverPort: Int
    private let refuseAfterCut: Bool
    private let listener: Int32
    private let lock = NSLock()
    private var cut = false
    private var sockets: [Int32] = []

    /// Whether the first command went through (and its reply was dropped).
    var didCut: Bool { lock.withLock { cut } }

    init(to serverPort: Int, refuseAfterCut: Bool = false) throws {
        self.serverPort = serverPort
        self.refuseAfterCut = refuseAfterCut
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw TestClientError.socket("socket", errno) }
        self.listener = listener
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr = in_addr(s_addr: inet_addr("127.0.0.1"))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && getsockname(listener, pointer, &length) == 0
                    && listen(listener, 16) == 0
            }
        }
        guard listening else {
            port = 0
            throw TestClientError.socket("listen", errno)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Closes the listener and every relayed socket.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        lock.withLock {
            for fd in sockets { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    deinit { stop() }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            if refuseAfterCut, didCut {
                close(client)
                continue
            }
            guard let server = try? Self.connect(serverPort) else {
                close(client)
                continue
            }
            lock.withLock { sockets += [client, server] }
            let swallow = Flag()
            Thread.detachNewThread { [self] in pumpRequests(from: client, to: server, swallow: swallow) }
            Thread.detachNewThread { Self.pumpReplies(from: server, to: client, swallow: swallow) }
        }
    }

    /// Client to server, frame by frame; cuts at the first `command`.
    private func pumpRequests(from client: Int32, to server: Int32, swallow: Flag) {
        defer {
            shutdown(client, Int32(SHUT_RDWR))
            shutdown(server, Int32(SHUT_RDWR))
        }
        while let header = Self.read(client, count: 4) {
            let length = header.reduce(0) { $0 << 8 | Int($1) }
            guard let body = Self.read(client, count: length) else { return }
            let isCommand = String(decoding: body, as: UTF8.self).contains("\"command\"")
            let cutting = isCommand && lock.withLock { () -> Bool in
                guard !cut else { return false }
                cut = true
                return true
            }
            if cutting { swallow.set() }  // before the server can answer
            guard Self.write(server, header + body) else { return }
            if cutting {
                Thread.sleep(forTimeInterval: 0.5)  // the server applies and commits it
                return
            }
        }
    }

    /// Server to client, until the link is cut.
    private static func pumpReplies(from server: Int32, to client: Int32, swallow: Flag) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(server, $0.baseAddress!, $0.count, 0) }
            guard n > 0 else { break }
            if swallow.isSet { continue }
            guard write(client, Array(buffer[0..<n])) else { break }
        }
        shutdown(client, Int32(SHUT_RDWR))
    }

    private static func connect(_ port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr = in_addr(s_addr: inet_addr("127.0.0.1"))
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            close(fd)
            throw TestClientError.socket("connect", errno)
        }
        return fd
    }

    private static func read(_ fd: Int32, count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + filled, count - filled, 0) }
            if n > 0 { filled += n; continue }
            if n < 0 && errno == EINTR { continue }
            return nil
        }
        return bytes
    }

    private static func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0 && errno == EINTR { continue }
            return false
        }
        return true
    }

    /// A flag set once, read from another thread.
    private final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        func set() { lock.withLock { value = true } }
        var isSet: Bool { lock.withLock { value } }
    }
}
