import UV

/// Resolves the server address once, before the workers start, on a
/// short-lived loop of its own (so a host name does not block a worker).
enum AddressLookup {
    static func resolve(host: String, port: Int) throws -> SocketAddress {
        let loop = try Loop()
        var outcome: Result<[SocketAddress], UVError>?
        Resolver.resolve(host: host, port: port, on: loop) { outcome = $0 }
        loop.run()
        try? loop.close()
        switch outcome {
        case .success(let addresses)?:
            return addresses[0]
        case .failure(let error)?:
            throw LoadFailure.unreachable("cannot resolve \(host): \(error)")
        case nil:
            throw LoadFailure.unreachable("cannot resolve \(host)")
        }
    }
}

/// Why a run could not even start.
enum LoadFailure: Error, CustomStringConvertible {
    /// The server's address cannot be resolved or reached.
    case unreachable(String)

    var description: String {
        switch self {
        case .unreachable(let reason): reason
        }
    }
}
