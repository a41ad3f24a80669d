import CLibUV

/// Base of every handle wrapper. Owns the C handle's memory; holds one retain
/// of itself in `handle->data` from init until libuv's close callback, so the
/// object lives as long as libuv may call back into it.
public class Handle {
    /// The loop the handle belongs to.
    public let loop: Loop
    let handle: UnsafeMutablePointer<uv_handle_t>
    private var closeCallbacks: [() -> Void] = []
    /// True once ``close(_:)`` was called.
    /// Unchecked like ``TCPStream``'s queue: every enqueue reads it (issue 28).
    @exclusivity(unchecked) public private(set) var isClosing = false

    init<T>(loop: Loop, type: T.Type) {
        self.loop = loop
        // libuv's handle types start with the uv_handle_t fields (C "inheritance"):
        // cast the pointer, do not rebind the memory.
        // Raw memory, freed raw (``freeMemory()``): no per-handle closure
        // remembering `T` (16 bytes in every connection's stream).
        let memory = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<T>.stride, alignment: MemoryLayout<T>.alignment)
        handle = UnsafeMutablePointer<uv_handle_t>(OpaquePointer(memory))
    }

    private func freeMemory() {
        UnsafeMutableRawPointer(handle).deallocate()
    }

    /// Called by subclasses right after a successful `uv_*_init`.
    func retainForLibuv() {
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    /// Frees memory of a handle whose init failed (no close needed then).
    func freeUninitialised() {
        freeMemory()
    }

    /// Closes the handle; `onClosed` runs in libuv's close callback, after which
    /// the handle's memory is freed. Calling it again only adds the callback.
    public func close(_ onClosed: (() -> Void)? = nil) {
        if let onClosed { closeCallbacks.append(onClosed) }
        guard !isClosing else { return }
        isClosing = true
        willClose()
        uv_close(handle, Trampolines.onClose)
    }

    /// Subclasses drop their callbacks here (breaks retain cycles through closures).
    func willClose() {}

    /// Keeps the loop alive while this handle is active (the default).
    public func ref() { uv_ref(handle) }

    /// Lets the loop exit even while this handle is active.
    public func unref() { uv_unref(handle) }

    /// The handle pointer as a specific libuv handle type.
    func typed<T>(_: T.Type) -> UnsafeMutablePointer<T> {
        UnsafeMutablePointer<T>(OpaquePointer(handle))
    }

    func didClose() {
        let callbacks = closeCallbacks
        closeCallbacks = []
        freeMemory()
        for callback in callbacks { callback() }
    }

    static func from(_ raw: UnsafeMutableRawPointer?) -> Self {
        Unmanaged<Self>.fromOpaque(raw!).takeUnretainedValue()
    }
}
