import Foundation
@testable import LedgerClient
import LedgerModel
import LedgerServer

/// A loopback server whose database can be backed up and put back in time, as an operator
/// would: over SQLite with `backup` and `restore --from`; over PostgreSQL (a schema of its own
/// in KIDLEDGER_TEST_DATABASE_URL's database, in a build with the `Postgres` trait) with
/// `pg_dump`, `pg_restore` and `rewound`.
final class RewindableServer {
    let directory: String
    private(set) var app: LedgerApp?
    private(set) var port = 0
    /// The server's PostgreSQL URL (its schema on the search path), nil over SQLite.
    private(set) var databaseURL: String?
    private var baseURL: String?
    private let schema: String?

    /// `postgres`: the database to use instead of KIDLEDGER_TEST_DATABASE_URL's.
    init(_ prefix: String, postgres: String? = nil) throws {
        directory = try LoopbackServer.makeDirectory(prefix)
        let url = postgres ?? ProcessInfo.processInfo.environment["KIDLEDGER_TEST_DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
        if AdminCommands.hasPostgres, let url {
            let schema = "rw_" + String(UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(20))
            try Self.run(Self.postgresTool("psql"), ["-q", "-v", "ON_ERROR_STOP=1", url, "-c", "CREATE SCHEMA \(schema)"])
            (baseURL, self.schema) = (url, schema)
            databaseURL = url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
        } else {
            (baseURL, schema, databaseURL) = (nil, nil, nil)
        }
        try start()
    }

    var isPostgres: Bool { databaseURL != nil }
    /// The PostgreSQL database URL without the schema's search path.
    var baseDatabaseURL: String? { baseURL }

    var configuration: LedgerAppConfiguration {
        var c = LedgerAppConfiguration(dataDirectory: directory + "/server", host: "127.0.0.1", port: port)
        c.databaseURL = databaseURL
        c.logging = false
        c.http.eventLoops = 1
        return c
    }

    /// Starts the server; after the first start, on the same port.
    func start() throws {
        let app = try LedgerApp(configuration: configuration)
        try app.start()
        self.app = app
        port = app.port
    }

    func stop() {
        app?.stop()
        app = nil
    }

    /// A backup of the database as it is now, in a file of the test's folder.
    func backup(_ name: String) throws -> String {
        let file = directory + "/" + name
        if let baseURL, let schema {
            try Self.run(Self.postgresTool("pg_dump"), ["--format=custom", "--schema=\(schema)", "--file=\(file)", baseURL])
        } else {
            try AdminCommands.backup(configuration, to: file)
        }
        return file
    }

    /// Puts the backup `file` back with the server stopped, the way docs/operations.md says:
    /// `restore --from` over SQLite; over PostgreSQL the schema dropped, `pg_restore`, then `rewound`.
    func restore(_ file: String) throws {
        if let baseURL, let schema {
            try Self.run(Self.postgresTool("psql"), ["-q", "-v", "ON_ERROR_STOP=1", baseURL, "-c", "DROP SCHEMA \(schema) CASCADE"])
            try Self.run(Self.postgresTool("pg_restore"), ["--dbname=\(baseURL)", file])
            _ = try AdminCommands.rewound(configuration)
        } else {
            _ = try AdminCommands.restore(configuration, from: file)
        }
    }

    /// Points the (stopped) server at the same schema in another database: a promoted standby.
    func failOver(to url: String) {
        guard let schema else { return }
        baseURL = url
        databaseURL = url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
    }

    /// Stops the server and deletes its folder (and schema).
    func remove() {
        stop()
        if let baseURL, let schema {
            _ = try? Self.run(Self.postgresTool("psql"), ["-q", baseURL, "-c", "DROP SCHEMA IF EXISTS \(schema) CASCADE"])
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// A PostgreSQL client program of the installed server's version.
    static func postgresTool(_ name: String) throws -> String {
        for v in ["17", "16", "15", "14"] where FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/\(v)/bin/\(name)") {
            return "/usr/lib/postgresql/\(v)/bin/\(name)"
        }
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/\(name)") { return "/usr/bin/\(name)" }
        throw NSError(domain: "\(name) not found", code: 1)
    }

    /// Runs a program; answers its output, trimmed, and throws with its error output when it
    /// fails. The output goes through files, not pipes: a server the program starts in the
    /// background (pg_ctl) would hold a pipe open for ever.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let outURL = folder.appendingPathComponent("out"), errURL = folder.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = arguments
        (p.standardOutput, p.standardError) = (out, err)
        p.standardInput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        try out.close()
        try err.close()
        let output = (try? Data(contentsOf: outURL)) ?? Data(), message = (try? Data(contentsOf: errURL)) ?? Data()
        guard p.terminationStatus == 0 else {
            throw NSError(domain: "\(tool) \(arguments.joined(separator: " ")): \(String(decoding: message, as: UTF8.self))", code: 1)
        }
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
