import LedgerModel
import XCTest
@testable import LedgerCore
@testable import LedgerServer

/// The HTTP edge's one mapping from storage's domain errors to problem answers.
final class LedgerStorageErrorTests: XCTestCase {
    private let tx = LedgerTransaction(id: "0e0b5a1c-7d4f-4b8a-9c3d-2e1f0a9b8c7d", householdId: "h", childId: "c", amountCents: 5,
                                       note: "", source: .api, createdAt: 0, recordedAt: 0, authorAccountId: "a",
                                       reversesId: nil, reversedById: nil)

    func testStatusesAndCodes() {
        let cases: [(LedgerStorageError, Int, String)] = [
            (.householdNotFound, 404, "not_found"), (.childNotFound, 404, "not_found"),
            (.transactionNotFound, 404, "not_found"), (.invitationNotFound, 404, "not_found"),
            (.unknownHandle("x"), 404, "unknown_handle"), (.accessRevoked, 403, "access_revoked"),
            (.readOnly, 403, "read_only"), (.ownerOnly, 403, "owner_only"), (.handleTaken("x"), 409, "handle_taken"),
            (.householdIdTaken("x"), 409, "id_conflict"), (.childIdTaken("x"), 409, "id_conflict"),
            (.transactionIdTaken(tx), 409, "id_conflict"), (.reversalIdReserved("x", of: tx), 409, "id_reserved"),
            (.alreadyReversed(target: "t", by: tx), 409, "id_conflict"), (.notReversible, 422, "not_reversible"),
            (.reversalIdMismatch(expected: "x"), 422, "reversal_id_mismatch"),
            (.reversalAmountMismatch(expected: 5), 422, "reversal_amount_mismatch"),
            (.balanceOverflow, 422, "balance_overflow"), (.nothingToUndo, 422, "nothing_to_undo"),
            (.undoTargetChanged(current: tx, expected: "e"), 409, "undo_target_changed"), (.notShared, 404, "not_shared"),
            (.householdOfAnotherAccount("x"), 409, "id_conflict"), (.callerUnknown, 401, "unauthenticated"),
            (.idempotencyKeyReused(key: "k", existing: tx), 409, "id_conflict"), (.clockSkew(field: "createdAt", now: 0), 422, "clock_skew"),
            (.tooManyHouseholds(limit: 2), 409, "too_many_households"), (.tooManyChildren(limit: 2), 409, "too_many_children"),
            (.shareRequired, 409, "not_shared"), (.cannotInviteSelf, 422, "cannot_invite_self"),
            (.tooManyInvitations(.inviter, limit: 2, pending: 2), 409, "too_many_invitations"),
            (.tooManyInvitations(.invitee, limit: 2, pending: 2), 409, "too_many_invitations"),
            (.tooManyChildren(limit: 3), 409, "too_many_children"), (.tokenRevoked, 401, "unauthenticated"),
            (.syncTokenExpired, 410, "token_expired"), (.historyRewound, 410, "history_rewound"),
            (.unavailable(commitOutcomeUnknown: false), 503, "service_unavailable"),
        ]
        for (error, status, code) in cases {
            XCTAssertEqual(error.apiError.status, status, "\(error)")
            XCTAssertEqual(error.apiError.code, code, "\(error)")
        }
    }

    func testConflictsCarryTheCurrentRecordAndUnavailableSaysWhenToRetry() {
        XCTAssertEqual(LedgerStorageError.transactionIdTaken(tx).apiError.extra["current"], tx.json)
        XCTAssertEqual(LedgerStorageError.undoTargetChanged(current: tx, expected: "e").apiError.extra["current"], tx.json)
        let reused = LedgerStorageError.idempotencyKeyReused(key: "k1", existing: tx).apiError
        XCTAssertEqual(reused.extra["current"], tx.json)
        XCTAssertEqual(reused.detail, "Idempotency-Key \"k1\" was already used for a different transaction (\(tx.id)); "
                       + "use a new key for a new transaction.")
        let pre = LedgerStorageError.preconditionFailed(currentTag: "v9", current: .string("now")).apiError
        XCTAssertEqual(pre.status, 412)
        XCTAssertEqual(pre.headers["ETag"], "\"v9\"")
        XCTAssertEqual(pre.extra["current"], .string("now"))
        for unknown in [false, true] {
            let e = LedgerStorageError.unavailable(commitOutcomeUnknown: unknown).apiError
            XCTAssertEqual(e.headers["Retry-After"], "1")
        }
    }

    func testQuotaRefusalsNameTheirLimitAndScope() {
        XCTAssertEqual(LedgerStorageError.tooManyChildren(limit: 3).apiError.extra["limit"], .int(3))
        for scope in [InvitationQuota.inviter, .invitee] {
            let e = LedgerStorageError.tooManyInvitations(scope, limit: 7, pending: 7).apiError
            XCTAssertEqual(e.extra["limit"], .int(7))
            XCTAssertEqual(e.extra["scope"], .string(scope.rawValue))
        }
    }

    func testQuotaRefusalsNameTheirLimit() {
        for e in [LedgerStorageError.tooManyHouseholds(limit: 3), .tooManyChildren(limit: 3)] {
            XCTAssertEqual(e.apiError.extra["limit"], .int(3), "\(e)")
        }
        XCTAssertEqual(LedgerStorageError.tooManyChildren(limit: 3).pushRejectionCode, "too_many_children")
    }

    func testPushRejectionCodes() {
        XCTAssertNil(LedgerStorageError.transactionIdTaken(tx).pushRejectionCode, "a different record with the id is a conflict")
        XCTAssertEqual(LedgerStorageError.childNotFound.pushRejectionCode, "unknown_child")
        XCTAssertEqual(LedgerStorageError.transactionNotFound.pushRejectionCode, "unknown_transaction")
        XCTAssertEqual(LedgerStorageError.alreadyReversed(target: "t", by: tx).pushRejectionCode, "not_reversible")
        XCTAssertEqual(LedgerStorageError.balanceOverflow.pushRejectionCode, "balance_overflow")
        XCTAssertEqual(LedgerStorageError.tooManyChildren(limit: 3).pushRejectionCode, "too_many_children")
    }

    func testIfMatchPredicate() {
        XCTAssertTrue(Preconditions.matches(ifMatch: nil)("v1"))
        XCTAssertTrue(Preconditions.matches(ifMatch: "*")("v1"))
        XCTAssertTrue(Preconditions.matches(ifMatch: "\"v0\", \"v1\"")("v1"))
        XCTAssertFalse(Preconditions.matches(ifMatch: "W/\"v1\"")("v1"))
        XCTAssertFalse(Preconditions.matches(ifMatch: "\"v2\"")("v1"))
    }
}
