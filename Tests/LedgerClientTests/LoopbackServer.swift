import Foundation
import LedgerServer
import LedgerServerTesting

/// A live test server for client tests (`TestServer` on a loopback port, one event loop),
/// with its data under a directory of the test's.
enum LoopbackServer {
    /// A new temporary directory for one test (`prefix` names it).
    static func makeDirectory(_ prefix: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Starts a server with its database in `directory/server`; port 0 picks a free one.
    static func start(in directory: String, port: Int = 0,
                      configure: (inout LedgerAppConfiguration) -> Void = { _ in }) throws -> LedgerApp {
        try TestServer(.live, dataDirectory: directory + "/server", port: port) {
            $0.http.eventLoops = 1
            configure(&$0)
        }.app
    }
}

/// A loopback server that can be stopped and started again on the same port and data, for
/// tests of going offline and coming back.
final class RestartableServer {
    let directory: String
    private(set) var app: LedgerApp?
    private(set) var port = 0

    init(_ prefix: String) throws {
        directory = try LoopbackServer.makeDirectory(prefix)
        try start()
    }

    /// Starts the server; after the first start, on the same port.
    func start() throws {
        let started = try LoopbackServer.start(in: directory, port: port)
        app = started
        port = started.port
    }

    func stop() {
        app?.stop()
        app = nil
    }

    /// Stops the server and deletes its directory.
    func remove() {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }
}
