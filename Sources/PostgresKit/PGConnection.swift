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
/// Behind a pooler in transaction mode (`pooled`, e.g. pgbouncer), consecutive transactions
/// of one connection may run on different server sessions: nothing is prepared by name (every
/// statement is parsed with its execution), no startup `options` are sent (pgbouncer refuses
/// them), and `transactionSetup` runs at the start of every transaction instead of once per
/// session. LISTEN and session advisory locks need a connection that is not pooled.
///
/// With an `answerTimeout`, a statement whose answer has not arrived in time ends the
/// session and fails as `connectionLost` (the server may still have run it): a database
/// that stopped answering — a frozen host, a dropped route, a lock held by a client that
/// vanished — costs a caller that long, never forever.
public final class PGConnection: @unchecked Sendable {
    /// How the connection was described (a `postgres://` URL or a libpq key=value string).
    public let url: String
    private let setup: [String]
    /// Statements sent after each BEGIN, in the same round trip (e.g. `SET LOCAL …`).
    private let transactionSetup: [String]
    /// Reached through a transaction-mode pooler (see the type's comment).
    public let pooled: Bool
    private let connectTimeout: Int
    /// The session's `application_name` (pg_stat_activity, the server's log), unless the URL sets one.
    public let application: String
    /// Longest wait for one statement's answer, in seconds (nil: no limit).
    public let answerTimeout: Double?
    private var handle: OpaquePointer?
    private var prepared: [String: String] = [:]
    private var listening: [String] = []
    /// Counts sessions: 1 after `init`, one more after each successful `reconnect()`.
    public private(set) var session = 0

    /// Most statements kept prepared per session.
    static let maxPrepared = 512

    /// Connects. `setup` runs after every (re)connect, e.g. `SET search_path TO …`;
    /// `transactionSetup` after every BEGIN.
    public init(url: String, setup: [String] = [], transactionSetup: [String] = [], pooled: Bool = false,
                application: String = "kidledger", connectTimeout: Int = 5, answerTimeout: Double? = nil) throws(PGError) {
        self.url = url
        self.application = application
        self.setup = setup
        self.transactionSetup = transactionSetup
        self.pooled = pooled
        self.connectTimeout = connectTimeout
        self.answerTimeout = answerTimeout
        try connect()
    }

    deinit { if let handle { PQfinish(handle) } }

    private func connect() throws(PGError) {
        if let handle { PQfinish(handle) }
        handle = nil
        prepared.removeAll()
        queued.removeAll()
        // Defaults first: the URL's own settings (expanded from dbname) override them.
        var keys = ["connect_timeout", "application_name", "keepalives", "keepalives_idle", "keepalives_interval",
                    "keepalives_count", "options", "dbname"]
        var values = [String(connectTimeout), application, "1", "10", "5", "3", "-c client_min_messages=warning", url]
        if pooled {
            keys.remove(at: 6)
            values.remove(at: 6)
        }
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
        // What was queued runs first (one round trip of its own: multi-statement text
        // cannot join a pipeline).
        if !queued.isEmpty { _ = try flush() }
        let h = try live()
        guard PQsendQuery(h, sql) == 1 else { throw sendFailed(h) }
        _ = try check(try answer(h), h)
    }

    /// Runs one statement with parameters, prepared once per session and SQL text (the
    /// preparation travels with the first execution). Statements queued with `later` go
    /// first, in the same round trip.
    @discardableResult
    public func query(_ sql: String, _ params: [PGValue] = []) throws(PGError) -> PGResult {
        willQueue?()
        queued.append(Statement(sql: sql, params: params, prepare: !pooled, tag: tag))
        return try flush()
    }

    /// Runs `statements` in one round trip (after those queued with `later`), in order, and
    /// returns each one's result; the first failure is thrown once every answer is read.
    /// Each statement sees what the ones before it wrote and committed (under READ
    /// COMMITTED, each takes a snapshot of its own).
    public func query(all statements: [(sql: String, params: [PGValue])]) throws(PGError) -> [PGResult] {
        guard !statements.isEmpty else { return [] }
        willQueue?()
        let first = queued.count
        for st in statements { queued.append(Statement(sql: st.sql, params: st.params, prepare: !pooled, tag: tag)) }
        var kept: [PGResult] = []
        _ = try flush(keepingFrom: first, into: &kept)
        return kept
    }

    /// A statement waiting in `queued`.
    private struct Statement {
        let sql: String
        let params: [PGValue]
        /// Prepared once per session (false: parsed each time, as BEGIN and COMMIT are).
        let prepare: Bool
        /// `tag` when it was asked for.
        var tag = 0
    }
    /// Statements whose answers nobody waits for, sent with the next statement that is waited for.
    private var queued: [Statement] = []

    /// Queues a statement whose result is not needed (an INSERT, an UPDATE): it is sent
    /// with the next `query` (or the transaction's COMMIT) in one round trip, in order, and
    /// its failure is thrown there. Statements run in the order they were asked for, so
    /// what a later statement reads includes what the queued ones wrote. Outside a
    /// transaction the statements of one round trip form one implicit transaction: a
    /// failure undoes all of them.
    public func later(_ sql: String, _ params: [PGValue] = []) {
        willQueue?()
        queued.append(Statement(sql: sql, params: params, prepare: !pooled, tag: tag))
    }

    /// Called before a statement is queued by `later` or `query`, and before a
    /// transaction's COMMIT: the owner of rows held back in memory (to send several as one
    /// statement) queues them then, so every statement still runs in the order it was
    /// asked for. It may call `later` itself. Whoever sets it clears it when done.
    public var willQueue: (() -> Void)?

    /// A number the caller sets to say whose statements are being queued: a statement that
    /// fails in a round trip carries its tag in `PGError.statementTag` (in a round trip that
    /// also carries earlier statements, it tells whose statement failed).
    public var tag = 0

    /// Whether statements wait in the queue for the next round trip.
    public var hasQueued: Bool { !queued.isEmpty }

    /// Sends every queued statement in one pipeline, waits for all their answers and
    /// returns the last one's; the first failure is thrown once every answer is read (the
    /// statements after a failed one are skipped by the server).
    private func flush() throws(PGError) -> PGResult {
        var none: [PGResult] = []
        return try flush(keepingFrom: Int.max, into: &none)
    }

    /// `flush()`, also keeping the results of the statements from index `keep` on in `kept`.
    private func flush(keepingFrom keep: Int, into kept: inout [PGResult]) throws(PGError) -> PGResult {
        let batch = queued
        queued.removeAll(keepingCapacity: true)
        let h = try live()
        // Every parameter encoded before anything is sent: a value that cannot be sent
        // (`invalidParameter`) fails the round trip with nothing run and the session intact.
        var encodings: [[(bytes: [UInt8], format: Int32)?]] = []
        encodings.reserveCapacity(batch.count)
        for st in batch { encodings.append(try Self.encode(st.params)) }
        if prepared.count + batch.count >= PGConnection.maxPrepared { try forgetPrepared() }
        guard PQenterPipelineMode(h) == 1 else { throw sendFailed(h) }
        // What was sent, in order: a statement (its index in `batch`) or a preparation (its key and name).
        enum Sent { case statement(Int), preparation(key: String, name: String, statement: Int) }
        var sent: [Sent] = []
        sent.reserveCapacity(batch.count * 2)
        var naming: [String: String] = [:]
        do throws(PGError) {
            for (i, st) in batch.enumerated() {
                let encoded = encodings[i]
                if !st.prepare {
                    guard Self.sendUnnamed(h, st.sql, encoded, st.params) == 1 else { throw sendFailed(h) }
                } else {
                    let key = Self.key(st.sql, st.params)
                    var name = prepared[key] ?? naming[key]
                    if name == nil {
                        let fresh = "k\(prepared.count + naming.count)"
                        guard PQsendPrepare(h, fresh, st.sql, Int32(st.params.count),
                                            st.params.isEmpty ? nil : st.params.map(\.oid)) == 1 else { throw sendFailed(h) }
                        sent.append(.preparation(key: key, name: fresh, statement: i))
                        naming[key] = fresh
                        name = fresh
                    }
                    guard Self.sendPrepared(h, name!, encoded) == 1 else { throw sendFailed(h) }
                }
                sent.append(.statement(i))
            }
            guard PQpipelineSync(h) == 1 else { throw sendFailed(h) }
        } catch {
            // Nothing was run that anyone will hear of: the session is in an unknown state.
            abandon()
            throw error
        }
        let deadline = answerDeadline()
        var failure: PGError?
        var last: PGResult?
        for item in sent {
            guard let r = try nextResult(h, deadline) else {
                abandon()
                throw failure ?? PGError(kind: .connectionLost, message: "the database closed the session")
            }
            // Each statement's answer ends with a NULL result.
            let end = try nextResult(h, deadline)
            if let end { PQclear(end) }
            let status = PQresultStatus(r)
            if status == PGRES_PIPELINE_ABORTED { PQclear(r); continue }
            if status == PGRES_FATAL_ERROR {
                do { _ = try check(r, h) } catch {
                    if failure == nil {
                        var e = error
                        switch item {
                        case .statement(let i), .preparation(_, _, let i): e.statementTag = batch[i].tag
                        }
                        failure = e
                    }
                }
                continue
            }
            switch item {
            case .preparation(let key, let name, _):
                PQclear(r)
                prepared[key] = name
            case .statement(let i):
                if i >= keep {
                    let result = PGResult(r)
                    kept.append(result)
                    if i == batch.count - 1 { last = result }
                } else if i == batch.count - 1 { last = PGResult(r) } else { PQclear(r) }
            }
        }
        // The pipeline's end (none when the session ended: then the failure that said why).
        guard let sync = try nextResult(h, deadline) else {
            abandon()
            throw failure ?? PGError(kind: .connectionLost, message: "the database closed the session")
        }
        PQclear(sync)
        _ = PQexitPipelineMode(h)
        if let failure { throw failure }
        guard let last else { throw PGError(kind: .other, message: "no answer to the pipeline's last statement") }
        return last
    }

    private func forgetPrepared() throws(PGError) {
        let pending = queued
        queued.removeAll()
        try execute("DEALLOCATE ALL")
        prepared.removeAll()
        queued = pending
    }

    private static func key(_ sql: String, _ params: [PGValue]) -> String {
        guard !params.isEmpty else { return sql }
        var key = sql
        key.append("\u{0}")
        for p in params {
            key.append(String(p.oid))
            key.append(",")
        }
        return key
    }

    private static func encode(_ params: [PGValue]) throws(PGError) -> [(bytes: [UInt8], format: Int32)?] {
        var encoded: [(bytes: [UInt8], format: Int32)?] = []
        encoded.reserveCapacity(params.count)
        for p in params { encoded.append(try p.encoded()) }
        return encoded
    }

    /// Sends a prepared statement's execution (results in binary); libpq's return value.
    private static func sendPrepared(_ h: OpaquePointer, _ name: String, _ encoded: [(bytes: [UInt8], format: Int32)?]) -> Int32 {
        withParameters(encoded) { n, values, lengths, formats in
            PQsendQueryPrepared(h, name, n, values, lengths, formats, 1)
        }
    }

    /// Sends a statement parsed for this one use (results in binary); libpq's return value.
    private static func sendUnnamed(_ h: OpaquePointer, _ sql: String, _ encoded: [(bytes: [UInt8], format: Int32)?],
                                    _ params: [PGValue]) -> Int32 {
        let types = params.map(\.oid)
        return withParameters(encoded) { n, values, lengths, formats in
            types.withUnsafeBufferPointer { t in
                PQsendQueryParams(h, sql, n, n == 0 ? nil : t.baseAddress, values, lengths, formats, 1)
            }
        }
    }

    /// Calls `body` with libpq's parameter arrays for `encoded` (nil pointers when empty).
    private static func withParameters(
        _ encoded: [(bytes: [UInt8], format: Int32)?],
        _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> Int32
    ) -> Int32 {
        let n = encoded.count
        if n == 0 { return body(0, nil, nil, nil) }
        let lengths = encoded.map { Int32($0?.bytes.count ?? 0) }
        let formats = encoded.map { $0?.format ?? 0 }
        // Copy every value into one buffer so the pointers stay valid for the call.
        var offsets: [Int] = []
        offsets.reserveCapacity(n)
        var storage: [UInt8] = []
        for e in encoded {
            offsets.append(storage.count)
            // Text parameters are read up to a NUL, whatever their length says.
            if let e { storage += e.bytes; storage.append(0) }
        }
        storage.append(0)
        return storage.withUnsafeBufferPointer { buf -> Int32 in
            let base = UnsafeRawPointer(buf.baseAddress!).assumingMemoryBound(to: CChar.self)
            let values: [UnsafePointer<CChar>?] = (0..<n).map { encoded[$0] == nil ? nil : base + offsets[$0] }
            return values.withUnsafeBufferPointer { v in
                lengths.withUnsafeBufferPointer { l in
                    formats.withUnsafeBufferPointer { f in body(Int32(n), v.baseAddress, l.baseAddress, f.baseAddress) }
                }
            }
        }
    }

    /// The statement could not be sent (the session is gone, or another one is in progress).
    private func sendFailed(_ h: OpaquePointer) -> PGError {
        PGError(kind: PQstatus(h) == CONNECTION_OK ? .other : .connectionLost, message: PGConnection.trimmed(PQerrorMessage(h)))
    }

    /// Collects the answer to what was just sent, as `PQexec` would: the first failed
    /// result, else the last one (nil when libpq has none, e.g. the session died). Waits
    /// at most `answerTimeout`; past it the session is closed and the wait fails.
    private func answer(_ h: OpaquePointer) throws(PGError) -> OpaquePointer? {
        let deadline = answerDeadline()
        var kept: OpaquePointer?
        while true {
            let r: OpaquePointer?
            do { r = try nextResult(h, deadline) } catch { if let kept { PQclear(kept) }; throw error }
            guard let r else { return kept }
            if let k = kept {
                let failed = PQresultStatus(k) == PGRES_FATAL_ERROR
                if failed { PQclear(r); continue }
                PQclear(k)
            }
            kept = r
        }
    }

    /// When an answer started now is overdue (uptime nanoseconds), nil: never.
    private func answerDeadline() -> UInt64? {
        answerTimeout.map { DispatchTime.now().uptimeNanoseconds + UInt64(max(0, $0) * 1e9) }
    }

    /// The next result libpq has, waiting for the socket until `deadline` (past it the
    /// session is closed and the wait fails).
    private func nextResult(_ h: OpaquePointer, _ deadline: UInt64?) throws(PGError) -> OpaquePointer? {
        while PQisBusy(h) == 1 {
            let fd = PQsocket(h)
            if fd < 0 { break }
            var fds = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            var ms: Int32 = -1
            if let deadline {
                let now = DispatchTime.now().uptimeNanoseconds
                if now >= deadline {
                    abandon()
                    throw PGError(kind: .connectionLost, message: "no answer from the database within \(answerTimeout!) s")
                }
                ms = Int32(min((deadline - now + 999_999) / 1_000_000, 86_400_000))
            }
            if poll(&fds, 1, ms) < 0 && errno != EINTR { break }
            // 0: the session failed; PQgetResult then reports it.
            if fds.revents != 0 && PQconsumeInput(h) == 0 { break }
        }
        return PQgetResult(h)
    }

    /// Closes a session whose answer is overdue (its statement's outcome stays unknown).
    private func abandon() {
        if let handle { PQfinish(handle) }
        handle = nil
        prepared.removeAll()
        queued.removeAll()
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
    ///
    /// BEGIN travels with the body's first statement, and COMMIT with the statements the
    /// body queued (`later`): a body of one statement costs two round trips, not three.
    @discardableResult
    public func transaction<T>(_ isolation: Isolation = .readCommitted, readOnly: Bool = false,
                               _ body: () throws -> T) throws -> T {
        _ = try live()
        queued.append(Statement(sql: "BEGIN ISOLATION LEVEL " + isolation.rawValue + (readOnly ? " READ ONLY" : ""),
                                params: [], prepare: false))
        for sql in transactionSetup { queued.append(Statement(sql: sql, params: [], prepare: false)) }
        let value: T
        do {
            value = try body()
        } catch {
            queued.removeAll()
            if isConnected && isInTransaction { try? execute("ROLLBACK") }
            throw error
        }
        do {
            willQueue?()
            queued.append(Statement(sql: "COMMIT", params: [], prepare: false))
            _ = try flush()
        } catch {
            var e = error
            if e.isUnavailable { e.commitOutcomeUnknown = true } else if isConnected && isInTransaction { try? execute("ROLLBACK") }
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

    /// Whether the session is PostgreSQL's own, not a pooler's: the process id the server
    /// announced at startup is the one running the statements (pgbouncer announces a number
    /// of its own, and runs each transaction on any of its server sessions).
    public func reachesServerDirectly() throws(PGError) -> Bool {
        // Unnamed: behind a pooler, a name may already be taken on the server session it gets.
        queued.append(Statement(sql: "SELECT pg_backend_pid()", params: [], prepare: false, tag: tag))
        guard let row = try flush().first else { return false }
        return row.int(0) == Int64(backendPID)
    }

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
