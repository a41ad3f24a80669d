import OutaTimeProtocol

/// The server as its connections see it (``ConnectionRouter``): it runs
/// their requests (``dispatch(_:on:)``) and forgets them when they end.
extension Server: ConnectionRouter {
    /// Removes every subscription of `connection` and tells the remaining
    /// watchers it left (also after an abrupt disconnect).
    func connectionEnding(_ connection: Connection) {
        var left = subscriptions.removeAll(of: connection)
        if let cluster {
            // Channels owned elsewhere: their owners announce the leave.
            let relayed = left.filter { cluster.relays[$0] != nil }
            if !relayed.isEmpty {
                leaveRelayed(connection, channels: relayed)
                left.removeAll { relayed.contains($0) }
            }
        }
        for channel in left {
            broadcastPresence(channel: channel, joined: [], left: [connection.watcher], except: nil)
            release(connection, from: channel)
        }
    }

    func connectionClosed(_ connection: Connection) {
        connections[connection.serial] = nil
        if connection.webSocket != nil { counters.webSocketOpen -= 1 }
        channelQuotas.forget(connection: connection.serial)
        if let host = connection.peerHost { addresses.connectionClosed(from: host) }
        if case .draining = phase { checkDrained() }
    }

    func wakeAtNextWindow(_ connection: Connection, at time: UInt64) {
        rateWakeups.schedule(connection.serial, at: time)
    }

    /// A rate-limited connection's next window began.
    func rateWindowBegan(_ serial: Int) {
        connections[serial]?.rateWindowBegan()
    }
}
