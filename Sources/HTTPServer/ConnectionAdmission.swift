import Glibc
import Synchronization

/// Why a connection was refused (answered 503 and closed without being served).
public enum ConnectionRefusalReason: String, Sendable, CaseIterable {
    /// The client address already had `maxConnectionsPerAddress` connections open.
    case perAddress = "per_address"
    /// The server already had `maxConnections` connections open.
    case maxConnections = "max_connections"
    /// The process had no file descriptor left to accept it with.
    case outOfDescriptors = "out_of_descriptors"
    /// The server was shutting down.
    case shuttingDown = "shutting_down"
}

/// Refused connections since the previous report, handed to
/// `HTTPServerConfiguration.connectionsRefused` at most once per `refusalReportInterval`.
public struct ConnectionRefusalReport: Sendable {
    /// Refusals by reason (only reasons that occurred).
    public var counts: [ConnectionRefusalReason: Int]
    /// The last address refused for each reason, where it is known.
    public var lastAddress: [ConnectionRefusalReason: String]
    /// Seconds since the previous report (or since the server started).
    public var seconds: Double
}

/// The key connections are counted under per client: an IPv4 address (also when it comes
/// IPv4-mapped), or the /64 network of an IPv6 address — one subscriber's allocation, in
/// which a single client can pick any number of addresses.
struct PeerKey: Hashable, Sendable {
    let isV6: Bool
    let bits: UInt64

    init?(_ storage: sockaddr_storage) {
        var storage = storage
        let key: PeerKey? = withUnsafePointer(to: &storage) { p in
            switch Int32(p.pointee.ss_family) {
            case AF_INET:
                return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    PeerKey(isV6: false, bits: UInt64(UInt32(bigEndian: $0.pointee.sin_addr.s_addr)))
                }
            case AF_INET6:
                return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin in
                    withUnsafeBytes(of: sin.pointee.sin6_addr) { b -> PeerKey in
                        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF {
                            return PeerKey(isV6: false, bits: UInt64(b[12]) << 24 | UInt64(b[13]) << 16 | UInt64(b[14]) << 8 | UInt64(b[15]))
                        }
                        return PeerKey(isV6: true, bits: b[0..<8].reduce(0) { $0 << 8 | UInt64($1) })
                    }
                }
            default:
                return nil
            }
        }
        guard let key else { return nil }
        self = key
    }

    private init(isV6: Bool, bits: UInt64) {
        self.isV6 = isV6
        self.bits = bits
    }
}

/// Connection admission shared by the event loops: open connections per client key, and
/// the tally of refusals (totals for metrics, and rate-limited reports for the log).
final class ConnectionAdmission: Sendable {
    private struct Refusals {
        var totals: [ConnectionRefusalReason: Int] = [:]
        var pending: [ConnectionRefusalReason: Int] = [:]
        var lastAddress: [ConnectionRefusalReason: String] = [:]
        var lastReport: Double
    }

    let perAddressLimit: Int
    private let reportInterval: Double
    private let report: (@Sendable (ConnectionRefusalReport) -> Void)?
    private let open = Mutex<[PeerKey: Int]>([:])
    private let refusals: Mutex<Refusals>
    private let hasPending = Atomic<Bool>(false)

    init(perAddressLimit: Int, reportInterval: Double, report: (@Sendable (ConnectionRefusalReport) -> Void)?, now: Double) {
        self.perAddressLimit = perAddressLimit
        self.reportInterval = reportInterval
        self.report = report
        // The first refusal is reported at once.
        self.refusals = Mutex(Refusals(lastReport: now - reportInterval))
    }

    /// Counts a connection from `key`; false (and nothing counted) when the key already has
    /// `perAddressLimit` open.
    func admit(_ key: PeerKey) -> Bool {
        open.withLock { counts in
            let n = counts[key, default: 0]
            if n >= perAddressLimit { return false }
            counts[key] = n + 1
            return true
        }
    }

    /// A connection counted by `admit` closed.
    func release(_ key: PeerKey) {
        open.withLock { counts in
            guard let n = counts[key] else { return }
            if n <= 1 { counts[key] = nil } else { counts[key] = n - 1 }
        }
    }

    /// Open connections counted for `key`.
    func openCount(_ key: PeerKey) -> Int { open.withLock { $0[key, default: 0] } }

    /// Refusals so far, by reason.
    var totals: [ConnectionRefusalReason: Int] { refusals.withLock { $0.totals } }

    /// Records one refusal; reports now if the last report is `reportInterval` old.
    func refused(_ reason: ConnectionRefusalReason, address: String?, now: Double) {
        let due = refusals.withLock { r -> ConnectionRefusalReport? in
            r.totals[reason, default: 0] += 1
            r.pending[reason, default: 0] += 1
            if let address { r.lastAddress[reason] = address }
            hasPending.store(true, ordering: .relaxed)
            return take(&r, now: now)
        }
        if let due { report?(due) }
    }

    /// Reports refusals still waiting once `reportInterval` has passed (each event loop
    /// calls this every turn, so a burst is reported even when no refusal follows it).
    /// With `final` (the server stopped), what is waiting is reported whatever its age.
    func flush(now: Double, final: Bool = false) {
        guard hasPending.load(ordering: .relaxed) else { return }
        if let due = refusals.withLock({ take(&$0, now: now, final: final) }) { report?(due) }
    }

    private func take(_ r: inout Refusals, now: Double, final: Bool = false) -> ConnectionRefusalReport? {
        if r.pending.isEmpty { hasPending.store(false, ordering: .relaxed) }
        guard !r.pending.isEmpty, final || now - r.lastReport >= reportInterval else { return nil }
        let out = ConnectionRefusalReport(counts: r.pending, lastAddress: r.lastAddress, seconds: now - r.lastReport)
        r.pending = [:]
        r.lastAddress = [:]
        r.lastReport = now
        hasPending.store(false, ordering: .relaxed)
        return out
    }
}
