import Foundation
import OutaTimeProtocol

/// The JSON reader on any bytes: no trap; reading from `Data` and from raw
/// bytes agree (value or error); a value read is written back by the
/// project's encoder and reads back equal (so it holds nothing the encoder
/// cannot write, such as an infinite number); an error names a byte offset
/// inside the input. "Equal" compares an integer and a double as doubles:
/// `8888888888888888.1` reads as the double 8888888888888888, written
/// without a fraction it reads back as that integer; a double near 1.2e18 is
/// written in its shortest form, `1.2345678901234568e+18`, whose exact value
/// is an integer that rounds back to the same double. Both are the same
/// number to any reader that holds numbers as doubles, as JSON allows.
enum JSONChecks {
    static func check(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) {
        let value = read(input)
        let fromData = read(Data(input))
        guard value == fromData else {
            throw FuzzFailure(.json, "raw bytes read as \(value), Data as \(fromData)")
        }
        switch value {
        case .failure(let error):
            guard error.offset >= 0, error.offset <= input.count, !error.reason.isEmpty else {
                throw FuzzFailure(.json, "error \(error) for \(input.count) bytes")
            }
        case .success(let value):
            try roundTrip(value, .json)
        }
    }

    static func read(_ bytes: UnsafeRawBufferPointer) -> Result<JSONValue, JSONReadError> {
        do throws(JSONReadError) {
            return .success(try JSONValue.parse(bytes: bytes))
        } catch {
            return .failure(error)
        }
    }

    static func read(_ data: Data) -> Result<JSONValue, JSONReadError> {
        do throws(JSONReadError) {
            return .success(try JSONValue.parse(data))
        } catch {
            return .failure(error)
        }
    }

    /// `value` written by `CompactJSONEncoder` reads back equal.
    static func roundTrip(_ value: JSONValue, _ target: FuzzTarget) throws(FuzzFailure) {
        let text: [UInt8]
        do {
            text = try CompactJSONEncoder().encode(value)
        } catch {
            throw FuzzFailure(target, "a value read could not be written: \(error); value \(value)")
        }
        switch read(Data(text)) {
        case .success(let again) where sameJSON(again, value):
            break
        case .success(let again):
            throw FuzzFailure(target, "\(value) was written as \(String(decoding: text, as: UTF8.self)) and read back as \(again)")
        case .failure(let error):
            throw FuzzFailure(target, "\(value) was written as \(String(decoding: text, as: UTF8.self)), which does not read: \(error)")
        }
    }

    /// Equal JSON, an integer and a double compared as doubles.
    static func sameJSON(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.int(let i), .double(let d)), (.double(let d), .int(let i)):
            return Double(i) == d
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { sameJSON($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { sameJSON(value, $0) } ?? false }
        default:
            return a == b
        }
    }
}
