import Foundation
import LedgerModel
import SQLiteKit
import XCTest
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStorageSQLite

/// Since schema version 9 the household's list (all children, newest first) has no index
/// of its own: it merges its children's lists. Pages of any size, children taking turns
/// (an archived one and one without transactions among them), reversals and another
/// household's rows between them: the pages are the household's rows in the order they
/// were recorded, newest first, each once.
final class HouseholdListTests: XCTestCase {
    private func uuid() -> String { UUID().uuidString.lowercased() }

    func testTheHouseholdListMergesItsChildrensLists() throws {
        try withTemporaryDataDirectory("household-list") { configuration in
            let db = try SQLiteConnection(path: configuration.databasePath)
            _ = try Migrator.migrate(db, Schema.migrations)
            let indexes = try db.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'transactions'").map { $0.string(0) }
            XCTAssertFalse(indexes.contains("transactions_household"))
            let store = SQLiteLedgerTransaction(db, keys: try TransactionKeys.load(db))
            let (owner, _) = try store.createAccount(handle: "ann", displayName: "Ann", deviceName: "a", now: 1)
            let (h, other) = (uuid(), uuid())
            for id in [h, other] {
                _ = try store.createHousehold(id: id, name: "Home", currency: "EUR", owner: owner.id, ifAbsentOnly: true, now: 1)
            }
            let kids = (0..<4).map { _ in uuid() }
            for (i, kid) in kids.enumerated() {
                _ = try store.createChild(household: h, account: owner.id, id: kid, name: "Kid \(i)", sortOrder: nil, now: 1)
            }
            let otherKid = uuid()
            _ = try store.createChild(household: other, account: owner.id, id: otherKid, name: "Other", sortOrder: nil, now: 1)
            func add(_ household: String, _ child: String, _ cents: Int64) throws -> String {
                let id = uuid()
                XCTAssertTrue(try store.addTransaction(household: household, author: owner.id, NewTransaction(
                    id: id, childId: child, amountCents: cents, note: "", source: .api, createdAt: nil, reversesId: nil,
                    clientChosenId: true), now: 2).saved)
                return id
            }
            // Kids 0–2 take irregular turns, kid 3 has none; the other household writes between them.
            var recorded: [String] = []
            for i in 0..<40 {
                recorded.append(try add(h, kids[[0, 1, 0, 2, 2, 2, 1, 0][i % 8]], Int64(i + 1)))
                if i % 5 == 0 { _ = try add(other, otherKid, 1) }
            }
            recorded.append(try store.reverse(household: h, author: owner.id, transaction: recorded[3], now: 3).transaction.id)
            _ = try store.updateChild(household: h, account: owner.id, id: kids[2], matches: { _ in true }, name: nil,
                                      sortOrder: nil, archived: true, now: 4)
            let expected = Array(recorded.reversed())

            func pages(_ household: String, child: String? = nil, size: Int) throws -> [[String]] {
                var out: [[String]] = [], before: Int64? = nil
                repeat {
                    let page = try store.transactions(household: household, child: child, before: before, limit: size)
                    out.append(page.items.map(\.id))
                    before = page.next
                } while before != nil
                return out
            }
            for size in [1, 2, 3, 4, 7, 40, 41, 42, 100] {
                let got = try pages(h, size: size)
                XCTAssertEqual(got.flatMap { $0 }, expected, "pages of \(size)")
                XCTAssertTrue(got.dropLast().allSatisfy { $0.count == size }, "full pages of \(size)")
                XCTAssertEqual(try pages(h, child: kids[1], size: size).flatMap { $0 },
                               try store.transactions(household: h, child: kids[1], before: nil, limit: 100).items.map(\.id))
            }
            XCTAssertEqual(try pages(other, size: 3).flatMap { $0 }.count, 8)
            XCTAssertEqual(try pages(h, child: kids[3], size: 5), [[]])
            let empty = uuid()
            _ = try store.createHousehold(id: empty, name: "Empty", currency: "EUR", owner: owner.id, ifAbsentOnly: true, now: 1)
            XCTAssertEqual(try pages(empty, size: 5), [[]])
        }
    }
}
