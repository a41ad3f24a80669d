// libFuzzer entry point for the HTTP head parser (HTTPChecks).
// Built by Fuzz/fuzz.sh (`make fuzz`) with -sanitize=fuzzer; not part of the package.
import OutaTimeFuzzChecks

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.http.fuzz(data, size)
}
