import Foundation
@testable import LedgerCore
import LedgerModel
import XCTest

/// What a group commit's merged changes keep, with and without the authors push wakes need,
/// and the default pots' ids the server remembers.
final class StorageCommitMergeTests: XCTestCase {
    private func write(_ households: Set<String>, by author: String?) -> StorageCommit {
        var c = StorageCommit(touched: households, writes: 1)
        c.author = author
        return c
    }

    func testMergedWritesKeepEveryHouseholdAndWhoMadeItsChanges() {
        var c = StorageCommit()
        c.merge(write(["h1"], by: "t1"))
        c.merge(write(["h1"], by: "t1"))
        c.merge(write(["h2"], by: "t1"))
        c.merge(write(["h2"], by: "t2"))
        c.merge(write(["h3"], by: nil))
        XCTAssertEqual(c.touched, ["h1", "h2", "h3"])
        XCTAssertEqual(c.writes, 5)
        XCTAssertEqual(c.author(of: "h1"), "t1")
        XCTAssertNil(c.author(of: "h2"), "two devices changed it: every device is woken")
        XCTAssertNil(c.author(of: "h3"))
    }

    func testWithoutAuthorsTheSameHouseholdsAndWritesAreKept() {
        var with = StorageCommit(), without = StorageCommit()
        let writes = [write(["h1"], by: "t1"), write(["h1"], by: "t2"), write(["h2", "h1"], by: "t1"),
                      write(["h1"], by: "t1"), write([], by: "t3"), write(["h3"], by: "t3")]
        for w in writes {
            with.merge(w)
            without.merge(w, authors: false)
        }
        XCTAssertEqual(without.touched, ["h1", "h2", "h3"])
        XCTAssertEqual(without.touched, with.touched)
        XCTAssertEqual(without.writes, with.writes)
        XCTAssertTrue(without.authors.isEmpty)
        XCTAssertEqual(with.author(of: "h3"), "t3")
        XCTAssertNil(with.author(of: "h1"))
    }

    func testRevokedTokensAndWakesAreAddedUp() {
        var c = StorageCommit()
        var a = write(["h1"], by: nil)
        a.revokedTokens = ["x"]
        a.wakesQueued = 2
        var b = write(["h1"], by: nil)
        b.revokedTokens = ["y"]
        b.wakesQueued = 1
        c.merge(a, authors: false)
        c.merge(b, authors: false)
        XCTAssertEqual(c.revokedTokens, ["x", "y"])
        XCTAssertEqual(c.wakesQueued, 3)
        XCTAssertEqual(c.touched, ["h1"])
    }

    func testTheDefaultPotIdIsTheUUIDv5OfItsChildEveryTime() {
        // More children than the server remembers: the ids stay right when it starts again.
        for _ in 0..<5000 {
            let child = UUID()
            let expected = ScheduleIDs.defaultPot(childId: child).lowercased
            XCTAssertEqual(PotRecord.defaultId(child: child.lowercased), expected)
            XCTAssertEqual(PotRecord.defaultId(child: child.lowercased), expected)
        }
        let child = UUID().lowercased
        XCTAssertEqual(PotRecord.defaultId(child: child.uppercased()), PotRecord.defaultId(child: child),
                       "any case of a child's id names its pot as before")
        XCTAssertNil(PotRecord.defaultId(child: "not-a-uuid"))
        XCTAssertNil(PotRecord.defaultId(child: "not-a-uuid"))
        let t = LedgerTransaction(id: UUID().lowercased, householdId: "h", childId: child, amountCents: 1, note: "",
                                  source: .manual, createdAt: 0, recordedAt: 0, authorAccountId: "a", reversesId: nil,
                                  reversedById: nil)
        XCTAssertEqual(PotRecord.resolvedId(of: t), t.resolvedPotId)
        var named = t
        named.potId = "p"
        XCTAssertEqual(PotRecord.resolvedId(of: named), "p")
        var odd = t
        odd.childId = "not-a-uuid"
        XCTAssertEqual(PotRecord.resolvedId(of: odd), odd.resolvedPotId)
        let portable = [UInt8](writing: t.jsonBound) { t.writeJSON(&$0) }
        let remembered = [UInt8](writing: t.jsonBound) { t.writeJSON(&$0, resolvedPotId: PotRecord.resolvedId(of: t)) }
        XCTAssertEqual(remembered, portable)
        XCTAssertEqual(remembered, t.json.serialized())
    }
}
