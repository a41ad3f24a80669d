import Foundation
import OutaTimeFuzzChecks
import Testing

/// The fuzz targets' checks (Fuzz/Checks) over their committed seed corpus
/// (Fuzz/corpus/<target>), without the sanitizer: the harness `make fuzz`
/// runs stays compiled and correct, and every seed passes every invariant.
@Suite struct FuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/corpus")

    static func seeds(_ target: FuzzTarget) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(
            at: corpus.appendingPathComponent(target.rawValue), includingPropertiesForKeys: nil
        ).filter { !$0.lastPathComponent.hasPrefix(".") }.sorted { $0.path < $1.path }
    }

    @Test("every seed passes its target's checks", arguments: FuzzTarget.allCases)
    func seedsPass(target: FuzzTarget) throws {
        let seeds = try Self.seeds(target)
        #expect(seeds.count >= 4, "Fuzz/corpus/\(target.rawValue) holds \(seeds.count) seeds")
        for seed in seeds {
            let data = try Data(contentsOf: seed)
            do throws(FuzzFailure) {
                try target.check(data)
            } catch {
                Issue.record("\(seed.lastPathComponent): \(error)")
            }
        }
    }

    @Test("short and empty inputs are complete inputs", arguments: FuzzTarget.allCases)
    func shortInputs(target: FuzzTarget) {
        for input: [UInt8] in [[], [0], [255], [1, 2, 3], [UInt8](repeating: 0xFF, count: 64)] {
            do throws(FuzzFailure) {
                try target.check(Data(input))
            } catch {
                Issue.record("\(input.prefix(8)): \(error)")
            }
        }
    }
}
