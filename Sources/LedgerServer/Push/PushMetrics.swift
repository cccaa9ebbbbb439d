import Synchronization

/// The push sender's counters and the gateway's latency, for `/metrics`.
final class PushMetrics: Sendable {
    private struct State {
        var queued: UInt64 = 0
        var sent: UInt64 = 0
        var failed: UInt64 = 0
        var rejected: UInt64 = 0
        var dropped: UInt64 = 0
        var buckets = [UInt64](repeating: 0, count: Metrics.buckets.count)
        var sum = 0.0
        var count: UInt64 = 0
    }
    private let state = Mutex(State())

    func queued(_ n: Int) { state.withLock { $0.queued += UInt64(n) } }
    func dropped(_ n: Int) { state.withLock { $0.dropped += UInt64(n) } }

    /// One gateway call's outcome and duration in seconds.
    func answered(_ outcome: PushGatewayOutcome, rejected: Bool, seconds: Double) {
        var bucket = 0
        while bucket < Metrics.buckets.count && seconds > Metrics.buckets[bucket] { bucket += 1 }
        state.withLock { s in
            switch outcome {
            case .accepted: if rejected { s.rejected += 1 } else { s.sent += 1 }
            case .refused, .failed: s.failed += 1
            }
            if bucket < s.buckets.count { s.buckets[bucket] += 1 }
            s.sum += seconds
            s.count += 1
        }
    }

    /// Counters of this process and the outbox's depth (all processes').
    func render(outboxDepth: Int?) -> String {
        state.withLock { s in
            var out = ""
            func counter(_ name: String, _ help: String, _ value: UInt64) {
                out += "# HELP \(name) \(help)\n# TYPE \(name) counter\n\(name) \(value)\n"
            }
            counter("kidledger_push_wakes_queued_total", "Push wakes queued or updated in the outbox by commits of this process.", s.queued)
            counter("kidledger_push_wakes_sent_total", "Push wakes a gateway took.", s.sent)
            counter("kidledger_push_wakes_failed_total", "Gateway calls that failed (4xx, 5xx, timeouts, connection errors).", s.failed)
            counter("kidledger_push_wakes_rejected_total", "Push wakes whose push key the gateway rejected (the key is unregistered).", s.rejected)
            counter("kidledger_push_wakes_dropped_total", "Push wakes dropped unsent: the device lost access or its registration.", s.dropped)
            if let outboxDepth {
                out += "# HELP kidledger_push_outbox_depth Push wakes waiting or in flight.\n# TYPE kidledger_push_outbox_depth gauge\n"
                out += "kidledger_push_outbox_depth \(outboxDepth)\n"
            }
            out += "# HELP kidledger_push_gateway_duration_seconds Time of one gateway call.\n"
            out += "# TYPE kidledger_push_gateway_duration_seconds histogram\n"
            var cumulative: UInt64 = 0
            for (i, b) in Metrics.buckets.enumerated() {
                cumulative += s.buckets[i]
                out += "kidledger_push_gateway_duration_seconds_bucket{le=\"\(b)\"} \(cumulative)\n"
            }
            out += "kidledger_push_gateway_duration_seconds_bucket{le=\"+Inf\"} \(s.count)\n"
            out += "kidledger_push_gateway_duration_seconds_sum \(s.sum)\n"
            out += "kidledger_push_gateway_duration_seconds_count \(s.count)\n"
            return out
        }
    }
}
