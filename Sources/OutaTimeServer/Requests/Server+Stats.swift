import OutaTimeProtocol

/// The `stats` result in the Prometheus text format (`format` `prometheus`):
/// the server-rendered text, the same as `GET /metrics`.
struct PrometheusStatsResult: Encodable {
    let format = "prometheus"
    let text: String
}

extension Server {
    /// The formats `stats` answers in.
    static let statsFormats = ["json", "prometheus"]

    /// `stats`: the counters as JSON (``StatsResult``), or with `format`
    /// `prometheus` the text `/metrics` serves, so that a client shows the
    /// Prometheus view without an HTTP listener and without a renderer of
    /// its own. Both cost the same loop work as one scrape.
    ///
    /// The figures are server-wide (connections, traffic, channels by
    /// kind), so a token limited to some channels (`channels`) may not
    /// read them unless its role is admin: `forbidden`. Splitting every
    /// counter by scope would cost each request a lookup per pattern.
    func stats(_ request: Request, on session: Connection) throws(ProtocolError) -> Handled {
        if case .only = session.scope, session.role < .admin {
            throw ProtocolError(.forbidden,
                "'stats' reports server-wide figures; this connection's token ('\(session.credential?.name ?? "?")') "
                    + "is limited to the channels \(session.scope): stats needs a token without \"channels\" or role admin")
        }
        if try request.optionalChoice("format", among: Self.statsFormats) == "prometheus" {
            recordsMetrics = true
            session.reply(request.id, PrometheusStatsResult(text: metricsText()))
        } else {
            session.reply(request.id, statsResult(slowestIn: session.scope))
        }
        return .replied
    }

    /// One rendering of the metrics (`GET /metrics`, `stats` `prometheus`).
    ///
    /// Rendered once per loop iteration: a crowd's scrapes (pipelined on
    /// HTTP, or `stats` `prometheus` requests) that arrive together get the
    /// same text instead of costing a rendering each (docs/BENCHMARKS.md).
    /// A request sent after an earlier one was answered comes in a later
    /// iteration, so it always sees what happened before it.
    func metricsText() -> String {
        if let rendered = renderedMetrics, rendered.iteration == iteration { return rendered.text }
        let text = renderMetrics()
        renderedMetrics = (iteration, text)
        return text
    }

    private func renderMetrics() -> String {
        var byKind: [String: Int] = [:]
        for kind in ChannelKind.allCases { byKind[kind.rawValue] = 0 }
        for channel in channels.values where channel.pipeline.isDurable {
            byKind[channel.name.kind.rawValue, default: 0] += 1
        }
        return metrics.render(statsResult(), channelsByKind: byKind, writer: store.stats)
    }
}
