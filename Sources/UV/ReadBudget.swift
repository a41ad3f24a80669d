import CLibUV

/// The read budget of a loop: how much one stream, and all streams
/// together, may read in one loop iteration before everyone else has had a
/// turn.
///
/// **Per stream (always).** libuv reads a readable stream up to 32 times per
/// loop iteration, as long as each read fills the buffer, and the user
/// handles every read before the loop polls again. A peer with megabytes
/// queued (a publisher sending as fast as it can) therefore held the loop
/// for many milliseconds while an HTTP scrape or a ping waited
/// (docs/BENCHMARKS.md, *Fair reading*). Like Redis, which reads at most
/// 16 KiB per client per event, a read asks for ``bytesPerRead``, and a
/// stream whose read fills it is paused with `uv_read_stop` and resumed by
/// a check handle right after the loop's I/O phase, so it is read again at
/// the next poll, beside everyone else.
///
/// **While reads are cheap**, a stream may go on: up to
/// ``readsPerIteration`` full reads in one iteration, as long as every read
/// handled in the iteration so far (all streams') took less than
/// ``cheapReadTime`` together. Each iteration ends in one flush, and its
/// fixed costs (a `read`, a `write` per subscriber, an `epoll_wait`, the
/// pause's two `epoll_ctl`) were a fifth of a publish at 10 subscribers
/// (docs/BENCHMARKS.md, *Session 19*); where a read's frames cost much
/// (thousands of subscribers) the first read uses the time up and the
/// stream pauses after it, as before. The time is measured around the
/// user's read callback (two `uv_hrtime` per read). This pause is separate from the user's
/// ``TCPStream/stopReading()``: a stream the user stopped stays stopped,
/// whether before or during a pause.
///
/// **Per iteration (``Loop/readTimePerIteration``, off unless set).** A
/// thousand streams with 16 KiB each still make one long iteration (the
/// setup of `outatime-load timers` made iterations of 1.4 s, and ticks due
/// meanwhile came that late). Once the reads of one iteration have taken
/// that long, the loop *defers* every other stream that comes up: its alloc
/// gets an empty buffer, libuv reports `UV_ENOBUFS`, and the bytes stay in
/// the kernel (epoll is level-triggered, so the stream is ready again at the
/// next poll). Timers run between iterations: the reads delay them by about
/// the budget plus one read (other work of the iteration, such as the
/// server's commit reports, comes on top). The first read of an iteration
/// always runs: every iteration makes progress.
///
/// Deferred streams are served in *rounds*. epoll reports ready descriptors
/// in the same order from one iteration to the next (while they fit one
/// poll), so deferring alone would serve the streams at the front of that
/// order in every iteration and those behind them never. A round gives
/// every stream that comes up one read: a stream that has read in the
/// current round is deferred until the round ends, and a stream deferred for
/// the time is *owed* a read in it. The round ends at the end of the first
/// iteration with no debt left, and a new one begins: so every ready stream
/// reads once per round, whatever epoll's order. A debt lapses when its
/// stream does not come up in an iteration (no data left, stopped, closed):
/// nobody waits for a stream that has nothing to read. Below the time, no
/// stream is owed and every iteration is a round of its own: nothing
/// changes.
final class ReadBudget: Handle {
    /// The size of each read: a stream whose read fills it pauses until the
    /// next iteration, unless reads are cheap (below).
    static let bytesPerRead = 16 * 1024
    /// The most full reads one stream makes in an iteration while reads are
    /// cheap (32 KiB). Four (64 KiB) measured worse than two at 10
    /// subscribers: twice the writes a publish, since the kernel did not take
    /// a subscriber's ~60 KiB of one iteration at once (docs/BENCHMARKS.md,
    /// *Session 19*).
    static let readsPerIteration = 2
    /// The time, in nanoseconds, the reads of one iteration (every stream's
    /// read callbacks) may take before no stream goes on past one full read.
    static let cheapReadTime: UInt64 = 500_000

    /// Time the read callbacks of this iteration took so far.
    private var readTime: UInt64 = 0

    /// Counts `nanoseconds` of read handling in this iteration; the check
    /// handle resets it when the iteration's I/O phase ends.
    func spent(_ nanoseconds: UInt64) {
        readTime &+= nanoseconds
        checkEachIteration()
    }

    /// Whether a stream that has made `fullReads` full reads in this
    /// iteration may read again in it: never past the loop's own
    /// ``Loop/readTimePerIteration`` either (0: one read an iteration).
    func mayGoOn(afterFullReads fullReads: Int) -> Bool {
        fullReads < Self.readsPerIteration && readTime < min(Self.cheapReadTime, loop.readTimePerIteration ?? .max)
    }

    /// Reads deferred so far (one per stream and iteration).
    private(set) var deferredReads = 0

    /// Streams paused in the current iteration, in the order they were paused.
    private var paused: [TCPStream] = []
    /// Streams owed a read in this round (and some paid in this iteration,
    /// dropped at its end).
    private var owed: [TCPStream] = []
    /// Counts iterations in which the check ran (every iteration with a
    /// read, a pause or a debt).
    private var iteration: UInt64 = 1
    /// The current round; a stream's ``TCPStream/readInRound`` says whether it
    /// has read in it.
    private var round: UInt64 = 1
    /// Reads let through in this iteration, and when the first one began.
    private var readsThisIteration = 0
    private var firstReadAt: UInt64 = 0
    private var isChecking = false

    init(loop: Loop) {
        super.init(loop: loop, type: uv_check_t.self)
        uv_check_init(loop.raw, typed(uv_check_t.self))  // cannot fail
        retainForLibuv()
    }

    /// Whether `stream`, about to be read, may read now; false defers it to
    /// a later iteration. Only called with a time limit set.
    func admits(_ stream: TCPStream, limit: UInt64) -> Bool {
        let cameUpBefore = stream.cameUpIn == iteration
        stream.cameUpIn = iteration
        if stream.readInRound == round && stream.fullReads == 0 {
            // Its turn in this round is over; it reads in the next one
            // (unless it is going on with cheap reads: ``mayGoOn``).
            deferRead(stream, cameUpBefore: cameUpBefore)
            return false
        }
        let now = uv_hrtime()
        if readsThisIteration == 0 {
            firstReadAt = now
            checkEachIteration()
        } else if now &- firstReadAt >= limit {
            // Owed since an earlier iteration, it is in `owed` already (a
            // stream paid in this round cannot be owed again in it).
            if !stream.isOwed { owed.append(stream) }
            stream.isOwed = true
            deferRead(stream, cameUpBefore: cameUpBefore)
            return false
        }
        readsThisIteration += 1
        stream.readInRound = round
        stream.isOwed = false  // paid: leaves `owed` at the end of the iteration
        return true
    }

    /// Counts a deferral, once per stream and iteration. A stream that
    /// comes up a second time in one iteration is paused like one over its
    /// bytes (by the read callback: libuv still calls it after this alloc):
    /// with more than 1,024 descriptors ready libuv polls again (up to 48
    /// times) before the iteration ends, and a deferred stream, still
    /// readable, would come up in every one of those polls.
    private func deferRead(_ stream: TCPStream, cameUpBefore: Bool) {
        if cameUpBefore {
            stream.pausesWhenDeferred = true
        } else {
            deferredReads += 1
            checkEachIteration()
        }
    }

    /// Stops reading `stream` until the end of this iteration's I/O phase.
    /// The check handle runs only while a stream is paused or owed, or a
    /// read ran in this iteration: an idle loop pays nothing, and a paused
    /// stream (no longer active) keeps the loop alive through it.
    func pause(_ stream: TCPStream) {
        checkEachIteration()
        paused.append(stream)
    }

    private func checkEachIteration() {
        guard !isChecking else { return }
        isChecking = true
        uv_check_start(typed(uv_check_t.self), Trampolines.onCheck)
    }

    override func willClose() {
        uv_check_stop(typed(uv_check_t.self))
        isChecking = false
        paused = []
        for stream in owed { stream.isOwed = false }
        owed = []
    }

    /// The I/O phase is over: paused streams read again from the next poll,
    /// paid and lapsed debts are dropped, and with none left a new round
    /// begins.
    func fire() {
        let streams = paused
        paused = []
        for stream in streams { stream.budgetRenewed() }
        if !owed.isEmpty {
            owed.removeAll { stream in
                if stream.isOwed, stream.cameUpIn == iteration, stream.isReading, !stream.isClosing { return false }
                stream.isOwed = false
                return true
            }
        }
        if owed.isEmpty { round += 1 }
        readsThisIteration = 0
        readTime = 0
        iteration += 1
        if paused.isEmpty, owed.isEmpty {
            uv_check_stop(typed(uv_check_t.self))
            isChecking = false
        }
    }
}
