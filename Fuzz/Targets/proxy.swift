// libFuzzer entry point for the PROXY header parser (ProxyChecks).
// Built by Fuzz/fuzz.sh (`make fuzz`) with -sanitize=fuzzer; not part of the package.
import OutaTimeFuzzChecks

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.proxy.fuzz(data, size)
}
