import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// tmux, driven as a user's terminal: a private server per socket (`-L`),
/// no user config.
enum Tmux {
    /// The tmux executable, or nil when it is not installed.
    static let path: String? = ["/usr/bin/tmux", "/usr/local/bin/tmux", "/opt/homebrew/bin/tmux"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Runs tmux on a private socket (no user config), through posix_spawn
    /// with an empty signal mask (test threads block most signals, and a
    /// child inherits the mask). Not Foundation's Process: the tmux server
    /// that `new-session` forks would inherit Process's exit-monitoring
    /// descriptor and make the client look alive for the server's lifetime.
    /// Only `capture` keeps the output (through a temporary file). Bounded:
    /// a tmux client still running after 10 s is killed.
    @discardableResult
    static func run(_ socket: String, _ arguments: [String], capture: Bool = false) -> String {
        let outputPath = NSTemporaryDirectory() + "outatime-tmux-\(getpid())-\(UUID().uuidString).txt"
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, capture ? outputPath : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let argv = [path ?? "/usr/bin/tmux", "-L", socket, "-f", "/dev/null"] + arguments
        var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, argv[0], &actions, &attributes, &cArguments, environ) == 0 else { return "" }
        let deadline = Date().addingTimeInterval(10)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                break
            }
            usleep(5_000)
        }
        guard capture else { return "" }
        return (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    }

    /// Captures pane `target` every `interval` seconds until `match` holds or
    /// `timeout` passes; whether it matched, and the last capture.
    static func waitForPane(_ socket: String, target: String = "watch", timeout: Double, interval: Double = 0.05,
                            _ match: (String) -> Bool) -> (Bool, String) {
        let deadline = Date().addingTimeInterval(timeout)
        var screen = ""
        repeat {
            screen = run(socket, ["capture-pane", "-p", "-t", target], capture: true)
            if match(screen) { return (true, screen) }
            usleep(UInt32(interval * 1_000_000))
        } while Date() < deadline
        return (false, screen)
    }

    /// Kills the tmux server of `socket` and removes the socket file.
    static func killServer(_ socket: String) {
        run(socket, ["kill-server"])
        let folder = ProcessInfo.processInfo.environment["TMUX_TMPDIR"] ?? "/tmp"
        unlink("\(folder)/tmux-\(getuid())/\(socket)")
    }
}

/// One detached tmux session, `watch`, on its own socket, running `command`
/// in a `width`×`height` window. Killed (with its tmux server) by `close()`
/// or when released.
final class TmuxPane {
    let socket: String
    private var closed = false

    init(command: String, width: Int = 120, height: Int = 40) {
        socket = "outatime-\(getpid())-\(UUID().uuidString.prefix(8))"
        Tmux.run(socket, ["new-session", "-d", "-s", "watch", "-x", "\(width)", "-y", "\(height)", command])
    }

    /// The visible screen as text; `joined` joins lines the terminal wrapped.
    func capture(joined: Bool = false) -> String {
        Tmux.run(socket, ["capture-pane", "-p"] + (joined ? ["-J"] : []) + ["-t", "watch"], capture: true)
    }

    /// Types `keys` (tmux key names, e.g. `t`, `Enter`, `Up`).
    func send(_ keys: String...) {
        Tmux.run(socket, ["send-keys", "-t", "watch"] + keys)
    }

    /// Polls the screen every ~50 ms until `match` holds or `timeout` passes.
    func wait(timeout: Double, _ match: (String) -> Bool) -> (Bool, String) {
        Tmux.waitForPane(socket, timeout: timeout, match)
    }

    /// Resizes the window (and so the pane) to `width`×`height`.
    func resize(width: Int, height: Int) {
        Tmux.run(socket, ["resize-window", "-t", "watch", "-x", "\(width)", "-y", "\(height)"])
    }

    func close() {
        guard !closed else { return }
        closed = true
        Tmux.killServer(socket)
    }

    deinit { close() }
}
