import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Many raw connections to 127.0.0.1:`port` opened at once — non-blocking
/// `connect()`s one after the other, as fast as the kernel takes them — that
/// never send a byte; ``collect(seconds:)`` reads what each gets. A flood from
/// one address (issue 28), small enough for `swift test`.
final class SilentCrowd {
    /// What a connection got.
    enum Outcome: Equatable {
        /// `error` `server_busy` then `bye` `server_busy`.
        case refused
        /// A `bye` with another reason (or without the `error` before it).
        case bye(String)
        /// EOF or a reset before any `bye`.
        case closed
    }

    private struct Connection {
        var fd: Int32
        var bytes: [UInt8] = []
        var outcome: Outcome?
        /// Seconds from the crowd's start to the outcome.
        var after: Double?
    }

    private var connections: [Connection] = []
    /// When the first `connect()` was called.
    let started = Date()

    /// Opens `count` connections (the caller's descriptor limit must allow them).
    init(port: Int, count: Int) throws {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr = in_addr(s_addr: inet_addr("127.0.0.1"))
        connections.reserveCapacity(count)
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw TestClientError.socket("socket", errno) }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            if rc != 0 && errno != EINPROGRESS {
                let code = errno
                close(fd)
                throw TestClientError.socket("connect", code)
            }
            connections.append(Connection(fd: fd))
        }
    }

    deinit {
        for connection in connections where connection.fd >= 0 { close(connection.fd) }
    }

    /// Connections with an outcome, by outcome.
    var outcomes: [String: Int] {
        connections.reduce(into: [:]) { counts, connection in
            let key = switch connection.outcome {
            case .refused: "refused"
            case .bye(let reason): "bye \(reason)"
            case .closed: "closed"
            case nil: "nothing"
            }
            counts[key, default: 0] += 1
        }
    }

    /// Connections whose handshake has completed, as far as this side
    /// knows: the server's kernel took them (into its listen queue, if the
    /// server has not accepted them yet). One not taken waits in `SYN_SENT`
    /// for the kernel's next SYN retransmission (1 s, 3 s, 7 s … after).
    var connected: Int {
        connections.count { connection in
            guard connection.fd >= 0 else { return true }
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            return withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(connection.fd, $0, &length) == 0 }
            }
        }
    }

    /// Connections that got something.
    var answered: Int { connections.count { $0.outcome != nil } }

    /// The latest answer, in seconds from the start.
    var slowestAnswer: Double { connections.compactMap(\.after).max() ?? 0 }

    /// Reads whatever arrived for up to `seconds` (one `poll` over the
    /// connections still waiting).
    func collect(seconds: Double) {
        let waiting = connections.indices.filter { connections[$0].outcome == nil }
        guard !waiting.isEmpty else { return }
        var fds = waiting.map { pollfd(fd: connections[$0].fd, events: Int16(POLLIN), revents: 0) }
        guard poll(&fds, nfds_t(fds.count), Int32(seconds * 1000)) > 0 else { return }
        for (slot, index) in waiting.enumerated() where fds[slot].revents != 0 {
            read(index)
        }
    }

    private func read(_ index: Int) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while connections[index].outcome == nil {
            let n = recv(connections[index].fd, &buffer, buffer.count, 0)
            if n > 0 {
                connections[index].bytes += buffer[0..<n]
                if let outcome = Self.outcome(of: connections[index].bytes) { finish(index, outcome) }
            } else if n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                finish(index, .closed)
            } else if errno != EINTR {
                return
            }
        }
    }

    private func finish(_ index: Int, _ outcome: Outcome) {
        connections[index].outcome = outcome
        connections[index].after = Date().timeIntervalSince(started)
        close(connections[index].fd)
        connections[index].fd = -1
    }

    /// The outcome once a `bye` is among the whole frames in `bytes`.
    private static func outcome(of bytes: [UInt8]) -> Outcome? {
        var position = 0
        var busy = false
        while position + 4 <= bytes.count {
            let length = bytes[position..<position + 4].reduce(0) { $0 << 8 | Int($1) }
            guard position + 4 + length <= bytes.count else { return nil }
            let body = Data(bytes[position + 4..<position + 4 + length])
            let json = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
            if json["type"] as? String == "error", (json["error"] as? [String: Any])?["code"] as? String == "server_busy" {
                busy = true
            }
            if json["type"] as? String == "bye" {
                let reason = json["reason"] as? String ?? "?"
                return busy && reason == "server_busy" ? .refused : .bye(reason)
            }
            position += 4 + length
        }
        return nil
    }
}
