import CLibUV
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Host name resolution without blocking the loop: `uv_getaddrinfo` runs the
/// system resolver on libuv's thread pool and calls back on the loop thread.
///
/// Numeric hosts (`127.0.0.1`, `::1`) and `localhost` need no lookup: use
/// ``SocketAddress/init(host:port:)`` for those; ``resolve(host:port:on:_:)``
/// tries that first and only then asks the resolver.
public enum Resolver {
    /// Resolves `host` to the TCP addresses of `port`, in the order the
    /// system resolver prefers (try them in turn). `completion` runs on the
    /// loop thread: at once for a numeric host or when the lookup cannot be
    /// started, otherwise from a later loop iteration. An outstanding lookup
    /// keeps ``Loop/run()`` running, and ``Loop/close()`` fails until it
    /// has called back.
    public static func resolve(
        host: String,
        port: Int,
        on loop: Loop,
        _ completion: @escaping (Result<[SocketAddress], UVError>) -> Void
    ) {
        if let numeric = try? SocketAddress(host: host, port: port) {
            completion(.success([numeric]))
            return
        }
        guard (0...65535).contains(port), !host.isEmpty else {
            completion(.failure(UVError(Int32(UV_EINVAL.rawValue))))
            return
        }
        let pending = PendingResolve(completion: completion)
        pending.request.pointee.data = Unmanaged.passRetained(pending).toOpaque()
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Self.streamSocketType
        hints.ai_flags = AI_NUMERICSERV
        let result = uv_getaddrinfo(loop.raw, pending.request, ResolverTrampolines.onResolved, host, String(port), &hints)
        if result < 0 {
            // The callback will never run: balance the retain here.
            Unmanaged.passUnretained(pending).release()
            pending.request.deallocate()
            completion(.failure(UVError(result)))
        }
    }

    #if canImport(Glibc)
    static let streamSocketType = Int32(SOCK_STREAM.rawValue)
    #else
    static let streamSocketType = SOCK_STREAM
    #endif

    /// Copies every IPv4 and IPv6 entry of a `getaddrinfo` list, in order,
    /// dropping duplicates (one host often lists an address once per protocol).
    static func addresses(_ list: UnsafeMutablePointer<addrinfo>?) -> [SocketAddress] {
        var found: [SocketAddress] = []
        var entry = list
        while let current = entry {
            let info = current.pointee
            if let address = info.ai_addr,
               info.ai_family == AF_INET || info.ai_family == AF_INET6 {
                var storage = sockaddr_storage()
                let length = min(Int(info.ai_addrlen), MemoryLayout<sockaddr_storage>.size)
                withUnsafeMutableBytes(of: &storage) { target in
                    target.copyMemory(from: UnsafeRawBufferPointer(start: address, count: length))
                }
                let candidate = SocketAddress(storage: storage)
                if !found.contains(where: { $0.description == candidate.description }) {
                    found.append(candidate)
                }
            }
            entry = info.ai_next
        }
        return found
    }
}

/// A `uv_getaddrinfo_t` in flight, retained until its callback.
final class PendingResolve {
    let request = UnsafeMutablePointer<uv_getaddrinfo_t>.allocate(capacity: 1)
    let completion: (Result<[SocketAddress], UVError>) -> Void
    init(completion: @escaping (Result<[SocketAddress], UVError>) -> Void) { self.completion = completion }
}

/// The C callback of ``Resolver``, kept next to it so that this file is the
/// whole of name resolution.
enum ResolverTrampolines {
    static let onResolved: uv_getaddrinfo_cb = { request, status, list in
        let pending = Unmanaged<PendingResolve>.fromOpaque(request!.pointee.data!).takeRetainedValue()
        pending.request.deallocate()
        let outcome: Result<[SocketAddress], UVError>
        if status < 0 {
            outcome = .failure(UVError(status))
        } else {
            let addresses = Resolver.addresses(list)
            outcome = addresses.isEmpty ? .failure(UVError(Int32(UV_EAI_NONAME.rawValue))) : .success(addresses)
        }
        // libuv hands over the list; it is ours to free (even on error, nil is fine).
        uv_freeaddrinfo(list)
        pending.completion(outcome)
    }
}
