import UV

/// What a tokens-file entry holds to recognise its clients: the SHA-256
/// digest of its token. A `"token": "…"` entry is hashed when the file is
/// read; a `"sha256": "<64 hex digits>"` entry gives the digest itself, so
/// the file need not hold the token (`printf %s TOKEN | sha256sum`).
/// Matching lives in one place, ``matches(_:)``: the presented token is
/// hashed once (``PresentedToken``) and compared with every entry's digest
/// in constant time. Equal digests are the same token in either form, so
/// an entry rewritten from `token` to `sha256` keeps its connections across
/// a reload.
public struct TokenSecret: Sendable, Hashable {
    /// The token's SHA-256 digest (32 bytes). Never logged.
    let digest: [UInt8]

    /// The secret of a token given in the clear.
    static func plain(_ token: String) -> TokenSecret {
        TokenSecret(digest: SHA256.digest(Array(token.utf8)))
    }

    /// The secret of a `sha256` entry: 64 hexadecimal digits (either case);
    /// nil for anything else.
    static func sha256(hex: String) -> TokenSecret? {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        for index in stride(from: 0, to: 64, by: 2) {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            digest.append(high << 4 | low)
        }
        return TokenSecret(digest: digest)
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Whether `presented` is this secret, in time that does not depend on
    /// the bytes compared (see ``ConstantTime/equal(_:_:)``; both digests
    /// are 32 bytes).
    func matches(_ presented: PresentedToken) -> Bool {
        ConstantTime.equal(presented.digest, digest)
    }
}

/// The token a client sent in `hello`, hashed once for comparison with
/// every entry.
public struct PresentedToken: Sendable {
    /// The token's SHA-256 digest.
    let digest: [UInt8]

    /// Prepares `token` for matching.
    public init(_ token: String) {
        digest = SHA256.digest(Array(token.utf8))
    }
}

/// Comparison whose running time does not depend on where two byte strings
/// differ, so that timing a `hello` cannot reveal a token prefix by prefix.
enum ConstantTime {
    /// True when `presented` equals `secret`.
    ///
    /// It walks every byte of `presented` (whose length the client knows
    /// anyway) against `secret` read cyclically, ORs every difference into
    /// one accumulator and folds in whether the lengths differ, with no
    /// branch on the data and no early exit. So the time depends on the
    /// presented length alone: not on the secret's content, not on how long
    /// a matching prefix is, not on the secret's length. (Tokens are
    /// compared as digests, both 32 bytes.)
    static func equal(_ presented: [UInt8], _ secret: [UInt8]) -> Bool {
        guard !secret.isEmpty else { return false }  // the file refuses empty tokens
        var difference: UInt = presented.count == secret.count ? 0 : 1
        var position = 0
        presented.withUnsafeBufferPointer { presented in
            secret.withUnsafeBufferPointer { secret in
                for byte in presented {
                    difference |= UInt(byte ^ secret[position])
                    position &+= 1
                    // A select, not a branch on the secret: wraps to 0.
                    position &= 0 &- (position < secret.count ? 1 : 0)
                }
            }
        }
        return difference == 0
    }
}
