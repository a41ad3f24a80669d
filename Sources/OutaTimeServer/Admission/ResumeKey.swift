import Foundation

/// The `resume_key` of a `hello` result (§6.1): the connection's serial and
/// a 128-bit random secret, base64url without padding (32 characters). The
/// server keeps only the secret, in the session (16 bytes); a key names its
/// connection by the serial, so looking one up needs no index, and a key
/// of another server process or cluster node finds nothing (the serial is
/// some other connection's, or none, and the secret differs).
struct ResumeKey: Equatable {
    /// The ``Connection/serial`` of the connection the key was given to.
    let serial: Int
    /// The random secret, compared in constant time.
    let secret: Secret

    /// 128 random bits.
    struct Secret: Equatable {
        let high: UInt64
        let low: UInt64

        /// A fresh secret from the system's cryptographic generator (`getrandom`).
        static func random() -> Secret {
            var generator = SystemRandomNumberGenerator()
            return Secret(high: generator.next(), low: generator.next())
        }

        /// Equality without an early exit: the time taken says nothing
        /// about how much of a guessed secret was right.
        static func == (lhs: Secret, rhs: Secret) -> Bool {
            ((lhs.high ^ rhs.high) | (lhs.low ^ rhs.low)) == 0
        }
    }

    /// The key's text: 24 bytes (serial, then the secret, big-endian) in base64url.
    var text: String {
        var bytes = [UInt8]()
        bytes.reserveCapacity(24)
        for word in [UInt64(truncatingIfNeeded: serial), secret.high, secret.low] {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    init(serial: Int, secret: Secret) {
        self.serial = serial
        self.secret = secret
    }

    /// Parses a key's text; nil for anything that is not 32 characters of
    /// base64url encoding 24 bytes (an unknown key is ignored, not refused).
    init?(text: String) {
        guard text.utf8.count == 32,
              text.utf8.allSatisfy({ $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0)
                                     || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }),
              let data = Data(base64Encoded: text.replacingOccurrences(of: "-", with: "+")
                                                 .replacingOccurrences(of: "_", with: "/")),
              data.count == 24 else { return nil }
        let bytes = [UInt8](data)
        func word(_ at: Int) -> UInt64 { bytes[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        guard let serial = Int(exactly: word(0)) else { return nil }
        self.serial = serial
        self.secret = Secret(high: word(8), low: word(16))
    }
}
