import Foundation
import OutaTimeStore
import Prometheus

/// The server's figures in the Prometheus text format (`GET /metrics`),
/// rendered by swift-prometheus. One source of truth: the counters are the
/// ones `stats` reports (``StatsResult``), synced into the registry at
/// each scrape (a counter moves by what it gained since the last one);
/// tick lateness is a histogram recorded as ticks are built, store batch
/// sizes and commit seconds histograms recorded as the writer's reports
/// reach the loop (measured on the writer thread, carried in
/// ``StoreCommit``: no lock between the threads for them). No label
/// names a channel: the number of series does not grow with the channels.
final class ServerMetrics {
    let registry = PrometheusCollectorRegistry()
    /// Seconds a tick was built after it was due.
    let tickLateness: ValueHistogram
    /// Submissions the store writer took together in one group commit.
    let storeBatchSize: ValueHistogram
    /// Seconds one group commit took on the writer thread, fsync included.
    let storeCommitSeconds: ValueHistogram
    /// What each synced counter showed at the last scrape.
    private var synced: [String: Int] = [:]
    private var counters: [String: Counter] = [:]
    private var gauges: [String: Gauge] = [:]

    init(version: String) {
        tickLateness = registry.makeValueHistogram(
            descriptor: Self.descriptor("outatime_tick_lateness_seconds", help: "How long after it was due each tick was built"),
            buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5])
        storeBatchSize = registry.makeValueHistogram(
            descriptor: Self.descriptor("outatime_store_batch_size", help: "Submissions (a channel's batch of events, a creation, …) committed together in one transaction"),
            buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
        storeCommitSeconds = registry.makeValueHistogram(
            descriptor: Self.descriptor("outatime_store_commit_seconds", help: "How long each group commit took on the store writer thread, fsync included"),
            buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5])
        registry.makeGauge(descriptor: Self.descriptor("outatime_build_info", help: "The server's version (always 1)"),
                           labels: [("version", version)]).set(to: 1)
    }

    /// Records one group commit the writer reported (loop thread; once per
    /// group, not per ticket). A refused submission (size 0) is not one.
    func recordCommit(_ commit: StoreCommit) {
        guard commit.batchSize > 0 else { return }
        storeBatchSize.record(Double(commit.batchSize))
        storeCommitSeconds.record(commit.commitSeconds)
    }

    /// The text of one scrape.
    func render(_ stats: StatsResult, channelsByKind: [String: Int], writer: WriterStats) -> String {
        counter("outatime_connections_accepted_total", stats.connectionsAccepted, help: "Connections accepted")
        gauge("outatime_connections", stats.connections, help: "Open protocol connections")
        gauge("outatime_subscriptions", stats.subscriptions, help: "Subscriptions held")
        for (kind, count) in channelsByKind {
            gauge("outatime_channels", count, labels: [("kind", kind)], help: "Channels held, by kind")
        }
        for (reason, count) in stats.closes {
            counter("outatime_connection_closes_total", count, labels: [("reason", reason)],
                    help: "Connections closed, by reason")
        }
        for (limit, count) in stats.connectionsRefused {
            counter("outatime_connections_refused_total", count, labels: [("limit", limit)],
                    help: "Connections refused with bye server_busy, by the limit they hit")
        }
        for (error, count) in stats.acceptErrors {
            counter("outatime_accept_errors_total", count, labels: [("error", error)],
                    help: "Accepts that failed (EMFILE when descriptors run out), by error")
        }
        counter("outatime_hellos_failed_total", stats.hellosFailed, help: "hellos refused for a bad or missing token")
        counter("outatime_hellos_throttled_total", stats.hellosThrottled,
                help: "hellos answered late because their address or token failed too often (--max-failed-hellos)")
        counter("outatime_request_rate_pauses_total", stats.requestRatePauses,
                help: "Times a connection's reading was paused (--max-requests-per-second)")
        counter("outatime_channels_refused_total", stats.channelsRefused, help: "Channel creations refused at --max-channels")
        counter("outatime_channels_over_quota_total", stats.channelsOverQuota,
                help: "Channel creations refused quota_exceeded at --max-channels-per-token")
        counter("outatime_channels_forgotten_total", stats.channelsForgotten, help: "Idle empty channels forgotten")
        if let http = stats.http {
            counter("outatime_http_requests_total", http["requests"] ?? 0, help: "HTTP requests answered")
            counter("outatime_http_refused_heads_total", http["refused_heads"] ?? 0,
                    help: "HTTP request heads refused with a 4xx/5xx status")
            counter("outatime_http_refused_connections_total", http["refused_connections"] ?? 0,
                    help: "HTTP connections closed at accept while the server shuts down")
            counter("outatime_http_refused_per_address_total", http["refused_per_address"] ?? 0,
                    help: "HTTP connections answered 503 at accept: their address held --http-max-connections-per-address")
            counter("outatime_http_accept_pauses_total", http["accept_pauses"] ?? 0,
                    help: "Times the HTTP listener stopped accepting at its 256-connection cap (newer connections wait in the kernel's queue)")
            counter("outatime_http_timeouts_total", http["timeouts"] ?? 0,
                    help: "HTTP connections closed for an incomplete head past the head timeout, or idle past the hello timeout")
            gauge("outatime_http_connections", http["open"] ?? 0, help: "Open HTTP connections")
            counter("outatime_websocket_upgrades_total", http["websocket_upgrades"] ?? 0,
                    help: "GET /ws requests upgraded to WebSocket protocol sessions")
            counter("outatime_websocket_refused_total", http["websocket_refused"] ?? 0,
                    help: "GET /ws requests refused before upgrading (URL, handshake, Host, Origin, plain HTTP)")
            gauge("outatime_websocket_connections", http["websocket_open"] ?? 0,
                  help: "Open WebSocket protocol connections (counted among the connections too)")
            counter("outatime_websocket_encodes_total", http["websocket_encodes"] ?? 0,
                    help: "Frames encoded as WebSocket messages (once per frame, however many WebSocket connections it goes to)")
        }
        counter("outatime_frames_in_total", stats.framesIn, help: "Frames received")
        counter("outatime_frames_out_total", stats.framesOut, help: "Frames sent")
        counter("outatime_bytes_in_total", stats.bytesIn, help: "Bytes received")
        counter("outatime_bytes_out_total", stats.bytesOut, help: "Bytes sent")
        counter("outatime_messages_published_total", stats.messagesPublished, help: "Messages published")
        counter("outatime_deliveries_total", stats.deliveries, help: "Pushes delivered to subscribers")
        counter("outatime_events_committed_total", stats.eventsCommitted, help: "Durable events committed")
        counter("outatime_commands_total", stats.commands, help: "Commands run against a channel's state")
        counter("outatime_store_batches_total", stats.storeBatches, help: "Group commits")
        gauge("outatime_store_backlog", stats.storeBacklog, help: "Writes waiting for the store writer")
        counter("outatime_store_writes_failed_total", writer.writesFailed,
                help: "Store submissions that failed (their commands were answered internal)")
        counter("outatime_ticks_total", stats.ticks, help: "Tick pushes built")
        counter("outatime_ticks_late_total", stats.ticksLate, help: "Ticks built more than \(ServerCounters.lateTickMs) ms after they were due")
        counter("outatime_ticks_conflated_total", stats.ticksConflated,
                help: "Ticks a slow connection never got (a newer one replaced them)")
        counter("outatime_messages_dropped_total", stats.messagesDropped,
                help: "Message pushes not queued to a backed-up connection (reported to it in dropped pushes)")
        counter("outatime_reads_deferred_total", stats.readsDeferred,
                help: "Reads put off to a later loop iteration: that iteration's read time was spent")
        counter("outatime_reports_deferred_total", stats.reportsDeferred,
                help: "Times the handling of committed groups went on in a later loop iteration")
        counter("outatime_channel_items_refused_total", stats.channelItemsRefused,
                help: "Actions refused channel_full: the channel held --max-channel-items items")
        counter("outatime_slow_consumer_closes_total", stats.slowConsumerCloses, help: "Connections closed as slow consumers")
        if let cluster = stats.cluster { renderCluster(cluster) }
        gauge("outatime_process_resident_memory_bytes", stats.rssBytes, help: "Resident memory of the server process")
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
        gauge("outatime_process_cpu_seconds", cpu, help: "CPU time the server process used (user and system)")
        return registry.emitToString()
    }

    /// Cluster mode: the node as an info gauge (its name a label, the one
    /// series of its family), its NATS link and the channels it owns.
    private func renderCluster(_ cluster: ClusterStats) {
        gauge("outatime_cluster_node_info", 1, labels: [("node", cluster.node), ("store", cluster.store)],
              help: "This node in cluster mode: its name (--node) and store backend (always 1)")
        gauge("outatime_cluster_channels_owned", cluster.channelsOwned,
              help: "Channels this node owns and holds in memory")
        if let slots = cluster.slotsOwned {
            gauge("outatime_cluster_slots_owned", slots, help: "Slots of the 256 this node owns (0 while fenced)")
            gauge("outatime_cluster_fenced", cluster.fenced == true ? 1 : 0,
                  help: "1 while this node's lease has lapsed (it owns nothing and refuses to act as an owner)")
            gauge("outatime_cluster_live_nodes", cluster.liveNodes?.count ?? 0, help: "Nodes this node takes for alive, itself included")
            counter("outatime_cluster_forwarded_total", cluster.forwarded ?? 0, help: "Requests forwarded to the owner of their channel")
            counter("outatime_cluster_forward_failures_total", cluster.forwardFailures ?? 0,
                    help: "Forwarded requests that got no answer (not delivered, or no answer in time)")
            counter("outatime_cluster_forwarded_served_total", cluster.forwardedServed ?? 0,
                    help: "Requests other nodes forwarded to this node as their channel's owner")
            gauge("outatime_cluster_relays", cluster.relays ?? 0, help: "Channels owned elsewhere relayed to this node's subscribers")
            counter("outatime_cluster_relayed_pushes_total", cluster.relayedPushes ?? 0, help: "Pushes received from owners and relayed")
            counter("outatime_cluster_relay_gap_fills_total", cluster.relayGapFills ?? 0,
                    help: "Gaps in relayed events filled by reading the store")
            gauge("outatime_cluster_remote_watchers", cluster.remoteWatchers ?? 0, help: "Watchers other nodes hold on this node's channels")
        }
        guard let nats = cluster.nats else { return }
        gauge("outatime_cluster_nats_connected", nats.connected ? 1 : 0,
              help: "1 while the store's NATS link is up, 0 while it is down (libnats reconnecting) or closed")
        counter("outatime_cluster_nats_reconnects_total", nats.reconnects, help: "Times the store's NATS link came back after a loss")
        counter("outatime_cluster_nats_ack_retries_total", nats.ackRetries,
                help: "JetStream publishes sent again because their ack did not come in time")
        counter("outatime_cluster_nats_lost_acks_resolved_total", nats.lostAcksResolved,
                help: "Retried JetStream publishes found stored already (their first ack was lost)")
    }

    /// A metric's whole name (ours carry their unit already, e.g.
    /// `…_seconds`, `…_total`) as swift-prometheus's descriptor, which joins
    /// its non-empty parts with underscores: the name as given.
    private static func descriptor(_ name: String, help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    private func key(_ name: String, _ labels: [(String, String)]) -> String {
        labels.isEmpty ? name : name + "{" + labels.map { "\($0.0)=\($0.1)" }.joined(separator: ",") + "}"
    }

    /// Moves the counter to `total` (it only ever grows).
    private func counter(_ name: String, _ total: Int, labels: [(String, String)] = [], help: String) {
        let key = key(name, labels)
        let counter = counters[key] ?? registry.makeCounter(descriptor: Self.descriptor(name, help: help), labels: labels)
        counters[key] = counter
        let gained = total - (synced[key] ?? 0)
        if gained > 0 { counter.increment(by: Int64(gained)) }
        synced[key] = max(total, synced[key] ?? 0)
    }

    private func gauge(_ name: String, _ value: some BinaryInteger, labels: [(String, String)] = [], help: String) {
        gauge(name, Double(value), labels: labels, help: help)
    }

    private func gauge(_ name: String, _ value: Double, labels: [(String, String)] = [], help: String) {
        let key = key(name, labels)
        let gauge = gauges[key] ?? registry.makeGauge(descriptor: Self.descriptor(name, help: help), labels: labels)
        gauges[key] = gauge
        gauge.set(to: value)
    }
}
