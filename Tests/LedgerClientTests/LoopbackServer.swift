import Foundation
import LedgerServer

/// A real kidledger server for client tests: one event loop on a loopback port, quiet,
/// with its data under a fresh temporary directory that `remove()` deletes.
enum LoopbackServer {
    /// A new temporary directory for one test (`prefix` names it).
    static func makeDirectory(_ prefix: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Starts a server with its database in `directory/server`; port 0 picks a free one.
    static func start(in directory: String, port: Int = 0) throws -> LedgerApp {
        var c = LedgerAppConfiguration(dataDirectory: directory + "/server", host: "127.0.0.1", port: port)
        c.logging = false
        c.http.eventLoops = 1
        let app = try LedgerApp(configuration: c)
        try app.start()
        return app
    }
}
