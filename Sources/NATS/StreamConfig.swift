import CNats

/// Where a stream or bucket keeps its messages.
public enum StorageKind: Sendable, Equatable {
    /// On disk (written to the OS before the ack, fsynced later).
    case file
    /// In memory only.
    case memory

    var c: jsStorageType { self == .file ? js_FileStorage : js_MemoryStorage }
}

/// The settings of a JetStream stream that OutaTime uses.
public struct StreamConfig: Sendable, Equatable {
    /// The stream's name (no `.`, `*`, `>` or white space).
    public var name: String
    /// The subjects it stores.
    public var subjects: [String]
    /// File or memory storage.
    public var storage: StorageKind = .file
    /// Copies kept in a cluster (1, 3 or 5).
    public var replicas = 1
    /// Messages kept per subject (the oldest go first); -1 for no limit.
    public var maxMessagesPerSubject: Int64 = -1
    /// True: the oldest messages are discarded at a limit; false: new ones are refused.
    public var discardOld = true
    /// Refuse deleting single messages.
    public var denyDelete = false
    /// Refuse purging the stream.
    public var denyPurge = false
    /// Allow direct gets (``JetStream/nextMessage(stream:subject:atOrAfter:)``).
    public var allowDirect = true
    /// How long a `Nats-Msg-Id` is remembered to refuse duplicates.
    public var duplicateWindow: Duration = .seconds(120)
    /// The largest message stored, in bytes; -1 for the server's limit.
    public var maxMessageSize: Int32 = -1

    /// A configuration with the given name and subjects and default settings.
    public init(name: String, subjects: [String]) {
        self.name = name
        self.subjects = subjects
    }

    func validate() throws(NATSError) {
        guard !name.isEmpty, !name.contains(where: { ".*> \t\r\n".contains($0) }) else {
            throw .invalidArgument("stream name '\(name)' is empty or contains '.', '*', '>' or white space")
        }
        guard !subjects.isEmpty else { throw .invalidArgument("stream '\(name)' has no subject") }
        guard [1, 3, 5].contains(replicas) else {
            throw .invalidArgument("stream '\(name)': \(replicas) replicas; use 1, 3 or 5")
        }
    }

    /// Calls `body` with the C configuration (valid only inside `body`).
    func withC<R>(_ body: (UnsafeMutablePointer<jsStreamConfig>) throws(NATSError) -> R) throws(NATSError) -> R {
        var cfg = jsStreamConfig()
        try check(jsStreamConfig_Init(&cfg), "init stream config")
        cfg.Storage = storage.c
        cfg.Replicas = Int64(replicas)
        cfg.MaxMsgsPerSubject = maxMessagesPerSubject
        cfg.Discard = discardOld ? js_DiscardOld : js_DiscardNew
        cfg.DenyDelete = denyDelete
        cfg.DenyPurge = denyPurge
        cfg.AllowDirect = allowDirect
        cfg.Duplicates = duplicateWindow.milliseconds * 1_000_000  // nanoseconds
        cfg.MaxMsgSize = maxMessageSize
        return try withCStrings(subjects) { (subjectArray) throws(NATSError) -> R in
            cfg.SubjectsLen = Int32(subjects.count)
            let name = strdupOrFail(name)
            defer { free(name) }
            cfg.Name = UnsafePointer(name)
            cfg.Subjects = subjectArray
            return try body(&cfg)
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif

func strdupOrFail(_ text: String) -> UnsafeMutablePointer<CChar> { strdup(text)! }
