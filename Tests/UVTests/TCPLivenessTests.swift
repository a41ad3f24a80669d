import Testing
@testable import UV

/// Keepalive and `TCP_USER_TIMEOUT` reach the kernel (issue 27): what the
/// dead-path tests (clients/python/tests/test_liveness.py) rely on.
@Suite struct TCPLivenessTests {
    #if os(Linux)
    @Test("setLiveness sets keepalive idle, interval, count and the user timeout on the socket")
    func appliesEveryOption() throws {
        let pairs = try ReadBudgetTests.Pairs(count: 1)
        let stream = pairs.servers[0]
        #expect(stream.currentLiveness()?.keepaliveIdleSeconds == 0, "off by default")
        #expect(stream.currentLiveness()?.userTimeoutMs == 0)
        let wanted = TCPLiveness(keepaliveIdleSeconds: 4, keepaliveIntervalSeconds: 1, keepaliveCount: 4, userTimeoutMs: 8_000)
        #expect(stream.setLiveness(wanted))
        #expect(stream.currentLiveness() == wanted)
        #expect(pairs.clients[0].setLiveness(.kernelDefaults), "nothing to set is no failure")
        try pairs.close()
    }
    #endif
}
