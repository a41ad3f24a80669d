import Foundation

/// How hard a token given in the clear (`"token"` in the tokens file) is to
/// guess, estimated from its length and the kinds of characters it uses:
/// `length × log2(alphabet)`, where the alphabet is 16 for hexadecimal
/// (one case), else the sum of the classes used (10 digits, 26 lowercase,
/// 26 uppercase, 33 ASCII punctuation and space, 128 for anything beyond
/// ASCII). A token of fewer than 8 distinct characters counts as weak
/// whatever its length (`aaaa…`, `abab…`).
///
/// The estimate is an upper bound for random tokens and says nothing of a
/// long phrase of words, so it refuses short, single-class and repetitive
/// tokens, not every weak one: make tokens with a generator
/// (`openssl rand -base64 32`). A `"sha256"` entry cannot be judged (its
/// token is not in the file) and is accepted as it is.
enum TokenStrength {
    /// The least estimated entropy a token may have: 128 bits, as much as
    /// `openssl rand -hex 16` gives (and the AES-128 a TLS suite uses).
    static let minimumBits = 128

    /// The fewest distinct characters a token may have.
    static let minimumDistinct = 8

    /// The estimate, in bits (rounded down).
    static func estimatedBits(_ token: String) -> Int {
        let scalars = Array(token.unicodeScalars)
        guard !scalars.isEmpty else { return 0 }
        func isHex(_ s: Unicode.Scalar, upper: Bool) -> Bool {
            ("0"..."9").contains(s) || (upper ? ("A"..."F").contains(s) : ("a"..."f").contains(s))
        }
        let alphabet: Int
        if scalars.contains(where: { !("0"..."9").contains($0) }),
           scalars.allSatisfy({ isHex($0, upper: false) }) || scalars.allSatisfy({ isHex($0, upper: true) }) {
            alphabet = 16
        } else {
            var size = 0
            if scalars.contains(where: { ("0"..."9").contains($0) }) { size += 10 }
            if scalars.contains(where: { ("a"..."z").contains($0) }) { size += 26 }
            if scalars.contains(where: { ("A"..."Z").contains($0) }) { size += 26 }
            if scalars.contains(where: { $0.isASCII && !$0.properties.isAlphabetic && !("0"..."9").contains($0) }) { size += 33 }
            if scalars.contains(where: { !$0.isASCII }) { size += 128 }
            alphabet = size
        }
        return Int((Double(scalars.count) * log2(Double(alphabet))).rounded(.down))
    }

    /// Why `token` is too weak, for the tokens file's error (never the
    /// token itself), or nil when it is strong enough.
    static func problem(_ token: String) -> String? {
        let bits = estimatedBits(token)
        let distinct = Set(token.unicodeScalars).count
        guard bits < minimumBits || distinct < minimumDistinct else { return nil }
        let why = distinct < minimumDistinct
            ? "it repeats too few characters (\(distinct) distinct, at least \(minimumDistinct))"
            : "about \(bits) bits of entropy by its length and characters, at least \(minimumBits) needed"
        return "the token is too weak: \(why); make one with `openssl rand -base64 32` "
            + "(or give its SHA-256 as 'sha256', which is not judged)"
    }
}
