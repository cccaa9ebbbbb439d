import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import XCTest

/// The feed's direct encoder writes exactly what `Child.json`, `LedgerTransaction.json` and
/// `HouseholdRecord.json` serialize to, and a page's body is the feed's JSON shape.
final class SyncFeedEncoderTests: XCTestCase {
    private let names = ["Ada", "Zoë \"the\" \\ kid", "tab\there", "line\nbreak", "\u{1}ctl", "😀 emoji"]
    private let times: [Int64] = [0, 1, 951_782_400_000, 1_709_164_799_999, 1_700_000_000_123, 253_402_300_799_999, -1]

    private func child(_ i: Int, _ j: Int) -> Child {
        let t = times[j]
        return Child(id: UUID().lowercased, householdId: UUID().lowercased, name: names[i], sortOrder: Int64(i * 7 - 20),
                     archived: j % 2 == 0, createdAt: t, modifiedAt: t + 1, modifiedBy: UUID().lowercased,
                     changeTag: "v\(j)", balanceCents: [Int64.min, -1, 0, 9, Int64.max][j % 5])
    }

    private func transaction(_ i: Int, _ j: Int, of child: Child) -> LedgerTransaction {
        let t = times[j]
        return LedgerTransaction(id: UUID().lowercased, householdId: child.householdId, childId: child.id,
                                 amountCents: Int64(j) - 3, note: names[i], source: TransactionSource.allCases[j % TransactionSource.allCases.count],
                                 createdAt: t, recordedAt: t + 5, authorAccountId: child.modifiedBy,
                                 reversesId: j % 2 == 0 ? nil : UUID().lowercased, reversedById: j % 3 == 0 ? UUID().lowercased : nil)
    }

    func testMatchesRecordJSON() {
        for i in names.indices {
            for j in times.indices {
                let c = child(i, j)
                var e = FeedEncoder(capacity: 0)
                withUnsafePointer(to: c) { e.child($0) }
                XCTAssertEqual(String(decoding: e.bytes, as: UTF8.self), c.json.serializedString)

                let tx = transaction(i, j, of: c)
                var f = FeedEncoder(capacity: 0)
                withUnsafePointer(to: tx) { f.transaction($0) }
                XCTAssertEqual(String(decoding: f.bytes, as: UTF8.self), tx.json.serializedString)

                let h = HouseholdRecord(id: c.householdId, name: names[i], currency: "EUR", ownerAccountId: c.modifiedBy,
                                        createdAt: times[j], modifiedAt: times[j] + 2, changeTag: "v\(i)", shared: j % 2 == 1)
                for m in [Membership(householdId: h.id, role: .owner, permission: .readWrite, ownerAccountId: h.ownerAccountId),
                          Membership(householdId: h.id, role: .participant, permission: .readOnly, ownerAccountId: h.ownerAccountId)] {
                    var g = FeedEncoder(capacity: 0)
                    g.household(h, m)
                    XCTAssertEqual(String(decoding: g.bytes, as: UTF8.self), h.json(m).serializedString)
                }
            }
        }
    }

    func testPageBodyIsTheFeedsJSON() throws {
        let kids = [child(0, 1), child(1, 2)]
        let txs = [transaction(2, 3, of: kids[0]), transaction(3, 4, of: kids[1]), transaction(5, 6, of: kids[0])]
        let h = HouseholdRecord(id: kids[0].householdId, name: "Home", currency: "EUR", ownerAccountId: kids[0].modifiedBy,
                                createdAt: 1, modifiedAt: 2, changeTag: "v2", shared: true)
        let m = Membership(householdId: h.id, role: .participant, permission: .readWrite, ownerAccountId: h.ownerAccountId)
        let token = SyncPosition(household: h.id, incarnation: 7, seq: 42)
        let zone = try ScheduleTimeZone(identifier: "Europe/Zurich")
        let plan = ScheduleRecord(id: kids[0].id, householdId: h.id, childId: kids[0].id, kind: .allowance, amountCents: 500,
                                  rateBasisPoints: 0, note: "weekly \"pocket\" money",
                                  state: ScheduleState(terms: ScheduleTerms(firstDate: LocalDate("2026-12-04")!, cadence: .weekly,
                                                                            timeZone: zone)),
                                  deleted: true, createdAt: 1, modifiedAt: 2, modifiedBy: h.ownerAccountId, changeTag: "v3")
        for (children, transactions, schedules) in [(kids, txs, [plan]), ([], [], [])] {
            var page = FeedPage(household: h, membership: m, children: children, transactions: transactions, next: token,
                                since: 3, moreComing: !children.isEmpty)
            page.schedules = schedules
            let expected: JSONValue = .object([
                "household": h.json(m), "children": .array(children.map(\.json)), "transactions": .array(transactions.map(\.json)),
                "schedules": .array(schedules.map(\.json)), "requests": .array([]),
                "access": m.accessJSON, "nextToken": .string(token.token), "moreComing": .bool(!children.isEmpty),
            ])
            XCTAssertEqual(String(decoding: page.body, as: UTF8.self), expected.serializedString)
        }
    }

    /// A push's answer, written in one pass, is the bytes of `{"results": results.map(\.json)}`
    /// for every kind of outcome, ids that need escapes included.
    func testPushAnswerMatchesResultJSON() {
        let c = child(1, 2)
        let tx = transaction(2, 3, of: c)
        let outcomes: [PushResult.Outcome] = [
            .saved(changeTag: nil), .saved(changeTag: "v7"), .unchanged(changeTag: nil), .unchanged(changeTag: "tag \"q\""),
            .childConflict(c), .transactionConflict(tx), .refused(.childNotFound), .refused(.transactionNotFound),
            .refused(.tooManyChildren(limit: 3)), .invalid(code: "clock_skew", fields: [:]),
            .invalid(code: "validation_failed", fields: ["note": "too long", "amountCents": "must not be 0"]),
        ]
        var results: [PushResult] = []
        for (i, outcome) in outcomes.enumerated() {
            for id in [UUID().lowercased, names[i % names.count], ""] {
                results.append(PushResult(kind: i % 2 == 0 ? .transaction : .child, id: id, outcome: outcome))
            }
        }
        for n in [0, 1, results.count] {
            let some = Array(results.prefix(n))
            XCTAssertEqual(String(decoding: PushResult.answerBody(some), as: UTF8.self),
                           JSONValue.object(["results": .array(some.map(\.json))]).serializedString)
        }
    }
}
