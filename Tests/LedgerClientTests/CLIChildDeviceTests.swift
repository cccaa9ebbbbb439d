import Foundation
import LedgerClient
import LedgerModel
import LedgerServer
import XCTest

/// `kidledger` with a child's device: a parent pairs it, the child asks, two parents approve
/// at once without syncing (paid once), a parent revokes it. Skipped when the executable was
/// not built next to the tests.
final class CLIChildDeviceTests: XCTestCase {
    private var app: LedgerApp!
    private var directory: String!

    private var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("kidledger")
    }

    override func setUpWithError() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: executable.path), "kidledger not built")
        directory = try LoopbackServer.makeDirectory("kidledger-cli-child")
        app = try LoopbackServer.start(in: directory)
    }

    override func tearDown() {
        app?.stop()
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    private func kl(_ phone: String, _ args: String...) throws -> (status: Int32, out: String, err: String) {
        let r = try KidledgerRunner.run(["--store", directory + "/\(phone).store", "--server", "http://127.0.0.1:\(app.port)"] + args,
                                        in: directory)
        return (r.status, r.out, r.err)
    }

    private func ok(_ phone: String, _ args: String...) throws -> String {
        let r = try KidledgerRunner.run(["--store", directory + "/\(phone).store", "--server", "http://127.0.0.1:\(app.port)"] + args,
                                        in: directory)
        XCTAssertEqual(r.status, 0, "\(args): \(r.err)")
        return r.out
    }

    private func json(_ phone: String, _ args: String...) throws -> JSONValue {
        let r = try KidledgerRunner.run(["--store", directory + "/\(phone).store", "--server", "http://127.0.0.1:\(app.port)", "--json"] + args,
                                        in: directory)
        XCTAssertEqual(r.status, 0, "\(args): \(r.err)")
        return try JSONValue.parse(r.out)
    }

    func testPairAskApproveTwiceOfflineAndRevokeFromTheCommandLine() throws {
        _ = try ok("mum", "signup", "--handle", "mum", "--name", "Mum")
        _ = try ok("mum", "child", "add", "Ada")
        _ = try ok("mum", "child", "add", "Bo")
        _ = try ok("mum", "add", "Ada", "10")
        _ = try ok("mum", "share", "enable", "--yes")
        _ = try ok("dad", "signup", "--handle", "dad", "--name", "Dad")
        _ = try ok("mum", "share", "invite", "dad")
        let invitation = try XCTUnwrap(try json("dad", "invitations").arrayValue?.first?["id"]?.stringValue)
        _ = try ok("dad", "join", invitation, "--replace-local")

        let pairing = try json("mum", "child", "pair", "Ada", "--device-name", "Ada's tablet")
        let code = try XCTUnwrap(pairing["code"]?.stringValue)
        let redeemed = try json("ada", "child-redeem", code)
        XCTAssertEqual(redeemed["name"], .string("Ada"))
        XCTAssertEqual(redeemed["balanceCents"], .int(1_000))
        XCTAssertTrue(try ok("ada", "status").contains("this device is Ada's: balance 10.00"))
        XCTAssertEqual(try ok("ada", "balance"), "Ada\t10.00\n", "only Ada on her device")
        let refused = try kl("ada", "add", "Ada", "100")
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.err.contains("paired to a child"), refused.err)
        XCTAssertEqual(try kl("ada", "child", "add", "Cy").status, 1)
        XCTAssertEqual(try kl("ada", "request", "spend", "4.50").status, 2, "usage: AMOUNT and NOTE")

        let asked = try json("ada", "request", "spend", "4.50", "book")
        let id = try XCTUnwrap(asked["id"]?.stringValue)
        XCTAssertEqual(asked["isPending"], .bool(false), "uploaded at once")
        let listed = try json("mum", "requests")
        XCTAssertEqual(listed.arrayValue?.compactMap { $0["id"]?.stringValue }, [id])
        let status = try ok("mum", "status")
        XCTAssertTrue(status.contains("1 request waits for a decision"), status)
        _ = try ok("dad", "sync")

        // Both parents approve before either syncs: Mum as asked, Dad 5.00.
        XCTAssertTrue(try ok("mum", "approve", String(id.prefix(8)), "--no-sync").contains("approved: spend 4.50"))
        XCTAssertTrue(try ok("dad", "approve", id, "5.00", "--no-sync").contains("approved: spend 5.00"))
        _ = try ok("mum", "sync")
        _ = try ok("dad", "sync")
        _ = try ok("mum", "sync")
        _ = try ok("ada", "sync")
        for phone in ["mum", "dad", "ada"] {
            let ada = try json(phone, "balance").arrayValue?.first { $0["name"] == .string("Ada") }
            XCTAssertEqual(ada?["balanceCents"], .int(550), "\(phone): paid once, as the first approval said")
        }
        let all = try json("ada", "requests", "--all")
        XCTAssertEqual(all.arrayValue?.first?["status"], .string("approved"))
        XCTAssertEqual(try kl("mum", "decline", id).status, 1, "an approved request cannot be declined")
        // A parent may ask on a child's behalf, and decline with a note the child's device shows.
        XCTAssertEqual(try kl("mum", "request", "chore", "2", "bins").status, 2, "a parent's device names the child")
        let bins = try json("mum", "request", "chore", "2", "bins", "--child", "Bo")
        let binsId = try XCTUnwrap(bins["id"]?.stringValue)
        XCTAssertTrue(try ok("dad", "decline", binsId, "--note", "not this week").contains("declined: chore 2.00 \"bins\" — not this week"))
        _ = try ok("mum", "sync")
        let declined = try json("mum", "requests", "--all").arrayValue?.first { $0["id"]?.stringValue == binsId }
        XCTAssertEqual(declined?["status"], .string("declined"))
        XCTAssertEqual(declined?["decisionNote"], .string("not this week"))
        XCTAssertEqual(try json("ada", "requests", "--all").arrayValue?.count, 1, "Bo's request is not on Ada's device")

        let devices = try json("mum", "child", "devices", "Ada")
        let tokenId = try XCTUnwrap(devices.arrayValue?.first?["id"]?.stringValue)
        XCTAssertEqual(devices.arrayValue?.first?["name"], .string("Ada's tablet"))
        _ = try ok("mum", "child", "revoke", "Ada", tokenId)
        let signedOut = try kl("ada", "sync")
        XCTAssertEqual(signedOut.status, 1)
        XCTAssertTrue(signedOut.err.contains("not signed in: this child's device was unpaired"), signedOut.err)
        XCTAssertEqual(signedOut.err.filter { $0 == "\n" }.count, 1, "one line")
        XCTAssertEqual(try json("mum", "child", "devices", "Ada").arrayValue?.count, 0)
    }
}
