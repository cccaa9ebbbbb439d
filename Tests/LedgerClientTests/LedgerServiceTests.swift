@testable import LedgerClient
import LedgerModel
import XCTest

final class LedgerServiceTests: XCTestCase {
    func makeService() throws -> LedgerService {
        LedgerService(store: try LedgerStore(path: ":memory:"))
    }

    func testLocalOnlyMutationsQueueNothingAndComputeBalances() throws {
        let s = try makeService()
        let ann = try s.addChild(name: "  Ann ")
        XCTAssertEqual(ann.name, "Ann")
        try s.addMoney(childId: ann.id, cents: 525, note: "chores")
        try s.takeMoney(childId: ann.id, cents: 1000)
        XCTAssertEqual(try s.children().first?.balanceCents, -475)
        XCTAssertEqual(try s.store.pendingCount(), 0)
    }

    func testUndoLastUsesDeterministicReversalAndNeverTwice() throws {
        let s = try makeService()
        let c = try s.addChild(name: "Ann")
        let t1 = try s.addMoney(childId: c.id, cents: 100)
        let t2 = try s.addMoney(childId: c.id, cents: 200)
        let r2 = try s.undoLast(childId: c.id)
        XCTAssertEqual(r2.reversesId, t2.id)
        XCTAssertEqual(r2.id, LedgerIDs.reversalID(of: UUID(uuidString: t2.id)!).lowercased)
        XCTAssertEqual(r2.amountCents, -200)
        let r1 = try s.undoLast(childId: c.id)
        XCTAssertEqual(r1.reversesId, t1.id)
        XCTAssertThrowsError(try s.undoLast(childId: c.id)) { XCTAssertEqual($0 as? ClientError, .nothingToUndo("Ann")) }
        XCTAssertEqual(try s.undo(transactionId: t1.id), r1, "undoing again returns the existing reversal")
        XCTAssertThrowsError(try s.undo(transactionId: r1.id)) { XCTAssertEqual($0 as? ClientError, .notReversible) }
        XCTAssertEqual(try s.store.balance(childId: c.id), 0)
    }

    func testValidationAndOverflow() throws {
        let s = try makeService()
        XCTAssertThrowsError(try s.addChild(name: "   "))
        XCTAssertThrowsError(try s.addChild(name: "a\u{7}b"))
        let c = try s.addChild(name: "Ann")
        XCTAssertThrowsError(try s.addMoney(childId: c.id, cents: 0))
        XCTAssertThrowsError(try s.addMoney(childId: c.id, cents: 100_000_000_001))
        XCTAssertThrowsError(try s.addMoney(childId: c.id, cents: 1, note: String(repeating: "x", count: 501)))
    }

    func testEditsStampModifiedAtAfterNewestSeen() throws {
        let s = try makeService()
        s.now = { 1_000 }
        let c = try s.addChild(name: "Ann")
        try s.store.noteSeen(modifiedAt: 5_000)
        let renamed = try s.renameChild(id: c.id, to: "Anna")
        XCTAssertEqual(renamed.modifiedAt, 5_001)
        let same = try s.renameChild(id: c.id, to: "Anna")
        XCTAssertEqual(same.modifiedAt, 5_001, "a no-op edit is not a change")
    }

    func testSharedMutationsQueueAndCoalesce() throws {
        let s = try makeService()
        try s.store.setPhase(.shared)
        let c = try s.addChild(name: "Ann")
        for i in 0..<5 { try s.renameChild(id: c.id, to: "Ann \(i)") }
        try s.addMoney(childId: c.id, cents: 100)
        XCTAssertEqual(try s.store.pendingCount(), 2, "five renames are one queued record")
        XCTAssertEqual(try s.status(), .accountUnavailable(pending: 2))
        try s.store.set(.token, "kl_x")
        XCTAssertEqual(try s.status(), .changesPending(2))
        try s.store.set(.lastOutcome, "offline")
        XCTAssertEqual(try s.status(), .offline(pending: 2))
        try s.store.setAttention(.accessRevoked)
        XCTAssertEqual(try s.status(), .attentionRequired(.accessRevoked, pending: 2))
        XCTAssertThrowsError(try s.addMoney(childId: c.id, cents: 1)) {
            XCTAssertEqual($0 as? ClientError, .frozen(.accessRevoked))
        }
        XCTAssertEqual(try s.store.counts().transactions, 1, "nothing local is deleted")
    }

    func testPhaseRoundTrip() {
        let phases: [LedgerPhase] = [.localOnly, .shared, .sharing(.staged), .sharing(.householdCreated), .sharing(.uploaded),
                                     .joining(.accepting, invitationId: "i", householdId: "h"),
                                     .joining(.fetching, invitationId: "i", householdId: "h")]
        for p in phases { XCTAssertEqual(LedgerPhase(storageValue: p.storageValue), p) }
    }

    func testExportImportRoundTrip() throws {
        let s = try makeService()
        let c = try s.addChild(name: "Ann")
        let t = try s.addMoney(childId: c.id, cents: 1234, note: "gift")
        try s.undo(transactionId: t.id)
        try s.takeMoney(childId: c.id, cents: 34)
        let path = NSTemporaryDirectory() + "kl-export-\(UUID().uuidString).json.gz"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try LedgerExporter(store: s.store).export(to: path, now: 0)
        let other = try makeService()
        let counts = try LedgerExporter(store: other.store).importFile(path, now: 0)
        XCTAssertEqual(counts.children, 1)
        XCTAssertEqual(counts.transactions, 3)
        XCTAssertEqual(try other.store.household().id, try s.store.household().id)
        XCTAssertEqual(try other.store.balance(childId: c.id), -34)
        XCTAssertThrowsError(try LedgerExporter(store: other.store).importFile(path, now: 0)) {
            XCTAssertEqual($0 as? ClientError, .importNeedsEmptyStore)
        }
    }
}
