@testable import OutaTimeServer
import Testing

/// The constant-time token comparison and the table lookup built on it.
@Suite("token matching")
struct TokenMatchTests {
    @Test("equal only for the same bytes: not a prefix, an extension or a repetition", arguments: [
        ("abc", "abc", true),
        ("abd", "abc", false),
        ("xbc", "abc", false),
        ("ab", "abc", false),
        ("abcd", "abc", false),
        ("abcabc", "abc", false),  // the secret is read cyclically: the length must still differ
        ("", "abc", false),
        ("abc", "", false),
        ("ünï", "ünï", true),
    ])
    func equal(presented: String, secret: String, expected: Bool) {
        #expect(ConstantTime.equal(Array(presented.utf8), Array(secret.utf8)) == expected)
    }

    @Test("the table finds each token's own entry among tokens sharing prefixes, and none for others")
    func tableMatch() {
        let tokens = ["board", "board-1", "board-10", "board-2", "xboard"]
        let table = TokenTable(tokens.enumerated().map { AccessToken(token: $1, name: "entry \($0)", role: .watch) })
        for (index, token) in tokens.enumerated() {
            #expect(table.match(PresentedToken(token))?.name == "entry \(index)", "\(token)")
        }
        for stranger in ["boar", "board-", "board-100", "board-1board-1", "", "BOARD"] {
            #expect(table.match(PresentedToken(stranger)) == nil, "\(stranger) matched")
        }
    }
}
