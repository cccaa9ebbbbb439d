import Foundation
import LedgerModel
import LedgerServer
import XCTest

/// The `kidledger` executable as a user drives it: two store files as two phones against a
/// real server on loopback. Skipped when the executable was not built next to the tests.
final class CLITests: XCTestCase {
    private var app: LedgerApp!
    private var directory: String!

    private var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("kidledger")
    }

    override func setUpWithError() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: executable.path), "kidledger not built")
        directory = try LoopbackServer.makeDirectory("kidledger-cli")
        app = try LoopbackServer.start(in: directory)
    }

    override func tearDown() {
        app?.stop()
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    struct Run { var status: Int32; var out: String; var err: String }

    /// Runs `kidledger --store <phone>.store [--server URL] args…` in `directory`.
    @discardableResult
    private func kl(_ phone: String, _ args: String..., server: Bool = true) throws -> Run {
        try kl(phone, args, server: server)
    }

    private func kl(_ phone: String, _ args: [String], server: Bool = true) throws -> Run {
        let process = Process()
        process.executableURL = executable
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        var all = ["--store", directory + "/\(phone).store"]
        if server { all += ["--server", "http://127.0.0.1:\(app.port)"] }
        process.arguments = all + args
        var env = ProcessInfo.processInfo.environment
        env["KIDLEDGER_STORE"] = nil; env["KIDLEDGER_SERVER"] = nil
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, out: String(decoding: o, as: UTF8.self), err: String(decoding: e, as: UTF8.self))
    }

    private func json(_ run: Run) throws -> JSONValue {
        XCTAssertEqual(run.status, 0, run.err)
        return try JSONValue.parse(run.out)
    }

    private func assertOneLineError(_ run: Run, contains text: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertNotEqual(run.status, 0, file: file, line: line)
        XCTAssertEqual(run.out, "", file: file, line: line)
        XCTAssertEqual(run.err.filter { $0 == "\n" }.count, 1, "one line: \(run.err)", file: file, line: line)
        XCTAssertTrue(run.err.contains(text), "\(run.err) lacks \(text)", file: file, line: line)
    }

    func testOfflineLedgerSharedJoinedAndFrozenThroughTheCommandLine() throws {
        // Built with no server at all.
        XCTAssertEqual(try kl("mum", "child", "add", "Ann", server: false).status, 0)
        XCTAssertEqual(try kl("mum", "add", "Ann", "5.25", "--note", "allowance", server: false).status, 0)
        let children = try json(try kl("mum", "--json", "children", server: false))
        XCTAssertEqual(children.arrayValue?.count, 1)
        XCTAssertEqual(Set(children.arrayValue?.first?.objectValue?.keys ?? []), ["id", "name", "archived", "balanceCents"])
        XCTAssertEqual(children.arrayValue?.first?["balanceCents"]?.intValue, 525)

        for bad in ["5.255", "-1", "1e3", "abc", "0"] {
            assertOneLineError(try kl("mum", "add", "Ann", bad, server: false), contains: bad == "0" ? "more than zero" : "'\(bad)'")
        }
        assertOneLineError(try kl("mum", "add", "Nobody", "5", server: false), contains: "no child named")

        XCTAssertEqual(try kl("mum", "signup", "--handle", "mum", "--name", "Mum").status, 0)
        let localSync = try kl("mum", "sync")
        XCTAssertTrue(localSync.out.contains("local only"), localSync.out)
        // A preview is not a failure: it says what would be uploaded and changes nothing.
        let preview = try kl("mum", "share", "enable")
        XCTAssertEqual(preview.status, 0, preview.err)
        XCTAssertTrue(preview.out.contains("1 child and 1 transaction;"), preview.out)
        XCTAssertEqual(try json(try kl("mum", "--json", "status"))["state"], .string("synced"))
        let synced = try json(try kl("mum", "--json", "status"))
        XCTAssertEqual(Set(synced.objectValue?.keys ?? []), ["state", "pending", "reason"])
        XCTAssertEqual(synced["state"], .string("synced"))
        XCTAssertEqual(synced["pending"], .int(0))
        XCTAssertEqual(synced["reason"], .null)
        XCTAssertEqual(try json(try kl("mum", "--json", "share", "enable", "--yes"))["shared"], .bool(true))

        // The spouse joins; a ledger of their own is kept unless replaced (with an export).
        XCTAssertEqual(try kl("dad", "signup", "--handle", "dad", "--name", "Dad").status, 0)
        XCTAssertEqual(try kl("dad", "child", "add", "Zed").status, 0)
        XCTAssertEqual(try kl("mum", "share", "invite", "dad").status, 0)
        let invitations = try json(try kl("dad", "--json", "invitations"))
        XCTAssertEqual(Set(invitations.arrayValue?.first?.objectValue?.keys ?? []), ["id", "householdName", "permission"])
        let id = try XCTUnwrap(invitations.arrayValue?.first?["id"]?.stringValue)
        assertOneLineError(try kl("dad", "join", id), contains: "--replace-local")
        let joined = try kl("dad", "join", id, "--replace-local")
        XCTAssertEqual(joined.status, 0, joined.err)
        let exportLine = try XCTUnwrap(joined.out.split(separator: "\n").first { $0.contains("exported to") })
        XCTAssertTrue(FileManager.default.fileExists(atPath: String(exportLine.split(separator: " ").last!)))
        XCTAssertEqual(try json(try kl("dad", "--json", "children")).arrayValue?.first?["balanceCents"]?.intValue, 525)

        // An unknown handle is only that call's failure.
        assertOneLineError(try kl("mum", "share", "invite", "nobody"), contains: "unknown_handle")
        XCTAssertEqual(try json(try kl("mum", "--json", "status"))["state"], .string("synced"))

        // Revoked: frozen with a reason, nothing deleted.
        XCTAssertEqual(try kl("mum", "share", "revoke", "dad").status, 0)
        _ = try kl("dad", "sync")
        let status = try json(try kl("dad", "--json", "status"))
        XCTAssertEqual(status["state"], .string("attentionRequired"))
        XCTAssertEqual(status["reason"], .string("accessRevoked"))
        assertOneLineError(try kl("dad", "add", "Ann", "1"), contains: "revoked")
        XCTAssertEqual(try json(try kl("dad", "--json", "children")).arrayValue?.first?["balanceCents"]?.intValue, 525)

        // Unreachable server: a one-line offline message.
        app.stop()
        assertOneLineError(try kl("mum", "sync"), contains: "offline")
        app = nil
    }

    func testUsageErrorsOpenNoStore() throws {
        for args in [["add"], ["add", "Ann"], ["frobnicate"], ["child"], ["share", "enable", "extra"], ["--bogus", "children"], []] {
            let run = try kl("never", args, server: false)
            XCTAssertEqual(run.status, 2, "\(args): \(run.err)")
        }
        // Without --store either: nothing appears in the working folder.
        let process = Process()
        process.executableURL = executable
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.arguments = ["add"]
        process.standardError = Pipe()
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 2)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0 != "server" }, [])
    }

    func testTokenIsKeptOutsideTheStoreAndStatusRechecksAnOfflineServer() throws {
        XCTAssertEqual(try kl("mum", "signup", "--handle", "mum", "--name", "Mum").status, 0)
        let tokenFile = directory + "/mum.store.token"
        let token = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(token.hasPrefix("kl_"), token)
        let mode = try FileManager.default.attributesOfItem(atPath: tokenFile)[.posixPermissions] as? NSNumber
        XCTAssertEqual(mode?.intValue, 0o600)
        XCTAssertNil(try Data(contentsOf: URL(fileURLWithPath: directory + "/mum.store")).range(of: Data(token.utf8)))

        XCTAssertEqual(try kl("mum", "child", "add", "Ann").status, 0)
        XCTAssertEqual(try kl("mum", "share", "enable", "--yes").status, 0)
        let port = app.port
        app.stop()
        XCTAssertEqual(try kl("mum", "add", "Ann", "1").status, 0, "a mutation works offline")
        XCTAssertEqual(try json(try kl("mum", "--json", "status"))["state"], .string("offline"))
        let offline = try kl("mum", "status")
        XCTAssertTrue(offline.out.contains("offline since"), offline.out)
        app = try LoopbackServer.start(in: directory, port: port)
        // The server is back: status finds out instead of repeating "offline".
        let back = try json(try kl("mum", "--json", "status"))
        XCTAssertEqual(back["state"], .string("synced"))
        XCTAssertEqual(back["pending"], .int(0))
    }

    func testSyncWatchPrintsChangesAsTheyArrive() throws {
        XCTAssertEqual(try kl("mum", "signup", "--handle", "mum", "--name", "Mum").status, 0)
        XCTAssertEqual(try kl("mum", "child", "add", "Ann").status, 0)
        XCTAssertEqual(try kl("mum", "share", "enable", "--yes").status, 0)
        XCTAssertEqual(try kl("dad", "signup", "--handle", "dad", "--name", "Dad").status, 0)
        XCTAssertEqual(try kl("mum", "share", "invite", "dad").status, 0)
        let id = try XCTUnwrap(try json(try kl("dad", "--json", "invitations")).arrayValue?.first?["id"]?.stringValue)
        XCTAssertEqual(try kl("dad", "join", id).status, 0)

        let watch = Process()
        watch.executableURL = executable
        watch.arguments = ["--store", directory + "/dad.store", "--json", "sync", "--watch"]
        let out = Pipe()
        watch.standardOutput = out
        watch.standardError = FileHandle.nullDevice
        try watch.run()
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(try kl("mum", "add", "Ann", "2.50").status, 0)
        Thread.sleep(forTimeInterval: 1.5)
        watch.terminate()
        watch.waitUntilExit()
        let lines = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n")
        let reports = try lines.map { try JSONValue.parse(String($0)) }
        XCTAssertTrue(reports.contains { ($0["pulledTransactions"]?.intValue ?? 0) > 0 }, "\(lines)")
        XCTAssertEqual(try json(try kl("dad", "--json", "children")).arrayValue?.first?["balanceCents"]?.intValue, 250)
        assertOneLineError(try kl("mum", "leave"), contains: "`kidledger share stop`")
    }

    func testAChildIsNamedInAnyCaseOrByItsId() throws {
        let added = try json(try kl("kid", "--json", "child", "add", "Ann", server: false))
        let id = try XCTUnwrap(added["id"]?.stringValue)
        XCTAssertEqual(try kl("kid", "add", "ANN", "2", server: false).status, 0)
        XCTAssertEqual(try kl("kid", "take", id.uppercased(), "0.50", server: false).status, 0)
        XCTAssertEqual(try json(try kl("kid", "--json", "children", server: false)).arrayValue?.first?["balanceCents"]?.intValue, 150)
        assertOneLineError(try kl("kid", "undo", "Bob", server: false), contains: "no child named or with id 'Bob'")
    }

    func testHelpOpensNoStore() throws {
        let run = try kl("never", "help", server: false)
        XCTAssertEqual(run.status, 0)
        XCTAssertTrue(run.out.contains("usage: kidledger"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/never.store"))
    }
}
