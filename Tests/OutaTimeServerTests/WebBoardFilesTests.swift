import Testing
@testable import OutaTimeServer

/// The board's files (`GET /`, `/web/*`): which names `--web-root` serves, the
/// page's content security policy, and the built-in copy. The pages
/// themselves are tested in a browser (`make test-web`).
@Suite("Board files")
struct WebBoardFilesTests {
    @Test(arguments: ["index.html", "board.js", "views/timers.js", "a-b_c.1.css"])
    func servedNames(_ name: String) {
        #expect(Server.isWebFileName(name))
    }

    @Test(arguments: ["", "..", "../secret", "views/../../secret", ".hidden", "views/.git/config", "/etc/passwd",
                      "a//b", "a/", "%2e%2e/x", "a b.js", "é.js", "a\\b"])
    func refusedNames(_ name: String) {
        #expect(!Server.isWebFileName(name))
    }

    @Test func policyConnectsOnlyToThisServer() {
        let policy = Server.webPolicy(host: "127.0.0.1:8080")
        #expect(policy.hasPrefix("default-src 'self'; connect-src 'self' ws://127.0.0.1:8080 wss://127.0.0.1:8080;"))
        #expect(policy.contains("script-src 'self'"))
        #expect(policy.contains("frame-ancestors 'none'"))
    }

    /// The Host header goes into a response header: anything but a plain
    /// host[:port] is left out (no header splitting, no extra sources).
    @Test(arguments: ["evil.example; script-src *", "a\r\nSet-Cookie: x=1", "", "h'ost"])
    func policyLeavesOutAStrangeHost(_ host: String) {
        #expect(Server.webPolicy(host: host) == Server.webPolicy(host: nil))
    }

    @Test func builtInFilesHaveTheirTypes() throws {
        let page = try #require(WebAssets.files["index.html"])
        #expect(page.contentType == "text/html; charset=utf-8")
        #expect(String(decoding: page.bytes, as: UTF8.self).contains("<script type=\"module\" src=\"/web/board.js\">"))
        #expect(WebAssets.files["outatime.js"]?.contentType == "text/javascript; charset=utf-8")
        #expect(WebAssets.files["style.css"]?.contentType == "text/css; charset=utf-8")
        #expect(WebAssets.files["tests/test_board.py"] == nil)
    }
}
