import UV

/// The viewers: one connection per list subscribes to it (`start` needs the
/// subscription), adds the list's timers, then views each one with `start`
/// so that it runs. Both phases keep up to `setupWindow` requests in flight.
extension TimersWorker {
    func openViewer(list: Int, timers: Int) {
        let connection = LoadConnection(loop: loop)
        let viewer = Viewer(connection: connection, list: list, channel: "\(plan.channelPrefix)-\(list)",
                            timerCount: timers, window: plan.setupWindow)
        viewers.append(viewer)
        handshake(connection, name: "viewer of \(viewer.channel)") { [unowned self, unowned viewer] body in
            self.viewerReceived(body, viewer)
        }
        connection.open(plan.address) { [unowned self] in
            self.send(.hello, LoadConnection.hello(name: "load-viewer-\(list)"), on: viewer)
            self.send(.subscribe, #"{"type":"subscribe","id":\#(viewer.nextRequestID),"channel":"\#(viewer.channel)"}"#, on: viewer)
            connection.flush()
        }
    }

    /// Records request `kind` under the viewer's next id and queues `json`
    /// (which must carry that id); the caller flushes.
    private func send(_ kind: Request, _ json: String, on viewer: Viewer) {
        viewer.window.append(id: viewer.nextRequestID, sentNs: Loop.hrtime, tag: kind)
        viewer.nextRequestID += 1
        viewer.connection.enqueue(body: Array(json.utf8))
    }

    /// Handles one frame to a viewer; true once its subscription is answered.
    private func viewerReceived(_ body: UnsafeRawBufferPointer, _ viewer: Viewer) -> Bool {
        // Its list's ticks reach the viewer too: the watchers check them.
        switch TimerFrame.classify(body, readingTicks: false) {
        case .reply(let id?, let timerID, let error):
            guard let request = viewer.window.removeOldest(answeredBy: id) else {
                tally.recordError("viewer of \(viewer.channel): \(viewer.window.mismatch(id))")
                return false
            }
            if let error {
                tally.recordError("viewer of \(viewer.channel): \(request.tag) refused: \(error)")
                return request.tag == .subscribe
            }
            switch request.tag {
            case .hello:
                helloAnswered(body, on: viewer.connection)
            case .subscribe:
                tally.viewersReady.add(1, ordering: .relaxed)
                pumpAdds(viewer)
                return true
            case .add:
                guard let timerID else {
                    tally.recordError("viewer of \(viewer.channel): add reply without a timer id")
                    return false
                }
                viewer.ids.append(timerID)
                tally.added.add(1, ordering: .relaxed)
                pumpAdds(viewer)
            case .start:
                tally.started.add(1, ordering: .relaxed)
                pumpStarts(viewer)
            }
        case .reply(nil, _, let error):
            tally.recordError("viewer of \(viewer.channel): reply without id (\(error ?? "ok"))")
        case .failure(let reason):
            tally.recordError("viewer of \(viewer.channel): \(reason)\(inFlight(viewer))")
        case .tick, .tickNotRead, .started, .other:
            break
        }
        return false
    }

    /// ` (40 requests in flight, the oldest sent 31.2 s ago)`: a server that
    /// stops reading a connection behind its waiting requests does not see
    /// the pings queued after them, and may close it as idle.
    private func inFlight(_ viewer: Viewer) -> String {
        guard let oldest = viewer.window.oldest else { return "" }
        let age = Double(Loop.hrtime &- oldest.sentNs) / 1e9
        return " (\(viewer.window.count) requests in flight, the oldest sent \(String(format: "%.1f", age)) s ago)"
    }

    /// Keeps up to `setupWindow` `add`s in flight until the list has all its timers.
    private func pumpAdds(_ viewer: Viewer) {
        guard !viewer.connection.isClosed else { return }
        var sent = false
        while viewer.addsSent < viewer.timerCount, viewer.window.count < plan.setupWindow {
            let number = viewer.addsSent
            viewer.addsSent += 1
            send(.add, #"{"type":"command","id":\#(viewer.nextRequestID),"channel":"\#(viewer.channel)","action":"add","args":{"event":"load \#(number)","remaining_s":\#(plan.remainingS)}}"#,
                 on: viewer)
            sent = true
        }
        if sent { viewer.connection.flush() }
    }

    /// Keeps up to `setupWindow` `start`s in flight until every timer of the
    /// list runs. The first one anchors the list's tick series (ticks fall on
    /// its seconds) and waits for the list's slot in the first second
    /// (``TimersPlan/totalLists``); the rest follow at once. The server
    /// computes each tick for its own second, not for the moment it gets to
    /// it, so countdowns started at any point of a second step by exactly
    /// one per tick.
    func pumpStarts(_ viewer: Viewer) {
        guard starting, !viewer.connection.isClosed else { return }
        if viewer.startsSent == 0 {
            let offsetNs = UInt64(viewer.list) * 1_000_000_000 / UInt64(max(1, plan.totalLists))
            guard Loop.hrtime >= startOriginNs + offsetNs else { return }
        }
        var sent = false
        while viewer.startsSent < viewer.ids.count, viewer.window.count < plan.setupWindow {
            let id = viewer.ids[viewer.startsSent]
            viewer.startsSent += 1
            send(.start, #"{"type":"command","id":\#(viewer.nextRequestID),"channel":"\#(viewer.channel)","action":"start","args":{"id":\#(id)}}"#,
                 on: viewer)
            sent = true
        }
        if sent { viewer.connection.flush() }
    }
}
