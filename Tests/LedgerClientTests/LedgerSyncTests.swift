import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import LedgerClient
import LedgerModel
import LedgerServer
import XCTest

/// The public `Ledger` against a real server on loopback: observation of remote changes and
/// of a sibling `Ledger` on the same file, cancellation, the automatic scheduler, and the
/// offline → online transition.
final class LedgerSyncTests: XCTestCase {
    private var server: RestartableServer!
    private var directory: URL { URL(fileURLWithPath: server.directory) }
    private var opened: [Ledger] = []

    override func setUpWithError() throws {
        server = try RestartableServer("kidledger-api")
    }

    override func tearDown() async throws {
        for ledger in opened { await ledger.stopAutomaticSync() }
        opened = []
        server?.remove()
    }

    static var fast: Ledger.Options {
        var options = Ledger.Options()
        options.scheduler.backoffBase = 0.05
        options.scheduler.backoffMax = 0.3
        options.retry = RetryPolicy(maxAttempts: 2, baseDelay: 0.05, maxDelay: 0.1)
        return options
    }

    /// A device: its own store file and credential file.
    private func device(_ name: String, file: String? = nil) async throws -> Ledger {
        let ledger = try await Ledger.open(store: directory.appendingPathComponent("\(file ?? name).store"), server: server.url,
                                           credentials: FileCredentialStore(file: directory.appendingPathComponent("\(name).token")),
                                           transport: nil, options: Self.fast)
        opened.append(ledger)
        return ledger
    }

    /// Mum's shared ledger with Ada (10.00) and Dad joined to it.
    private func family() async throws -> (mum: Ledger, dad: Ledger, ada: String) {
        let mum = try await device("mum")
        try await mum.signUp(handle: "mum", displayName: "Mum", deviceName: "Mum's phone")
        let ada = try await mum.addChild(named: "Ada")
        try await mum.add(cents: 1_000, to: ada.id, note: "start")
        try await mum.enableSharing(householdName: "Family")
        let dad = try await device("dad")
        try await dad.signUp(handle: "dad", displayName: "Dad", deviceName: "Dad's phone")
        let participant = try await mum.invite(handle: "dad", permission: .readWrite)
        XCTAssertEqual(participant.status, .invited)
        let invitations = try await dad.pendingInvitations()
        XCTAssertEqual(invitations.map(\.householdName), ["Family"])
        try await dad.join(invitations[0].id, replacingLocal: false)
        return (mum, dad, ada.id)
    }

    /// Waits for the first element of `stream` that satisfies `condition`; fails after `timeout`.
    private func first<S: AsyncSequence & Sendable>(_ stream: S, within timeout: Double, file: StaticString = #filePath, line: UInt = #line,
                                                    where condition: @escaping @Sendable (S.Element) -> Bool) async throws -> S.Element
        where S.Element: Sendable {
        try await withThrowingTaskGroup(of: S.Element?.self) { group in
            group.addTask {
                for try await element in stream where condition(element) { return element }
                return nil
            }
            group.addTask {
                try await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
                return nil
            }
            let found = try await group.next() ?? nil
            group.cancelAll()
            guard let found else {
                XCTFail("nothing matching within \(timeout) s", file: file, line: line)
                throw CancellationError()
            }
            return found
        }
    }

    func testRemoteChangeReachesTheOtherDevicesSnapshotsAndEvents() async throws {
        let (mum, dad, ada) = try await family()
        await mum.startAutomaticSync()
        await dad.startAutomaticSync()
        let dadSnapshots = dad.snapshots()
        let dadEvents = dad.events()
        let initial = try await first(dadSnapshots, within: 5) { $0.children.first?.balanceCents == 1_000 }
        XCTAssertEqual(initial.household?.name, "Family")
        XCTAssertEqual(initial.household?.role, .participant)
        let started = Date()
        try await mum.add(cents: 250, to: ada, note: "chores")
        _ = try await first(dadSnapshots, within: 5) { $0.children.first?.balanceCents == 1_250 }
        XCTAssertLessThan(Date().timeIntervalSince(started), 2, "automatic sync brought it over at once")
        _ = try await first(dadEvents, within: 5) {
            if case .remoteChanges(_, let transactions) = $0 { return transactions > 0 }
            return false
        }
        let page = try await dad.history(of: ada)
        XCTAssertEqual(page.items.first?.note, "chores")
        XCTAssertEqual(page.items.first?.isPending, false)
    }

    func testSiblingLedgerOnTheSameFileIsSeenWithinOneSecond() async throws {
        let app = try await device("app", file: "shared")
        let widget = try await device("widget", file: "shared")
        let snapshots = app.snapshots()
        _ = try await first(snapshots, within: 2) { $0.children.isEmpty }
        let started = Date()
        let zed = try await widget.addChild(named: "Zed")
        let seen = try await first(snapshots, within: 2) { $0.children.contains { $0.id == zed.id } }
        XCTAssertEqual(seen.children.map(\.name), ["Zed"])
        XCTAssertLessThan(Date().timeIntervalSince(started), 1)
    }

    func testCancelledSyncStopsWithinOneSecondAndLeavesTheLedgerConsistent() async throws {
        let (mum, _, ada) = try await family()
        try await mum.add(cents: 5, to: ada)
        let pending = try await mum.snapshot().status.pendingCount
        XCTAssertEqual(pending, 1)
        // A server that takes the connection and never answers.
        let silent = try SilentListener()
        try await mum.setServer(URL(string: "http://127.0.0.1:\(silent.port)")!)
        let task = Task { try await mum.syncNow() }
        try await Task.sleep(nanoseconds: 300_000_000)
        let cancelledAt = Date()
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("a sync against a silent server finished")
        } catch {
            XCTAssertEqual(error as? LedgerError, .cancelled)
        }
        XCTAssertLessThan(Date().timeIntervalSince(cancelledAt), 1, "stopped within a second")
        let after = try await mum.snapshot()
        XCTAssertEqual(after.status.pendingCount, 1, "the pending change is kept")
        XCTAssertEqual(after.children.first?.balanceCents, 1_005)
        try await mum.setServer(server.url)
        let report = try await mum.syncNow()
        XCTAssertEqual(report.pushed, 1)
        let synced = await mum.status()
        guard case .synced = synced else { return XCTFail("\(synced)") }
    }

    func testAutomaticSyncPushesWithinItsDebounceAndStaysLive() async throws {
        let (mum, dad, ada) = try await family()
        await mum.startAutomaticSync()
        await dad.startAutomaticSync()
        let mumStatus = mum.statusUpdates()
        let started = Date()
        try await mum.add(cents: 1, to: ada)
        _ = try await first(mumStatus, within: 3) { if case .synced = $0 { return true } else { return false } }
        XCTAssertLessThan(Date().timeIntervalSince(started), 1, "pushed soon after the mutation")
        // Idle for a while: the long-poll stays open and the next change still arrives at once.
        try await Task.sleep(nanoseconds: 1_500_000_000)
        let dadSnapshots = dad.snapshots()
        let again = Date()
        try await mum.add(cents: 1, to: ada)
        _ = try await first(dadSnapshots, within: 3) { $0.children.first?.balanceCents == 1_002 }
        XCTAssertLessThan(Date().timeIntervalSince(again), 1)
        await mum.stopAutomaticSync()
        let running = await mum.isAutomaticSyncRunning
        XCTAssertFalse(running)
    }

    func testStatusUpdatesGoOfflineAndBackOnline() async throws {
        let (mum, _, ada) = try await family()
        await mum.startAutomaticSync()
        let statuses = mum.statusUpdates()
        _ = try await first(statuses, within: 3) { if case .synced = $0 { return true } else { return false } }
        server.stop()
        try await mum.add(cents: 7, to: ada)
        let offline = try await first(statuses, within: 5) { if case .offline = $0 { return true } else { return false } }
        XCTAssertEqual(offline.pendingCount, 1)
        try server.start()
        _ = try await first(statuses, within: 5) { if case .synced = $0 { return true } else { return false } }
        let pending = try await mum.snapshot().status.pendingCount
        XCTAssertEqual(pending, 0)
    }

    func testAnotherLedgerOnTheFileThatIsOfflineDoesNotLeaveTheAppOfflineForEver() async throws {
        let (mum, _, _) = try await family()
        await mum.startAutomaticSync()
        let statuses = mum.statusUpdates()
        _ = try await first(statuses, within: 3) { if case .synced = $0 { return true } else { return false } }
        // An extension on the same file, with nothing to upload, cannot reach the server and
        // records so after the app has already synced.
        let extensionLedger = try await Ledger.open(store: directory.appendingPathComponent("mum.store"),
                                                   server: URL(string: "http://127.0.0.1:9")!,
                                                   credentials: FileCredentialStore(file: directory.appendingPathComponent("mum.token")),
                                                   transport: nil, options: Self.fast)
        do { _ = try await extensionLedger.syncNow(); XCTFail("a sync against no server succeeded") } catch {
            XCTAssertEqual(error as? LedgerError, .offline)
        }
        _ = try await first(statuses, within: 3) { if case .offline = $0 { return true } else { return false } }
        // The app's own ledger reaches the server: it checks for itself and says synced again.
        _ = try await first(statuses, within: 3) { if case .synced = $0 { return true } else { return false } }
    }

    func testRevokedParticipantIsFrozenKeepsItsCopyAndHearsWhy() async throws {
        let (mum, dad, _) = try await family()
        let events = dad.events()
        let participants = try await mum.participants()
        let dadsId = try XCTUnwrap(participants.first { $0.handle == "dad" }?.accountId)
        try await mum.setPermission(.readOnly, for: dadsId)
        try await mum.setPermission(.readWrite, for: dadsId)
        try await mum.revoke(dadsId)
        do { _ = try await dad.syncNow(); XCTFail("a revoked participant synced") } catch {
            XCTAssertEqual(error as? LedgerError, .attentionRequired(.accessRevoked))
        }
        _ = try await first(events, within: 3) { $0 == .attentionRequired(.accessRevoked) }
        let snap = try await dad.snapshot()
        XCTAssertEqual(snap.status, .attentionRequired(.accessRevoked, pending: 0))
        XCTAssertEqual(snap.children.first?.balanceCents, 1_000, "nothing local was deleted")
        try await dad.leave()
        let left = try await dad.snapshot()
        XCTAssertEqual(left.status, .localOnly)
    }

    func testAccountSwitchIsNeverSilentAndCanBeUndone() async throws {
        let (mum, dad, ada) = try await family()
        let eve = try await device("eve")
        try await eve.signUp(handle: "eve", displayName: "Eve")
        let zed = try await device("zed")
        try await zed.signUp(handle: "zed", displayName: "Zed")
        func token(_ name: String) throws -> String {
            try String(contentsOf: directory.appendingPathComponent("\(name).token"), encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let events = dad.events()
        try await dad.signIn(token: try token("eve"))
        _ = try await first(events, within: 3) { $0 == .attentionRequired(.accountChanged) }
        let signedIn = await dad.account
        let ledgerAccount = await dad.ledgerAccountWhileSwitched
        XCTAssertEqual(signedIn?.handle, "eve")
        XCTAssertEqual(ledgerAccount?.handle, "dad")
        let frozen = await dad.status()
        XCTAssertEqual(frozen, .attentionRequired(.accountChanged, pending: 0))
        do { try await dad.add(cents: 1, to: ada); XCTFail("a switched ledger took an edit") } catch {
            XCTAssertEqual(error as? LedgerError, .attentionRequired(.accountChanged))
        }
        do { _ = try await dad.syncNow(); XCTFail("a switched ledger synced") } catch {
            XCTAssertEqual(error as? LedgerError, .attentionRequired(.accountChanged))
        }
        // A third account: the ledger's own token is still the one kept to come back to.
        try await dad.signIn(token: try token("zed"))
        try await dad.signInToLedgerAccount()
        let back = await dad.account
        XCTAssertEqual(back?.handle, "dad")
        try await dad.add(cents: 1, to: ada)
        _ = try await dad.syncNow()
        _ = try await mum.syncNow()
        let balance = try await mum.snapshot().children.first?.balanceCents
        XCTAssertEqual(balance, 1_001)
        do { try await dad.signInToLedgerAccount(); XCTFail("nothing was left to restore") } catch {
            guard case .notAllowed = error as? LedgerError else { return XCTFail("\(error)") }
        }
    }

    func testARemoteNotificationFetchesWhatChanged() async throws {
        let (mum, dad, ada) = try await family()
        try await mum.add(cents: 3, to: ada)
        _ = try await mum.syncNow()
        let snapshots = dad.snapshots()
        _ = try await first(snapshots, within: 2) { $0.children.first?.balanceCents == 1_000 }
        await dad.remoteNotificationReceived()
        _ = try await first(snapshots, within: 3) { $0.children.first?.balanceCents == 1_003 }
    }

    func testARefusedChangeStaysVisibleUntilDismissed() async throws {
        let (_, dad, ada) = try await family()
        // Dad's phone clock is two days ahead: the server refuses what it stamps (clock_skew).
        var options = Self.fast
        options.clock = { Timestamp.nowMs() + 48 * 3_600_000 }
        let skewed = try await Ledger.open(store: directory.appendingPathComponent("dad.store"), server: server.url,
                                           credentials: FileCredentialStore(file: directory.appendingPathComponent("dad.token")),
                                           transport: nil, options: options)
        let events = skewed.events()
        try await skewed.add(cents: 42, to: ada, note: "from the future")
        let report = try await skewed.syncNow()
        XCTAssertEqual(report.rejected, 1)
        let event = try await first(events, within: 3) { if case .rejected = $0 { return true } else { return false } }
        guard case .rejected(let change) = event else { return XCTFail("\(event)") }
        XCTAssertEqual(change.code, "clock_skew")
        XCTAssertEqual(change.amountCents, 42)
        XCTAssertEqual(change.note, "from the future")
        XCTAssertEqual(change.childId, ada)
        XCTAssertFalse(change.reason.isEmpty)
        let snap = try await dad.snapshot()
        XCTAssertEqual(snap.rejected, [change], "kept where the user can see it")
        XCTAssertEqual(snap.children.first?.balanceCents, 1_000, "out of the balance, as on the server")
        try await dad.dismissRejected(change)
        let after = try await dad.rejectedChanges()
        XCTAssertEqual(after, [])
    }

    func testTokenLivesInTheCredentialStoreNotTheDatabase() async throws {
        let mum = try await device("mum")
        try await mum.signUp(handle: "mum", displayName: "Mum")
        let account = await mum.account
        XCTAssertEqual(account?.handle, "mum")
        let token = try XCTUnwrap(try String(contentsOf: directory.appendingPathComponent("mum.token"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines))
        let database = try Data(contentsOf: directory.appendingPathComponent("mum.store"))
        XCTAssertNil(database.range(of: Data(token.utf8)), "the token is not in the replica")
        try await mum.signOut()
        let signedOut = await mum.account
        XCTAssertNil(signedOut)
        // A store of an earlier version kept the token in the database: opening moves it out.
        let old = try LedgerStore(path: directory.appendingPathComponent("old.store").path)
        try old.set(.token, token)
        let credentials = InMemoryCredentialStore()
        _ = try await Ledger.open(store: directory.appendingPathComponent("old.store"), server: server.url, credentials: credentials)
        let moved = try await credentials.token()
        XCTAssertEqual(moved, token)
        XCTAssertNil(try old.string(.token))
    }
}

/// A TCP listener on loopback that never accepts: connections sit in its backlog, requests
/// are never answered.
final class SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, listen(fd, 16) == 0 else { close(fd); throw POSIXError(.EADDRINUSE) }
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    deinit { close(fd) }
}
