import Foundation
@testable import LedgerClient
import SQLiteKit
import XCTest

/// The store's meta keys and the stored forms of role, permission and last outcome: store files
/// written by earlier versions keep reading the same.
final class LedgerStoreMetaTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-meta-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// Every key as store files spell it. A changed raw value would lose what was stored under it.
    static let storedKeys = [
        "device_id", "server_url", "token", "token_id", "account_id", "account_handle", "account_display_name",
        "signed_in_account_id", "signed_in_account_handle", "signed_in_display_name", "pinned_token",
        "pinned_token_id", "phase", "sync_token", "generation", "attention", "last_outcome", "last_sync_at",
        "offline_since", "newest_seen_modified_at", "reconcile", "reconcile_waiting", "owner_restore", "join_previous_phase", "join_previous_account_id",
        "join_previous_account_handle", "join_stage_token", "join_stage_household", "entitlement_token",
        "entitlement_keys", "push_app_id", "push_key", "push_registered_token_id", "child_mode_child_id", "child_mode_child_name",
    ]

    func testStoredSpellingsAreUnchanged() {
        XCTAssertEqual(MetaKey.allCases.map(\.rawValue), Self.storedKeys)
        XCTAssertEqual(Set(Self.storedKeys).count, Self.storedKeys.count, "one spelling per key")
        XCTAssertEqual(Role.allCases.map(\.rawValue), ["owner", "participant"])
        XCTAssertEqual(Permission.allCases.map(\.rawValue), ["readWrite", "readOnly"])
        XCTAssertEqual([SyncOutcome.offline, .unauthenticated].map(\.rawValue), ["offline", "unauthenticated"])
    }

    /// A store whose rows were written as earlier versions wrote them (plain SQL, the stored
    /// spellings) opens and reads the same through the store and through `Ledger`.
    func testAStoreWrittenByAnEarlierVersionReadsTheSame() async throws {
        let url = directory.appendingPathComponent("earlier.store")
        do {
            let earlier = try LedgerStore(path: url.path)
            let written: [String: String] = [
                "account_id": "a-mum", "account_handle": "mum", "account_display_name": "Mum",
                "signed_in_account_id": "a-dad", "signed_in_account_handle": "dad", "signed_in_display_name": "Dad",
                "token": "kl_earlier", "token_id": "t1", "phase": "shared", "attention": "accountChanged",
                "last_outcome": "unauthenticated", "offline_since": "1700000000000", "last_sync_at": "1700000000001",
                "sync_token": "tok/7", "generation": "4", "entitlement_token": "a.b.c", "entitlement_keys": "{}",
            ]
            for (key, value) in written {
                try earlier.db.run("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", [.text(key), .text(value)])
            }
            try earlier.db.run("UPDATE household SET role = 'participant', permission = 'readOnly', shared = 1")
        }

        let store = try LedgerStore(path: url.path)
        XCTAssertEqual(try store.string(.accountDisplayName), "Mum")
        XCTAssertEqual(try store.string(.signedInAccountDisplayName), "Dad")
        XCTAssertEqual(try store.string(.offlineSince), "1700000000000")
        XCTAssertEqual(try store.string(.entitlementToken), "a.b.c")
        XCTAssertEqual(try store.lastOutcome(), .unauthenticated)
        XCTAssertEqual(try store.attention(), .accountChanged)
        XCTAssertEqual(try store.phase(), .shared)
        XCTAssertEqual(try store.generation(), 4)
        XCTAssertEqual(try store.household().role, .participant)
        XCTAssertEqual(try store.household().permission, .readOnly)

        let credentials = InMemoryCredentialStore()
        let ledger = try await Ledger.open(store: url, server: nil, credentials: credentials)
        let token = try await credentials.token()
        XCTAssertEqual(token, "kl_earlier", "the token moves to the credential store")
        let account = await ledger.account
        XCTAssertEqual(account, Account(id: "a-dad", handle: "dad", displayName: "Dad"))
        let pinned = await ledger.ledgerAccountWhileSwitched
        XCTAssertEqual(pinned, Account(id: "a-mum", handle: "mum", displayName: "Mum"))
        let snapshot = try await ledger.snapshot()
        XCTAssertEqual(snapshot.household?.role, .participant)
        XCTAssertEqual(snapshot.household?.permission, .readOnly)
        XCTAssertEqual(snapshot.status, .attentionRequired(.accountChanged, pending: 0))
        try store.set(.attention, nil)
        let status = await ledger.status()
        XCTAssertEqual(status, .accountUnavailable(pending: 0), "last outcome `unauthenticated`")
    }

    /// Each key reads what was stored under its spelling, and writes it back the same way.
    func testEveryKeyReadsAndWritesItsStoredSpelling() throws {
        let store = try LedgerStore(path: ":memory:")
        for key in Self.storedKeys {
            try store.db.run("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", [.text(key), .text("value of \(key)")])
        }
        for key in MetaKey.allCases {
            XCTAssertEqual(try store.string(key), "value of \(key.rawValue)")
            try store.set(key, "again")
        }
        let rows = try store.db.query("SELECT key FROM meta WHERE value = 'again' ORDER BY key").map { $0.string(0) }
        XCTAssertEqual(rows, Self.storedKeys.sorted())
    }
}
