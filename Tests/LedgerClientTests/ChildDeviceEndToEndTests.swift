import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import LedgerClient
import LedgerModel
import LedgerServer
import LedgerServerTesting
import XCTest

/// Child devices and requests against a real server on loopback (`TestServer` live): pairing,
/// a child's device that reads only its child, requests made offline, two parents deciding
/// offline (paid once; the first decision to reach the server stands on every replica), and
/// a revoked device reporting itself signed out, even mid long-poll.
final class ChildDeviceEndToEndTests: XCTestCase {
    private var server: RestartableServer!
    private var directory: URL { URL(fileURLWithPath: server.directory) }
    private var opened: [Ledger] = []

    override func setUpWithError() throws {
        server = try RestartableServer("kidledger-child")
    }

    override func tearDown() async throws {
        for ledger in opened { await ledger.stopAutomaticSync() }
        opened = []
        server?.remove()
    }

    private func device(_ name: String) async throws -> Ledger {
        var options = Ledger.Options()
        options.retry = RetryPolicy(maxAttempts: 2, baseDelay: 0.05, maxDelay: 0.1)
        let ledger = try await Ledger.open(store: directory.appendingPathComponent("\(name).store"), server: server.url,
                                           credentials: FileCredentialStore(file: directory.appendingPathComponent("\(name).token")),
                                           transport: nil, options: options)
        opened.append(ledger)
        return ledger
    }

    /// Takes the server away (over SQLite: a restarted server keeps its file; over PostgreSQL
    /// each server has a fresh schema, so there the devices simply do not sync meanwhile).
    private func goOffline() -> Bool {
        guard TestServer.postgresURL == nil else { return false }
        server.stop()
        return true
    }

    private func comeBack() throws {
        if TestServer.postgresURL == nil { try server.start() }
    }

    private func token(of name: String) async throws -> String {
        let stored = try await FileCredentialStore(file: directory.appendingPathComponent("\(name).token")).token()
        return try XCTUnwrap(stored)
    }

    /// Mum's shared ledger with Ada (10.00) and Bo (5.00), Dad joined with write access.
    private func family() async throws -> (mum: Ledger, dad: Ledger, ada: String, bo: String) {
        let mum = try await device("mum")
        try await mum.signUp(handle: "mum", displayName: "Mum", deviceName: "Mum's phone")
        let ada = try await mum.addChild(named: "Ada")
        let bo = try await mum.addChild(named: "Bo")
        try await mum.add(cents: 1_000, to: ada.id, note: "start")
        try await mum.add(cents: 500, to: bo.id, note: "start")
        try await mum.enableSharing(householdName: "Family")
        let dad = try await device("dad")
        try await dad.signUp(handle: "dad", displayName: "Dad", deviceName: "Dad's phone")
        _ = try await mum.invite(handle: "dad", permission: .readWrite)
        let invitations = try await dad.pendingInvitations()
        let invitation = try XCTUnwrap(invitations.first)
        try await dad.join(invitation.id, replacingLocal: false)
        return (mum, dad, ada.id, bo.id)
    }

    /// A device paired to `child` with a code from `parent`.
    private func kid(_ name: String, of child: String, by parent: Ledger) async throws -> Ledger {
        let code = try await parent.pairChildDevice(child, deviceName: "\(name)'s tablet")
        XCTAssertEqual(code.text.count, 14, "XXXX-XXXX-XXXX")
        let kid = try await device(name)
        let mode = try await kid.redeemChildCode(code.text.lowercased(), deviceName: "\(name)'s tablet")
        XCTAssertEqual(mode, .child(child))
        return kid
    }

    private func balance(_ ledger: Ledger, _ child: String) async throws -> Int64? {
        try await ledger.snapshot().children.first { $0.id == child }?.balanceCents
    }

    /// One request to the server with `token`.
    private func call(_ method: String, _ path: String, token: String, body: String? = nil) async throws -> Int {
        var request = URLRequest(url: server.url.appendingPathComponent(String(path.dropFirst())))
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as! HTTPURLResponse).statusCode
    }

    func testAPairedDeviceHoldsOnlyItsChildAndItsApprovedRequestPaysOnce() async throws {
        let (mum, _, ada, bo) = try await family()
        let kid = try await kid("ada", of: ada, by: mum)
        var snap = try await kid.snapshot()
        XCTAssertEqual(snap.mode, .child(ada))
        XCTAssertEqual(snap.children.map(\.id), [ada], "Bo is never on Ada's device")
        XCTAssertEqual(snap.children.first?.balanceCents, 1_000)
        let history = try await kid.history(of: ada)
        XCTAssertEqual(history.items.map(\.amountCents), [1_000])
        do {
            _ = try await kid.history(of: bo)
            XCTFail("another child's history on a child's device")
        } catch LedgerError.notAllowed {}
        let devices = try await mum.childDevices(of: ada)
        XCTAssertEqual(devices.map(\.name), ["ada's tablet"])
        let noDevices = try await mum.childDevices(of: bo)
        XCTAssertEqual(noDevices, [])

        let asked = try await kid.request(.spend(cents: 450, note: "book"))
        try await kid.syncNow()
        let uploaded = try await kid.request(asked.id)
        XCTAssertFalse(uploaded.isPending)
        try await mum.syncNow()
        var pending = try await mum.requests(status: .pending)
        XCTAssertEqual(pending.map(\.id), [asked.id])
        XCTAssertEqual(pending.first?.note, "book")
        snap = try await mum.snapshot()
        XCTAssertEqual(snap.pendingRequests, 1)

        let approved = try await mum.approve(asked.id)
        XCTAssertEqual(approved.paymentId, RequestRecord.paymentId(of: asked.id))
        try await mum.syncNow()
        let again = try await mum.approve(asked.id)
        XCTAssertEqual(again.status, .approved, "approving again changes nothing")
        try await mum.syncNow()
        pending = try await mum.requests(status: .pending)
        XCTAssertEqual(pending, [])
        try await kid.syncNow()
        let outcome = try await kid.request(asked.id)
        XCTAssertEqual(outcome.status, .approved, "the child's device sees the outcome")
        let kidBalance = try await balance(kid, ada)
        XCTAssertEqual(kidBalance, 550)
        let mumBalance = try await balance(mum, ada)
        XCTAssertEqual(mumBalance, 550)
        let payments = try await mum.history(of: ada).items.filter { $0.id == RequestRecord.paymentId(of: asked.id) }
        XCTAssertEqual(payments.map(\.amountCents), [-450])
    }

    func testAChildTokenReachesNeitherTheHouseholdNorTheOtherChild() async throws {
        let (mum, _, ada, bo) = try await family()
        let adaKid = try await kid("ada", of: ada, by: mum)
        let boKid = try await kid("bo", of: bo, by: mum)
        let boRequest = try await boKid.request(.chore(cents: 200, note: "bins"))
        try await boKid.syncNow()
        let household = try await mum.snapshot().household!.id
        let adaToken = try await token(of: "ada")
        let h = "/v1/households/\(household)"
        // Reads of another child, of the household and of members are 404; writes other than requests 403 or 404.
        for path in ["\(h)/children/\(bo)", "\(h)/children/\(bo)/transactions", "\(h)/children/\(bo)/requests",
                     "\(h)/children/\(bo)/changes", "\(h)/changes", "\(h)/children", "\(h)/share", "\(h)/transactions"] {
            let status = try await call("GET", path, token: adaToken)
            XCTAssertEqual(status, 404, path)
        }
        let own = try await call("GET", "\(h)/children/\(ada)/requests", token: adaToken)
        XCTAssertEqual(own, 200)
        let otherChildRequest = try await call("POST", "\(h)/children/\(bo)/requests", token: adaToken,
                                               body: #"{"kind":"spend","amountCents":100}"#)
        XCTAssertTrue([403, 404].contains(otherChildRequest), "\(otherChildRequest)")
        let money = try await call("POST", "\(h)/children/\(ada)/transactions", token: adaToken,
                                   body: #"{"amountCents":100000,"note":"mine"}"#)
        XCTAssertTrue([403, 404].contains(money), "\(money)")
        let approve = try await call("POST", "\(h)/requests/\(boRequest.id)/approve", token: adaToken, body: "{}")
        XCTAssertTrue([403, 404].contains(approve), "\(approve)")
        let pair = try await call("POST", "\(h)/children/\(ada)/devices", token: adaToken, body: "{}")
        XCTAssertTrue([403, 404].contains(pair), "\(pair)")
        // Nothing of it reached anyone.
        try await mum.syncNow()
        let balances = try await mum.snapshot().children.map(\.balanceCents)
        XCTAssertEqual(balances, [1_000, 500])
        try await adaKid.syncNow()
        let adaRequests = try await adaKid.requests()
        XCTAssertEqual(adaRequests, [], "Bo's request is not on Ada's device")
    }

    func testOfflineRequestAndTwoOfflineApprovalsPayOnceOnEveryReplica() async throws {
        let (mum, dad, ada, _) = try await family()
        let kid = try await kid("ada", of: ada, by: mum)
        let offline = goOffline()
        let asked = try await kid.request(.chore(cents: 300, note: "washed the car"))
        XCTAssertTrue(asked.isPending)
        if offline {
            do { try await kid.syncNow(); XCTFail("synced with the server stopped") } catch LedgerError.offline {}
        }
        try comeBack()
        try await kid.syncNow()
        try await mum.syncNow()
        try await dad.syncNow()
        _ = goOffline()
        // Both parents approve, offline: Mum as asked, Dad with another amount.
        _ = try await mum.approve(asked.id)
        _ = try await dad.approve(asked.id, cents: 500)
        let mumOffline = try await balance(mum, ada), dadOffline = try await balance(dad, ada)
        XCTAssertEqual(mumOffline, 1_300)
        XCTAssertEqual(dadOffline, 1_500)
        try comeBack()
        try await mum.syncNow()   // Mum's decision reaches the server first: it stands.
        let dadReport = try await dad.syncNow()
        XCTAssertEqual(dadReport.conflicts, 1, "Dad's approval is answered with Mum's")
        try await mum.syncNow()
        try await kid.syncNow()
        for (name, ledger) in [("mum", mum), ("dad", dad), ("kid", kid)] {
            let r = try await ledger.request(asked.id)
            XCTAssertEqual(r.status, .approved, name)
            XCTAssertEqual(r.amountCents, 300, name)
            let b = try await balance(ledger, ada)
            XCTAssertEqual(b, 1_300, "\(name): paid once, as the first approval said")
            let payments = try await ledger.history(of: ada).items.filter { $0.id == RequestRecord.paymentId(of: asked.id) }
            XCTAssertEqual(payments.map(\.amountCents), [300], name)
            let status = await ledger.status()
            XCTAssertEqual(status.pendingCount, 0, "\(name): \(status)")
            let rejected = try await ledger.rejectedChanges()
            XCTAssertEqual(rejected, [], "\(name): the approval that came second is merged, not refused")
        }
    }

    func testApproveAgainstDeclineResolvesTheSameOnEveryReplicaWhicheverComesFirst() async throws {
        let (mum, dad, ada, _) = try await family()
        let kid = try await kid("ada", of: ada, by: mum)
        let first = try await kid.request(.spend(cents: 200, note: "sweets"))
        let second = try await kid.request(.spend(cents: 700, note: "game"))
        try await kid.syncNow()
        try await mum.syncNow()
        try await dad.syncNow()
        _ = goOffline()
        _ = try await mum.decline(first.id, note: "not today")
        _ = try await dad.approve(first.id)
        _ = try await mum.approve(second.id)
        _ = try await dad.decline(second.id, note: "too much")
        try comeBack()
        try await dad.syncNow()   // Dad first: his approval of the sweets and his decline of the game stand.
        let mumReport = try await mum.syncNow()
        XCTAssertEqual(mumReport.conflicts, 2, "both of Mum's decisions came second")
        try await dad.syncNow()
        try await kid.syncNow()
        for (name, ledger) in [("mum", mum), ("dad", dad), ("kid", kid)] {
            let sweets = try await ledger.request(first.id), game = try await ledger.request(second.id)
            XCTAssertEqual(sweets.status, .approved, name)
            XCTAssertEqual(game.status, .declined, name)
            XCTAssertEqual(game.decisionNote, "too much", name)
            let b = try await balance(ledger, ada)
            XCTAssertEqual(b, 800, "\(name): only the sweets were paid")
            let gamePaid = try await ledger.history(of: ada).items.contains { $0.id == RequestRecord.paymentId(of: second.id) }
            XCTAssertFalse(gamePaid, "\(name): Mum's losing approval left no payment")
        }
        let rejected = try await mum.rejectedChanges()
        XCTAssertEqual(rejected, [], "a decision that lost is merged, not a refused change")
    }

    func testRevokingTheDeviceSignsItOutEvenWhileItLongPolls() async throws {
        let (mum, _, ada, _) = try await family()
        let kid = try await kid("ada", of: ada, by: mum)
        let tablet = try await self.kid("ada-tablet", of: ada, by: mum)
        let paired = try await mum.childDevices(of: ada)
        XCTAssertEqual(paired.count, 2)
        // One device waits on its feed (a long-poll of 30 s), the other runs automatic sync.
        let poll = Task { try await kid.runSync(lane: .live, wait: 30) }
        await tablet.startAutomaticSync()
        try await Task.sleep(nanoseconds: 500_000_000)
        for device in paired { try await mum.revokeChildDevice(device.id, of: ada) }
        let started = Date()
        do {
            _ = try await poll.value
            XCTFail("the long-poll of a revoked device succeeded")
        } catch LedgerError.unauthenticated {}
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "the long-poll ends with the revocation")
        var status = await kid.status()
        guard case .accountUnavailable = status else { return XCTFail("\(status)") }
        status = await tablet.status()
        while Date().timeIntervalSince(started) < 10 {
            if case .accountUnavailable = status { break }
            try await Task.sleep(nanoseconds: 100_000_000)
            status = await tablet.status()
        }
        guard case .accountUnavailable = status else { return XCTFail("automatic sync still \(status) after the revocation") }
        await tablet.stopAutomaticSync()
        // Its requests stay on the device, and the parents see no device any more.
        _ = try await kid.request(.spend(cents: 100, note: "later"))
        do { try await kid.syncNow(); XCTFail("a revoked device synced") } catch LedgerError.unauthenticated {}
        let devices = try await mum.childDevices(of: ada)
        XCTAssertEqual(devices, [])
        // Reopened, the store is still Ada's device.
        let reopened = try await device("ada")
        let mode = await reopened.mode
        XCTAssertEqual(mode, .child(ada))
    }

    func testRequestsDecidedOnALocalLedgerGoUpWhenItIsSharedAndArePaidOnce() async throws {
        let mum = try await device("mum")
        let ada = try await mum.addChild(named: "Ada")
        let chore = try await mum.request(.chore(cents: 300, note: "car"), for: ada.id)
        _ = try await mum.approve(chore.id, cents: 250)
        let spend = try await mum.request(.spend(cents: 100, note: "sweets"), for: ada.id)
        _ = try await mum.decline(spend.id, note: "no")
        let open = try await mum.request(.spend(cents: 50, note: "gum"), for: ada.id)
        try await mum.signUp(handle: "mum", displayName: "Mum", deviceName: "Mum's phone")
        try await mum.enableSharing(householdName: "Family")
        try await mum.syncNow()
        let rejected = try await mum.rejectedChanges()
        XCTAssertEqual(rejected, [], "the approval's payment is the server's own")
        let b = try await balance(mum, ada.id)
        XCTAssertEqual(b, 250)
        // Another device of Mum's sees the same requests and the one payment.
        let link = try await mum.createLinkCode()
        let tablet = try await device("tablet")
        _ = try await tablet.redeem(linkCode: link.text)
        try await tablet.syncNow()
        let seen = try await tablet.requests()
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: seen.map { ($0.id, $0.status) }),
                       [chore.id: .approved, spend.id: .declined, open.id: .pending])
        let tb = try await balance(tablet, ada.id)
        XCTAssertEqual(tb, 250)
        let payments = try await tablet.history(of: ada.id).items.map(\.id)
        XCTAssertEqual(payments, [RequestRecord.paymentId(of: chore.id)])
    }
}
