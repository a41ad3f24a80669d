import OutaTimeProtocol

extension Server {
    /// Encodes `message` once and queues the same bytes to every subscriber
    /// of `channel` except `except`. Returns how many got it.
    @discardableResult
    func broadcast<Message: Encodable>(_ message: Message, to channel: String, except: Session? = nil) -> Int {
        guard let subscribers = subscriptions.subscribers(of: channel), !subscribers.isEmpty else { return 0 }
        let frame: Frame
        do {
            frame = try encoder.frame(message)
        } catch {
            logger.error("encoding a broadcast failed", metadata: ["channel": "\(channel)", "error": "\(error)"])
            return 0
        }
        var delivered = 0
        let limit = config.outputLimitBytes
        for session in subscribers where session !== except && session.state == .ready {
            if session.queue(frame, limit: limit) { delivered += 1 }
        }
        // Counted once per broadcast: the fan-out loop stays lean.
        counters.deliveries += delivered
        counters.framesOut += delivered
        counters.bytesOut += delivered * frame.count
        return delivered
    }

    /// A `presence` push to the channel's watchers (not to `except`).
    func broadcastPresence(channel: String, joined: [Watcher], left: [Watcher], except: Session?) {
        broadcast(PresencePush(channel: channel, joined: joined, left: left), to: channel, except: except)
    }
}
