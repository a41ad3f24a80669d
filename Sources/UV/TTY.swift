import CLibUV

/// A terminal (`uv_tty_t`) on a file descriptor: raw mode on and off, the
/// window size, and key input. Writing is left to the caller.
public final class TTY: Handle {
    private var onData: (([UInt8]) -> Void)?
    private var onEnd: ((UVError?) -> Void)?

    /// Whether `fd` is a terminal, as libuv sees it.
    public static func isTerminal(_ fd: Int32) -> Bool {
        uv_guess_handle(fd) == UV_TTY
    }

    /// Opens the terminal on `fd` (0 to read keys, 1 for the window size).
    public init(loop: Loop, fd: Int32) throws(UVError) {
        super.init(loop: loop, type: uv_tty_t.self)
        let status = uv_tty_init(loop.raw, typed(uv_tty_t.self), fd, 0)
        guard status == 0 else {
            freeUninitialised()
            throw UVError(status)
        }
        retainForLibuv()
    }

    /// Raw mode (no echo, no line buffering, no signal keys) or back to normal.
    public func setRaw(_ raw: Bool) throws(UVError) {
        try UVError.check(uv_tty_set_mode(typed(uv_tty_t.self), raw ? UV_TTY_MODE_RAW : UV_TTY_MODE_NORMAL))
    }

    /// Restores the mode the terminal had before the first raw mode, for
    /// every terminal of the process (safe to call at exit).
    public static func resetMode() { _ = uv_tty_reset_mode() }

    /// The window's columns and rows.
    public func windowSize() throws(UVError) -> (columns: Int, rows: Int) {
        var width: Int32 = 0
        var height: Int32 = 0
        try UVError.check(uv_tty_get_winsize(typed(uv_tty_t.self), &width, &height))
        return (Int(width), Int(height))
    }

    /// Calls `onData` with every chunk of input until ``stopReading()``;
    /// `onEnd` on end of input (nil) or a read error.
    public func startReading(_ onData: @escaping ([UInt8]) -> Void, onEnd: ((UVError?) -> Void)? = nil) throws(UVError) {
        self.onData = onData
        self.onEnd = onEnd
        try UVError.check(uv_read_start(typed(uv_stream_t.self), TTYTrampolines.onAlloc, TTYTrampolines.onRead))
    }

    /// Stops reading input.
    public func stopReading() { uv_read_stop(typed(uv_stream_t.self)) }

    override func willClose() {
        stopReading()
        onData = nil
        onEnd = nil
    }

    fileprivate func didRead(_ bytes: UnsafeRawBufferPointer) { onData?(Array(bytes)) }

    fileprivate func didEnd(_ status: Int32) {
        let callback = onEnd
        stopReading()
        callback?(status == Int32(UV_EOF.rawValue) ? nil : UVError(status))
    }
}

/// The C callbacks of ``TTY``.
private enum TTYTrampolines {
    static let onAlloc: uv_alloc_cb = { raw, _, buf in
        let tty = TTY.from(raw!.pointee.data)
        let buffer = tty.loop.readBuffer
        buf!.pointee = uv_buf_init(buffer.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(buffer.count))
    }

    static let onRead: uv_read_cb = { raw, nread, buf in
        let tty = TTY.from(raw!.pointee.data)
        if nread > 0 {
            tty.didRead(UnsafeRawBufferPointer(start: buf!.pointee.base, count: nread))
        } else if nread < 0 {
            tty.didEnd(Int32(nread))
        }
    }
}
