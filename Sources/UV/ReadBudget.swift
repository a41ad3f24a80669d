import CLibUV

/// The per-iteration read budget of a loop: how much input one stream may
/// deliver before every other ready handle has had its turn.
///
/// libuv reads a readable stream up to 32 times per loop iteration, as long
/// as each read fills the buffer, and the user handles every read before the
/// loop polls again. A peer with megabytes queued (a publisher sending as
/// fast as it can) therefore held the loop for many milliseconds while an
/// HTTP scrape or a ping waited (docs/BENCHMARKS.md, *Fair reading*). Like
/// Redis, which reads at most 16 KiB per client per event, a stream whose
/// reads in one iteration reach ``bytesPerIteration`` is paused with
/// `uv_read_stop` and resumed by a check handle right after the loop's I/O
/// phase, so it is read again at the next poll, beside everyone else.
///
/// The pause is separate from the user's ``TCPStream/stopReading()``: a
/// stream the user stopped stays stopped, whether before or during a pause.
final class ReadBudget: Handle {
    /// Bytes one stream may read per loop iteration; also the size of each
    /// read, so a stream that fills one read has used its budget.
    static let bytesPerIteration = 16 * 1024

    /// Streams paused in the current iteration, in the order they were paused.
    private var paused: [TCPStream] = []

    init(loop: Loop) {
        super.init(loop: loop, type: uv_check_t.self)
        uv_check_init(loop.raw, typed(uv_check_t.self))  // cannot fail
        retainForLibuv()
    }

    /// Stops reading `stream` until the end of this iteration's I/O phase.
    /// The check handle runs only while a stream is paused: an idle loop
    /// pays nothing, and a paused stream (no longer active) keeps the loop
    /// alive through it.
    func pause(_ stream: TCPStream) {
        if paused.isEmpty {
            uv_check_start(typed(uv_check_t.self), Trampolines.onCheck)
        }
        paused.append(stream)
    }

    override func willClose() {
        uv_check_stop(typed(uv_check_t.self))
        paused = []
    }

    func fire() {
        let streams = paused
        paused = []
        uv_check_stop(typed(uv_check_t.self))
        for stream in streams { stream.budgetRenewed() }
    }
}
