import Foundation
@testable import LedgerClient
import LedgerClientTesting
import LedgerModel
import XCTest

/// A new device of an account — a second token, as `login --token` uses — reaches the
/// households the account owns or has joined, against a real server on loopback: it lists
/// them, opens one (guarded like a join, resumable), and then syncs like any other device.
final class LedgerHouseholdsTests: XCTestCase {
    private var server: RestartableServer!
    private var directory: URL { URL(fileURLWithPath: server.directory) }
    private var opened: [Ledger] = []

    override func setUpWithError() throws {
        server = try RestartableServer("kidledger-households")
    }

    override func tearDown() async throws {
        for ledger in opened { await ledger.stopAutomaticSync() }
        opened = []
        server?.remove()
    }

    private func device(_ name: String, credentials: (any CredentialStore)? = nil,
                        transport: (any Transport)? = nil) async throws -> Ledger {
        let ledger = try await Ledger.open(store: directory.appendingPathComponent("\(name).store"), server: server.url,
                                           credentials: credentials ?? InMemoryCredentialStore(),
                                           transport: transport, options: LedgerSyncTests.fast)
        opened.append(ledger)
        return ledger
    }

    /// Another device token of the account signed in with `token` (`POST /v1/tokens`).
    private func secondToken(of token: String, device: String) throws -> String {
        let api = APIClient(transport: URLSessionTransport(baseURL: server.url), token: token)
        let made = try api.json("POST", "/v1/tokens", Wire.Token.self, body: ["deviceName": device]).body
        return try XCTUnwrap(made.secret)
    }

    /// Mum's phone: Ada with 10.00, shared as "Family". Returns the ledger, its token, Ada's id.
    private func mumsPhone() async throws -> (Ledger, String, String) {
        let credentials = InMemoryCredentialStore()
        let mum = try await device("mum-phone", credentials: credentials)
        try await mum.signUp(handle: "mum", displayName: "Mum", deviceName: "Mum's phone")
        let ada = try await mum.addChild(named: "Ada")
        try await mum.add(cents: 1_000, to: ada.id, note: "start")
        try await mum.take(cents: 150, from: ada.id, note: "sweets")
        try await mum.enableSharing(householdName: "Family")
        return (mum, try some(try await credentials.token()), ada.id)
    }

    private func some<T>(_ value: T?, file: StaticString = #filePath, line: UInt = #line) throws -> T {
        try XCTUnwrap(value, file: file, line: line)
    }

    private func balances(_ ledger: Ledger) async throws -> [String: Int64] {
        Dictionary(uniqueKeysWithValues: try await ledger.snapshot().children.map { ($0.id, $0.balanceCents) })
    }

    func testASecondDeviceOfTheAccountOpensItsHouseholdAndConverges() async throws {
        let (mum, token, ada) = try await mumsPhone()
        let ipad = try await device("mum-ipad")
        try await ipad.signIn(token: try secondToken(of: token, device: "Mum's iPad"))
        let empty = await ipad.status()
        XCTAssertEqual(empty, .localOnly, "signed in, but nothing on this device yet")

        let listed = try await ipad.households()
        let family = try some(try await mum.snapshot().household)
        let mumsAccount = await mum.account?.id
        XCTAssertEqual(listed, [HouseholdSummary(id: family.id, name: "Family", currency: "USD", role: .owner,
                                                 permission: .readWrite, shared: true, ownerAccountId: mumsAccount)])

        let export = try await ipad.open(household: family.id)
        XCTAssertNil(export, "an empty ledger is replaced without an export")
        let snapshot = try await ipad.snapshot()
        XCTAssertEqual(snapshot.household?.id, family.id)
        XCTAssertEqual(snapshot.household?.role, .owner)
        XCTAssertEqual(snapshot.household?.name, "Family")
        XCTAssertEqual(snapshot.children.map(\.name), ["Ada"])
        let ipadBalances = try await balances(ipad), mumBalances = try await balances(mum)
        XCTAssertEqual(ipadBalances, mumBalances)
        let history = try await ipad.history(of: ada)
        XCTAssertEqual(history.items.count, 2)

        // Opening it again changes nothing; then both devices edit and converge.
        let again = try await ipad.open(household: family.id)
        XCTAssertNil(again)
        try await ipad.add(cents: 250, to: ada, note: "from the iPad")
        try await ipad.rename(ada, to: "Ada L.")
        try await ipad.syncNow()
        try await mum.take(cents: 100, from: ada, note: "from the phone")
        try await mum.syncNow()
        try await ipad.syncNow()
        let ipadAfter = try await balances(ipad), mumAfter = try await balances(mum)
        XCTAssertEqual(ipadAfter, [ada: 1_000 - 150 + 250 - 100])
        XCTAssertEqual(mumAfter, ipadAfter)
        let names = try await mum.snapshot().children.map(\.name)
        XCTAssertEqual(names, ["Ada L."])
        let ipadStatus = await ipad.status(), mumStatus = await mum.status()
        guard case .synced = ipadStatus else { return XCTFail("\(ipadStatus)") }
        guard case .synced = mumStatus else { return XCTFail("\(mumStatus)") }
    }

    func testOpeningRefusesToReplaceADifferentLedgerUnlessAskedAndExportsItFirst() async throws {
        let (mum, token, _) = try await mumsPhone()
        let family = try some(try await mum.snapshot().household).id
        let ipad = try await device("mum-ipad")
        let zed = try await ipad.addChild(named: "Zed")
        try await ipad.add(cents: 42, to: zed.id)
        try await ipad.signIn(token: try secondToken(of: token, device: "Mum's iPad"))

        do {
            try await ipad.open(household: family)
            XCTFail("replaced a different ledger without being asked")
        } catch let error as LedgerError {
            XCTAssertEqual(error, .joinWouldReplaceLocalLedger)
        }
        let kept = try await ipad.snapshot()
        XCTAssertEqual(kept.children.map(\.name), ["Zed"])
        XCTAssertEqual(kept.status, .localOnly)

        let export = try some(try await ipad.open(household: family, replacingLocal: true))
        XCTAssertTrue(FileManager.default.fileExists(atPath: export.path))
        let replaced = try await ipad.snapshot().children.map(\.name)
        XCTAssertEqual(replaced, ["Ada"])
        // The export brings Zed back on a store of its own.
        let restored = try await device("restored")
        try await restored.importLedger(from: export)
        let restoredBalances = try await restored.snapshot().children.map(\.balanceCents)
        XCTAssertEqual(restoredBalances, [42])

        // A household the account neither owns nor has joined is not found, and nothing changes.
        let dad = try await device("dad")
        try await dad.signUp(handle: "dad", displayName: "Dad")
        _ = try await dad.addChild(named: "Bo")
        try await dad.enableSharing(householdName: "Dad's")
        let dads = try some(try await dad.snapshot().household).id
        do {
            try await ipad.open(household: dads, replacingLocal: true)
            XCTFail("opened another account's household")
        } catch let error as LedgerError {
            XCTAssertEqual(error, .notFound)
        }
        let still = try await ipad.snapshot()
        XCTAssertEqual(still.household?.id, family)
        XCTAssertEqual(still.children.map(\.name), ["Ada"])
    }

    func testAnInterruptedOpeningResumesFromTheStagedPages() async throws {
        let (mum, token, ada) = try await mumsPhone()
        for i in 1...20 { try await mum.add(cents: Int64(i), to: ada) }
        try await mum.syncNow()
        let family = try some(try await mum.snapshot().household).id
        let secret = try secondToken(of: token, device: "Mum's iPad")
        let ipad = try await device("mum-ipad", credentials: InMemoryCredentialStore(), transport: nil)
        try await ipad.signIn(token: secret)

        // Another connection to the iPad's store fetches three pages of five, then the network goes.
        let feed = Counter()
        let cut = Locked(false)
        let real = URLSessionTransport(baseURL: server.url)
        let store = try LedgerStore(path: directory.appendingPathComponent("mum-ipad.store").path)
        let engine = SyncEngine(store: store, transport: InMemoryTransport { req in
            if req.method == "GET", req.path.contains("/changes") {
                if cut.withLock({ $0 }) { throw TransportError.unreachable("killed") }
                if feed.next() == 2 { cut.withLock { $0 = true } }
            }
            return try real.send(req)
        }, retry: .once)
        engine.api.token = secret
        engine.joinPageSize = 5
        XCTAssertThrowsError(try JoinFlow(engine: engine).open(householdId: family, replaceLocal: false))
        XCTAssertEqual(try store.phase(), .joining(.fetching, invitationId: "", householdId: family))
        XCTAssertEqual(try store.counts().transactions, 0, "nothing reaches the replica before the last page")
        let staged = try XCTUnwrap(try store.string(.joinStageToken))
        let snapshotWhileOpening = try await ipad.snapshot()
        XCTAssertEqual(snapshotWhileOpening.children, [])

        // The next sync of the ledger itself continues from the staged token, not from the start.
        let requests = Locked<[String]>([])
        let logged = try await Ledger.open(store: directory.appendingPathComponent("mum-ipad.store"), server: server.url,
                                           credentials: InMemoryCredentialStore(token: secret),
                                           transport: InMemoryTransport { req in
                                               requests.withLock { $0.append(req.path) }
                                               return try real.send(req)
                                           }, options: LedgerSyncTests.fast)
        opened.append(logged)
        try await logged.syncNow()
        let firstFeed = try XCTUnwrap(requests.withLock { $0 }.first { $0.contains("/changes") })
        XCTAssertTrue(firstFeed.contains("since=\(APIClient.escape(staged))"), firstFeed)
        XCTAssertEqual(try store.phase(), .shared)
        XCTAssertNil(try store.string(.joinStageToken))
        let ipadBalances = try await balances(ipad), mumBalances = try await balances(mum)
        XCTAssertEqual(ipadBalances, mumBalances)
        let history = try await ipad.history(of: ada, limit: 100)
        XCTAssertEqual(history.items.count, 22)
        XCTAssertTrue(try store.balanceMismatches().isEmpty)
    }

    func testJoinedHouseholdsAreListedAndOpenedByTheAccountsOtherDevice() async throws {
        let (mum, _, ada) = try await mumsPhone()
        let dadCredentials = InMemoryCredentialStore()
        let dad = try await device("dad-phone", credentials: dadCredentials)
        try await dad.signUp(handle: "dad", displayName: "Dad")
        _ = try await dad.addChild(named: "Bo")
        try await dad.enableSharing(householdName: "Dad's own")
        try await mum.invite(handle: "dad", permission: .readWrite)
        let laptop = try await device("dad-laptop")
        let dadToken = try some(try await dadCredentials.token())
        try await laptop.signIn(token: try secondToken(of: dadToken, device: "Dad's laptop"))
        // The invitation is accepted on the laptop; the phone keeps its own household.
        let invitation = try some(try await laptop.pendingInvitations().first)
        try await laptop.join(invitation.id)

        // A tablet finds Dad's token in the keychain (iCloud): it learns the account from the server.
        let tabletToken = try secondToken(of: dadToken, device: "tablet")
        let tablet = try await device("dad-tablet", credentials: InMemoryCredentialStore(token: tabletToken))
        let listed = try await tablet.households()
        let family = try some(try await mum.snapshot().household).id
        let own = try some(try await dad.snapshot().household).id
        XCTAssertEqual(Set(listed.map(\.id)), [family, own])
        XCTAssertEqual(listed.first { $0.id == family }?.role, .participant)
        XCTAssertEqual(listed.first { $0.id == family }?.permission, .readWrite)
        XCTAssertEqual(listed.first { $0.id == own }?.role, .owner)
        let tabletAccount = await tablet.account
        XCTAssertEqual(tabletAccount?.handle, "dad")

        try await tablet.open(household: family)
        let role = try await tablet.snapshot().household?.role
        XCTAssertEqual(role, .participant)
        try await tablet.add(cents: 500, to: ada, note: "from Dad's tablet")
        try await tablet.syncNow()
        try await mum.syncNow()
        let mumBalances = try await balances(mum), tabletBalances = try await balances(tablet)
        XCTAssertEqual(mumBalances, [ada: 1_000 - 150 + 500])
        XCTAssertEqual(tabletBalances, mumBalances)
        let rejected = try await tablet.rejectedChanges()
        XCTAssertEqual(rejected, [], "written in Dad's name, as the server expects")
    }
}
