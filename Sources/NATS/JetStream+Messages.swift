import CNats

/// Publishing with acknowledgement and reading stored messages.
extension JetStream {
    /// Header names JetStream reads on publish.
    enum Header {
        static let expectedLastSubjectSequence = "Nats-Expected-Last-Subject-Sequence"
    }

    /// Publishes and waits for the stream's ack. A stale
    /// `expectedLastSubjectSequence` throws ``NATSError/wrongLastSequence(operation:description:)``;
    /// a lost ack throws ``NATSError/timeout(operation:)`` (the message may
    /// be stored: retry with the same `msgID`). The order of the two checks
    /// differs (nats-server 2.15.1, measured): on one server the CAS comes
    /// first, so a retry of a stored CAS publish is refused with 10071; in a
    /// cluster the duplicate window comes first, so ANY message with that
    /// `msgID` (another writer's too) is acknowledged with `duplicate`. Either
    /// way, read the stored message and compare it with yours.
    public func publish(_ subject: String, data: [UInt8], headers: [String: String] = [:], options: PublishOptions = PublishOptions()) throws(NATSError) -> PublishAck {
        var headers = headers
        var expected: UInt64 = 0
        switch options.expectedLastSubjectSequence {
        case .none: break
        // libnats reads ExpectLastSubjectSeq == 0 as "not set": say "empty" with the header itself.
        case .empty, .sequence(0): headers[Header.expectedLastSubjectSequence] = "0"
        case .sequence(let seq): expected = seq
        }
        let message = try OutgoingMessage(subject: subject, data: data, headers: headers)
        var pubOptions = jsPubOptions()
        try check(jsPubOptions_Init(&pubOptions), "init publish options")
        pubOptions.MaxWait = (options.timeout ?? timeout).milliseconds
        pubOptions.ExpectLastSubjectSeq = expected
        var ack: UnsafeMutablePointer<jsPubAck>?
        var code = jsErrCode(0)
        let status = withOptionalCString(options.msgID) { msgID in
            pubOptions.MsgId = msgID
            return js_PublishMsg(&ack, pointer, message.pointer, &pubOptions, &code)
        }
        try check(status, errorCode: code, "publish to '\(subject)'")
        defer { jsPubAck_Destroy(ack) }
        let value = ack!.pointee
        return PublishAck(stream: value.Stream.map { String(cString: $0) } ?? "", sequence: value.Sequence, duplicate: value.Duplicate)
    }

    /// The message at `sequence` in `stream`, or nil when there is none
    /// (never stored, or removed by retention).
    public func message(stream: String, sequence: UInt64) throws(NATSError) -> NATSMessage? {
        var msg: OpaquePointer?
        var code = jsErrCode(0)
        let status = js_GetMsg(&msg, pointer, stream, sequence, nil, &code)
        return try take(msg, status: status, code: code, "get message \(sequence) of stream '\(stream)'")
    }

    /// The last message on `subject` in `stream`, or nil when it has none.
    /// Only "no message" is nil: a stream without a leader throws, so a
    /// caller never mistakes an outage for an empty subject.
    public func lastMessage(stream: String, subject: String) throws(NATSError) -> NATSMessage? {
        var msg: OpaquePointer?
        var code = jsErrCode(0)
        let status = js_GetLastMsg(&msg, pointer, stream, subject, nil, &code)
        return try take(msg, status: status, code: code, "get the last message on '\(subject)' in stream '\(stream)'")
    }

    /// Direct get (the stream needs `allowDirect`): the first message on
    /// `subject` with stream sequence ≥ `sequence`, or nil when there is none.
    public func nextMessage(stream: String, subject: String, atOrAfter sequence: UInt64) throws(NATSError) -> NATSMessage? {
        var msg: OpaquePointer?
        var options = jsDirectGetMsgOptions()
        try check(jsDirectGetMsgOptions_Init(&options), "init direct get options")
        options.Sequence = sequence
        let status = subject.withCString { subject in
            options.NextBySubject = subject
            return js_DirectGetMsg(&msg, pointer, stream, nil, &options)
        }
        return try take(msg, status: status, code: jsErrCode(0),
                        "direct get of the next message on '\(subject)' at or after \(sequence) in stream '\(stream)'")
    }

    /// Copies and destroys `msg`; nil for "no such message"; throws other failures.
    private func take(_ msg: OpaquePointer?, status: natsStatus, code: jsErrCode, _ operation: @autoclosure () -> String) throws(NATSError) -> NATSMessage? {
        if status == NATS_NOT_FOUND || Int(code.rawValue) == JetStreamCode.noMessageFound { return nil }
        try check(status, errorCode: code, operation())
        defer { natsMsg_Destroy(msg) }
        return NATSMessage(copying: msg!)
    }
}

/// Calls `body` with a C string for `text`, or nil.
func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}
