import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LedgerModel
import SQLiteKit
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStorageSQLite
import XCTest
#if Postgres
import PostgresKit
#endif

/// A real server on an ephemeral loopback port with a temporary data directory.
///
/// In a build with the `Postgres` trait and KIDLEDGER_TEST_DATABASE_URL set (as
/// scripts/test-postgres.sh does), every server stores its data in a fresh schema of that
/// database instead of SQLite, so the same HTTP tests run against both backends; tests of
/// something only SQLite has call `TestServer.requireSQLite(_:)` first.
final class TestServer: @unchecked Sendable {
    private(set) var app: LedgerApp
    let dataDirectory: String
    /// The PostgreSQL schema this server's data lives in (nil: SQLite).
    let schema: String?
    var base: String { "http://127.0.0.1:\(app.port)" }

    /// The database the tests' servers use, nil for SQLite.
    static var postgresURL: String? {
        #if Postgres
        let url = ProcessInfo.processInfo.environment["KIDLEDGER_TEST_DATABASE_URL"]
        return url?.isEmpty == false ? url : nil
        #else
        return nil
        #endif
    }

    /// Skips the calling test when the servers run over PostgreSQL.
    static func requireSQLite(_ reason: String) throws {
        if postgresURL != nil { throw XCTSkip("SQLite only: \(reason)") }
    }

    /// A `postgres://` URL naming a new, empty schema of `url`'s database (through the
    /// session's search_path), and the schema's name.
    static func freshSchema(_ url: String, prefix: String = "ts") throws -> (url: String, schema: String) {
        #if Postgres
        let schema = prefix + "_" + String(UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(20))
        try PGConnection(url: url).execute("CREATE SCHEMA \(schema)")
        return (url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)", schema)
        #else
        throw XCTSkip("this build has no PostgreSQL support")
        #endif
    }

    static func dropSchema(_ schema: String) {
        #if Postgres
        if let url = postgresURL, let admin = try? PGConnection(url: url) { try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
        #endif
    }

    init(configure: (inout LedgerAppConfiguration) -> Void = { _ in }) throws {
        dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-test-\(UUID().uuidString)").path
        var c = LedgerAppConfiguration(dataDirectory: dataDirectory, host: "127.0.0.1", port: 0)
        c.logging = false
        c.http.eventLoops = 2
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        c.openAPIPath = repo.appendingPathComponent("openapi.yaml").path
        c.publicDirectory = repo.appendingPathComponent("Public").path
        // Tests sign many accounts up from one address; the registration limit has its own tests.
        c.registrationsPerHour = 0
        var schema: String?
        if let url = TestServer.postgresURL {
            let fresh = try TestServer.freshSchema(url)
            c.databaseURL = fresh.url
            c.databaseConnections = 4
            schema = fresh.schema
        }
        self.schema = schema
        configure(&c)
        do {
            app = try LedgerApp(configuration: c)
            try app.start()
        } catch {
            if let schema { TestServer.dropSchema(schema) }
            throw error
        }
    }

    /// Stops the server and starts another over the same data (a process restart); the
    /// port changes.
    func restart() throws {
        let configuration = app.configuration
        app.stop()
        app = try LedgerApp(configuration: configuration)
        try app.start()
    }

    func stop() {
        app.stop()
        try? FileManager.default.removeItem(atPath: dataDirectory)
        if let schema { TestServer.dropSchema(schema) }
    }

    /// Runs one statement straight in the server's database, outside its request path (to
    /// set up states no request can make). Written for SQLite with `?` placeholders; over
    /// PostgreSQL `postgres` is run instead when given (else the same text, `?` numbered as
    /// `$1`…), with integer parameters as bigint, UUIDs as uuid and other text as text.
    func execute(_ sql: String, _ params: [SQLiteValue] = [], postgres: String? = nil) throws {
        _ = try int(sql, params, postgres: postgres)
    }

    /// Like `execute`, answering the first column of the first row as an integer (0 when none).
    func int(_ sql: String, _ params: [SQLiteValue] = [], postgres: String? = nil) throws -> Int64 {
        #if Postgres
        if let url = app.configuration.databaseURL {
            var text = postgres ?? sql, n = 0
            if postgres == nil {
                while let q = text.firstIndex(of: "?") { n += 1; text.replaceSubrange(q...q, with: "$\(n)") }
            }
            let values: [PGValue] = params.map {
                switch $0 {
                case .integer(let i): return .int(i)
                case .text(let t): return LedgerIDs.parse(t) == nil ? .text(t) : .uuid(t)
                case .real(let r): return .text(String(r))
                case .blob(let b): return .bytes(b)
                case .null: return .null
                }
            }
            let rows = try PGConnection(url: url).query(text, values).rows
            return rows.first.map { $0.isNull(0) ? 0 : $0.int(0) } ?? 0
        }
        #endif
        return try app.sqliteWriter.sync { db in try db.query(sql, params).first.map { $0.int(0) } ?? 0 }
    }

    /// `kidledger-server check` on this server's database.
    func check() throws -> AdminCommands.CheckReport { try AdminCommands.check(app.configuration) }

    struct Reply {
        let status: Int
        let headers: [String: String]
        let body: Data
        var json: JSONValue { (try? JSONValue.parse(Array(body))) ?? .null }
        var code: String? { json["code"]?.stringValue }
        func header(_ name: String) -> String? {
            headers.first { $0.key.lowercased() == name.lowercased() }?.value
        }
    }

    /// One request; `body` is sent as JSON. Blocks until the answer arrives.
    @discardableResult
    func call(_ method: String, _ path: String, token: String? = nil, json: JSONValue? = nil, rawBody: Data? = nil,
              headers: [String: String] = [:], timeout: Double = 30) -> Reply {
        TestServer.request(base: base, method, path, token: token, json: json, rawBody: rawBody, headers: headers, timeout: timeout)
    }

    static func request(base: String, _ method: String, _ path: String, token: String?, json: JSONValue?, rawBody: Data?,
                        headers: [String: String], timeout: Double) -> Reply {
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
    func signup(_ handle: String, name: String? = nil) -> (id: String, token: String) {
        let r = call("POST", "/v1/accounts", json: .object(["handle": .string(handle), "displayName": .string(name ?? handle)]))
        precondition(r.status == 201, "signup failed: \(r.status) \(String(decoding: r.body, as: UTF8.self))")
        return (r.json["account"]!["id"]!.stringValue!, r.json["token"]!["secret"]!.stringValue!)
    }

    func household(_ token: String, name: String = "Home") -> String {
        call("POST", "/v1/households", token: token, json: .object(["name": .string(name)])).json["id"]!.stringValue!
    }

    func child(_ token: String, household: String, name: String = "Ada") -> String {
        call("POST", "/v1/households/\(household)/children", token: token, json: .object(["name": .string(name)])).json["id"]!.stringValue!
    }
}

extension JSONValue {
    /// Builds a JSON object from pairs, for request bodies in tests.
    static func obj(_ pairs: KeyValuePairs<String, JSONValue>) -> JSONValue {
        var o = JSONObject()
        for (k, v) in pairs { o[k] = v }
        return .object(o)
    }
}

extension LedgerApp {
    /// The SQLite writer, for tests that reach under the storage seam (SQLite only; a test
    /// that calls it over PostgreSQL skips before).
    var sqliteWriter: WriteQueue {
        guard let sqlite = services.storage as? SQLiteLedgerStorage else { fatalError("this test needs the SQLite backend") }
        return sqlite.writer
    }
}
