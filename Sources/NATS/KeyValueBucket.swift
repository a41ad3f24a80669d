import CNats

/// The settings of a key-value bucket.
public struct KeyValueConfig: Sendable, Equatable {
    /// The bucket's name (letters, digits, `-` and `_`).
    public var bucket: String
    /// Values kept per key (1 to 64).
    public var history: UInt8 = 1
    /// Copies kept in a cluster (1, 3 or 5).
    public var replicas = 1
    /// File or memory storage.
    public var storage: StorageKind = .file
    /// The largest value, in bytes; -1 for the server's limit.
    public var maxValueSize: Int32 = -1
    /// How long a value is kept after it was put (the bucket stream's
    /// `MaxAge`); nil keeps values until they are replaced or deleted.
    /// Set when the bucket is created: an existing bucket keeps its own.
    public var maxAge: Duration?

    /// A configuration with default settings.
    public init(bucket: String) { self.bucket = bucket }
}

/// One value of a key, with its revision (the bucket stream's sequence).
public struct KeyValueEntry: Sendable, Equatable {
    /// What happened to the key at this revision.
    public enum Operation: Sendable, Equatable {
        /// A value was put.
        case put
        /// The key was deleted.
        case delete
        /// The key was purged.
        case purge
    }

    /// The key.
    public var key: String
    /// The value (empty for a delete or purge).
    public var value: [UInt8]
    /// The revision, to pass to ``KeyValueBucket/update(_:value:expectedRevision:)``.
    public var revision: UInt64
    /// Put, delete or purge.
    public var operation: Operation

    /// The value as UTF-8 text.
    public var text: String { String(decoding: value, as: UTF8.self) }

    init(copying entry: OpaquePointer) {
        key = String(cString: kvEntry_Key(entry))
        let length = Int(kvEntry_ValueLen(entry))
        if length > 0, let bytes = kvEntry_Value(entry) {
            value = Array(UnsafeRawBufferPointer(start: bytes, count: length))
        } else {
            value = []
        }
        revision = kvEntry_Revision(entry)
        operation = switch kvEntry_Operation(entry) {
        case kvOp_Delete: .delete
        case kvOp_Purge: .purge
        default: .put
        }
    }
}

/// A JetStream key-value bucket. Calls block (call them off the event loop).
public final class KeyValueBucket: @unchecked Sendable {
    // @unchecked: a libnats kvStore is safe to use from any thread.
    let pointer: OpaquePointer
    /// The bucket's name.
    public let name: String
    /// The context it was opened through (kept alive by it).
    public let jetStream: JetStream

    /// Opens the bucket `config.bucket`, creating it with `config` when absent.
    public init(_ jetStream: JetStream, config: KeyValueConfig) throws(NATSError) {
        guard !config.bucket.isEmpty, config.bucket.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw .invalidArgument("bucket name '\(config.bucket)' must be letters, digits, '-' or '_'")
        }
        guard (1...64).contains(config.history) else {
            throw .invalidArgument("bucket '\(config.bucket)': history \(config.history) is outside 1...64")
        }
        var kv: OpaquePointer?
        let opened = js_KeyValue(&kv, jetStream.pointer, config.bucket)
        if opened == NATS_NOT_FOUND {
            var cfg = kvConfig()
            try check(kvConfig_Init(&cfg), "init bucket config")
            cfg.History = config.history
            cfg.Replicas = Int32(config.replicas)
            cfg.StorageType = config.storage.c
            cfg.MaxValueSize = config.maxValueSize
            // libnats passes it on as the stream's MaxAge: nanoseconds, 0 for none.
            cfg.TTL = config.maxAge.map { $0.components.seconds * 1_000_000_000 + $0.components.attoseconds / 1_000_000_000 } ?? 0
            let status = config.bucket.withCString { bucket in
                cfg.Bucket = bucket
                return js_CreateKeyValue(&kv, jetStream.pointer, &cfg)
            }
            try check(status, "create bucket '\(config.bucket)'")
        } else {
            try check(opened, "open bucket '\(config.bucket)'")
        }
        pointer = kv!
        name = config.bucket
        self.jetStream = jetStream
    }

    deinit { kvStore_Destroy(pointer) }

    /// The bucket's `MaxAge` as the server keeps it (nil: none), read
    /// from the bucket's status.
    public func maxAge() throws(NATSError) -> Duration? {
        var status: OpaquePointer?
        try check(kvStore_Status(&status, pointer), "status of bucket '\(name)'")
        defer { kvStatus_Destroy(status) }
        let nanoseconds = kvStatus_TTL(status)  // the stream's MaxAge as it is
        return nanoseconds > 0 ? .nanoseconds(nanoseconds) : nil
    }

    /// The key's current value, or nil when it is absent or deleted.
    public func get(_ key: String) throws(NATSError) -> KeyValueEntry? {
        var entry: OpaquePointer?
        let status = kvStore_Get(&entry, pointer, key)
        if status == NATS_NOT_FOUND { return nil }
        try check(status, "get '\(key)' from bucket '\(name)'")
        defer { kvEntry_Destroy(entry) }
        return KeyValueEntry(copying: entry!)
    }

    /// Stores `value` whatever the key holds; returns the new revision.
    @discardableResult
    public func put(_ key: String, value: [UInt8]) throws(NATSError) -> UInt64 {
        var revision: UInt64 = 0
        let status = value.withUnsafeBytes { kvStore_Put(&revision, pointer, key, $0.baseAddress, Int32($0.count)) }
        try check(status, "put '\(key)' in bucket '\(name)'")
        return revision
    }

    /// Stores `value` only if the key is absent (or deleted); otherwise
    /// throws ``NATSError/keyExists(bucket:key:)``. Returns the new revision.
    @discardableResult
    public func create(_ key: String, value: [UInt8]) throws(NATSError) -> UInt64 {
        var revision: UInt64 = 0
        let status = value.withUnsafeBytes { kvStore_Create(&revision, pointer, key, $0.baseAddress, Int32($0.count)) }
        if status == NATS_OK { return revision }
        let error = NATSError.from(status, operation: "create '\(key)' in bucket '\(name)'")
        if case .wrongLastSequence = error { throw .keyExists(bucket: name, key: key) }
        // libnats may overwrite the 10071 text with its own follow-up get: ask.
        if (try? get(key)) != nil { throw .keyExists(bucket: name, key: key) }
        throw error
    }

    /// Stores `value` only if the key's revision is still `expectedRevision`;
    /// otherwise throws ``NATSError/wrongLastSequence(operation:description:)``.
    /// Returns the new revision.
    @discardableResult
    public func update(_ key: String, value: [UInt8], expectedRevision: UInt64) throws(NATSError) -> UInt64 {
        var revision: UInt64 = 0
        let status = value.withUnsafeBytes {
            kvStore_Update(&revision, pointer, key, $0.baseAddress, Int32($0.count), expectedRevision)
        }
        try check(status, "update '\(key)' in bucket '\(name)' at revision \(expectedRevision)")
        return revision
    }

    /// Deletes the key (a delete marker; ``get(_:)`` then returns nil).
    public func delete(_ key: String) throws(NATSError) {
        try check(kvStore_Delete(pointer, key), "delete '\(key)' from bucket '\(name)'")
    }

    /// The keys that currently hold a value, sorted.
    public func keys(timeout: Duration = .seconds(5)) throws(NATSError) -> [String] {
        var list = kvKeysList()
        var options = kvWatchOptions()
        try check(kvWatchOptions_Init(&options), "init watch options")
        options.Timeout = timeout.milliseconds
        let status = kvStore_Keys(&list, pointer, &options)
        if status == NATS_NOT_FOUND { return [] }
        try check(status, "list the keys of bucket '\(name)'")
        defer { kvKeysList_Destroy(&list) }
        return (0..<Int(list.Count)).compactMap { list.Keys[$0].map { String(cString: $0) } }.sorted()
    }
}
