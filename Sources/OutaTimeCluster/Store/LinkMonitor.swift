import Foundation
import NATS
import OutaTimeStore
import Synchronization

/// The JetStream store's NATS link as libnats reports it: fed by the
/// connection's disconnected / reconnected / closed callbacks (libnats'
/// threads), read by ``JetStreamStore/status`` on the server's loop and by
/// the workers before each NATS call. One small lock, held for a copy.
final class LinkMonitor: Sendable {
    private struct State {
        var link = StoreLink(connected: false, url: nil)
        /// A callback came before the connection was made (then the first
        /// state is not overwritten by ``connected(url:)``).
        var eventSeen = false
    }

    private let state = Mutex(State())
    /// Reads the connected server's URL (set once the connection exists);
    /// in a class, as ``FabricSink``'s closure, so a read does not wrap it again.
    private final class URLSource: Sendable {
        let read: @Sendable () -> String?
        init(_ read: @escaping @Sendable () -> String?) { self.read = read }
    }

    private let urlSource = Mutex<URLSource?>(nil)

    /// The options' callbacks, wired to this monitor.
    func wire(_ options: inout NATSConnectionOptions) {
        options.onDisconnected = { [self] in disconnected() }
        options.onReconnected = { [self] in reconnected() }
        options.onClosed = { [self] in closed() }
    }

    /// The connection is made: connected to `url`, unless a callback
    /// already said otherwise.
    func connected(url: String?, source: @escaping @Sendable () -> String?) {
        urlSource.withLock { $0 = URLSource(source) }
        state.withLock { state in
            state.link.url = url
            if !state.eventSeen { state.link.connected = true }
        }
    }

    func disconnected() {
        state.withLock { state in
            state.eventSeen = true
            // libnats may report a loss again while reconnecting: the outage began at the first.
            guard state.link.connected else { return }
            state.link.connected = false
            state.link.downSince = Date()
        }
    }

    func reconnected() {
        let url = urlSource.withLock { $0 }?.read()
        state.withLock { state in
            state.eventSeen = true
            guard !state.link.closed else { return }
            if !state.link.connected { state.link.reconnects += 1 }
            state.link.connected = true
            state.link.downSince = nil
            if let url { state.link.url = url }
        }
    }

    func closed() {
        state.withLock { state in
            state.eventSeen = true
            if state.link.connected { state.link.downSince = Date() }
            state.link.connected = false
            state.link.closed = true
        }
    }

    /// The link now (without the store's counters).
    var link: StoreLink { state.withLock { $0.link } }

    /// The outage phrase while the link is down, else nil: checked before
    /// each NATS call, so that a call made during an outage fails at once,
    /// naming it, instead of waiting out its timeout (a read on the loop
    /// would stall every connection meanwhile).
    var outage: String? {
        let link = self.link
        return link.connected ? nil : link.outage
    }
}
