import OutaTimeServer
import Testing

/// The liveness flags (§3, "Liveness"): defaults that drop a dead peer
/// within 10 s, and bad values refused with a message naming the flag.
@Suite("liveness settings")
struct LivenessConfigTests {
    @Test("defaults: keepalive 4 s + 4 × 1 s, user timeout 8 s; out-of-range values name their flag")
    func validation() throws {
        var config = ServerConfig()
        #expect(config.tcpKeepaliveSeconds + config.tcpKeepaliveCount * config.tcpKeepaliveIntervalSeconds <= 10)
        #expect(config.tcpUserTimeoutMs <= 10_000)
        try config.validate()
        config.tcpKeepaliveSeconds = 0
        config.tcpUserTimeoutMs = 0
        try config.validate()  // 0: off, the kernel's default
        let bad: [(WritableKeyPath<ServerConfig, Int>, Int, String)] = [
            (\.tcpKeepaliveSeconds, -1, "--tcp-keepalive-s -1"),
            (\.tcpKeepaliveSeconds, 32_768, "--tcp-keepalive-s 32768"),
            (\.tcpKeepaliveIntervalSeconds, 0, "--tcp-keepalive-interval-s 0"),
            (\.tcpKeepaliveCount, 0, "--tcp-keepalive-count 0"),
            (\.tcpKeepaliveCount, 128, "--tcp-keepalive-count 128"),
            (\.tcpUserTimeoutMs, -5, "--tcp-user-timeout-ms -5"),
        ]
        for (field, value, named) in bad {
            var wrong = ServerConfig()
            wrong[keyPath: field] = value
            do {
                try wrong.validate()
                Issue.record("\(named) was accepted")
            } catch {
                #expect(error.message.contains(named), "\(error.message)")
            }
        }
    }
}
