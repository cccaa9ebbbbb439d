import LedgerModel
@testable import LedgerServer
import SQLiteKit
import XCTest

/// The feed's direct encoder writes exactly what `Child.json` / `LedgerTransaction.json` serialize to.
final class SyncFeedEncoderTests: XCTestCase {
    func testMatchesRecordJSON() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try Migrator.migrate(db, Schema.migrations)
        let names = ["Ada", "Zoë \"the\" \\ kid", "tab\there", "line\nbreak", "\u{1}ctl", "😀 emoji"]
        let times: [Int64] = [0, 1, 951_782_400_000, 1_709_164_799_999, 1_700_000_000_123, 253_402_300_799_999, -1]
        for (i, name) in names.enumerated() {
            for (j, t) in times.enumerated() {
                let child = Child(id: UUID().lowercased, householdId: UUID().lowercased, name: name, sortOrder: Int64(i * 7 - 20),
                                  archived: j % 2 == 0, createdAt: t, modifiedAt: t + 1, modifiedBy: UUID().lowercased,
                                  changeTag: "v\(j)", balanceCents: [Int64.min, -1, 0, 9, Int64.max][j % 5])
                let row = SQLiteRow(values: [.text(child.id), .text(child.householdId), .text(child.name), .integer(child.sortOrder),
                                             .integer(child.archived ? 1 : 0), .integer(child.createdAt), .integer(child.modifiedAt),
                                             .text(child.modifiedBy), .text(child.changeTag), .integer(child.balanceCents)])
                var e = FeedEncoder(capacity: 0)
                e.child(row)
                XCTAssertEqual(String(decoding: e.bytes, as: UTF8.self), child.json.serializedString)

                let tx = LedgerTransaction(id: UUID().lowercased, householdId: child.householdId, childId: child.id,
                                           amountCents: Int64(j) - 3, note: name, source: .allowance, createdAt: t, recordedAt: t + 5,
                                           authorAccountId: child.modifiedBy, reversesId: j % 2 == 0 ? nil : UUID().lowercased,
                                           reversedById: j % 3 == 0 ? UUID().lowercased : nil)
                let txRow = SQLiteRow(values: [.text(tx.id), .text(tx.householdId), .text(tx.childId), .integer(tx.amountCents),
                                               .text(tx.note), .text(tx.source.rawValue), .integer(tx.createdAt), .integer(tx.recordedAt),
                                               .text(tx.authorAccountId), tx.reversesId.map { .text($0) } ?? .null,
                                               tx.reversedById.map { .text($0) } ?? .null])
                var f = FeedEncoder(capacity: 0)
                f.transaction(txRow)
                XCTAssertEqual(String(decoding: f.bytes, as: UTF8.self), tx.json.serializedString)
            }
        }
    }
}
