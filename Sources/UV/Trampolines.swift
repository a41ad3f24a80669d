import CLibUV

/// Every C callback of the UV layer. Each one recovers the Swift object from
/// `data` (retained once by ``Handle/retainForLibuv()``) and forwards.
enum Trampolines {
    static let onClose: uv_close_cb = { raw in
        let pointer = raw!.pointee.data!
        Handle.from(pointer).didClose()
        Unmanaged<Handle>.fromOpaque(pointer).release()
    }

    static let onTimer: uv_timer_cb = { raw in
        Timer.from(raw!.pointee.data).fire()
    }

    static let onAsync: uv_async_cb = { raw in
        AsyncWakeup.from(raw!.pointee.data).fire()
    }

    static let onSignal: uv_signal_cb = { raw, signum in
        Signal.from(raw!.pointee.data).fire(signum)
    }

    static let onPrepare: uv_prepare_cb = { raw in
        Prepare.from(raw!.pointee.data).fire()
    }

    static let onIdle: uv_idle_cb = { raw in
        NextTurn.from(raw!.pointee.data).fire()
    }

    static let onCheck: uv_check_cb = { raw in
        ReadBudget.from(raw!.pointee.data).fire()
    }

    static let onConnection: uv_connection_cb = { raw, status in
        TCPListener.from(raw!.pointee.data).connectionArrived(status: status)
    }

    static let onAlloc: uv_alloc_cb = { raw, _, buf in
        let stream = TCPStream.from(raw!.pointee.data)
        let loop = stream.loop
        if let limit = loop.readTimePerIteration, !loop.readBudget.admits(stream, limit: limit) {
            // Deferred: libuv reports UV_ENOBUFS and the bytes wait in the kernel.
            buf!.pointee = uv_buf_init(nil, 0)
            return
        }
        buf!.pointee = uv_buf_init(loop.readBuffer.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(loop.readSize))
    }

    static let onRead: uv_read_cb = { raw, nread, buf in
        let stream = TCPStream.from(raw!.pointee.data)
        if nread > 0 {
            stream.didRead(UnsafeRawBufferPointer(start: buf!.pointee.base, count: nread))
        } else if nread == Int(UV_ENOBUFS.rawValue) {
            // Deferred by the read budget (onAlloc): read at a later iteration.
            stream.didDefer()
        } else if nread < 0 {
            stream.didFailReading(UVError(Int32(nread)))
        }
        // nread == 0 is EAGAIN, not EOF: nothing to do.
    }

    #if os(Linux)
    static let onPreciseTimer: uv_poll_cb = { handle, _, _ in
        PreciseTimer.from(handle!.pointee.data).fire()
    }
    #else
    static let onPreciseTimerFallback: uv_timer_cb = { handle in
        PreciseTimer.from(handle!.pointee.data).fire()
    }
    #endif

    static let onWrite: uv_write_cb = { request, status in
        let pending = Unmanaged<PendingWrite>.fromOpaque(request!.pointee.data!).takeRetainedValue()
        pending.stream.didWrite(pending, status: status)
    }

    static let onShutdown: uv_shutdown_cb = { request, status in
        let pending = Unmanaged<PendingShutdown>.fromOpaque(request!.pointee.data!).takeRetainedValue()
        pending.request.deallocate()
        pending.completion(status < 0 ? UVError(status) : nil)
    }

    static let onConnect: uv_connect_cb = { request, status in
        let pending = Unmanaged<PendingConnect>.fromOpaque(request!.pointee.data!).takeRetainedValue()
        pending.request.deallocate()
        pending.completion(status < 0 ? UVError(status) : nil)
    }
}
