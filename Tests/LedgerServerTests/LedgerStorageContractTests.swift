import Foundation
import LedgerModel
import SQLiteKit
import XCTest
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStorageSQLite

/// The storage seam's contract: every conformer answers these `check…` scenarios the same
/// way. A subclass per backend provides the storage and runs each scenario as a test.
class LedgerStorageContractTests: XCTestCase {
    var storage: (any LedgerStorage)!

    /// A fresh, migrated, empty storage; nil: no backend (the base class).
    func makeBackend() throws -> (any LedgerStorage)? { nil }

    override func setUpWithError() throws {
        guard let s = try makeBackend() else { throw XCTSkip("no backend") }
        storage = s
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T) throws -> T {
        try storage.writeAndWait(body)
    }

    func expect(_ expected: LedgerStorageError, file: StaticString = #filePath, line: UInt = #line,
                _ body: @escaping @Sendable (any LedgerWriting) throws -> some Sendable) {
        XCTAssertThrowsError(try write(body), file: file, line: line) { e in
            XCTAssertEqual(e as? LedgerStorageError, expected, file: file, line: line)
        }
    }

    let now: Int64 = 1_764_770_000_000

    /// An account (owner) with a household and one child.
    func household() throws -> (owner: String, household: String, child: String) {
        let now = self.now
        let (owner, _) = try write { try $0.createAccount(handle: "o" + String(UUID().uuidString.prefix(8)).lowercased(),
                                                          displayName: "Owner", deviceName: "phone", now: now) }
        let h = UUID().lowercased, c = UUID().lowercased
        _ = try write { tx in
            _ = try tx.createHousehold(id: h, name: "Home", currency: "EUR", owner: owner.id, ifAbsentOnly: true, now: now)
            return try tx.createChild(household: h, account: owner.id, id: c, name: "Ada", sortOrder: nil, now: now).isCreated
        }
        return (owner.id, h, c)
    }

    static func new(_ child: String, _ amount: Int64, id: String = UUID().lowercased, note: String = "") -> NewTransaction {
        NewTransaction(id: id, childId: child, amountCents: amount, note: note, source: .api, createdAt: nil, reversesId: nil,
                                   clientChosenId: true)
    }

    func checkAccountsTokensAndHouseholdIdentity() throws {
        let now = self.now
        let (a, token) = try write { try $0.createAccount(handle: "mum", displayName: "Mum", deviceName: "phone", now: now) }
        expect(.handleTaken("mum")) { try $0.createAccount(handle: "mum", displayName: "X", deviceName: "d", now: now) }
        let caller = try storage.read { try $0.caller(tokenHash: TokenSecret.sha256(token.secret)) }
        XCTAssertEqual(caller?.accountId, a.id)
        XCTAssertEqual(caller?.tokenId, token.record.id)
        XCTAssertEqual(try storage.read { try $0.account(id: a.id) }, a)

        let h = UUID().lowercased
        XCTAssertTrue(try write { try $0.createHousehold(id: h, name: "Home", currency: "EUR", owner: a.id, ifAbsentOnly: true, now: now) }.isCreated)
        expect(.householdIdTaken(h)) { try $0.createHousehold(id: h, name: "Home", currency: "EUR", owner: a.id, ifAbsentOnly: true, now: now) }
        XCTAssertFalse(try write { try $0.createHousehold(id: h, name: "Other", currency: "USD", owner: a.id, ifAbsentOnly: false, now: now) }.isCreated)
        let (b, _) = try write { try $0.createAccount(handle: "dad", displayName: "Dad", deviceName: "phone", now: now) }
        expect(.householdOfAnotherAccount(h)) { try $0.createHousehold(id: h, name: "Mine", currency: "EUR", owner: b.id, ifAbsentOnly: false, now: now) }
        expect(.householdNotFound) { try $0.household(id: h, account: b.id, need: .read) }

        let (record, m) = try storage.read { try $0.household(id: h, account: a.id, need: .read) }
        XCTAssertEqual(record.name, "Home")
        XCTAssertEqual(record.changeTag, ChangeTag.of(1))
        XCTAssertEqual(record.createdAt, now)
        XCTAssertEqual(m.role, .owner)

        // If-Match refusal carries the current version; a match renames and moves the tag.
        expect(.preconditionFailed(currentTag: record.changeTag, current: record.json(m))) {
            try $0.updateHousehold(id: h, account: a.id, matches: { _ in false }, name: "New", currency: nil, now: now + 1)
        }
        let (renamed, _) = try write { try $0.updateHousehold(id: h, account: a.id, matches: { _ in true }, name: "New", currency: nil, now: now + 1) }
        XCTAssertEqual(renamed.name, "New")
        XCTAssertEqual(renamed.currency, "EUR")
        XCTAssertEqual(renamed.changeTag, ChangeTag.of(2))

        XCTAssertFalse(try write { try $0.revokeToken(id: token.record.id, account: b.id, at: now) })
        XCTAssertTrue(try write { try $0.revokeToken(id: token.record.id, account: a.id, at: now) })
        XCTAssertNil(try storage.read { try $0.caller(tokenHash: TokenSecret.sha256(token.secret)) })
    }

    func checkInsertIfAbsentReversalsUndoAndOverflow() throws {
        let now = self.now
        let (owner, h, c) = try household()
        let first = Self.new(c, 500, note: "pocket money")
        let saved = try write { try $0.addTransaction(household: h, author: owner, first, now: now) }
        XCTAssertTrue(saved.saved)
        XCTAssertEqual(saved.balanceCents, 500)
        let replay = try write { try $0.addTransaction(household: h, author: owner, first, now: now + 5) }
        XCTAssertFalse(replay.saved)
        XCTAssertEqual(replay.transaction, saved.transaction)
        XCTAssertEqual(replay.balanceCents, 500)
        var changed = first
        changed.amountCents = 501
        let different = changed
        expect(.transactionIdTaken(saved.transaction)) { try $0.addTransaction(household: h, author: owner, different, now: now) }

        // The id reserved for the reversal of `first` is refused for anything else.
        let reservedId = LedgerIDs.reversalID(of: LedgerIDs.parse(first.id)!).lowercased
        expect(.reversalIdReserved(reservedId, of: saved.transaction)) {
            try $0.addTransaction(household: h, author: owner, Self.new(c, 1, id: reservedId), now: now)
        }

        // Another household may use the same id for its own record.
        let (owner2, h2, c2) = try household()
        XCTAssertTrue(try write { try $0.addTransaction(household: h2, author: owner2, Self.new(c2, 7, id: first.id), now: now) }.saved)

        let rev = try write { try $0.reverse(household: h, author: owner, transaction: first.id, now: now) }
        XCTAssertTrue(rev.saved)
        XCTAssertEqual(rev.transaction.id, reservedId)
        XCTAssertEqual(rev.balanceCents, 0)
        let again = try write { try $0.reverse(household: h, author: owner, transaction: first.id, now: now) }
        XCTAssertFalse(again.saved)
        XCTAssertEqual(again.transaction.id, reservedId)
        expect(.notReversible) { try $0.reverse(household: h, author: owner, transaction: reservedId, now: now) }
        let target = try storage.read { try $0.transaction(household: h, id: first.id) }
        XCTAssertEqual(target?.reversedById, reservedId)
        expect(.transactionNotFound) { try $0.reverse(household: h, author: owner, transaction: UUID().lowercased, now: now) }

        // Undo-last: nothing left, then the newest undoable, guarded by `expected`.
        expect(.nothingToUndo) { try $0.undoLast(household: h, author: owner, child: c, expected: nil, now: now) }
        let t1 = try write { try $0.addTransaction(household: h, author: owner, Self.new(c, 100), now: now) }.transaction
        let t2 = try write { try $0.addTransaction(household: h, author: owner, Self.new(c, 200), now: now) }.transaction
        expect(.undoTargetChanged(current: t2, expected: t1.id)) { try $0.undoLast(household: h, author: owner, child: c, expected: t1.id, now: now) }
        let undone = try write { try $0.undoLast(household: h, author: owner, child: c, expected: t2.id, now: now) }
        XCTAssertEqual(undone.transaction.reversesId, t2.id)
        XCTAssertEqual(undone.balanceCents, 100)
        XCTAssertEqual(try write { try $0.undoLast(household: h, author: owner, child: c, expected: nil, now: now) }.transaction.reversesId, t1.id)
        expect(.childNotFound) { try $0.undoLast(household: h, author: owner, child: UUID().lowercased, expected: nil, now: now) }
        expect(.childNotFound) { try $0.addTransaction(household: h, author: owner, Self.new(UUID().lowercased, 1), now: now) }

        // Balance overflow leaves nothing behind.
        _ = try write { try $0.addTransaction(household: h, author: owner, Self.new(c, Int64.max), now: now) }
        expect(.balanceOverflow) { try $0.addTransaction(household: h, author: owner, Self.new(c, 1), now: now) }
        let child = try storage.read { try $0.child(household: h, id: c) }
        XCTAssertEqual(child?.balanceCents, Int64.max)
        let ledger = try storage.read { try $0.transactions(household: h, child: c, before: nil, limit: 1000) }.items
        XCTAssertEqual(ledger.reduce(Decimal(0)) { $0 + Decimal($1.amountCents) }, Decimal(Int64.max),
                       "the cached balance equals the ledger's sum")

        // Paging newest first.
        let page1 = try storage.read { try $0.transactions(household: h, child: c, before: nil, limit: 3) }
        XCTAssertEqual(page1.items.count, 3)
        let page2 = try storage.read { try $0.transactions(household: h, child: c, before: page1.next, limit: 100) }
        XCTAssertNil(page2.next)
        XCTAssertEqual(page1.items.count + page2.items.count, 7)
        XCTAssertEqual(Set((page1.items + page2.items).map(\.id)).count, 7)
    }

    /// The counts behind the quotas, and the quotas in the create rules: an existing record
    /// is answered even at the limit; a new one past it is refused with nothing written.
    func checkQuotaCounts() throws {
        let now = self.now
        let (owner, h, c) = try household()
        XCTAssertEqual(try storage.read { try $0.householdCount(owner: owner) }, 1)
        XCTAssertEqual(try storage.read { try $0.childCount(household: h) }, 1)
        XCTAssertEqual(try storage.read { try $0.childCount(household: UUID().lowercased) }, 0)

        XCTAssertFalse(try write { try $0.createHousehold(id: h, name: "Home", currency: "EUR", owner: owner, ifAbsentOnly: false,
                                                         maxHouseholds: 1, now: now) }.isCreated)
        expect(.tooManyHouseholds(limit: 1)) {
            try $0.createHousehold(id: UUID().lowercased, name: "Two", currency: "EUR", owner: owner, ifAbsentOnly: true,
                                   maxHouseholds: 1, now: now)
        }
        XCTAssertTrue(try write { try $0.createHousehold(id: UUID().lowercased, name: "Two", currency: "EUR", owner: owner,
                                                        ifAbsentOnly: true, maxHouseholds: 2, now: now) }.isCreated)
        XCTAssertEqual(try storage.read { try $0.householdCount(owner: owner) }, 2)

        // Archived children count: they are never deleted.
        _ = try write { try $0.updateChild(household: h, account: owner, id: c, matches: { _ in true }, name: nil, sortOrder: nil,
                                           archived: true, now: now) }
        XCTAssertFalse(try write { try $0.createChild(household: h, account: owner, id: c, name: "Ada", sortOrder: nil,
                                                     maxChildren: 1, now: now) }.isCreated)
        expect(.tooManyChildren(limit: 1)) {
            try $0.createChild(household: h, account: owner, id: UUID().lowercased, name: "Bo", sortOrder: nil, maxChildren: 1, now: now)
        }
        XCTAssertEqual(try storage.read { try $0.childCount(household: h) }, 1)
        XCTAssertTrue(try write { try $0.createChild(household: h, account: owner, id: UUID().lowercased, name: "Bo", sortOrder: nil,
                                                    maxChildren: 2, now: now) }.isCreated)
        XCTAssertEqual(try storage.read { try $0.childCount(household: h) }, 2)
    }

    func checkChildrenCreatePatchAndPush() throws {
        let now = self.now
        let (owner, h, c) = try household()
        let again = try write { try $0.createChild(household: h, account: owner, id: c, name: "Ada", sortOrder: nil, now: now) }
        XCTAssertFalse(again.isCreated)
        expect(.childIdTaken(c)) { try $0.createChild(household: h, account: owner, id: c, name: "Bob", sortOrder: nil, now: now) }
        let second = try write { try $0.createChild(household: h, account: owner, id: UUID().lowercased, name: "Bob", sortOrder: nil, now: now) }
        XCTAssertEqual(second.record.sortOrder, 1, "after the largest sort order")

        let patched = try write { try $0.updateChild(household: h, account: owner, id: c, matches: { _ in true }, name: "Ada L.",
                                                     sortOrder: nil, archived: true, now: now) }
        XCTAssertTrue(patched.archived)
        XCTAssertEqual(patched.modifiedAt, now + 1, "an edit never goes back in time")
        XCTAssertEqual(try storage.read { try $0.children(household: h, includeArchived: false) }.map(\.name), ["Bob"])
        XCTAssertEqual(try storage.read { try $0.children(household: h, includeArchived: true) }.map(\.name), ["Ada L.", "Bob"])

        var record = PushBatch.ChildRecord(id: c, name: "Ada P.", sortOrder: 0, archived: true, createdAt: now, modifiedAt: now + 9,
                                           modifiedBy: owner, baseChangeTag: "v0")
        let stale = record
        XCTAssertEqual(try write { try $0.pushChild(household: h, stale) }, .conflict(patched))
        record.baseChangeTag = patched.changeTag
        let pushed = record
        guard case .saved(let tag) = try write({ try $0.pushChild(household: h, pushed) }) else { return XCTFail("not saved") }
        XCTAssertEqual(try write { try $0.pushChild(household: h, pushed) }, .unchanged(changeTag: tag))
    }

    func checkSharingInvitationsAndAccess() throws {
        let now = self.now
        let (owner, h, c) = try household()
        let (dad, _) = try write { try $0.createAccount(handle: "dad", displayName: "Dad", deviceName: "phone", now: now) }
        expect(.shareRequired) { try $0.invite(household: h, owner: owner, handle: "dad", permission: .readOnly, now: now) }
        XCTAssertTrue(try write { try $0.share(household: h, owner: owner) }.isCreated)
        XCTAssertFalse(try write { try $0.share(household: h, owner: owner) }.isCreated)
        expect(.unknownHandle("nobody")) { try $0.invite(household: h, owner: owner, handle: "nobody", permission: .readOnly, now: now) }
        let invited = try write { try $0.invite(household: h, owner: owner, handle: "dad", permission: .readOnly, now: now) }
        XCTAssertTrue(invited.isCreated)
        XCTAssertFalse(try write { try $0.invite(household: h, owner: owner, handle: "dad", permission: .readOnly, now: now) }.isCreated)
        // Invited is not yet a member.
        expect(.householdNotFound) { try $0.invite(household: h, owner: dad.id, handle: "dad", permission: .readOnly, now: now) }
        expect(.householdNotFound) { try $0.membership(household: h, account: dad.id, need: .read) }
        let pending = try storage.read { try $0.pendingInvitations(account: dad.id, after: nil, limit: 10) }.items
        XCTAssertEqual(pending.map(\.householdId), [h])
        expect(.invitationNotFound) { try $0.acceptInvitation(pending[0].id, account: owner, now: now) }
        let (_, m) = try write { try $0.acceptInvitation(pending[0].id, account: dad.id, now: now) }
        XCTAssertEqual(m.permission, .readOnly)
        expect(.readOnly) { try $0.undoLast(household: h, author: dad.id, child: c, expected: nil, now: now) }
        expect(.ownerOnly) { try $0.invite(household: h, owner: dad.id, handle: "dad", permission: .readOnly, now: now) }
        _ = try write { try $0.setPermission(household: h, owner: owner, account: dad.id, permission: .readWrite, now: now) }
        XCTAssertTrue(try write { try $0.addTransaction(household: h, author: dad.id, Self.new(c, 1), now: now) }.saved)

        try write { try $0.removeParticipant(household: h, caller: owner, account: dad.id, now: now) }
        expect(.accessRevoked) { try $0.membership(household: h, account: dad.id, need: .read) }
        try write { try $0.unshare(household: h, owner: owner, now: now) }
        expect(.notShared) { try $0.unshare(household: h, owner: owner, now: now) }
    }

    /// A push through the seam: access first, children before transactions, each record's
    /// refusal its own result (the children quota among them), the device's push recorded.
    func checkPushCountsTokensAndPolls() throws {
        let now = self.now
        let (owner, h, c) = try household()
        let device = try write { try $0.createToken(account: owner, deviceName: "tablet", now: now) }
        let caller = Caller(accountId: owner, tokenId: device.record.id)
        XCTAssertTrue(try storage.read { try $0.isActive(token: device.record.id) })
        XCTAssertFalse(try storage.read { try $0.isActive(token: UUID().lowercased) })
        XCTAssertEqual(try storage.read { try $0.childCount(household: h) }, 1)
        XCTAssertGreaterThan(try storage.read { try $0.schemaVersion() }, 0)

        func childRecord(_ id: String = UUID().lowercased, by author: String) -> PushBatch.ChildRecord {
            PushBatch.ChildRecord(id: id, name: "New", sortOrder: 5, archived: false, createdAt: now, modifiedAt: now,
                                  modifiedBy: author, baseChangeTag: nil)
        }
        let first = Self.new(c, 300)
        var batch = PushBatch()
        batch.children = [.valid(childRecord(by: owner)), .valid(childRecord(by: UUID().lowercased)), .valid(childRecord(by: owner)),
                          .invalid(id: "x", code: "clock_skew", fields: [:])]
        batch.transactions = [.valid(first), .valid(Self.new(UUID().lowercased, 1)), .valid(Self.new(c, Int64.max))]
        let pushed = batch
        let results = try write { try $0.push(pushed, household: h, caller: caller, maxChildren: 2, now: now) }
        XCTAssertEqual(results.map(\.json["status"]), ["saved", "rejected", "rejected", "rejected", "saved", "rejected", "rejected"].map { .string($0) })
        XCTAssertEqual(results.map(\.json["code"]), [nil, "modified_by_mismatch", "too_many_children", "clock_skew", nil, "unknown_child",
                                                      "balance_overflow"].map { $0.map(JSONValue.string) })
        XCTAssertEqual(results.map(\.kind), [.child, .child, .child, .child, .transaction, .transaction, .transaction])
        XCTAssertEqual(try storage.read { try $0.childCount(household: h) }, 2)
        XCTAssertEqual(try storage.read { try $0.child(household: h, id: c) }?.balanceCents, 300)
        XCTAssertEqual(try storage.read { try $0.balance(household: h, child: c) }, 300)
        XCTAssertNil(try storage.read { try $0.balance(household: h, child: UUID().lowercased) })
        XCTAssertNil(try storage.read { try $0.balance(household: UUID().lowercased, child: c) })

        // A replay is unchanged; another record under a taken id is a conflict with the server's.
        var changed = first
        changed.amountCents = 1
        var again = PushBatch()
        again.transactions = [.valid(first), .valid(changed)]
        let replay = again
        let second = try write { try $0.push(replay, household: h, caller: caller, maxChildren: 2, now: now) }
        XCTAssertEqual(second.map(\.json["status"]), [.string("unchanged"), .string("conflict")])
        XCTAssertEqual(second.last?.json["serverRecord"]?["amountCents"], .int(300))
        let status = try storage.read { try $0.syncStatus(household: h, account: owner) }
        XCTAssertEqual(status.devices.map(\.tokenId), [device.record.id])
        XCTAssertEqual(status.devices.first?.lastPushAt, now)
        XCTAssertNil(status.devices.first?.lastPullAt)

        // Someone who may only read cannot push at all.
        let (reader, _) = try write { try $0.createAccount(handle: "reader", displayName: "R", deviceName: "d", now: now) }
        expect(.householdNotFound) { try $0.push(replay, household: h, caller: Caller(accountId: reader.id, tokenId: device.record.id),
                                                 maxChildren: 0, now: now) }

        // A long-poll's checks: current until the household moves or the token is revoked;
        // a revoked token wins over the feed's own refusals.
        let page = try storage.read { try $0.feedPage(household: h, caller: caller, since: nil, limit: 100) }
        XCTAssertEqual(page.records, 3)
        XCTAssertTrue(try storage.read { try $0.pollIsCurrent(household: h, caller: caller, position: page.next) })
        XCTAssertFalse(try storage.read { try $0.pollIsCurrent(household: h, caller: Caller(accountId: reader.id, tokenId: device.record.id),
                                                               position: page.next) })
        _ = try write { try $0.addTransaction(household: h, author: owner, Self.new(c, 1), now: now) }
        XCTAssertFalse(try storage.read { try $0.pollIsCurrent(household: h, caller: caller, position: page.next) })
        XCTAssertTrue(try write { try $0.revokeToken(id: device.record.id, account: owner, at: now) })
        XCTAssertFalse(try storage.read { try $0.isActive(token: device.record.id) })
        XCTAssertThrowsError(try storage.read { try $0.feedPage(household: h, caller: caller, since: nil, limit: 100) }) { e in
            XCTAssertEqual(e as? LedgerStorageError, .tokenRevoked)
        }
        XCTAssertThrowsError(try storage.read { try $0.feedPage(household: UUID().lowercased, caller: caller, since: nil, limit: 100) }) { e in
            XCTAssertEqual(e as? LedgerStorageError, .tokenRevoked)
        }
        XCTAssertThrowsError(try storage.read { try $0.feedPage(household: UUID().lowercased, account: owner, since: nil, limit: 100) }) { e in
            XCTAssertEqual(e as? LedgerStorageError, .householdNotFound)
        }
    }

    /// Pending invitations page newest first (same time: later invitation first); the
    /// counts the quotas use; the quotas refuse the invitation that would go past them.
    func checkInvitationPagesCountsAndQuotas() throws {
        let now = self.now
        let (owner, h1, _) = try household()
        let (owner2, h2, _) = try household()
        let (owner3, h3, _) = try household()
        let (kid, _) = try write { try $0.createAccount(handle: "kid", displayName: "Kid", deviceName: "phone", now: now) }
        let (gran, _) = try write { try $0.createAccount(handle: "gran", displayName: "Gran", deviceName: "phone", now: now) }
        for h in [h1, h2, h3] {
            let o = h == h1 ? owner : h == h2 ? owner2 : owner3
            _ = try write { try $0.share(household: h, owner: o) }
        }
        _ = try write { try $0.invite(household: h1, owner: owner, handle: "kid", permission: .readOnly, now: now) }
        _ = try write { try $0.invite(household: h2, owner: owner2, handle: "kid", permission: .readWrite, now: now) }
        _ = try write { try $0.invite(household: h3, owner: owner3, handle: "kid", permission: .readOnly, now: now + 1) }
        _ = try write { try $0.invite(household: h1, owner: owner, handle: "gran", permission: .readOnly, now: now) }
        XCTAssertEqual(try storage.read { try $0.pendingInvitationCounts(inviter: owner, invitee: kid.id) },
                       PendingInvitationCounts(byInviter: 2, toInvitee: 3, byInviterToInvitee: 1))
        XCTAssertEqual(try storage.read { try $0.pendingInvitationCounts(inviter: owner3, invitee: gran.id) },
                       PendingInvitationCounts(byInviter: 1, toInvitee: 1, byInviterToInvitee: 0))

        let first = try storage.read { try $0.pendingInvitations(account: kid.id, after: nil, limit: 2) }
        XCTAssertEqual(first.items.map(\.householdId), [h3, h2], "newest first, then the later invitation")
        XCTAssertEqual(first.items.map(\.permission), [.readOnly, .readWrite])
        XCTAssertEqual(first.items.first?.invitedAt, now + 1)
        XCTAssertEqual(first.items.first?.householdName, "Home")
        XCTAssertEqual(first.items.first?.ownerDisplayName, "Owner")
        let next = try XCTUnwrap(first.next)
        let last = try storage.read { try $0.pendingInvitations(account: kid.id, after: next, limit: 2) }
        XCTAssertEqual(last.items.map(\.householdId), [h1])
        XCTAssertNil(last.next)

        // Answered invitations and unshared households leave the list and the counts.
        _ = try write { try $0.acceptInvitation(first.items[1].id, account: kid.id, now: now) }
        try write { try $0.unshare(household: h3, owner: owner3, now: now) }
        XCTAssertEqual(try storage.read { try $0.pendingInvitations(account: kid.id, after: nil, limit: 10) }.items.map(\.householdId), [h1])
        XCTAssertEqual(try storage.read { try $0.pendingInvitationCounts(inviter: owner2, invitee: kid.id) },
                       PendingInvitationCounts(byInviter: 0, toInvitee: 1, byInviterToInvitee: 0))

        // Quotas: the inviter's pending invitations, then the invitee's.
        _ = try write { try $0.createAccount(handle: "aunt", displayName: "Aunt", deviceName: "phone", now: now) }
        expect(.tooManyInvitations(.inviter, limit: 2, pending: 2)) {
            try $0.invite(household: h1, owner: owner, handle: "aunt", permission: .readOnly,
                          limits: InvitationLimits(perInviter: 2, perInvitee: 0), now: now)
        }
        expect(.tooManyInvitations(.invitee, limit: 1, pending: 1)) {
            try $0.invite(household: h2, owner: owner2, handle: "gran", permission: .readOnly,
                          limits: InvitationLimits(perInviter: 5, perInvitee: 1), now: now)
        }
        // An invitation already pending is answered as it is, whatever the quotas.
        XCTAssertFalse(try write { try $0.invite(household: h1, owner: owner, handle: "gran", permission: .readOnly,
                                                 limits: InvitationLimits(perInviter: 1, perInvitee: 1), now: now) }.isCreated)
        XCTAssertTrue(try write { try $0.invite(household: h1, owner: owner, handle: "aunt", permission: .readOnly,
                                                limits: InvitationLimits(perInviter: 3, perInvitee: 1), now: now) }.isCreated)
    }

    /// Declining with a block: the owner's other pending invitations are declined with it,
    /// new ones are refused as an unknown handle would be, and lifting the block lets them
    /// in again. One inviter holds at most its share of an invitee's pending invitations.
    func checkBlocksAndInviterForInviteeQuota() throws {
        let now = self.now
        let (stranger, h1, _) = try household()
        let h2 = UUID().lowercased, h3 = UUID().lowercased
        for h in [h2, h3] {
            _ = try write { try $0.createHousehold(id: h, name: "Other", currency: "EUR", owner: stranger, ifAbsentOnly: true, now: now) }
        }
        for h in [h1, h2, h3] { _ = try write { try $0.share(household: h, owner: stranger) } }
        let (victim, _) = try write { try $0.createAccount(handle: "victim", displayName: "Victim", deviceName: "phone", now: now) }
        let limits = InvitationLimits(perInviter: 0, perInvitee: 0, perInviterForInvitee: 2)
        for h in [h1, h2] {
            XCTAssertTrue(try write { try $0.invite(household: h, owner: stranger, handle: "victim", permission: .readOnly,
                                                    limits: limits, now: now) }.isCreated)
        }
        XCTAssertEqual(try storage.read { try $0.pendingInvitationCounts(inviter: stranger, invitee: victim.id) },
                       PendingInvitationCounts(byInviter: 2, toInvitee: 2, byInviterToInvitee: 2))
        expect(.tooManyInvitations(.inviterForInvitee, limit: 2, pending: 2)) {
            try $0.invite(household: h3, owner: stranger, handle: "victim", permission: .readOnly, limits: limits, now: now)
        }
        XCTAssertEqual(try storage.read { try $0.pendingInvitationHouseholds(inviter: stranger, invitee: victim.id) }, [h1, h2].sorted())

        let first = try XCTUnwrap(try storage.read { try $0.participant(household: h1, account: victim.id) })
        try write { try $0.declineInvitation(first.invitationId, account: victim.id, block: true, now: now + 5) }
        XCTAssertTrue(try storage.read { try $0.isBlocked(account: victim.id, blocked: stranger) })
        XCTAssertFalse(try storage.read { try $0.isBlocked(account: stranger, blocked: victim.id) }, "a block has one direction")
        XCTAssertEqual(try storage.read { try $0.pendingInvitations(account: victim.id, after: nil, limit: 10) }.items, [],
                       "the blocked owner's other invitation is declined with it")
        XCTAssertEqual(try storage.read { try $0.participant(household: h2, account: victim.id) }?.status, .declined)
        for h in [h1, h3] {
            expect(.unknownHandle("victim")) {
                try $0.invite(household: h, owner: stranger, handle: "victim", permission: .readOnly, now: now)
            }
        }
        let listed = try storage.read { try $0.blocks(account: victim.id, before: nil, limit: 10) }
        XCTAssertEqual(listed.items, [BlockRecord(accountId: stranger, handle: try storage.read { try $0.account(id: stranger) }!.handle,
                                                  displayName: "Owner", createdAt: now + 5)])
        XCTAssertNil(listed.next)
        XCTAssertEqual(try storage.read { try $0.blocks(account: stranger, before: nil, limit: 10) }.items, [])
        // Blocking again (declining the declined invitation with a block) changes nothing.
        try write { try $0.declineInvitation(first.invitationId, account: victim.id, block: true, now: now + 9) }
        XCTAssertEqual(try storage.read { try $0.blocks(account: victim.id, before: nil, limit: 10) }.items.map(\.createdAt), [now + 5])

        expect(.blockNotFound) { try $0.unblock(account: stranger, blocked: victim.id) }
        try write { try $0.unblock(account: victim.id, blocked: stranger) }
        expect(.blockNotFound) { try $0.unblock(account: victim.id, blocked: stranger) }
        XCTAssertTrue(try write { try $0.invite(household: h3, owner: stranger, handle: "victim", permission: .readOnly,
                                                limits: limits, now: now) }.isCreated)

        // The list: newest first; blocks made at one time by account id, highest first.
        var blocked: [(id: String, at: Int64)] = []
        for (i, at) in [now + 10, now + 20, now + 20, now + 30].enumerated() {
            let (owner, h, _) = try household()
            _ = try write { try $0.share(household: h, owner: owner) }
            let p = try write { try $0.invite(household: h, owner: owner, handle: "victim", permission: .readOnly, now: now) }.record
            try write { try $0.declineInvitation(p.invitationId, account: victim.id, block: true, now: at) }
            blocked.append((owner, at))
            _ = i
        }
        let expected = blocked.sorted { ($0.at, $0.id) > ($1.at, $1.id) }.map(\.id)
        var seen: [String] = [], before: TimeAndIdPosition?
        repeat {
            let page = try storage.read { [before] in try $0.blocks(account: victim.id, before: before, limit: 3) }
            seen += page.items.map(\.accountId)
            before = page.next
        } while before != nil
        XCTAssertEqual(seen, expected)
    }

    /// The token cap counts live tokens only; the token and device lists page in order.
    func checkTokenCapAndPages() throws {
        let now = self.now
        let (owner, h, _) = try household()   // one token already
        var made: [IssuedToken] = []
        for i in 0..<3 {
            made.append(try write { try $0.createToken(account: owner, deviceName: "d\(i)", maxTokens: 4, now: now + Int64(i % 2)) })
        }
        XCTAssertEqual(try storage.read { try $0.activeTokenCount(account: owner) }, 4)
        expect(.tooManyTokens(limit: 4)) { try $0.createToken(account: owner, deviceName: "one more", maxTokens: 4, now: now) }
        let revoked = made[0].record.id
        XCTAssertTrue(try write { try $0.revokeToken(id: revoked, account: owner, at: now) })
        XCTAssertEqual(try storage.read { try $0.activeTokenCount(account: owner) }, 3)
        made.append(try write { try $0.createToken(account: owner, deviceName: "again", maxTokens: 4, now: now + 1) })
        XCTAssertNotNil(try? write { try $0.createToken(account: owner, deviceName: "no cap", now: now + 1) })

        let all = try storage.read { try $0.activeTokens(account: owner, after: nil, limit: 100) }
        XCTAssertEqual(all.items.count, 5)
        XCTAssertNil(all.next)
        XCTAssertEqual(all.items.map { TimeAndIdPosition(time: $0.createdAt, id: $0.id) },
                       all.items.map { TimeAndIdPosition(time: $0.createdAt, id: $0.id) }.sorted { ($0.time, $0.id) < ($1.time, $1.id) })
        var seen: [String] = [], after: TimeAndIdPosition?
        repeat {
            let page = try storage.read { [after] in try $0.activeTokens(account: owner, after: after, limit: 2) }
            XCTAssertLessThanOrEqual(page.items.count, 2)
            seen += page.items.map(\.id)
            after = page.next
        } while after != nil
        XCTAssertEqual(seen, all.items.map(\.id))

        for t in all.items { try write { try $0.recordPull(token: t.id, household: h, seq: 0, at: now) } }
        let devices = try storage.read { try $0.syncStatus(household: h, account: owner, limit: 100) }
        XCTAssertEqual(devices.devices.map(\.tokenId), all.items.map(\.id).sorted())
        XCTAssertNil(devices.next)
        var pages: [[String]] = [], position: DevicePosition?
        repeat {
            let page = try storage.read { [position] in try $0.syncStatus(household: h, account: owner, after: position, limit: 2) }
            pages.append(page.devices.map(\.tokenId))
            position = page.next
        } while position != nil
        XCTAssertEqual(pages.map(\.count), [2, 2, 1])
        XCTAssertEqual(pages.flatMap { $0 }, devices.devices.map(\.tokenId))
    }

    /// Pots: the default pot without a row, pots and their balances (sums of their
    /// transactions), transactions naming pots, transfers whole or refused whole, deletion,
    /// and pots in the feed.
    func checkPotsAndTransfers() throws {
        let now = self.now
        let (owner, h, c) = try household()
        let c2 = UUID().lowercased
        _ = try write { try $0.createChild(household: h, account: owner, id: c2, name: "Bo", sortOrder: nil, now: now).isCreated }
        let main = try XCTUnwrap(PotRecord.defaultId(child: c))
        var listed = try storage.read { try $0.listPots(household: h, account: owner, child: c, after: nil, limit: 10) }
        XCTAssertEqual(listed.items.map(\.id), [main])
        XCTAssertEqual(listed.items.first?.changeTag, PotRecord.defaultChangeTag)
        XCTAssertNil(try storage.read { try $0.pot(household: h, id: main) }, "the default pot has no row")

        let save = UUID().lowercased
        let made = try write { try $0.createPot(household: h, account: owner, PotDraft(id: save, childId: c, name: "Save", targetCents: 500,
                                                                                      targetDate: LocalDate("2027-06-01")), now: now) }
        XCTAssertTrue(made.created)
        XCTAssertFalse(try write { try $0.createPot(household: h, account: owner, PotDraft(id: save, childId: c, name: "Save", targetCents: 500,
                                                                                          targetDate: LocalDate("2027-06-01")), now: now) }.created)
        expect(.potIdTaken(made.pot)) { try $0.createPot(household: h, account: owner, PotDraft(id: save, childId: c, name: "Give", targetCents: nil, targetDate: nil), now: now) }
        var saved = Self.new(c, 300)
        saved.potId = save
        let t = saved
        _ = try write { try $0.addTransaction(household: h, author: owner, t, now: now) }
        _ = try write { try $0.addTransaction(household: h, author: owner, Self.new(c, 1000), now: now) }
        var nowhere = Self.new(c, 1)
        let unknown = UUID().lowercased
        nowhere.potId = unknown
        let toUnknown = nowhere
        expect(.unknownPot(unknown)) { try $0.addTransaction(household: h, author: owner, toUnknown, now: now) }
        nowhere.potId = PotRecord.defaultId(child: c2)
        let toOther = nowhere
        expect(.potOfAnotherChild(toOther.potId!)) { try $0.addTransaction(household: h, author: owner, toOther, now: now) }

        let transfer = UUID()
        let moved = try write { try $0.transfer(household: h, account: owner, child: c, id: transfer, from: main, to: save, amountCents: 200,
                                                note: "", now: now) }
        XCTAssertTrue(moved.created)
        XCTAssertEqual(moved.balanceCents, 1300)
        XCTAssertFalse(try write { try $0.transfer(household: h, account: owner, child: c, id: transfer, from: main, to: save, amountCents: 200,
                                                   note: "", now: now) }.created)
        // The second half refused: neither half stays.
        expect(.unknownPot(unknown)) { try $0.transfer(household: h, account: owner, child: c, id: UUID(), from: main, to: unknown,
                                                       amountCents: 5, note: "", now: now) }
        listed = try storage.read { try $0.listPots(household: h, account: owner, child: c, after: nil, limit: 10) }
        XCTAssertEqual(listed.items.map(\.balanceCents), [800, 500])
        XCTAssertEqual(try storage.read { try $0.balance(household: h, child: c) }, 1300)
        XCTAssertEqual(try storage.read { try $0.pot(household: h, id: save) }?.progressBasisPoints, 10_000)

        expect(.potNotEmpty(balanceCents: 500)) { try $0.deletePot(household: h, account: owner, id: save, matches: { _ in true }, now: now) }
        expect(.defaultPotDeletion) { try $0.deletePot(household: h, account: owner, id: main, matches: { _ in true }, now: now) }
        _ = try write { try $0.transfer(household: h, account: owner, child: c, id: UUID(), from: save, to: main, amountCents: 500,
                                        note: "", now: now) }
        try write { try $0.deletePot(household: h, account: owner, id: save, matches: { _ in true }, now: now) }
        XCTAssertEqual(try storage.read { try $0.pot(household: h, id: save) }?.deleted, true)
        let page = try storage.read { try $0.feedPage(household: h, account: owner, since: nil, limit: 100) }
        XCTAssertEqual(page.pots.map(\.id), [save])
        XCTAssertEqual(page.pots.first?.deleted, true)
        XCTAssertEqual(Set(page.transactions.compactMap(\.potId)), [save])
    }

    func checkFeedPagesTokensAndSyncStatus() throws {
        let now = self.now
        let (owner, h, c) = try household()
        for i in 0..<5 { _ = try write { try $0.addTransaction(household: h, author: owner, Self.new(c, Int64(i + 1)), now: now) } }
        let first = try storage.read { try $0.feedPage(household: h, account: owner, since: nil, limit: 4) }
        XCTAssertEqual(first.children.count + first.transactions.count, 4)
        XCTAssertTrue(first.moreComing)
        let rest = try storage.read { try $0.feedPage(household: h, account: owner, since: first.next, limit: 100) }
        XCTAssertEqual(rest.records, 2)
        XCTAssertFalse(rest.moreComing)
        XCTAssertEqual(Set(first.transactions.map(\.id) + rest.transactions.map(\.id)).count, 5)
        let empty = try storage.read { try $0.feedPage(household: h, account: owner, since: rest.next, limit: 100) }
        XCTAssertFalse(empty.hasNews)

        // A reversal's two changes are never split by a page boundary.
        let t = first.transactions[0]
        _ = try write { try $0.reverse(household: h, author: owner, transaction: t.id, now: now) }
        let one = try storage.read { try $0.feedPage(household: h, account: owner, since: rest.next, limit: 1) }
        XCTAssertEqual(one.transactions.map(\.reversedById).first, .some(LedgerIDs.reversalID(of: LedgerIDs.parse(t.id)!).lowercased))

        let forged = SyncPosition(household: h, incarnation: rest.next.incarnation + 1, seq: 1)
        XCTAssertThrowsError(try storage.read { try $0.feedPage(household: h, account: owner, since: forged, limit: 10) }) { e in
            XCTAssertEqual(e as? LedgerStorageError, .syncTokenExpired)
        }

        let (_, token) = try write { try $0.createAccount(handle: "ss", displayName: "S", deviceName: "d", now: now) }
        _ = token
        let ownerToken = try write { try $0.createToken(account: owner, deviceName: "tablet", now: now) }
        try write { try $0.recordPull(token: ownerToken.record.id, household: h, seq: rest.next.seq, at: now) }
        let status = try storage.read { try $0.syncStatus(household: h, account: owner) }
        XCTAssertEqual(status.devices.map(\.tokenId), [ownerToken.record.id])
        XCTAssertEqual(status.devices.first?.changesBehind, 2, "the reversal and its target changed after the pull")
        XCTAssertEqual(status.devices.first?.lastPullAt, now)

        try write { try $0.deleteHousehold(id: h, account: owner) }
        XCTAssertThrowsError(try storage.read { try $0.feedPage(household: h, account: owner, since: nil, limit: 10) }) { e in
            XCTAssertEqual(e as? LedgerStorageError, .householdNotFound)
        }
    }
}

/// The contract on SQLite: the writer's group commit over a migrated temporary database.
final class SQLiteLedgerStorageTests: LedgerStorageContractTests {
    private var directory: URL?
    private var writer: WriteQueue?

    override func makeBackend() throws -> (any LedgerStorage)? {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-seam-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        directory = dir
        let path = dir.appendingPathComponent("db.sqlite").path
        let db = try SQLiteConnection(path: path)
        try Migrator.migrate(db, Schema.migrations)
        let keys = try TransactionKeys.load(db)
        let writer = WriteQueue(connection: db, maxBatch: 16, batchState: WriterRowState()) { _ in }
        self.writer = writer
        return SQLiteLedgerStorage(reads: ReadPool(path: path), writer: writer, keys: keys)
    }

    func testAccountsTokensAndHouseholdIdentity() throws { try checkAccountsTokensAndHouseholdIdentity() }
    func testInsertIfAbsentReversalsUndoAndOverflow() throws { try checkInsertIfAbsentReversalsUndoAndOverflow() }
    func testChildrenCreatePatchAndPush() throws { try checkChildrenCreatePatchAndPush() }
    func testQuotaCounts() throws { try checkQuotaCounts() }
    func testSharingInvitationsAndAccess() throws { try checkSharingInvitationsAndAccess() }
    func testFeedPagesTokensAndSyncStatus() throws { try checkFeedPagesTokensAndSyncStatus() }
    func testInvitationPagesCountsAndQuotas() throws { try checkInvitationPagesCountsAndQuotas() }
    func testPushCountsTokensAndPolls() throws { try checkPushCountsTokensAndPolls() }
    func testBlocksAndInviterForInviteeQuota() throws { try checkBlocksAndInviterForInviteeQuota() }
    func testTokenCapAndPages() throws { try checkTokenCapAndPages() }
    func testPotsAndTransfers() throws { try checkPotsAndTransfers() }

    /// SQLite's busy and full results leave the conformer as the domain's `busy` and
    /// `outOfSpace` (the HTTP edge knows no SQLite), from reads and from writes alike; other
    /// SQLite errors pass as they are.
    func testBusyAndFullLeaveAsDomainErrors() throws {
        let cases: [(SQLiteError, LedgerStorageError?)] = [
            (SQLiteError(code: 5, message: "database is locked"), .busy),
            (SQLiteError(code: 5 | 2 << 8, message: "database is locked (snapshot)"), .busy),
            (SQLiteError(code: 6, message: "database table is locked"), .busy),
            (SQLiteError(code: 13, message: "database or disk is full"), .outOfSpace),
            (SQLiteError(code: 19, message: "constraint failed"), nil),
        ]
        for (raw, expected) in cases {
            let check = { (e: any Error) in
                if let expected {
                    XCTAssertEqual(e as? LedgerStorageError, expected, "\(raw)")
                } else {
                    XCTAssertEqual((e as? SQLiteError)?.code, raw.code, "\(raw)")
                }
            }
            XCTAssertThrowsError(try storage.read { _ in throw raw }, "\(raw)", check)
            XCTAssertThrowsError(try write { _ in throw raw }, "\(raw)", check)
        }
        // The writer is not left refusing: a full disk it was told of is probed and gone.
        let now = self.now
        XCTAssertNoThrow(try write { try $0.createAccount(handle: "after", displayName: "A", deviceName: "d", now: now) })
    }

    override func tearDown() {
        writer?.stop()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }
}
