// libFuzzer entry point for the WebSocket decoder (WebSocketChecks).
// Built by Fuzz/fuzz.sh (`make fuzz`) with -sanitize=fuzzer; not part of the package.
import OutaTimeFuzzChecks

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.websocket.fuzz(data, size)
}
