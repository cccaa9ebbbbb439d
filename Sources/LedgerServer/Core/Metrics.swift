import HTTPServer
import Synchronization

/// Prometheus counters and a latency histogram, rendered as text format 0.0.4.
final class Metrics: Sendable {
    static let buckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    /// Everything counted for one route: answers by method and status (a handful per
    /// route, searched in order) and the latency histogram, each bucket counted alone and
    /// summed into Prometheus' cumulative buckets when rendered.
    private struct RouteStats {
        var answers: [(method: String, status: Int, count: UInt64)] = []
        var buckets = [UInt64](repeating: 0, count: Metrics.buckets.count)
        var sum = 0.0
        var count: UInt64 = 0
    }
    private struct State {
        /// Each route label's statistics, in the order first seen, and where each label is.
        var routes: [(label: String, stats: RouteStats)] = []
        var slots: [String: Int] = [:]
        /// The slot of a response's `routeIndex` (the router's place of the route), so a
        /// request of a routed path finds its slot without hashing the label; nil until seen.
        var slotOfRouteIndex: [Int?] = []
        var commits: UInt64 = 0
        var committedJobs: UInt64 = 0

        /// The slot of `label`: by `routeIndex` when it was seen with this label before
        /// (the label compared, one comparison of the same string), else by the label.
        mutating func slot(_ label: String, routeIndex: Int?) -> Int {
            if let routeIndex, routeIndex >= 0, routeIndex < slotOfRouteIndex.count, let known = slotOfRouteIndex[routeIndex],
               routes[known].label == label {
                return known
            }
            let slot: Int
            if let existing = slots[label] {
                slot = existing
            } else {
                slot = routes.count
                routes.append((label, RouteStats()))
                slots[label] = slot
            }
            // Route indices are places in the router: a few dozen.
            if let routeIndex, routeIndex >= 0, routeIndex < 1024 {
                while slotOfRouteIndex.count <= routeIndex { slotOfRouteIndex.append(nil) }
                slotOfRouteIndex[routeIndex] = slot
            }
            return slot
        }
    }
    private let state = Mutex(State())

    /// Methods counted under their own name; any other token a client sends is `other`,
    /// so clients cannot grow the label set.
    static let knownMethods: [String] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"]

    /// The label of a request method: its name when known, else `other`.
    static func methodLabel(_ method: String) -> String {
        // Method names are small strings: comparing them costs no hashing.
        for known in knownMethods where known == method { return known }
        return "other"
    }

    /// Counts one answer of `route`; `routeIndex` (the response's) spares hashing the label.
    func record(route: String, routeIndex: Int? = nil, method: String, status: Int, seconds: Double) {
        let methodLabel = Metrics.methodLabel(method)
        // The first bucket the duration fits; past the last one it counts only in +Inf.
        var bucket = 0
        while bucket < Metrics.buckets.count && seconds > Metrics.buckets[bucket] { bucket += 1 }
        state.withLock { s in
            let slot = s.slot(route, routeIndex: routeIndex)
            Metrics.count(&s.routes[slot].stats, method: methodLabel, status: status, bucket: bucket, seconds: seconds)
        }
    }

    private static func count(_ r: inout RouteStats, method: String, status: Int, bucket: Int, seconds: Double) {
        if let i = r.answers.firstIndex(where: { $0.status == status && $0.method == method }) {
            r.answers[i].count += 1
        } else {
            r.answers.append((method, status, 1))
        }
        if bucket < r.buckets.count { r.buckets[bucket] += 1 }
        r.sum += seconds
        r.count += 1
    }

    func recordCommit(jobs: Int) {
        state.withLock { $0.commits += 1; $0.committedJobs += UInt64(jobs) }
    }

    func render(openConnections: Int, refusedConnections: [ConnectionRefusalReason: Int] = [:], parkedPolls: Int) -> String {
        state.withLock { s in
            var out = ""
            /// A metric's HELP and TYPE lines.
            func describe(_ name: String, _ type: String, _ help: String) {
                out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            }
            /// A metric of one value, described.
            func single(_ name: String, _ type: String, _ help: String, _ value: some CustomStringConvertible) {
                describe(name, type, help)
                out += "\(name) \(value)\n"
            }
            describe("kidledger_http_requests_total", "counter", "HTTP requests answered, by route, method and status.")
            let routes = s.routes.sorted { $0.label < $1.label }
            let answers = routes.flatMap { route, stats in stats.answers.map { (route: route, answer: $0) } }
            for a in answers.sorted(by: { ($0.route, $0.answer.status, $0.answer.method) < ($1.route, $1.answer.status, $1.answer.method) }) {
                out += "kidledger_http_requests_total{route=\"\(a.route)\",method=\"\(a.answer.method)\",status=\"\(a.answer.status)\"} \(a.answer.count)\n"
            }
            describe("kidledger_http_request_duration_seconds", "histogram", "Time from complete request to response, by route.")
            for (route, h) in routes {
                var cumulative: UInt64 = 0
                for (i, b) in Metrics.buckets.enumerated() {
                    cumulative += h.buckets[i]
                    out += "kidledger_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"\(b)\"} \(cumulative)\n"
                }
                out += "kidledger_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"+Inf\"} \(h.count)\n"
                out += "kidledger_http_request_duration_seconds_sum{route=\"\(route)\"} \(h.sum)\n"
                out += "kidledger_http_request_duration_seconds_count{route=\"\(route)\"} \(h.count)\n"
            }
            single("kidledger_open_connections", "gauge", "Open client connections.", openConnections)
            describe("kidledger_connections_refused_total", "counter", "Connections answered 503 and closed unserved, by reason.")
            for reason in ConnectionRefusalReason.allCases {
                out += "kidledger_connections_refused_total{reason=\"\(reason.rawValue)\"} \(refusedConnections[reason] ?? 0)\n"
            }
            single("kidledger_parked_long_polls", "gauge", "Change-feed requests waiting for a change.", parkedPolls)
            single("kidledger_db_commits_total", "counter", "Write transactions committed (group commits).", s.commits)
            single("kidledger_db_committed_writes_total", "counter", "Write requests made durable.", s.committedJobs)
            return out
        }
    }
}
