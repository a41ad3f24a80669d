import Foundation
import UV

/// The harness's CPU use at one moment: the whole process's and each loop
/// thread's. Two samples give the ``HarnessCPU`` of the phase between them.
struct CPUSample {
    let wallNs: UInt64
    let process: Double
    let loops: [Double?]

    /// Reads the clocks now (from the coordinating thread).
    static func now(_ threads: WorkerThreads?) -> CPUSample {
        CPUSample(wallNs: Loop.hrtime, process: CPUClock.processSeconds(), loops: threads?.cpuSeconds() ?? [])
    }

    /// What was used from `earlier` to this sample. An `earlier` sample
    /// taken before the loop threads started counts them from zero.
    func since(_ earlier: CPUSample) -> HarnessCPU {
        var busiest: Double?
        let before = earlier.loops.isEmpty ? Array(repeating: 0, count: loops.count) : earlier.loops
        for (now, then) in zip(loops, before) {
            guard let now, let then else { continue }
            busiest = max(busiest ?? 0, now - then)
        }
        return HarnessCPU(wallSeconds: Double(wallNs &- earlier.wallNs) / 1e9,
                          processSeconds: max(0, process - earlier.process), busiestLoopSeconds: busiest)
    }
}

/// The harness's CPU use over one phase of a run. A loop thread busy close
/// to all of the phase (share near 1) means the harness, not the server,
/// may have set the pace: its loop could not read or send any faster.
struct HarnessCPU {
    /// Wall-clock length of the phase.
    let wallSeconds: Double
    /// User + system CPU of the whole process (every loop, the coordinating thread).
    let processSeconds: Double
    /// CPU of the busiest loop thread; nil where thread clocks cannot be read.
    let busiestLoopSeconds: Double?

    /// The busiest loop's CPU as a share of the phase's wall time (0…1).
    var busiestLoopShare: Double? {
        guard let busiestLoopSeconds, wallSeconds > 0 else { return nil }
        return busiestLoopSeconds / wallSeconds
    }

    /// For `--json`.
    var json: [String: Any] {
        func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
        var object: [String: Any] = ["wall_s": rounded(wallSeconds), "cpu_s": rounded(processSeconds)]
        if let busiestLoopSeconds { object["busiest_loop_cpu_s"] = rounded(busiestLoopSeconds) }
        if let busiestLoopShare { object["busiest_loop_share"] = rounded(busiestLoopShare) }
        return object
    }

    /// `3.210 s CPU in 10.000 s, busiest loop 28 %`
    var text: String {
        let loop = busiestLoopShare.map { String(format: ", busiest loop %.0f %%", $0 * 100) } ?? ""
        return String(format: "%.3f s CPU in %.3f s", processSeconds, wallSeconds) + loop
    }
}
