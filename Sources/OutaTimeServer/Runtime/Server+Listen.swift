import UV

/// A listener that could not be opened, naming the address, the flag that
/// asked for it and the cause: `cannot listen on 127.0.0.1:1985 (--port):
/// address already in use (another outatime-server?)`. libuv alone says
/// `EADDRINUSE: address already in use`, and a server with three listeners
/// (`--port`, `--tls-port`, `--http`) left the operator to guess which.
public struct ListenError: Error, CustomStringConvertible, Sendable {
    /// `HOST:PORT` (`[HOST]:PORT` for IPv6), as configured.
    public let address: String
    /// The flag that configured the listener: `--port`, `--tls-port`, `--http`.
    public let flag: String
    /// What the kernel said.
    public let error: UVError

    /// The whole sentence, with a hint for the usual causes.
    public var description: String {
        let hint = switch error.name {
        case "EADDRINUSE": " (another outatime-server?)"
        case "EACCES": " (ports below 1024 need privileges)"
        case "EADDRNOTAVAIL": " (no interface of this machine has that address)"
        default: ""
        }
        return "cannot listen on \(address) (\(flag)): \(error.message)\(hint)"
    }
}

extension Server {
    /// Runs `open` (binding and starting a listener on `host:port`) and
    /// names the address and `flag` when libuv refuses. libuv reports an
    /// address in use at `listen`, not at `bind`, so both go in `open`.
    func listening<Result>(on host: String, _ port: Int, flag: String, _ open: () throws -> Result) throws -> Result {
        do {
            return try open()
        } catch let error as UVError {
            throw ListenError(address: host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)", flag: flag, error: error)
        }
    }
}
