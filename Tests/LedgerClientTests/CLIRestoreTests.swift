import Foundation
import LedgerModel
import LedgerServer
import XCTest

/// The story through `kidledger`, as an operator and two parents would live it: a
/// backup, writes on both phones, the backup restored; both phones sync and the server holds
/// everything again; neither says synced before. Over SQLite, and over PostgreSQL with
/// scripts/test-postgres.sh. Skipped when the executable was not built next to the tests.
final class CLIRestoreTests: XCTestCase {
    private var server: RewindableServer!

    override func setUpWithError() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: KidledgerRunner.executable.path), "kidledger not built")
        server = try RewindableServer("kidledger-cli-restore")
    }

    override func tearDown() {
        server?.remove()
        server = nil
    }

    @discardableResult
    private func kl(_ phone: String, _ args: String...) throws -> JSONValue {
        let r = try KidledgerRunner.run(["--store", server.directory + "/\(phone).store", "--server", server.url.absoluteString, "--json"] + args,
                                        environment: ["KIDLEDGER_NO_AUTOSYNC": "1"])
        XCTAssertEqual(r.status, 0, "kidledger \(args): \(r.err)")
        return (try? JSONValue.parse(r.out)) ?? .null
    }

    private func balance(_ phone: String) throws -> Int64? {
        try kl(phone, "children").arrayValue?.first?["balanceCents"]?.intValue
    }

    func testBothPhonesHealTheRestoredServer() throws {
        try kl("mum", "signup", "--handle", "mum", "--name", "Mum")
        try kl("mum", "child", "add", "Ann")
        try kl("mum", "add", "Ann", "5.00")
        try kl("mum", "share", "enable", "--yes")
        try kl("dad", "signup", "--handle", "dad", "--name", "Dad")
        try kl("mum", "share", "invite", "dad")
        let invitation = try XCTUnwrap(try kl("dad", "invitations").arrayValue?.first?["id"]?.stringValue)
        try kl("dad", "join", invitation)
        try kl("mum", "sync")
        let backup = try server.backup("backup")

        try kl("mum", "add", "Ann", "1.11")
        try kl("dad", "take", "Ann", "0.22")
        for p in ["mum", "dad", "mum"] { try kl(p, "sync") }
        XCTAssertEqual(try balance("mum"), 589)
        XCTAssertEqual(try balance("dad"), 589)

        server.stop()
        try server.restore(backup)
        try server.start()

        try kl("mum", "sync")
        let waiting = try kl("mum", "status")
        XCTAssertEqual(waiting["state"], .string("reconciling"), "\(waiting)")
        XCTAssertEqual(waiting["waiting"], .int(1))
        try kl("dad", "sync")
        try kl("mum", "sync")
        for p in ["mum", "dad"] {
            XCTAssertEqual(try kl(p, "status")["state"], .string("synced"))
            XCTAssertEqual(try balance(p), 589)
        }
        // A third device sees what the phones see.
        try kl("mum2", "login", "--token", try XCTUnwrap(tokenOf("mum")))
        let households = try kl("mum2", "households")
        try kl("mum2", "use", try XCTUnwrap(households.arrayValue?.first?["id"]?.stringValue))
        XCTAssertEqual(try balance("mum2"), 589)
        let history = try kl("mum2", "history", "Ann").arrayValue ?? []
        XCTAssertEqual(history.compactMap { $0["amountCents"]?.intValue }.sorted(), [-22, 111, 500])
    }

    /// The bearer token a phone's store holds (the CLI keeps it in `<store>.token`).
    private func tokenOf(_ phone: String) throws -> String? {
        try String(contentsOfFile: server.directory + "/\(phone).store.token", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
