import Foundation
import XCTest
@testable import LedgerModel

final class ScheduleIDsTests: XCTestCase {
    private let schedule = UUID(uuidString: "0F5A3C1E-7B2D-4E8F-9A6C-1D2E3F4A5B6C")!
    private let child = UUID(uuidString: "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44")!

    /// Pinned values (Python's uuid.uuid5 in namespace 6f1c7a52-…): a change of name,
    /// namespace or case is caught here.
    func testGoldenIds() {
        XCTAssertEqual(ScheduleIDs.payment(kind: .allowance, scheduleId: schedule, date: LocalDate("2026-12-04")!).lowercased,
                       "65fa6f96-76c4-578c-9595-c0882e331698")
        XCTAssertEqual(ScheduleIDs.payment(kind: .allowance, scheduleId: schedule, date: LocalDate("2027-01-15")!).lowercased,
                       "5e4feca8-4f92-5b95-a624-e82a5dcc87e7")
        XCTAssertEqual(ScheduleIDs.payment(kind: .interest, scheduleId: schedule, date: LocalDate("2026-12-04")!).lowercased,
                       "39e534bd-c5e4-588d-90ea-7346a8b98e8d")
        XCTAssertEqual(ScheduleIDs.defaultPot(childId: child).lowercased, "d4be490e-60a6-5602-af41-cea5ec6728c9")
        XCTAssertEqual(ScheduleIDs.transferOut(id: child).lowercased, "9d00d839-d714-585b-a9d1-ce0032aabb8a")
        XCTAssertEqual(ScheduleIDs.transferIn(id: child).lowercased, "5bea6e34-dd3f-515a-ade3-79d5c3f90e1b")
    }

    /// The names as the contract spells them, ids inside in lowercase, in the reversal namespace.
    func testNamesAreTheContracts() {
        XCTAssertEqual(LedgerIDs.namespace.lowercased, "6f1c7a52-3b0e-4c8e-9d55-2a4b8e1f0c3d")
        var rng = SplitMix64(seed: 5)
        for _ in 0..<50 {
            let id = UUID(), date = LocalDate(daysSinceEpoch: Int(rng.next(in: 0...30_000)))!
            let lower = id.uuidString.lowercased()
            for kind in ScheduleKind.allCases {
                XCTAssertEqual(ScheduleIDs.payment(kind: kind, scheduleId: id, date: date),
                               UUIDv5.make(namespace: LedgerIDs.namespace, name: kind.rawValue + ":" + lower + ":" + date.description))
            }
            XCTAssertEqual(ScheduleIDs.defaultPot(childId: id), UUIDv5.make(namespace: LedgerIDs.namespace, name: "pot:" + lower))
            XCTAssertEqual(ScheduleIDs.transferOut(id: id), UUIDv5.make(namespace: LedgerIDs.namespace, name: "transfer-out:" + lower))
            XCTAssertEqual(ScheduleIDs.transferIn(id: id), UUIDv5.make(namespace: LedgerIDs.namespace, name: "transfer-in:" + lower))
        }
    }

    func testIdsAreDistinct() {
        let d = LocalDate("2026-12-04")!
        let ids: Set<UUID> = [
            ScheduleIDs.payment(kind: .allowance, scheduleId: schedule, date: d),
            ScheduleIDs.payment(kind: .interest, scheduleId: schedule, date: d),
            ScheduleIDs.payment(kind: .allowance, scheduleId: schedule, date: d.adding(days: 7)!),
            ScheduleIDs.payment(kind: .allowance, scheduleId: child, date: d),
            ScheduleIDs.transferOut(id: schedule), ScheduleIDs.transferIn(id: schedule), ScheduleIDs.defaultPot(childId: schedule),
            LedgerIDs.reversalID(of: schedule),
        ]
        XCTAssertEqual(ids.count, 8)
        XCTAssertEqual(ScheduleKind.allCases.map(\.rawValue), ["allowance", "interest"])
        XCTAssertEqual(TransactionSource(rawValue: ScheduleKind.allowance.rawValue), .allowance)
    }
}
