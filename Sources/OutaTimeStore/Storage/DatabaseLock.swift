import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One server per database: a lock file beside it (`PATH.lock`, holding the
/// owner's process id) locked with `flock` while the server runs.
///
/// SQLite lets a second process open the same file, and two servers would
/// each number a channel's events from what they loaded: both commit the
/// same seqs, and the log can no longer be loaded. The kernel drops the lock
/// when its process ends, however it ends (SIGKILL too), so a lock file left
/// behind never blocks a restart; the lock is per open file, so a second
/// server in the same process is refused as well.
///
/// The file is opened with `O_NOFOLLOW` and made mode 0600: a symbolic link
/// planted at `PATH.lock` is refused instead of having its target
/// truncated and overwritten with the process id.
public final class DatabaseLock {
    /// The lock file.
    public let path: String
    private var descriptor: Int32

    /// Takes the lock of the database at `databasePath`, creating its folder
    /// and the lock file if needed.
    /// - Throws: ``DatabaseLockError`` when another server holds it or the
    ///   lock file cannot be made.
    public init(databasePath: String) throws(DatabaseLockError) {
        path = databasePath + ".lock"
        do {
            try DatabasePath.createFolder(of: databasePath)
        } catch {
            // Said as the database's problem: the lock file is only beside it.
            throw DatabaseLockError(error.description)
        }
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if descriptor < 0, errno == ELOOP {
            throw DatabaseLockError("cannot open database \(databasePath): the lock file \(path) is a symbolic link; it must be a plain file "
                + "(remove the link: the server creates the file, mode 0600)")
        }
        if descriptor < 0, errno == EROFS || errno == EACCES {
            // A folder this process may not write: a lock file already
            // there still locks (read-only is enough for flock). Without
            // one, nothing here can write the database either, so a
            // second server could not corrupt it: go on without a lock.
            descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            if descriptor < 0, errno == ENOENT { return }
            if descriptor < 0, errno == ELOOP {
                throw DatabaseLockError("cannot open database \(databasePath): the lock file \(path) is a symbolic link; it must be a plain file "
                    + "(remove the link: the server creates the file, mode 0600)")
            }
        }
        guard descriptor >= 0 else {
            if let problem = DatabasePath.folderProblem(of: databasePath) {
                throw DatabaseLockError("cannot open database \(databasePath): \(problem)")
            }
            let cause = errno == EISDIR ? "is a directory (remove it: the server creates the file)" : DatabasePath.text(errno)
            throw DatabaseLockError("cannot open database \(databasePath): cannot create its lock file \(path): \(cause)")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let cause = errno
            let owner = Self.owner(descriptor)
            close(descriptor)
            descriptor = -1
            if cause == EWOULDBLOCK {
                throw DatabaseLockError("the database \(databasePath) is in use by another outatime-server"
                    + (owner.map { " (process \($0))" } ?? "") + "; one database serves one server at a time")
            }
            throw DatabaseLockError("cannot lock \(path): \(String(cString: strerror(cause)))")
        }
        guard fcntl(descriptor, F_GETFL) & O_ACCMODE == O_RDWR else { return }
        // A lock file made before 0600 (or by another mask): its owner tightens it.
        _ = fchmod(descriptor, 0o600)
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = text.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    }

    /// Gives the lock up (also done when the lock is released from memory).
    public func release() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
    }

    deinit { release() }

    /// The process id written in the lock file by its holder, if readable.
    private static func owner(_ descriptor: Int32) -> Int? {
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Int(String(decoding: bytes[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// Why ``DatabaseLock`` could not be taken.
public struct DatabaseLockError: Error, CustomStringConvertible {
    /// The reason, naming the database or the lock file.
    public let description: String

    init(_ description: String) { self.description = description }
}

/// Which file a path names (device and inode): a file removed or replaced
/// under an open database is told apart from the one opened.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    /// The file at `path` now; nil when there is none.
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

extension Store {
    /// Throws ``StoreError/fileGone(path:)`` when the database file was
    /// removed or replaced since the store opened it: SQLite would go on
    /// writing to the unlinked file, and every command acknowledged from
    /// then on would be lost at the next start. One `stat` a commit.
    func checkFile() throws {
        guard let opened = fileIdentity else { return }
        guard FileIdentity(path: path) == opened else { throw StoreError.fileGone(path: path) }
    }
}
