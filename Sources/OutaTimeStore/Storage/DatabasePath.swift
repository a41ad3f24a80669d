import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// The database could not be opened: names the file and what stands in the
/// way (`cannot open database /x/y/outatime.sqlite: folder /x/y does not
/// exist and cannot be created in /x: permission denied`).
///
/// SQLite alone says `SQLite error 14: unable to open database file`, which
/// names neither the file nor the cause, and a folder that could not be
/// made used to surface as the lock file beside the database.
public struct DatabaseOpenError: Error, CustomStringConvertible, Sendable {
    /// The database file, as given.
    public let path: String
    /// What stands in the way, starting lowercase (`permission denied`).
    public let cause: String

    /// `cannot open database PATH: CAUSE`.
    public var description: String { "cannot open database \(path): \(cause)" }
}

/// The file-system side of opening a database: making its folder, and
/// finding out why SQLite could not open it. Paths are named as given
/// (relative ones stay relative), so messages match what the operator typed.
enum DatabasePath {
    /// The folder of `path` as given: `.` for a bare file name.
    static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let folder = String(path[..<slash])
        return folder.isEmpty ? "/" : folder
    }

    /// Creates the folder of `path` and its missing parents (as `mkdir -p`,
    /// mode 0777 less the umask); a failure names the folder that could not
    /// be made, where, and why.
    static func createFolder(of path: String) throws(DatabaseOpenError) {
        var missing: [String] = []
        var folder = folder(of: path)
        while !exists(folder) {
            missing.append(folder)
            let parent = Self.folder(of: folder)
            guard parent != folder else { break }
            folder = parent
        }
        for folder in missing.reversed() where mkdir(folder, 0o777) != 0 {
            let cause = errno
            if cause == EEXIST, isFolder(folder) { continue }  // made meanwhile
            let parent = Self.folder(of: folder)
            throw DatabaseOpenError(path: path, cause: "folder \(folder) does not exist and cannot be created in \(parent): "
                + reason(cause, making: folder, in: parent))
        }
    }

    /// Why SQLite could not open (or first write) `path`, found by looking
    /// at the file, its companions and its folder; SQLite's own words, with
    /// the path, when nothing there explains it.
    static func diagnose(_ path: String, _ error: any Error) -> DatabaseOpenError {
        let folder = folder(of: path)
        func refused(_ cause: String) -> DatabaseOpenError { DatabaseOpenError(path: path, cause: cause) }
        if let problem = folderProblem(of: path) { return refused(problem) }
        var info = stat()
        if stat(path, &info) == 0 {
            if info.st_mode & S_IFMT == S_IFDIR { return refused("it is a directory, not a file") }
            if access(path, R_OK) != 0 { return refused("\(text(errno)) (the file cannot be read by this user)") }
            for companion in [path + "-wal", path + "-shm"] where isFolder(companion) {
                return refused("\(companion) is a directory; SQLite needs that name for its write-ahead log (remove it)")
            }
            if access(folder, W_OK) != 0, !exists(path + "-shm") {
                return refused("folder \(folder) is not writable: \(text(errno)) "
                    + "(SQLite makes \(name(path))-wal and \(name(path))-shm beside the database)")
            }
        } else if errno == ENOENT, access(folder, W_OK) != 0 {
            return refused("folder \(folder) is not writable: \(text(errno)) (the database file cannot be created there)")
        }
        if let sqlite = error as? DatabaseError {
            return refused("\(sqlite.message ?? "\(sqlite.resultCode)") (SQLite error \(sqlite.extendedResultCode.rawValue))")
        }
        return refused("\(error)")
    }

    /// What keeps anyone from making files in the folder of `path` at
    /// all: it is gone, or this user may not enter it. Nil when it can be entered.
    static func folderProblem(of path: String) -> String? {
        let folder = folder(of: path)
        guard isFolder(folder) else { return "folder \(folder) does not exist" }
        guard access(folder, X_OK) == 0 else { return "folder \(folder) cannot be entered: \(text(errno))" }
        return nil
    }

    /// `strerror` in a sentence's middle: `permission denied`.
    static func text(_ code: Int32) -> String {
        let message = String(cString: strerror(code))
        return message.prefix(1).lowercased() + message.dropFirst()
    }

    private static func reason(_ code: Int32, making folder: String, in parent: String) -> String {
        switch code {
        case ENOTDIR: return "\(parent) is not a folder"
        case EEXIST:
            var info = stat()
            if lstat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFLNK {
                return "it is a symbolic link to a folder that does not exist"
            }
            return "a file of that name is in the way"
        default: return text(code)
        }
    }

    private static func name(_ path: String) -> String {
        path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    private static func isFolder(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }
}
