#if Postgres
import CLibPQ
import Foundation
import Glibc

/// One PostgreSQL connection (libpq) with a prepared-statement cache. Not thread-safe: use
/// it from one thread at a time (`PGPool` hands connections out one caller at a time).
///
/// Parameters are bound with their types (`PGValue`), results arrive in binary and are read
/// through `PGRow`'s typed accessors. Failures are `PGError`s with a `kind` saying what a
/// caller can do about them. After `connectionLost`, `reconnect()` opens a new session,
/// runs the setup statements again and LISTENs again on every channel.
///
/// With an `answerTimeout`, a statement whose answer has not arrived in time ends the
/// session and fails as `connectionLost` (the server may still have run it): a database
/// that stopped answering — a frozen host, a dropped route, a lock held by a client that
/// vanished — costs a caller that long, never forever.
public final class PGConnection: @unchecked Sendable {
    /// How the connection was described (a `postgres://` URL or a libpq key=value string).
    public let url: String
    private let setup: [String]
    private let connectTimeout: Int
    /// Longest wait for one statement's answer, in seconds (nil: no limit).
    public let answerTimeout: Double?
    private var handle: OpaquePointer?
    private var prepared: [String: String] = [:]
    private var listening: [String] = []
    /// Counts sessions: 1 after `init`, one more after each successful `reconnect()`.
    public private(set) var session = 0

    /// Most statements kept prepared per session.
    static let maxPrepared = 512

    /// Connects. `setup` runs after every (re)connect, e.g. `SET search_path TO …`.
    public init(url: String, setup: [String] = [], connectTimeout: Int = 5, answerTimeout: Double? = nil) throws(PGError) {
        self.url = url
        self.setup = setup
        self.connectTimeout = connectTimeout
        self.answerTimeout = answerTimeout
        try connect()
    }

    deinit { if let handle { PQfinish(handle) } }

    private func connect() throws(PGError) {
        if let handle { PQfinish(handle) }
        handle = nil
        prepared.removeAll()
        // Defaults first: the URL's own settings (expanded from dbname) override them.
        let keys = ["connect_timeout", "application_name", "keepalives", "keepalives_idle", "keepalives_interval",
                    "keepalives_count", "options", "dbname"]
        let values = [String(connectTimeout), "kidledger", "1", "10", "5", "3", "-c client_min_messages=warning", url]
        let conn: OpaquePointer? = withCStrings(keys) { k in
            withCStrings(values) { v in PQconnectdbParams(k, v, 1) }
        }
        guard let conn else { throw PGError(kind: .connectionLost, message: "out of memory connecting") }
        guard PQstatus(conn) == CONNECTION_OK else {
            let message = PGConnection.trimmed(PQerrorMessage(conn))
            PQfinish(conn)
            throw PGError(kind: .connectionLost, message: message)
        }
        handle = conn
        session += 1
        for s in setup { try execute(s) }
        for channel in listening { try execute("LISTEN " + quoteIdentifier(channel)) }
    }

    /// Closes the session (if any) and opens a new one.
    public func reconnect() throws(PGError) { try connect() }

    /// Whether the session is up, as far as libpq knows (it learns of a dead socket only
    /// when it next uses it).
    public var isConnected: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// Inside BEGIN … COMMIT (or a failed transaction block).
    public var isInTransaction: Bool {
        guard let handle else { return false }
        let s = PQtransactionStatus(handle)
        return s == PQTRANS_INTRANS || s == PQTRANS_INERROR
    }

    /// The session's socket, to poll for readability while waiting for notifications.
    public var socket: Int32 { handle.map { PQsocket($0) } ?? -1 }

    /// The backend's process id (for tests and logs).
    public var backendPID: Int32 { handle.map { PQbackendPID($0) } ?? 0 }

    private func live() throws(PGError) -> OpaquePointer {
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            throw PGError(kind: .connectionLost, message: "not connected")
        }
        return handle
    }

    // MARK: statements

    /// Runs one or more statements without parameters (simple protocol).
    public func execute(_ sql: String) throws(PGError) {
        let h = try live()
        guard PQsendQuery(h, sql) == 1 else { throw sendFailed(h) }
        _ = try check(try answer(h), h)
    }

    /// Runs one statement with parameters, prepared once per session and SQL text.
    @discardableResult
    public func query(_ sql: String, _ params: [PGValue] = []) throws(PGError) -> PGResult {
        let h = try live()
        var encoded: [(bytes: [UInt8], format: Int32)?] = []
        encoded.reserveCapacity(params.count)
        for p in params { encoded.append(try p.encoded()) }
        let types = params.map(\.oid)
        let key = types.isEmpty ? sql : sql + "\u{0}" + types.map(String.init).joined(separator: ",")
        let name: String
        if let known = prepared[key] {
            name = known
        } else {
            if prepared.count >= PGConnection.maxPrepared {
                try execute("DEALLOCATE ALL")
                prepared.removeAll()
            }
            let fresh = "k\(prepared.count)"
            guard PQsendPrepare(h, fresh, sql, Int32(types.count), types.isEmpty ? nil : types) == 1 else { throw sendFailed(h) }
            _ = try check(try answer(h), h)
            prepared[key] = fresh
            name = fresh
        }
        return try run(h, name, encoded)
    }

    private func run(_ h: OpaquePointer, _ name: String, _ encoded: [(bytes: [UInt8], format: Int32)?]) throws(PGError) -> PGResult {
        let n = encoded.count
        let lengths = encoded.map { Int32($0?.bytes.count ?? 0) }
        let formats = encoded.map { $0?.format ?? 0 }
        // Copy every value into one buffer so the pointers stay valid for the call.
        var offsets: [Int] = []
        var storage: [UInt8] = []
        for e in encoded {
            offsets.append(storage.count)
            // Text parameters are read up to a NUL, whatever their length says.
            if let e { storage += e.bytes; storage.append(0) }
        }
        storage.append(0)
        let sent: Int32 = storage.withUnsafeBufferPointer { buf -> Int32 in
            let base = UnsafeRawPointer(buf.baseAddress!).assumingMemoryBound(to: CChar.self)
            let values: [UnsafePointer<CChar>?] = (0..<n).map { encoded[$0] == nil ? nil : base + offsets[$0] }
            return values.withUnsafeBufferPointer { v in
                lengths.withUnsafeBufferPointer { l in
                    formats.withUnsafeBufferPointer { f in
                        PQsendQueryPrepared(h, name, Int32(n), n == 0 ? nil : v.baseAddress, n == 0 ? nil : l.baseAddress,
                                            n == 0 ? nil : f.baseAddress, 1)
                    }
                }
            }
        }
        guard sent == 1 else { throw sendFailed(h) }
        return try check(try answer(h), h)
    }

    /// The statement could not be sent (the session is gone, or another one is in progress).
    private func sendFailed(_ h: OpaquePointer) -> PGError {
        PGError(kind: PQstatus(h) == CONNECTION_OK ? .other : .connectionLost, message: PGConnection.trimmed(PQerrorMessage(h)))
    }

    /// Collects the answer to what was just sent, as `PQexec` would: the first failed
    /// result, else the last one (nil when libpq has none, e.g. the session died). Waits
    /// at most `answerTimeout`; past it the session is closed and the wait fails.
    private func answer(_ h: OpaquePointer) throws(PGError) -> OpaquePointer? {
        let deadline = answerTimeout.map { DispatchTime.now().uptimeNanoseconds + UInt64(max(0, $0) * 1e9) }
        var kept: OpaquePointer?
        while true {
            while PQisBusy(h) == 1 {
                let fd = PQsocket(h)
                if fd < 0 { break }
                var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
                var ms: Int32 = -1
                if let deadline {
                    let now = DispatchTime.now().uptimeNanoseconds
                    if now >= deadline {
                        if let kept { PQclear(kept) }
                        abandon()
                        throw PGError(kind: .connectionLost, message: "no answer from the database within \(answerTimeout!) s")
                    }
                    ms = Int32(min((deadline - now + 999_999) / 1_000_000, 86_400_000))
                }
                if poll(&fds, 1, ms) < 0 && errno != EINTR { break }
                // 0: the session failed; PQgetResult then reports it.
                if fds[0].revents != 0 && PQconsumeInput(h) == 0 { break }
            }
            guard let r = PQgetResult(h) else { return kept }
            if let k = kept {
                let failed = PQresultStatus(k) == PGRES_FATAL_ERROR
                if failed { PQclear(r); continue }
                PQclear(k)
            }
            kept = r
        }
    }

    /// Closes a session whose answer is overdue (its statement's outcome stays unknown).
    private func abandon() {
        if let handle { PQfinish(handle) }
        handle = nil
        prepared.removeAll()
    }

    /// The first row, if any.
    public func queryOne(_ sql: String, _ params: [PGValue] = []) throws(PGError) -> PGRow? {
        try query(sql, params).first
    }

    /// Turns a libpq result into rows or a classified error (the result is freed either way).
    private func check(_ result: OpaquePointer?, _ h: OpaquePointer) throws(PGError) -> PGResult {
        guard let result else {
            throw PGError(kind: PQstatus(h) == CONNECTION_OK ? .other : .connectionLost,
                          message: PGConnection.trimmed(PQerrorMessage(h)))
        }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY {
            return PGResult(result)
        }
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        let constraint = PQresultErrorField(result, Int32(UInt8(ascii: "n"))).map { String(cString: $0) }
        var message = PGConnection.trimmed(PQresultErrorMessage(result))
        if message.isEmpty { message = PGConnection.trimmed(PQerrorMessage(h)) }
        PQclear(result)
        var kind = state.map(PGError.kind(sqlState:)) ?? .other
        if PQstatus(h) != CONNECTION_OK && kind != .adminShutdown { kind = .connectionLost }
        throw PGError(kind: kind, message: message, sqlState: state, constraint: constraint)
    }

    // MARK: transactions

    public enum Isolation: String, Sendable {
        case readCommitted = "READ COMMITTED"
        case repeatableRead = "REPEATABLE READ"
        case serializable = "SERIALIZABLE"
    }

    /// Runs `body` between BEGIN and COMMIT; any error rolls back and is rethrown. When the
    /// connection dies during COMMIT the error has `commitOutcomeUnknown` set.
    @discardableResult
    public func transaction<T>(_ isolation: Isolation = .readCommitted, readOnly: Bool = false,
                               _ body: () throws -> T) throws -> T {
        try execute("BEGIN ISOLATION LEVEL " + isolation.rawValue + (readOnly ? " READ ONLY" : ""))
        let value: T
        do {
            value = try body()
        } catch {
            if isConnected { try? execute("ROLLBACK") }
            throw error
        }
        do {
            try execute("COMMIT")
        } catch {
            var e = error
            if e.isUnavailable { e.commitOutcomeUnknown = true } else if isConnected { try? execute("ROLLBACK") }
            throw e
        }
        return value
    }

    // MARK: LISTEN / NOTIFY

    /// One notification received.
    public struct Notification: Sendable, Equatable {
        public var channel: String
        public var payload: String
        /// The notifying backend's process id.
        public var pid: Int32
    }

    /// Subscribes this session to `channel`; kept across `reconnect()`.
    public func listen(_ channel: String) throws(PGError) {
        try execute("LISTEN " + quoteIdentifier(channel))
        if !listening.contains(channel) { listening.append(channel) }
    }

    public func unlisten(_ channel: String) throws(PGError) {
        try execute("UNLISTEN " + quoteIdentifier(channel))
        listening.removeAll { $0 == channel }
    }

    /// Sends a notification (delivered when the current transaction commits, at once outside one).
    public func notify(_ channel: String, payload: String = "") throws(PGError) {
        try query("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)])
    }

    /// Reads whatever the socket holds without blocking and returns the notifications received.
    public func notifications() throws(PGError) -> [Notification] {
        let h = try live()
        guard PQconsumeInput(h) == 1 else {
            throw PGError(kind: .connectionLost, message: PGConnection.trimmed(PQerrorMessage(h)))
        }
        var out: [Notification] = []
        while let n = PQnotifies(h) {
            out.append(Notification(channel: String(cString: n.pointee.relname), payload: String(cString: n.pointee.extra),
                                    pid: n.pointee.be_pid))
            PQfreemem(n)
        }
        return out
    }

    /// Waits up to `timeout` seconds for notifications (returns early with those received).
    /// Empty when the time ran out; throws `connectionLost` when the session died.
    public func waitForNotifications(timeout: Double) throws(PGError) -> [Notification] {
        let pending = try notifications()
        if !pending.isEmpty { return pending }
        var fds = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0)]
        let ms = Int32(max(0, min(timeout, 86_400)) * 1000)
        let r = poll(&fds, 1, ms)
        if r < 0 && errno != EINTR { throw PGError(kind: .connectionLost, message: "poll: \(String(cString: strerror(errno)))") }
        return try notifications()
    }

    // MARK: helpers

    /// Why libpq cannot read `url` as connection settings (a `postgres://` URL or a
    /// key=value string); nil when it can.
    public static func invalidReason(url: String) -> String? {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &error) else {
            defer { if let error { PQfreemem(error) } }
            let reason = trimmed(error)
            return reason.isEmpty ? "libpq cannot parse it" : reason
        }
        PQconninfoFree(options)
        return nil
    }

    /// `name` quoted as an SQL identifier.
    public func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func trimmed(_ p: UnsafePointer<CChar>?) -> String {
        guard let p else { return "" }
        return String(cString: p).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Calls `body` with a NULL-terminated array of C strings.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let dups = strings.map { strdup($0) }
    defer { dups.forEach { free($0) } }
    let ptrs: [UnsafePointer<CChar>?] = dups.map { UnsafePointer($0) } + [nil]
    return ptrs.withUnsafeBufferPointer { body($0.baseAddress!) }
}
#endif
