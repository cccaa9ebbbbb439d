import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPServer
import LedgerModel
import LedgerServer
#if Postgres
import PostgresKit
#endif

/// A kidledger server for tests, with a temporary data directory, answering in one of two
/// modes (as HummingbirdTesting's router and live modes):
///
/// - `.router` (the default): requests go to the router and handlers in this process, with
///   no socket: each request's head is screened as a connection would, then it is routed
///   and handled. What only the HTTP layer does — body limits, content coding, HEAD, the
///   connection's headers, the access log and its metrics — is not done.
/// - `.live`: a real server on an ephemeral loopback port, reached through URLSession, for
///   tests of the HTTP layer and of clients.
///
/// In a build with the `Postgres` trait and KIDLEDGER_TEST_DATABASE_URL set (as
/// scripts/test-postgres.sh does), every server stores its data in a schema of that database
/// instead of SQLite, so the same tests run against both backends: a fresh schema for a new
/// data directory, the same one for a server started again over the same directory (a restart,
/// as over SQLite).
public final class TestServer: @unchecked Sendable {
    /// How requests reach the server: in process (`router`) or over a loopback socket (`live`).
    public enum Mode: Sendable { case router, live }

    /// The server itself (its configuration, and `port` in live mode).
    public private(set) var app: LedgerApp
    public let mode: Mode
    /// Where the server keeps its data (with PostgreSQL, only its keys).
    public let dataDirectory: String
    /// Whether `stop` removes the data directory (it made it).
    private let ownsDirectory: Bool
    /// The PostgreSQL schema this server's data lives in (nil: SQLite).
    public let schema: String?
    /// The live server's address.
    public var base: String {
        precondition(mode == .live, "a server in router mode has no address")
        return "http://127.0.0.1:\(app.port)"
    }

    /// The database the tests' servers use, nil for SQLite.
    public static var postgresURL: String? {
        #if Postgres
        let url = ProcessInfo.processInfo.environment["KIDLEDGER_TEST_DATABASE_URL"]
        return url?.isEmpty == false ? url : nil
        #else
        return nil
        #endif
    }

    /// A `postgres://` URL naming a new, empty schema of `url`'s database (through the
    /// session's search_path), and the schema's name.
    public static func freshSchema(_ url: String, prefix: String = "ts") throws -> (url: String, schema: String) {
        #if Postgres
        let schema = prefix + "_" + String(UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(20))
        try PGConnection(url: url).execute("CREATE SCHEMA \(schema)")
        return (url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)", schema)
        #else
        throw NoPostgres()
        #endif
    }

    /// This build has no PostgreSQL support.
    public struct NoPostgres: Error {}

    /// The file in a data directory that names the schema its servers keep their data in.
    static let schemaFile = "test-postgres-schema"

    /// The schema of the servers of `dataDirectory`, as `freshSchema` returns it: the one the
    /// directory's earlier servers used (named in `schemaFile`), so a server started again over
    /// the same directory finds its data as over SQLite; else a new one, named there.
    static func schema(of dataDirectory: String, in url: String) throws -> (url: String, schema: String) {
        #if Postgres
        let file = URL(fileURLWithPath: dataDirectory).appendingPathComponent(schemaFile)
        if let data = try? Data(contentsOf: file), let name = String(data: data, encoding: .utf8),
           !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) {
            // Still there unless the directory outlived a server that dropped it.
            try PGConnection(url: url).execute("CREATE SCHEMA IF NOT EXISTS \(name)")
            return (url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(name)", name)
        }
        let fresh = try freshSchema(url)
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        try Data(fresh.schema.utf8).write(to: file)
        return fresh
        #else
        throw NoPostgres()
        #endif
    }

    public static func dropSchema(_ schema: String) {
        #if Postgres
        if let url = postgresURL, let admin = try? PGConnection(url: url) { try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
        #endif
    }

    /// - Parameters:
    ///   - dataDirectory: where the server keeps its data; nil: a new temporary directory,
    ///     removed by `stop`.
    ///   - port: the live server's port (0: a free one).
    public init(_ mode: Mode = .router, dataDirectory: String? = nil, port: Int = 0,
                 configure: (inout LedgerAppConfiguration) -> Void = { _ in }) throws {
        self.mode = mode
        ownsDirectory = dataDirectory == nil
        self.dataDirectory = dataDirectory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-test-\(UUID().uuidString)").path
        var c = LedgerAppConfiguration(dataDirectory: self.dataDirectory, host: "127.0.0.1", port: port)
        c.logging = false
        c.http.eventLoops = 2
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        c.openAPIPath = repo.appendingPathComponent("openapi.yaml").path
        c.publicDirectory = repo.appendingPathComponent("Public").path
        // Tests sign many accounts up from one address; the registration limit has its own tests.
        c.registrationsPerHour = 0
        var schema: String?
        if let url = TestServer.postgresURL {
            let kept = try TestServer.schema(of: self.dataDirectory, in: url)
            c.databaseURL = kept.url
            c.databaseConnections = 4
            schema = kept.schema
        }
        self.schema = schema
        configure(&c)
        do {
            app = try LedgerApp(configuration: c)
            switch mode {
            case .router: app.startInProcess()
            case .live: try app.start()
            }
        } catch {
            if let schema { TestServer.dropSchema(schema) }
            throw error
        }
    }

    /// Stops the server and starts another over the same data, in the same mode (a process
    /// restart); a live server's port changes.
    public func restart() throws {
        let configuration = app.configuration
        app.stop()
        app = try LedgerApp(configuration: configuration)
        switch mode {
        case .router: app.startInProcess()
        case .live: try app.start()
        }
    }

    /// Stops the server; removes its data when it made its directory (the directory, its
    /// PostgreSQL schema). A directory of the caller's keeps its data, over SQLite in the
    /// directory, over PostgreSQL in the schema the directory names, for the next server there.
    public func stop() {
        app.stop()
        if ownsDirectory {
            try? FileManager.default.removeItem(atPath: dataDirectory)
            if let schema { TestServer.dropSchema(schema) }
        }
    }

    /// An answer: status (0 when none came in time), header fields and body.
    public struct Reply: Sendable {
        public let status: Int
        public let headers: [String: String]
        public let body: Data

        public init(status: Int, headers: [String: String], body: Data) {
            (self.status, self.headers, self.body) = (status, headers, body)
        }

        /// The body as JSON (`.null` when it is not).
        public var json: JSONValue { (try? JSONValue.parse(Array(body))) ?? .null }
        /// A problem's `code`.
        public var code: String? { json["code"]?.stringValue }
        /// A header field, by case-insensitive name.
        public func header(_ name: String) -> String? {
            headers.first { $0.key.lowercased() == name.lowercased() }?.value
        }
    }

    /// One request; `json` is sent as the body with `Content-Type: application/json`.
    /// Blocks until the answer arrives (status 0 when none does within `timeout` seconds).
    @discardableResult
    public func call(_ method: String, _ path: String, token: String? = nil, json: JSONValue? = nil, rawBody: Data? = nil,
                      headers: [String: String] = [:], timeout: Double = 30) -> Reply {
        switch mode {
        case .live:
            return TestServer.request(base: base, method, path, token: token, json: json, rawBody: rawBody, headers: headers,
                                      timeout: timeout)
        case .router:
            return answer(method, path, token: token, json: json, rawBody: rawBody, headers: headers, timeout: timeout)
        }
    }

    /// The request's answer from the router, in this process.
    private func answer(_ method: String, _ path: String, token: String?, json: JSONValue?, rawBody: Data?,
                        headers extra: [String: String], timeout: Double) -> Reply {
        var h = HTTPHeaders()
        if let token { h.set("Authorization", "Bearer \(token)") }
        var body: [UInt8] = []
        if let json {
            body = json.serialized()
            h.set("Content-Type", "application/json")
        }
        if let rawBody { body = Array(rawBody) }
        for (k, v) in extra { h.set(k, v) }
        let answered = Answer()
        app.answer(HTTPRequest(method: method, target: path, headers: h, body: body)) { answered.set($0) }
        guard let r = answered.wait(seconds: timeout) else { return Reply(status: 0, headers: [:], body: Data()) }
        var fields: [String: String] = [:]
        for (name, value) in r.headers { fields[name] = value }
        return Reply(status: r.status, headers: fields, body: Data(r.body))
    }

    /// A response awaited from another thread.
    private final class Answer: @unchecked Sendable {
        private let lock = NSCondition()
        private var response: HTTPResponse?

        func set(_ r: HTTPResponse) {
            lock.lock()
            response = r
            lock.broadcast()
            lock.unlock()
        }

        func wait(seconds: Double) -> HTTPResponse? {
            let deadline = Date().addingTimeInterval(seconds)
            lock.lock()
            defer { lock.unlock() }
            while response == nil, lock.wait(until: deadline) {}
            return response
        }
    }

    /// One request over a socket to the server at `base`, through URLSession.
    public static func request(base: String, _ method: String, _ path: String, token: String?, json: JSONValue?,
                                rawBody: Data?, headers: [String: String], timeout: Double) -> Reply {
        var req = URLRequest(url: URL(string: base + path)!)
        req.httpMethod = method
        req.timeoutInterval = timeout
        if let token { req.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let json {
            req.httpBody = Data(json.serialized())
            req.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let rawBody { req.httpBody = rawBody }
        for (k, v) in headers { req.setValue(v, forHTTPHeaderField: k) }
        let sem = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result = Reply(status: 0, headers: [:], body: Data())
        URLSession.shared.dataTask(with: req) { data, response, _ in
            if let http = response as? HTTPURLResponse {
                var h: [String: String] = [:]
                for (k, v) in http.allHeaderFields { h["\(k)"] = "\(v)" }
                result = Reply(status: http.statusCode, headers: h, body: data ?? Data())
            }
            sem.signal()
        }.resume()
        sem.wait()
        return result
    }

    /// Creates an account and returns (accountId, token secret).
    public func signup(_ handle: String, name: String? = nil) -> (id: String, token: String) {
        let r = call("POST", "/v1/accounts", json: .object(["handle": .string(handle), "displayName": .string(name ?? handle)]))
        precondition(r.status == 201, "signup failed: \(r.status) \(String(decoding: r.body, as: UTF8.self))")
        return (r.json["account"]!["id"]!.stringValue!, r.json["token"]!["secret"]!.stringValue!)
    }

    /// Creates a household with `token` and returns its id.
    public func household(_ token: String, name: String = "Home") -> String {
        call("POST", "/v1/households", token: token, json: .object(["name": .string(name)])).json["id"]!.stringValue!
    }

    /// Adds a child to `household` with `token` and returns its id.
    public func child(_ token: String, household: String, name: String = "Ada") -> String {
        call("POST", "/v1/households/\(household)/children", token: token, json: .object(["name": .string(name)])).json["id"]!.stringValue!
    }
}

extension JSONValue {
    /// Builds a JSON object from pairs, for request bodies in tests.
    public static func obj(_ pairs: KeyValuePairs<String, JSONValue>) -> JSONValue {
        var o = JSONObject()
        for (k, v) in pairs { o[k] = v }
        return .object(o)
    }
}
