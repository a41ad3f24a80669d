import CLibSSL

/// SHA-1 from OpenSSL, for the WebSocket handshake's `Sec-WebSocket-Accept`
/// (RFC 6455 §1.3 fixes SHA-1 there; it protects nothing, it only proves the
/// server read the key). Use ``SHA256`` for anything that must resist attack.
public enum SHA1 {
    /// The 20-byte digest of `bytes`.
    public static func digest(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 20)
        let run: (UnsafeBufferPointer<UInt8>) -> Void = { input in
            output.withUnsafeMutableBufferPointer { out in
                var length: UInt32 = 0
                _ = EVP_Digest(input.baseAddress, input.count, out.baseAddress, &length, EVP_sha1(), nil)
            }
        }
        if bytes.withContiguousStorageIfAvailable(run) == nil {
            Array(bytes).withUnsafeBufferPointer(run)
        }
        return output
    }
}
