import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
@testable import OutaTimeServer
import Testing
import UV

/// Tokens given as their SHA-256 (`"sha256": "<hex>"`), so that the file
/// need not hold them: a real server reading a real file. The digest below
/// was printed by `printf %s lobby-board-1885 | sha256sum`.
@Suite("hashed tokens", .timeLimit(.minutes(3)))
struct HashedTokenTests {
    static let lobbyDigest = "ffd144d525f2cdc3d7c55b322d3310b2f4452949c480bd736a855b5c5336f485"

    @Test("a sha256 entry admits its token with its role and scope; other tokens are refused")
    func admits() throws {
        let file = try TokensFile([
            ["sha256": Self.lobbyDigest, "name": "Lobby board", "role": "watch", "channels": ["starport/lobby"]],
            tokenEntry("doc-admin-1955", "Doc Brown", "admin"),
        ])
        try withTestServer(file.configure) { server in
            let board = try server.connect()
            #expect(try board.hello(name: nil, token: "lobby-board-1885")["role"] as? String == "watch")
            #expect(try board.request("get", ["channel": "starport/lobby"]).isOK)
            #expect(try board.request("get", ["channel": "starport/main"]).errorCode == .forbidden)
            #expect(try server.connectReady(token: "doc-admin-1955").request("ping").isOK)

            for stranger in ["lobby-board-188", "LOBBY-BOARD-1885", Self.lobbyDigest] {
                let client = try server.connect()
                #expect(try client.request("hello", ["protocol": 1, "token": stranger]).errorCode == .unauthorized,
                        "\(stranger) was admitted")
            }
        }
        withExtendedLifetime(file) {}
    }

    @Test("an entry rewritten from token to sha256 keeps its connections across a reload")
    func rewrittenEntryKeepsConnections() throws {
        let token = "lobby-board-1885-Qm7vX2kR9tL4"  // strong enough in the clear (TokenStrength)
        let file = try TokensFile([["token": token, "name": "Lobby board", "role": "watch"]])
        try withTestServer(file.configure) { server in
            let board = try server.connectReady(token: token)
            try file.write([["sha256": SHA256.hex(Array(token.utf8)), "name": "Lobby board", "role": "watch"]])
            #expect(server.handle.reload()?.tokens == .reloaded(entries: 1, closed: 0, updated: 0))
            #expect(try board.request("ping").isOK)
        }
        withExtendedLifetime(file) {}
    }

    @Test("the loader refuses a bad digest or both forms in one entry, without echoing either", arguments: [
        (#"[{"sha256": "ffd1", "name": "B", "role": "watch"}]"#, "'sha256' must be 64 hexadecimal digits"),
        (#"[{"sha256": "zzd144d525f2cdc3d7c55b322d3310b2f4452949c480bd736a855b5c5336f485", "name": "B", "role": "watch"}]"#,
         "'sha256' must be 64 hexadecimal digits"),
        (#"[{"token": "secret-board-1885", "sha256": "ffd144d525f2cdc3d7c55b322d3310b2f4452949c480bd736a855b5c5336f485", "name": "B", "role": "watch"}]"#,
         "has 'token' and 'sha256'; give exactly one of them"),
        (#"[{"name": "B", "role": "watch"}]"#, "needs 'token' (the token), 'sha256' (its SHA-256 in hexadecimal) or 'certificate_subject'"),
        (#"[{"sha256": 7, "name": "B", "role": "watch"}]"#, "'sha256' is an integer, not a string"),
    ])
    func badDigestRefused(text: String, expected: String) throws {
        try expectTokensFileRefused(text, expected, secrets: ["secret-board-1885", "ffd144d5"])
    }

    @Test("a token and its digest are the same secret")
    func sameSecret() throws {
        #expect(TokenSecret.plain("lobby-board-1885") == TokenSecret.sha256(hex: Self.lobbyDigest.uppercased()))
        #expect(TokenSecret.plain("lobby-board-1885").matches(PresentedToken("lobby-board-1885")))
        #expect(!TokenSecret.plain("lobby-board-1885").matches(PresentedToken("lobby-board-1886")))
    }
}
