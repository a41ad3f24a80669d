/// What a tokens-file entry holds to recognise its clients. Matching lives
/// in one place, ``matches(_:)``: a hashed form (`"sha256": "<hex>"`, to
/// come with the OpenSSL module) is one more case here, compared against
/// ``PresentedToken``'s digest of the same length, and one more key in
/// ``AccessToken``'s entry reader.
public enum TokenSecret: Sendable, Hashable {
    /// The token itself (`"token": "…"`), as UTF-8 bytes. Never logged.
    case plain([UInt8])

    /// Whether `presented` is this secret, in time that depends only on
    /// the presented token's length (see ``ConstantTime/equal(_:_:)``).
    func matches(_ presented: PresentedToken) -> Bool {
        switch self {
        case .plain(let bytes): ConstantTime.equal(presented.bytes, bytes)
        }
    }
}

/// The token a client sent in `hello`, prepared once for comparison with
/// every entry (a digest would be computed here once, not per entry).
public struct PresentedToken: Sendable {
    /// The token's UTF-8 bytes.
    let bytes: [UInt8]

    /// Prepares `token` for matching.
    public init(_ token: String) {
        bytes = Array(token.utf8)
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
    /// a matching prefix is, not on the secret's length.
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
