import HTTPServer
import Synchronization

/// Prometheus counters and a latency histogram, rendered as text format 0.0.4.
final class Metrics: Sendable {
    static let buckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    private struct Key: Hashable { let route: String; let method: String; let status: Int }
    private struct Histogram {
        var counts = [UInt64](repeating: 0, count: Metrics.buckets.count)
        var sum = 0.0
        var count: UInt64 = 0
    }
    private struct State {
        var requests: [Key: UInt64] = [:]
        var latency: [String: Histogram] = [:]
        var commits: UInt64 = 0
        var committedJobs: UInt64 = 0
    }
    private let state = Mutex(State())

    /// Methods counted under their own name; any other token a client sends is `other`,
    /// so clients cannot grow the label set.
    static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"]

    func record(route: String, method: String, status: Int, seconds: Double) {
        let methodLabel = Metrics.knownMethods.contains(method) ? method : "other"
        state.withLock { s in
            s.requests[Key(route: route, method: methodLabel, status: status), default: 0] += 1
            var h = s.latency[route] ?? Histogram()
            for (i, b) in Metrics.buckets.enumerated() where seconds <= b { h.counts[i] += 1 }
            h.sum += seconds
            h.count += 1
            s.latency[route] = h
        }
    }

    func recordCommit(jobs: Int) {
        state.withLock { $0.commits += 1; $0.committedJobs += UInt64(jobs) }
    }

    func render(openConnections: Int, refusedConnections: [ConnectionRefusalReason: Int] = [:], parkedPolls: Int) -> String {
        state.withLock { s in
            var out = "# HELP kidledger_http_requests_total HTTP requests answered, by route, method and status.\n"
            out += "# TYPE kidledger_http_requests_total counter\n"
            for (k, v) in s.requests.sorted(by: { ($0.key.route, $0.key.status) < ($1.key.route, $1.key.status) }) {
                out += "kidledger_http_requests_total{route=\"\(k.route)\",method=\"\(k.method)\",status=\"\(k.status)\"} \(v)\n"
            }
            out += "# HELP kidledger_http_request_duration_seconds Time from complete request to response, by route.\n"
            out += "# TYPE kidledger_http_request_duration_seconds histogram\n"
            for (route, h) in s.latency.sorted(by: { $0.key < $1.key }) {
                for (i, b) in Metrics.buckets.enumerated() {
                    out += "kidledger_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"\(b)\"} \(h.counts[i])\n"
                }
                out += "kidledger_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"+Inf\"} \(h.count)\n"
                out += "kidledger_http_request_duration_seconds_sum{route=\"\(route)\"} \(h.sum)\n"
                out += "kidledger_http_request_duration_seconds_count{route=\"\(route)\"} \(h.count)\n"
            }
            out += "# HELP kidledger_open_connections Open client connections.\n# TYPE kidledger_open_connections gauge\n"
            out += "kidledger_open_connections \(openConnections)\n"
            out += "# HELP kidledger_connections_refused_total Connections answered 503 and closed unserved, by reason.\n"
            out += "# TYPE kidledger_connections_refused_total counter\n"
            for reason in ConnectionRefusalReason.allCases {
                out += "kidledger_connections_refused_total{reason=\"\(reason.rawValue)\"} \(refusedConnections[reason] ?? 0)\n"
            }
            out += "# HELP kidledger_parked_long_polls Change-feed requests waiting for a change.\n# TYPE kidledger_parked_long_polls gauge\n"
            out += "kidledger_parked_long_polls \(parkedPolls)\n"
            out += "# HELP kidledger_db_commits_total Write transactions committed (group commits).\n# TYPE kidledger_db_commits_total counter\n"
            out += "kidledger_db_commits_total \(s.commits)\n"
            out += "# HELP kidledger_db_committed_writes_total Write requests made durable.\n# TYPE kidledger_db_committed_writes_total counter\n"
            out += "kidledger_db_committed_writes_total \(s.committedJobs)\n"
            return out
        }
    }
}
