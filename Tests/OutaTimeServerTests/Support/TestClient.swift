import Foundation
import OutaTimeProtocol
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What went wrong while talking to the server; each case says what was expected.
enum TestClientError: Error, CustomStringConvertible {
    /// A socket call failed with `errno`.
    case socket(String, Int32)
    /// Nothing (or not enough) arrived before the deadline.
    case timedOut(String)
    /// The server closed the connection while a frame was expected.
    case closed(String)
    /// The server sent bytes that are not a framed JSON object.
    case malformed(String)
    /// A reply was `ok: false` where success was expected.
    case failed(String)

    var description: String {
        switch self {
        case .socket(let call, let code): "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .timedOut(let what): "timed out waiting for \(what)"
        case .closed(let what): "connection closed while waiting for \(what)"
        case .malformed(let what): "malformed frame from server: \(what)"
        case .failed(let what): "request failed: \(what)"
        }
    }
}

/// A raw framed client on blocking POSIX sockets, for protocol tests.
///
/// Every read has a deadline (poll plus `SO_RCVTIMEO` as a backstop) and every
/// loop a frame budget, so a silent or chatty server fails a test instead of
/// hanging it. Frames that arrive while waiting for something else are kept
/// in ``pushes``; ``transcript`` holds everything received, for messages.
final class TestClient {
    /// Seconds any single wait may take unless a test says otherwise.
    static let defaultTimeout: Double = 5
    /// The most frames one wait reads before giving up.
    static let frameBudget = 10_000
    /// The largest frame a client accepts from the server (contract §1).
    static let maxIncomingFrame = 16 << 20

    private var fd: Int32
    var nextID = 1
    /// Frames received while waiting for something else, oldest first.
    var pushes: [[String: Any]] = []
    /// Every frame received on this connection, oldest first.
    private(set) var transcript: [[String: Any]] = []
    /// The session id from a successful ``hello(name:token:client:)``.
    private(set) var session: String?
    /// The body length (N) of the last frame read.
    private(set) var lastFrameBytes = 0

    /// Connects to 127.0.0.1:`port`. A small `receiveBuffer` (bytes) makes
    /// the kernel hold little for a client that does not read. `source`
    /// binds the client's end to another loopback address first (Linux
    /// answers all of 127.0.0.0/8), so a test can be a second client address.
    init(port: Int, timeout: Double = TestClient.defaultTimeout, receiveBuffer: Int32? = nil,
         source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestClientError.socket("socket", errno) }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr = in_addr(s_addr: inet_addr(source))
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            if bound != 0 {
                let code = errno
                close(fd)
                fd = -1
                throw TestClientError.socket("bind to \(source)", code)
            }
        }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port)).bigEndian
        addr.sin_addr = in_addr(s_addr: inet_addr("127.0.0.1"))
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if rc != 0 {
            let code = errno
            close(fd)
            fd = -1
            throw TestClientError.socket("connect to 127.0.0.1:\(port)", code)
        }
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    // MARK: Sending

    /// Sends `bytes` as they are, in one `send` loop.
    func sendRaw(_ bytes: [UInt8]) throws {
        var sent = 0
        var attempts = 0
        while sent < bytes.count {
            attempts += 1
            guard attempts < 100_000 else { throw TestClientError.timedOut("send to make progress") }
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0 && errno == EINTR { continue }
            throw TestClientError.socket("send", errno)
        }
    }

    /// Sends `body` behind a 4-byte big-endian length (the protocol's `Frame`).
    func sendFrameBody(_ body: Data) throws {
        try sendRaw(TestClient.framed(body))
    }

    /// Encodes `json` with JSONSerialization and sends it as one frame.
    func sendFrame(_ json: [String: Any]) throws {
        try sendFrameBody(try JSONSerialization.data(withJSONObject: json))
    }

    /// Shuts down the sending side (a TCP half-close): the server sees EOF
    /// while this side can still read.
    func finishSending() {
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Sends `frames` back to back in one write (pipelining).
    func sendFrames(_ frames: [[String: Any]]) throws {
        var bytes: [UInt8] = []
        for frame in frames { bytes += TestClient.framed(try TestClient.body(frame)) }
        try sendRaw(bytes)
    }

    /// Header and body of one frame, as bytes.
    static func framed(_ body: Data) -> [UInt8] {
        Frame(body: body).withUnsafeBytes { Array($0) }
    }

    /// A frame body for `json`, for tests that assemble bytes themselves.
    static func body(_ json: [String: Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: json)
    }

    // MARK: Receiving

    /// Reads exactly one frame (4 + N bytes) and decodes its JSON object.
    func readFrame(timeout: Double = TestClient.defaultTimeout) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        let header = try readExactly(4, deadline: deadline)
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard length >= 2, length <= TestClient.maxIncomingFrame else {
            throw TestClientError.malformed("length \(length) after \(describe(transcript))")
        }
        let body = try readExactly(length, deadline: deadline)
        lastFrameBytes = length
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw TestClientError.malformed(String(decoding: body, as: UTF8.self))
        }
        transcript.append(object)
        return object
    }

    /// Sends `hello` (protocol 1) and returns its `result`; remembers the session.
    @discardableResult
    func hello(name: String? = "tester", token: String? = nil, client: String? = "outatime-tests") throws -> [String: Any] {
        let result = try helloResult(name: name, token: token, client: client)
        session = result["session"] as? String
        return result
    }

    /// True when the server closes the connection (EOF or reset) within
    /// `timeout` without sending anything more.
    func expectClosed(timeout: Double = TestClient.defaultTimeout) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var byte: UInt8 = 0
        for _ in 0..<1_000 {
            guard (try? waitReadable(deadline: deadline, what: "close")) != nil else { return false }
            let n = recv(fd, &byte, 1, 0)
            if n == 0 { return true }
            if n > 0 { return false }
            if errno == ECONNRESET { return true }
            if errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK { return false }
        }
        return false
    }

    /// The next bytes that arrive (at most `max`); empty at EOF.
    func readSome(max: Int = 65_536, timeout: Double = TestClient.defaultTimeout) throws -> [UInt8] {
        try waitReadable(deadline: Date().addingTimeInterval(timeout), what: "bytes")
        var bytes = [UInt8](repeating: 0, count: max)
        let n = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, max, 0) }
        if n < 0 { throw TestClientError.socket("recv", errno) }
        return Array(bytes[0..<n])
    }

    /// Closes normally: the server reads EOF.
    func closeCleanly() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
    }

    /// Closes with SO_LINGER 0, so the server sees a reset, not a clean EOF.
    func closeAbruptly() {
        guard fd >= 0 else { return }
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close(fd)
        fd = -1
    }

    // MARK: Internals

    private func readExactly(_ count: Int, deadline: Date) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            try waitReadable(deadline: deadline, what: "\(count) bytes (have \(filled)); seen: \(describe(transcript))")
            let n = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + filled, count - filled, 0) }
            if n > 0 { filled += n; continue }
            if n == 0 || errno == ECONNRESET {
                throw TestClientError.closed("\(count) bytes (have \(filled)); seen: \(describe(transcript))")
            }
            if errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK { throw TestClientError.socket("recv", errno) }
        }
        return bytes
    }

    /// Returns when the socket is readable; throws once `deadline` passed.
    private func waitReadable(deadline: Date, what: @autoclosure () -> String) throws {
        for _ in 0..<1_000 {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { break }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let rc = poll(&pfd, 1, Int32(min(remaining * 1000 + 1, 600_000)))
            if rc > 0 { return }
            if rc < 0 && errno != EINTR { throw TestClientError.socket("poll", errno) }
        }
        throw TestClientError.timedOut(what())
    }
}

/// Length-prefixed frames are this client's messages.
extension TestClient: TestConversation {
    func sendMessage(_ json: [String: Any]) throws { try sendFrame(json) }
    func readMessage(timeout: Double) throws -> [String: Any] { try readFrame(timeout: timeout) }
}
