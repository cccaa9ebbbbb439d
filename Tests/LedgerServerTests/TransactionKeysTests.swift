import Foundation
import Glibc
import LedgerModel
import LedgerServerTesting
import SQLiteKit
import XCTest
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStorageSQLite

/// The SQLite ledger's id index lives in memory since schema version 8 (`TransactionKeys`):
/// loaded at start, added to by the writer, each entry checked against its row. What must
/// hold: after a restart (clean or kill -9) every id is found again (replays 200, changed
/// replays 409, reserved reversal ids refused); an entry whose row went away reads as
/// absent; a second server on the same data folder is refused; `check` reports an id
/// held twice.
final class TransactionKeysTests: XCTestCase {
    private let now: Int64 = 1_764_770_000_000

    func testEveryIdIsFoundAgainAfterARestart() throws {
        try withTemporaryDataDirectory("keys") { configuration in
            let binary = try ServerProcess.binary()
            let dataDir = configuration.dataDirectory
            var server = try ServerProcess(binary: binary, dataDir: dataDir)
            var client = HTTPTestClient(port: server.port)
            let token = client.call("POST", "/v1/accounts", json: .obj(["handle": "mum", "displayName": "Mum"])).json["token"]!["secret"]!.stringValue!
            let other = client.call("POST", "/v1/accounts", json: .obj(["handle": "dad", "displayName": "Dad"])).json["token"]!["secret"]!.stringValue!
            let h = client.call("POST", "/v1/households", token: token, json: .obj(["name": "Home"])).json["id"]!.stringValue!
            let h2 = client.call("POST", "/v1/households", token: other, json: .obj(["name": "Other"])).json["id"]!.stringValue!
            let c = client.call("POST", "/v1/households/\(h)/children", token: token, json: .obj(["name": "Ada"])).json["id"]!.stringValue!
            let c2 = client.call("POST", "/v1/households/\(h2)/children", token: other, json: .obj(["name": "Bo"])).json["id"]!.stringValue!
            let post = "/v1/households/\(h)/children/\(c)/transactions"
            let ids = (0..<300).map { _ in UUID().uuidString.lowercased() }
            for (i, id) in ids.enumerated() {
                XCTAssertEqual(client.call("POST", post, token: token, json: .obj(["id": .string(id), "amountCents": .int(Int64(i + 1))])).status, 201)
            }
            // The same id in another household is another record.
            XCTAssertEqual(client.call("POST", "/v1/households/\(h2)/children/\(c2)/transactions", token: other,
                                       json: .obj(["id": .string(ids[0]), "amountCents": 5])).status, 201)
            let keyed = TestServer.request(base: "http://127.0.0.1:\(server.port)", "POST", post, token: token,
                                           json: .obj(["amountCents": 7]), rawBody: nil, headers: ["Idempotency-Key": "lunch-1"], timeout: 10)
            XCTAssertEqual(keyed.status, 201)
            let keyedId = keyed.json["transaction"]!["id"]!.stringValue!
            let reversal = client.call("POST", "/v1/households/\(h)/transactions/\(ids[1])/reversal", token: token)
            XCTAssertEqual(reversal.status, 201)
            let reversalId = reversal.json["id"]?.stringValue ?? reversal.json["transaction"]?["id"]?.stringValue
            XCTAssertNotNil(reversalId)
            let reserved = LedgerIDs.reversalID(of: LedgerIDs.parse(ids[2])!).lowercased
            let balance = client.call("GET", "/v1/households/\(h)/children/\(c)", token: token).json["balanceCents"]!.intValue!

            // A clean stop for the first restart, kill -9 for the second: the index is built
            // from the rows either way.
            for restart in 0..<2 {
                if restart == 0 {
                    let pid = server.process.processIdentifier
                    kill(pid, SIGTERM)
                    var status: Int32 = 0
                    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                } else {
                    server.kill9()
                }
                server = try ServerProcess(binary: binary, dataDir: dataDir)
                client = HTTPTestClient(port: server.port)
                for (i, id) in ids.enumerated() {
                    XCTAssertEqual(client.call("POST", post, token: token, json: .obj(["id": .string(id), "amountCents": .int(Int64(i + 1))])).status,
                                   200, "replay of \(id) after restart \(restart)")
                }
                let changed = client.call("POST", post, token: token, json: .obj(["id": .string(ids[3]), "amountCents": 999]))
                XCTAssertEqual(changed.status, 409)
                XCTAssertEqual(changed.json["code"]?.stringValue, "id_conflict")
                let replayKeyed = TestServer.request(base: "http://127.0.0.1:\(server.port)", "POST", post, token: token,
                                                     json: .obj(["amountCents": 7]), rawBody: nil, headers: ["Idempotency-Key": "lunch-1"],
                                                     timeout: 10)
                XCTAssertEqual(replayKeyed.status, 200)
                XCTAssertEqual(replayKeyed.json["transaction"]?["id"]?.stringValue, keyedId)
                XCTAssertEqual(client.call("POST", "/v1/households/\(h)/transactions/\(ids[1])/reversal", token: token).status, 200)
                XCTAssertEqual(client.call("GET", "/v1/households/\(h)/transactions/\(ids[5])", token: token).json["amountCents"]?.intValue, 6)
                if let reversalId {
                    XCTAssertEqual(client.call("GET", "/v1/households/\(h)/transactions/\(reversalId)", token: token)
                        .json["reversesId"]?.stringValue, ids[1])
                }
                // The id reserved for the reversal of ids[2] is refused for anything else.
                let squat = client.call("POST", post, token: token, json: .obj(["id": .string(reserved), "amountCents": 1]))
                XCTAssertEqual(squat.status, 409, "reserved reversal id after restart \(restart)")
                XCTAssertEqual(client.call("GET", "/v1/households/\(h)/children/\(c)", token: token).json["balanceCents"]?.intValue, balance)
                XCTAssertEqual(client.call("GET", "/v1/households/\(h2)/transactions/\(ids[0])", token: other).json["amountCents"]?.intValue, 5)
            }
            // New ids still go in, and the ledger checks out.
            XCTAssertEqual(client.call("POST", post, token: token, json: .obj(["id": .string(UUID().uuidString.lowercased()), "amountCents": 1])).status, 201)
            server.kill9()
            let report = try AdminCommands.check(LedgerAppConfiguration(dataDirectory: dataDir))
            XCTAssertTrue(report.ok, report.problems.joined(separator: "\n"))
        }
    }

    /// An entry whose insert was rolled back, or whose row number a later insert took,
    /// reads as absent; the id can then be written, once.
    func testAnEntryWhoseRowWentAwayReadsAsAbsent() throws {
        try withTemporaryDataDirectory("keys") { configuration in
            let (db, writer, storage) = try openSQLiteStorage(configuration.databasePath)
            defer { writer.stop() }
            let keys = storage.keys
            let now = self.now
            let (owner, _) = try storage.writeAndWait { try $0.createAccount(handle: "ann", displayName: "Ann", deviceName: "a", now: now) }
            let h = UUID().lowercased, c = UUID().lowercased
            _ = try storage.writeAndWait { tx in
                _ = try tx.createHousehold(id: h, name: "Home", currency: "EUR", owner: owner.id, ifAbsentOnly: true, now: now)
                _ = try tx.createChild(household: h, account: owner.id, id: c, name: "Kid", sortOrder: nil, now: now)
            }
            @Sendable func new(_ id: String, _ cents: Int64) -> NewTransaction {
                NewTransaction(id: id, childId: c, amountCents: cents, note: "", source: .api, createdAt: nil, reversesId: nil,
                               clientChosenId: true)
            }
            struct Refused: Error {}
            let gone = UUID().lowercased, next = UUID().lowercased
            // Inserted, then the job fails: the row is rolled back, its entry stays.
            XCTAssertThrowsError(try storage.writeAndWait { tx in
                _ = try tx.addTransaction(household: h, author: owner.id, new(gone, 5), now: now)
                throw Refused()
            })
            XCTAssertEqual(keys.count, 1)
            XCTAssertNil(try storage.read { try $0.transaction(household: h, id: gone) })
            // Another id takes the row number the rolled-back insert had.
            let first = try storage.writeAndWait { try $0.addTransaction(household: h, author: owner.id, new(next, 7), now: now) }
            XCTAssertTrue(first.saved)
            XCTAssertNil(try storage.read { try $0.transaction(household: h, id: gone) })
            XCTAssertNil(try storage.writeAndWait { try $0.transaction(household: h, id: gone) })
            XCTAssertEqual(try storage.read { try $0.transaction(household: h, id: next) }?.amountCents, 7)
            // The rolled-back id is free, once.
            XCTAssertTrue(try storage.writeAndWait { try $0.addTransaction(household: h, author: owner.id, new(gone, 5), now: now) }.saved)
            XCTAssertFalse(try storage.writeAndWait { try $0.addTransaction(household: h, author: owner.id, new(gone, 5), now: now) }.saved)
            XCTAssertThrowsError(try storage.writeAndWait { try $0.addTransaction(household: h, author: owner.id, new(gone, 6), now: now) })
            XCTAssertEqual(try db.queryOne("SELECT COUNT(*) FROM transactions")?.int(0), 2)   // (the writer is idle)
            // A fresh load finds the same rows.
            let reloaded = try TransactionKeys.load(db)
            XCTAssertEqual(reloaded.count, 2)
            let key = TransactionKeys.Key(reversalId: NewTransaction.reversalId(of: gone)!)
            XCTAssertEqual(reloaded.row(household: h, key: key), keys.row(household: h, key: key))
            XCTAssertNil(reloaded.row(household: UUID().lowercased, key: key))
        }
    }

    /// Version 8 drops the id index and keeps every row; the rows it kept load as keys.
    func testVersion8DropsTheIndexAndKeepsTheRows() throws {
        try withTemporaryDataDirectory("keys") { configuration in
            let path = configuration.databasePath
            let db = try SQLiteConnection(path: path)
            _ = try Migrator.migrate(db, Schema.migrations.filter { $0.version <= 7 })
            let store = SQLiteLedgerTransaction(db)
            let now = self.now
            // The account as version 7 stored it (`createAccount` also asks tables of later versions).
            let owner = AccountRecord(id: UUID().lowercased, handle: "ann", displayName: "Ann", createdAt: now)
            try store.insertAccount(owner)
            let h = UUID().lowercased, c = UUID().lowercased
            _ = try store.createHousehold(id: h, name: "Home", currency: "EUR", owner: owner.id, ifAbsentOnly: true, now: now)
            _ = try store.createChild(household: h, account: owner.id, id: c, name: "Kid", sortOrder: nil, now: now)
            let ids = (0..<20).map { _ in UUID().lowercased }
            // Rows as version 7 wrote them (the storage's statements today name columns of later
            // versions, such as a transaction's pot).
            for (i, id) in ids.enumerated() {
                try db.run("""
                    INSERT INTO transactions (id, household_key, child_id, amount_cents, note, source, created_at, recorded_at,
                                              author_account_id, reverses_id, seq, reversal_id)
                    VALUES (?1, \(Schema.ledgerKey(2)), ?3, ?4, '', 'api', ?5, ?5, ?6, NULL, ?4, ?7)
                    """, [.text(id), .text(h), .text(c), .integer(Int64(i + 1)), .integer(now), .text(owner.id),
                          TransactionKeys.Key(reversalId: NewTransaction.reversalId(of: id)!).stored])
            }
            try db.run("UPDATE children SET balance_cents = ? WHERE id = ?", [.integer(Int64((1...20).reduce(0, +))), .text(c)])
            let indexes = { try db.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'transactions'").map { $0.string(0) } }
            XCTAssertTrue(try indexes().contains("transactions_id"))
            XCTAssertEqual(try Migrator.migrate(db, Schema.migrations), Schema.migrations.map(\.version).filter { $0 > 7 })
            XCTAssertFalse(try indexes().contains("transactions_id"))
            XCTAssertEqual(try db.queryOne("SELECT COUNT(*) FROM transactions")?.int(0), 20)
            let keys = try TransactionKeys.load(db)
            XCTAssertEqual(keys.count, 20)
            let keyed = SQLiteLedgerTransaction(db, keys: keys)
            for (i, id) in ids.enumerated() {
                XCTAssertEqual(try keyed.transaction(household: h, id: id)?.amountCents, Int64(i + 1))
                XCTAssertEqual(try store.transaction(household: h, id: id)?.amountCents, Int64(i + 1), "without the index")
            }
            XCTAssertNil(try keyed.transaction(household: h, id: UUID().lowercased))
            let report = try AdminCommands.check(configuration)
            XCTAssertTrue(report.ok, report.problems.joined(separator: "\n"))
        }
    }

    /// Keys load as they are stored: UUIDs as 16 bytes, ids that are not UUIDs as text.
    /// A household's UUID keys stay in one dictionary while few and are split over 64 by
    /// bits of the key that vary (not the version's or the variant's) once many: every key
    /// is found before and after the split, a second insert of a key answers its old row,
    /// every shard takes a share of random version-5 keys, and a reservation for many
    /// splits at once.
    func testUUIDShardsHoldEveryKeyAndSplitWhenLarge() {
        var shards = TransactionKeys.UUIDShards()
        XCTAssertTrue(shards.isEmpty)
        XCTAssertNil(shards[TransactionKeys.UUIDKey(UUID())])
        shards.reserveCapacity(1_000)
        XCTAssertFalse(shards.isSplit)
        var keys: [TransactionKeys.UUIDKey] = []
        let total = TransactionKeys.UUIDShards.splitAt + 5_000
        for i in 0..<total {
            if i == TransactionKeys.UUIDShards.splitAt {
                XCTAssertFalse(shards.isSplit, "one dictionary up to splitAt keys")
                for (j, key) in keys.enumerated() where j % 97 == 0 { XCTAssertEqual(shards[key], Int64(j)) }
            }
            let key = TransactionKeys.UUIDKey(LedgerIDs.reversalID(of: UUID()))
            XCTAssertNil(shards.updateValue(Int64(i), forKey: key))
            keys.append(key)
        }
        XCTAssertTrue(shards.isSplit)
        XCTAssertFalse(shards.isEmpty)
        for (i, key) in keys.enumerated() where shards[key] != Int64(i) { XCTFail("key \(i) reads \(String(describing: shards[key]))") }
        XCTAssertEqual(shards.updateValue(-1, forKey: keys[7]), 7)
        XCTAssertEqual(shards[keys[7]], -1)
        var perShard = [Int](repeating: 0, count: TransactionKeys.UUIDShards.count)
        for key in keys { perShard[TransactionKeys.UUIDShards.shard(of: key)] += 1 }
        XCTAssertTrue(perShard.allSatisfy { $0 > total / TransactionKeys.UUIDShards.count / 2 }, "\(perShard)")

        var reserved = TransactionKeys.UUIDShards()
        reserved.reserveCapacity(100_000)
        XCTAssertTrue(reserved.isSplit, "a reservation past splitAt splits at once")
        XCTAssertNil(reserved.updateValue(1, forKey: keys[0]))
        XCTAssertEqual(reserved[keys[0]], 1)
    }

    func testKeysRoundTripTheStoredForm() throws {
        // What `load` makes of a stored value: its column type and bytes.
        func loaded(_ value: SQLiteValue) -> TransactionKeys.Key? {
            switch value {
            case .blob(let b): return b.withUnsafeBytes { TransactionKeys.Key(stored: .blob, $0) }
            case .text(let t): return Array(t.utf8).withUnsafeBytes { TransactionKeys.Key(stored: .text, $0) }
            case .integer: return TransactionKeys.Key(stored: .integer, UnsafeRawBufferPointer(start: nil, count: 0))
            case .real: return TransactionKeys.Key(stored: .real, UnsafeRawBufferPointer(start: nil, count: 0))
            case .null: return TransactionKeys.Key(stored: .null, UnsafeRawBufferPointer(start: nil, count: 0))
            }
        }
        let u = UUID().lowercased
        let k = TransactionKeys.Key(reversalId: u)
        XCTAssertEqual(k.stored, Schema.reversalKey(u))
        XCTAssertEqual(loaded(k.stored), k)
        let t = TransactionKeys.Key(reversalId: "not-a-uuid:legacy-7")
        XCTAssertEqual(t.stored, .text("not-a-uuid:legacy-7"))
        XCTAssertEqual(loaded(t.stored), t)
        XCTAssertNil(loaded(.integer(3)))
        XCTAssertNil(loaded(.blob([1, 2, 3])))
        // Upper- and lowercase spell one key.
        XCTAssertEqual(TransactionKeys.Key(reversalId: u.uppercased()), k)
    }

    func testASecondServerOnTheSameDataFolderIsRefused() throws {
        try withTemporaryDataDirectory("keys") { configuration in
            try TestServer.requireSQLite("the data-folder lock is the SQLite backend's")
            var c = configuration
            c.logging = false
            let first = try LedgerApp(configuration: c)
            XCTAssertThrowsError(try LedgerApp(configuration: c)) { error in
                XCTAssertTrue("\(error)".contains("another kidledger-server is serving the data folder"), "\(error)")
            }
            // Admin commands run beside it.
            XCTAssertTrue(try AdminCommands.check(c).ok)
            first.stop()
            let second = try LedgerApp(configuration: c)
            second.stop()
        }
    }

    func testCheckReportsAnIdHeldTwice() throws {
        try TestServer.requireSQLite("the id index of the SQLite backend")
        let server = try TestServer()
        let (_, token) = server.signup("mum")
        let h = server.household(token)
        let c = server.child(token, household: h)
        let id = UUID().lowercased
        XCTAssertEqual(server.call("POST", "/v1/households/\(h)/children/\(c)/transactions", token: token,
                                   json: .obj(["id": .string(id), "amountCents": 4])).status, 201)
        XCTAssertTrue(try server.check().ok)
        try server.execute("""
            INSERT INTO transactions (id, household_key, child_id, amount_cents, note, source, created_at, recorded_at,
                                      author_account_id, reverses_id, reversed_by_id, seq, reversal_id)
            SELECT id, household_key, child_id, 0, note, source, created_at, recorded_at, author_account_id, reverses_id,
                   reversed_by_id, seq, reversal_id FROM transactions WHERE id = ?
            """, [.text(id)])
        let report = try server.check()
        XCTAssertTrue(report.problems.contains { $0.contains("2 transactions of one household share the id \(id)") },
                      report.problems.joined(separator: "\n"))
        server.stop()
    }
}
