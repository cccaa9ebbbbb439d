import Foundation
@testable import LedgerClient
import LedgerClientTesting
import LedgerModel
import XCTest

/// The identity calls of CLIENT_API.md "Identity (v3)" against API.md v1.2's identity
/// endpoints, played in process by an `InMemoryTransport` (each request's method, path, token
/// and body checked, each answer as the contract writes it), with every other request going to
/// a real server on loopback — so a sign-in's opening of the account's household is real.
final class LedgerIdentityTests: XCTestCase {
    private var server: RestartableServer!
    private var directory: URL { URL(fileURLWithPath: server.directory) }
    private var identity: IdentityServer!
    private var opened: [Ledger] = []

    override func setUpWithError() throws {
        server = try RestartableServer("kidledger-identity")
        identity = IdentityServer(real: URLSessionTransport(baseURL: server.url))
    }

    override func tearDown() async throws {
        for ledger in opened { await ledger.stopAutomaticSync() }
        opened = []
        server?.remove()
    }

    private func device(_ name: String, credentials: (any CredentialStore)? = nil) async throws -> Ledger {
        let ledger = try await Ledger.open(store: directory.appendingPathComponent("\(name).store"), server: server.url,
                                           credentials: credentials ?? InMemoryCredentialStore(),
                                           transport: identity.transport, options: LedgerSyncTests.fast)
        opened.append(ledger)
        return ledger
    }

    private func some<T>(_ value: T?, file: StaticString = #filePath, line: UInt = #line) throws -> T {
        try XCTUnwrap(value, file: file, line: line)
    }

    /// Mum's phone: Ada with 10.00, shared as "Family". Returns it, its token and Mum's account.
    private func mumsPhone() async throws -> (Ledger, String, Account) {
        let credentials = InMemoryCredentialStore()
        let mum = try await device("mum-phone", credentials: credentials)
        try await mum.signUp(handle: "mum", displayName: "Mum", deviceName: "Mum's phone")
        let ada = try await mum.addChild(named: "Ada")
        try await mum.add(cents: 1_000, to: ada.id, note: "start")
        try await mum.enableSharing(householdName: "Family")
        let account = try some(await mum.account)
        return (mum, try some(try await credentials.token()), account)
    }

    // MARK: Sign in with an identity

    func testSigningInWithAnIdentityOpensTheAccountsOnlyHousehold() async throws {
        let (mum, token, account) = try await mumsPhone()
        let minted = try identity.mintToken(for: token, device: "Mum's iPad")
        identity.play { req in
            guard req.path == "/v1/auth/apple" else { return nil }
            return .json(IdentityServer.accountAndToken(account, minted, created: false), status: 200)
        }
        let credentials = InMemoryCredentialStore()
        let ipad = try await device("mum-ipad", credentials: credentials)
        let outcome = try await ipad.signIn(provider: "apple", idToken: "eyJ.apple.token", nonce: "raw-nonce",
                                            newAccount: nil, deviceName: "Mum's iPad")

        let sent = try some(identity.requests { $0.path == "/v1/auth/apple" }.first)
        XCTAssertEqual(sent.method, "POST")
        XCTAssertNil(sent.headers["Authorization"], "signing in carries no token")
        XCTAssertEqual(try IdentityServer.body(sent), ["idToken": .string("eyJ.apple.token"), "nonce": .string("raw-nonce"),
                                                       "deviceName": .string("Mum's iPad")])
        XCTAssertEqual(outcome.account, account)
        XCTAssertFalse(outcome.created)
        let family = try some(try await mum.snapshot().household)
        XCTAssertEqual(outcome.households?.map(\.id), [family.id])
        XCTAssertEqual(outcome.openedHousehold?.id, family.id, "the account's only household opens without asking")
        let stored = try await credentials.token()
        XCTAssertEqual(stored, minted.secret)
        let snapshot = try await ipad.snapshot()
        XCTAssertEqual(snapshot.household?.id, family.id)
        XCTAssertEqual(snapshot.children.map(\.balanceCents), [1_000])
        let me = await ipad.account
        XCTAssertEqual(me, account)
    }

    func testSigningInKeepsADifferentLocalLedgerAndListsTheHouseholds() async throws {
        let (_, token, account) = try await mumsPhone()
        let minted = try identity.mintToken(for: token, device: "Mum's iPad")
        identity.play { req in
            req.path == "/v1/auth/apple" ? .json(IdentityServer.accountAndToken(account, minted, created: false)) : nil
        }
        let ipad = try await device("mum-ipad")
        _ = try await ipad.addChild(named: "Zed")
        let outcome = try await ipad.signIn(provider: "apple", idToken: "t")
        XCTAssertEqual(outcome.households?.map(\.name), ["Family"])
        XCTAssertNil(outcome.openedHousehold, "a different ledger is never replaced without asking")
        let snapshot = try await ipad.snapshot()
        XCTAssertEqual(snapshot.children.map(\.name), ["Zed"])
        XCTAssertEqual(snapshot.status, .localOnly)
    }

    func testANewAccountIsMadeForAnUnlinkedIdentity() async throws {
        let real = identity.real
        identity.play { req in
            guard req.path == "/v1/auth/apple" else { return nil }
            let body = try IdentityServer.body(req)
            guard let handle = body["handle"]?.stringValue, let name = body["displayName"]?.stringValue else {
                return .json(#"{"type":"urn:kidledger:identity_not_linked","status":404,"code":"identity_not_linked"}"#, status: 404)
            }
            // The server makes the account (here through the ordinary signup) and links the identity.
            let made = try real.send(TransportRequest(method: "POST", path: "/v1/accounts", headers: ["Content-Type": "application/json"],
                                                      body: Array(JSONValue.object(["handle": .string(handle), "displayName": .string(name)]).serializedString.utf8)))
            var answer = try JSONValue.parse(made.body).objectValue ?? [:]
            answer["created"] = .bool(true)
            return .json(JSONValue.object(answer).serializedString, status: 201)
        }
        let phone = try await device("gran")
        do {
            try await phone.signIn(provider: "apple", idToken: "t", nonce: "n")
            XCTFail("signed in with an identity linked to no account")
        } catch let error as LedgerError {
            XCTAssertEqual(error, .identityNotLinked)
        }
        let nobody = await phone.account
        XCTAssertNil(nobody)
        let outcome = try await phone.signIn(provider: "apple", idToken: "t", nonce: "n2",
                                             newAccount: NewAccount(handle: "gran", displayName: "Gran"))
        let sent = try some(identity.requests { $0.path == "/v1/auth/apple" }.last)
        XCTAssertEqual(try IdentityServer.body(sent), ["idToken": .string("t"), "nonce": .string("n2"),
                                                       "handle": .string("gran"), "displayName": .string("Gran")])
        XCTAssertTrue(outcome.created)
        XCTAssertEqual(outcome.account.handle, "gran")
        XCTAssertEqual(outcome.households, [])
        XCTAssertNil(outcome.openedHousehold)
        let me = await phone.account
        XCTAssertEqual(me?.handle, "gran")
    }

    func testEveryIdentityProblemIsItsOwnError() async throws {
        let answer = Locked<InMemoryTransport.Response>(.init(status: 500))
        let identityPaths = ["/v1/auth/", "/v1/me/identities", "/v1/link-codes", "/v1/accounts/recover"]
        identity.play { req in
            identityPaths.contains { req.path.hasPrefix($0) } || (req.path == "/v1/me" && req.method == "DELETE")
                ? answer.withLock { $0 } : nil
        }
        let (phone, signedIn, _) = try await mumsPhone()
        func problem(_ status: Int, _ code: String, _ extra: String = "") -> InMemoryTransport.Response {
            .json(#"{"type":"urn:kidledger:\#(code)","title":"t","status":\#(status),"detail":"d","code":"\#(code)"\#(extra)}"#, status: status)
        }
        let cases: [(InMemoryTransport.Response, @Sendable (Ledger) async throws -> Void, LedgerError)] = [
            (problem(404, "identity_not_linked"), { _ = try await $0.signIn(provider: "apple", idToken: "t") }, .identityNotLinked),
            (problem(401, "invalid_id_token", #","reason":"expired""#), { _ = try await $0.signIn(provider: "apple", idToken: "t") },
             .invalidIdentityToken(reason: "expired")),
            (problem(401, "invalid_id_token", #","reason":"nonce""#), { _ = try await $0.linkIdentity(provider: "apple", idToken: "t", nonce: "n") },
             .invalidIdentityToken(reason: "nonce")),
            (problem(404, "unknown_provider"), { _ = try await $0.signIn(provider: "nosuch", idToken: "t") },
             .server(code: "unknown_provider", status: 404, detail: "d")),
            (problem(409, "handle_taken"), { _ = try await $0.signIn(provider: "apple", idToken: "t", newAccount: NewAccount(handle: "mum", displayName: "M")) },
             .server(code: "handle_taken", status: 409, detail: "d")),
            (problem(403, "registration_closed"), { _ = try await $0.signIn(provider: "apple", idToken: "t", newAccount: NewAccount(handle: "x12", displayName: "X")) },
             .server(code: "registration_closed", status: 403, detail: "d")),
            (problem(409, "identity_in_use"), { _ = try await $0.linkIdentity(provider: "apple", idToken: "t") },
             .server(code: "identity_in_use", status: 409, detail: "d")),
            (problem(404, "link_code_invalid"), { _ = try await $0.redeem(linkCode: "AAAA-BBBB-CCCC", deviceName: nil) }, .linkCodeInvalid),
            (problem(401, "recovery_failed"), { _ = try await $0.recover(handle: "mum", code: "x", revokeOtherDevices: false) }, .recoveryFailed),
            (problem(409, "owner_of_shared_household", #","households":["3F0A9DB7-21C5-4F2A-9B1E-0C7D3A1E2B44"]"#),
             { _ = try await $0.deleteAccount(confirmHandle: "mum", deletingSharedHouseholds: false) },
             .ownerOfSharedHousehold(["3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44"])),
            (problem(422, "confirmation_mismatch"), { _ = try await $0.deleteAccount(confirmHandle: "dad", deletingSharedHouseholds: false) },
             .invalidInput(field: "handle", message: "does not match the signed-in account's handle")),
            (problem(429, "rate_limited"), { _ = try await $0.redeem(linkCode: "AAAA-BBBB-CCCC") }, .offline),
        ]
        for (response, call, expected) in cases {
            answer.withLock { $0 = response }
            do {
                try await call(phone)
                XCTFail("\(expected): no error")
            } catch let error as LedgerError {
                XCTAssertEqual(error, expected)
                XCTAssertFalse(error.localizedDescription.isEmpty)
            }
            // None of them is about this device's own sign-in, nor a reason to think it offline.
            let status = await phone.status()
            guard case .synced = status else { return XCTFail("\(expected): \(status)") }
            let token = await phone.currentToken()
            XCTAssertEqual(token, signedIn)
        }
        // A 401 about this device's token is, though.
        answer.withLock { $0 = problem(401, "unauthenticated") }
        do {
            _ = try await phone.createLinkCode()
            XCTFail("no error")
        } catch let error as LedgerError {
            XCTAssertEqual(error, .unauthenticated)
        }
        let status = await phone.status()
        XCTAssertEqual(status, .accountUnavailable(pending: 0))
    }

    // MARK: Link codes and recovery codes

    func testALinkCodeFromOneDeviceSignsInAnother() async throws {
        let (mum, token, account) = try await mumsPhone()
        let minted = try identity.mintToken(for: token, device: "Mum's iPad")
        identity.play { req in
            switch (req.method, req.path) {
            case ("POST", "/v1/link-codes"):
                return .json(#"{"code":"7q2x4m8k1z9w","expiresAt":"2026-12-02T10:29:10.123Z","url":"https://ledger.example.com/link#7Q2X-4M8K-1Z9W"}"#, status: 201)
            case ("POST", "/v1/link-codes/redeem"):
                return .json(IdentityServer.accountAndToken(account, minted), status: 201)
            default: return nil
            }
        }
        let code = try await mum.createLinkCode()
        let made = try some(identity.requests { $0.path == "/v1/link-codes" }.first)
        XCTAssertEqual(made.headers["Authorization"], "Bearer \(token)")
        XCTAssertEqual(code.text, "7Q2X-4M8K-1Z9W")
        XCTAssertEqual(code.expiresAt, Date(timeIntervalSince1970: 1_796_207_350.123))
        XCTAssertEqual(code.url?.absoluteString, "https://ledger.example.com/link#7Q2X-4M8K-1Z9W")

        let ipad = try await device("mum-ipad")
        let outcome = try await ipad.redeem(linkCode: " 7q2x-4m8k-1z9w ", deviceName: "Mum's iPad")
        let redeemed = try some(identity.requests { $0.path == "/v1/link-codes/redeem" }.first)
        XCTAssertEqual(redeemed.method, "POST")
        XCTAssertNil(redeemed.headers["Authorization"])
        XCTAssertEqual(try IdentityServer.body(redeemed), ["code": .string("7q2x-4m8k-1z9w"), "deviceName": .string("Mum's iPad")])
        XCTAssertEqual(outcome.account, account)
        let family = try await mum.snapshot().household?.id
        XCTAssertEqual(outcome.openedHousehold?.id, family)
        let children = try await ipad.snapshot().children.map(\.name)
        XCTAssertEqual(children, ["Ada"])
        // Without hyphens the server's text is shown in groups; with anything else, as sent.
        XCTAssertEqual(LinkCode.display("abcd1234efgh"), "ABCD-1234-EFGH")
        XCTAssertEqual(LinkCode.display("ABCD-1234-EFGH"), "ABCD-1234-EFGH")
        XCTAssertEqual(LinkCode.display("short"), "short")
    }

    func testRecoveryCodesRecoverTheAccountOnANewDevice() async throws {
        let (mum, token, account) = try await mumsPhone()
        let codes = (1...10).map { String(format: "rc%02d-abcd-efgh", $0) }
        let minted = try identity.mintToken(for: token, device: "new phone")
        identity.play { req in
            switch (req.method, req.path) {
            case ("POST", "/v1/me/recovery-codes"):
                return .json(JSONValue.object(["codes": .array(codes.map { .string($0) }), "createdAt": .string("2026-12-02T10:19:10.123Z")]).serializedString,
                             status: 201)
            case ("GET", "/v1/me/recovery-codes"):
                return .json(#"{"remaining":9,"createdAt":"2026-12-02T10:19:10.123Z"}"#)
            case ("POST", "/v1/accounts/recover"):
                return .json(IdentityServer.accountAndToken(account, minted), status: 201)
            default: return nil
            }
        }
        let generated = try await mum.generateRecoveryCodes()
        XCTAssertEqual(generated, codes)
        let sent = try some(identity.requests { $0.path == "/v1/me/recovery-codes" }.first)
        XCTAssertEqual(sent.method, "POST")
        XCTAssertEqual(sent.headers["Authorization"], "Bearer \(token)")
        let status = try await mum.recoveryCodeStatus()
        XCTAssertEqual(status.remaining, 9)
        XCTAssertEqual(status.createdAt, Date(timeIntervalSince1970: 1_796_207_350.123 - 600))

        let phone = try await device("new-phone")
        let outcome = try await phone.recover(handle: "mum", code: codes[0], revokeOtherDevices: true, deviceName: "new phone")
        let recovered = try some(identity.requests { $0.path == "/v1/accounts/recover" }.first)
        XCTAssertNil(recovered.headers["Authorization"])
        XCTAssertEqual(try IdentityServer.body(recovered), ["handle": .string("mum"), "code": .string(codes[0]),
                                                            "deviceName": .string("new phone"), "revokeOtherTokens": .bool(true)])
        XCTAssertEqual(outcome.account, account)
        XCTAssertNotNil(outcome.openedHousehold)
        let balances = try await phone.snapshot().children.map(\.balanceCents)
        XCTAssertEqual(balances, [1_000])
    }

    // MARK: Linking identities

    func testLinkingAnIdentityToTheSignedInAccount() async throws {
        let (mum, token, _) = try await mumsPhone()
        identity.play { req in
            switch (req.method, req.path) {
            case ("POST", "/v1/me/identities"):
                return .json(#"{"id":"0d9f6c1e-5b7a-4c1d-8e2f-3a4b5c6d7e8f","provider":"apple","issuer":"https://appleid.apple.com","linkedAt":"2026-12-02T10:19:10.123Z"}"#, status: 201)
            case ("GET", "/v1/me/identities"):
                return .json(#"{"items":[{"id":"0d9f6c1e-5b7a-4c1d-8e2f-3a4b5c6d7e8f","provider":"apple","issuer":"https://appleid.apple.com","linkedAt":"2026-12-02T10:19:10.123Z"}]}"#)
            case ("DELETE", "/v1/me/identities/0d9f6c1e-5b7a-4c1d-8e2f-3a4b5c6d7e8f"):
                return .init(status: 204)
            default: return nil
            }
        }
        let linked = try await mum.linkIdentity(provider: "apple", idToken: "eyJ.t", nonce: "raw")
        let sent = try some(identity.requests { $0.path == "/v1/me/identities" && $0.method == "POST" }.first)
        XCTAssertEqual(sent.headers["Authorization"], "Bearer \(token)")
        XCTAssertEqual(try IdentityServer.body(sent), ["provider": .string("apple"), "idToken": .string("eyJ.t"), "nonce": .string("raw")])
        XCTAssertEqual(linked, LinkedIdentity(id: "0d9f6c1e-5b7a-4c1d-8e2f-3a4b5c6d7e8f", provider: "apple",
                                              issuer: "https://appleid.apple.com", linkedAt: Date(timeIntervalSince1970: 1_796_207_350.123 - 600)))
        let all = try await mum.linkedIdentities()
        XCTAssertEqual(all, [linked])
        try await mum.unlinkIdentity(linked.id)
        XCTAssertEqual(identity.requests { $0.method == "DELETE" }.count, 1)
        guard case .synced = await mum.status() else { return XCTFail("still synced and signed in") }
    }

    // MARK: Ownership

    func testTransferringOwnershipMakesTheOwnerAParticipant() async throws {
        let (mum, _, _) = try await mumsPhone()
        let dad = try await device("dad")
        try await dad.signUp(handle: "dad", displayName: "Dad")
        let invited = try await mum.invite(handle: "dad")
        let invitation = try some(try await dad.pendingInvitations().first)
        try await dad.join(invitation.id)
        let family = try some(try await mum.snapshot().household).id
        identity.play { req in
            guard req.path == "/v1/households/\(family)/owner" else { return nil }
            let body = try IdentityServer.body(req)
            guard body["accountId"]?.stringValue == invited.accountId else {
                return .json(#"{"status":422,"code":"not_a_participant","detail":"not an accepted read-write participant"}"#, status: 422)
            }
            return .json(#"{"id":"\#(family)","name":"Family","currency":"USD","ownerId":"\#(invited.accountId)","changeTag":"t2"}"#)
        }
        do {
            try await mum.transferOwnership(to: "0d9f6c1e-5b7a-4c1d-8e2f-3a4b5c6d7e8f")
            XCTFail("transferred to someone who is not a participant")
        } catch let error as LedgerError {
            XCTAssertEqual(error, .server(code: "not_a_participant", status: 422, detail: "not an accepted read-write participant"))
        }
        do {
            try await dad.transferOwnership(to: invited.accountId)
            XCTFail("a participant handed over a household that is not theirs")
        } catch let error as LedgerError {
            XCTAssertEqual(error, .notAllowed(reason: "Only the household's owner can do that."))
        }
        try await mum.transferOwnership(to: invited.accountId.uppercased())
        let sent = try some(identity.requests { $0.path.hasSuffix("/owner") }.last)
        XCTAssertEqual(sent.method, "POST")
        XCTAssertEqual(try IdentityServer.body(sent), ["accountId": .string(invited.accountId)])
        let household = try some(try await mum.snapshot().household)
        XCTAssertEqual(household.role, .participant)
        XCTAssertEqual(household.permission, .readWrite)
    }

    // MARK: Deleting the account

    func testDeletingTheAccountExportsFirstAndKeepsALocalOnlyLedger() async throws {
        let credentials = InMemoryCredentialStore()
        let mum = try await device("mum-phone", credentials: credentials)
        try await mum.signUp(handle: "mum", displayName: "Mum")
        let ada = try await mum.addChild(named: "Ada")
        try await mum.add(cents: 700, to: ada.id)
        try await mum.enableSharing(householdName: "Family")
        let before = try await mum.snapshot()
        let export = directory.appendingPathComponent("before-deletion.json.gz")
        let exportedFirst = Locked<Bool?>(nil)
        identity.play { req in
            guard req.method == "DELETE", req.path == "/v1/me" else { return nil }
            exportedFirst.withLock { $0 = FileManager.default.fileExists(atPath: export.path) }
            return .init(status: 204)
        }
        let deletion = try await mum.deleteAccount(confirmHandle: "mum", deletingSharedHouseholds: true, exportingTo: export)
        XCTAssertEqual(exportedFirst.withLock { $0 }, true, "the export is written before the account is deleted")
        let sent = try some(identity.requests { $0.path == "/v1/me" && $0.method == "DELETE" }.first)
        XCTAssertNotNil(sent.headers["Authorization"])
        XCTAssertEqual(try IdentityServer.body(sent), ["confirmHandle": .string("mum"), "ownedSharedHouseholds": .string("delete")])
        XCTAssertEqual(deletion.exportedTo, export)
        XCTAssertTrue(deletion.subscriptionNotice.contains("App Store"))
        XCTAssertEqual(deletion.subscriptionNotice, Ledger.subscriptionCancellationNotice)

        // Signed out; the records stay as a local-only ledger that can be shared again later.
        let token = try await credentials.token()
        XCTAssertNil(token)
        let account = await mum.account
        XCTAssertNil(account)
        let after = try await mum.snapshot()
        XCTAssertEqual(after.status, .localOnly)
        XCTAssertEqual(after.children.map(\.name), ["Ada"])
        XCTAssertEqual(after.children.map(\.balanceCents), [700])
        XCTAssertEqual(after.household?.shared, false)
        XCTAssertNil(after.household?.role)
        XCTAssertNotEqual(after.household?.id, before.household?.id, "the deleted household's ids are not reused")
        let bo = try await mum.addChild(named: "Bo")
        try await mum.add(cents: 5, to: bo.id)
        let local = try await mum.snapshot()
        XCTAssertEqual(local.status, .localOnly)
        XCTAssertEqual(local.children.map(\.pendingCount), [0, 0], "nothing is queued for a server")

        // The default refuses to delete shared households.
        let other = try await device("other", credentials: InMemoryCredentialStore(token: "kl_other"))
        identity.play { req in req.path == "/v1/me" ? .init(status: 204) : nil }
        let plain = try await other.deleteAccount(confirmHandle: "other", deletingSharedHouseholds: false)
        XCTAssertNil(plain.exportedTo)
        let last = try some(identity.requests { $0.path == "/v1/me" }.last)
        XCTAssertEqual(try IdentityServer.body(last), ["confirmHandle": .string("other"), "ownedSharedHouseholds": .string("refuse")])
    }

    func testARefusedDeletionChangesNothing() async throws {
        let (mum, token, _) = try await mumsPhone()
        let family = try some(try await mum.snapshot().household).id
        identity.play { req in
            req.path == "/v1/me" && req.method == "DELETE"
                ? .json(#"{"status":409,"code":"owner_of_shared_household","households":["\#(family)"]}"#, status: 409) : nil
        }
        do {
            try await mum.deleteAccount(confirmHandle: "mum", deletingSharedHouseholds: false)
            XCTFail("deleted an owner of a shared household")
        } catch let error as LedgerError {
            XCTAssertEqual(error, .ownerOfSharedHousehold([family]))
        }
        let snapshot = try await mum.snapshot()
        XCTAssertEqual(snapshot.household?.id, family)
        XCTAssertEqual(snapshot.household?.role, .owner)
        let still = await mum.currentToken()
        XCTAssertEqual(still, token)
        try await mum.syncNow()
    }

    func testDeletingTheAccountSwitchedToGoesBackToTheLedgersAccount() async throws {
        let credentials = InMemoryCredentialStore()
        let mum = try await device("mum-phone", credentials: credentials)
        try await mum.signUp(handle: "mum", displayName: "Mum")
        _ = try await mum.addChild(named: "Ada")
        try await mum.enableSharing(householdName: "Family")
        let mumsToken = try await credentials.token()
        // A second account signs in on this phone: the shared ledger stays Mum's, frozen.
        let made = try identity.real.send(TransportRequest(method: "POST", path: "/v1/accounts", headers: ["Content-Type": "application/json"],
                                                           body: Array(#"{"handle":"temp","displayName":"Temp"}"#.utf8)))
        let secret = try some(try JSONValue.parse(made.body)["token"]?["secret"]?.stringValue)
        try await mum.signIn(token: secret)
        let switched = await mum.ledgerAccountWhileSwitched
        XCTAssertEqual(switched?.handle, "mum")
        identity.play { req in req.path == "/v1/me" && req.method == "DELETE" ? .init(status: 204) : nil }
        try await mum.deleteAccount(confirmHandle: "temp", deletingSharedHouseholds: false)
        let token = try await credentials.token()
        XCTAssertEqual(token, mumsToken, "back to the ledger's own account")
        let account = await mum.account
        XCTAssertEqual(account?.handle, "mum")
        let snapshot = try await mum.snapshot()
        XCTAssertEqual(snapshot.household?.role, .owner)
        try await mum.syncNow()
        guard case .synced = await mum.status() else { return XCTFail("shared editing resumes") }
    }
}

/// Plays the identity endpoints of API.md v1.2 with the closure a test installs, and hands every
/// other request to the real server.
final class IdentityServer: Sendable {
    let real: URLSessionTransport
    private let log = Locked<[TransportRequest]>([])
    private let handler = Locked<(@Sendable (InMemoryTransport.Request) throws -> InMemoryTransport.Response?)?>(nil)

    init(real: URLSessionTransport) { self.real = real }

    var transport: InMemoryTransport {
        InMemoryTransport { [self] (req: TransportRequest) in
            log.withLock { $0.append(req) }
            let request = InMemoryTransport.Request(method: req.method, path: req.path, headers: req.headers, body: req.body)
            if let play = handler.withLock({ $0 }), let answer = try play(request) {
                return TransportResponse(status: answer.status, headers: answer.headers, body: answer.body)
            }
            return try real.send(req)
        }
    }

    /// Answers requests `play` returns an answer for; the rest go to the real server.
    func play(_ play: @escaping @Sendable (InMemoryTransport.Request) throws -> InMemoryTransport.Response?) {
        handler.withLock { $0 = play }
    }

    /// The requests sent so far that `matching` selects, oldest first.
    func requests(_ matching: (TransportRequest) -> Bool) -> [TransportRequest] {
        log.withLock { $0 }.filter(matching)
    }

    /// A new device token of the account signed in with `token`, made on the real server.
    func mintToken(for token: String, device: String) throws -> Wire.Token {
        try APIClient(transport: real, token: token).json("POST", "/v1/tokens", Wire.Token.self, body: ["deviceName": device]).body
    }

    /// `{account, token, created?}` as the identity endpoints answer.
    static func accountAndToken(_ account: Account, _ token: Wire.Token, created: Bool? = nil) -> String {
        var o: JSONObject = ["account": .object(["id": .string(account.id), "handle": .string(account.handle),
                                                 "displayName": .string(account.displayName)]),
                             "token": .object(["id": .string(token.id), "secret": .string(token.secret ?? ""),
                                               "deviceName": .string(token.deviceName ?? ""), "createdAt": .string(token.createdAt ?? "")])]
        if let created { o["created"] = .bool(created) }
        return JSONValue.object(o).serializedString
    }

    /// A request's JSON body as a dictionary.
    static func body(_ request: TransportRequest) throws -> [String: JSONValue] {
        try body(request.body)
    }

    static func body(_ request: InMemoryTransport.Request) throws -> [String: JSONValue] {
        try body(request.body)
    }

    private static func body(_ bytes: [UInt8]) throws -> [String: JSONValue] {
        let object = try JSONValue.parse(bytes).objectValue ?? [:]
        return Dictionary(uniqueKeysWithValues: object.pairs)
    }
}
