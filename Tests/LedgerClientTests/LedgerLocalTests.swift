import Foundation
import LedgerClient
import XCTest

/// The public `Ledger` without a server: mutations, reads, paging, streams, errors, credentials.
final class LedgerLocalTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-local-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func open(_ name: String = "family") async throws -> Ledger {
        try await Ledger.open(store: directory.appendingPathComponent("\(name).store"), server: nil,
                              credentials: FileCredentialStore(directory: directory))
    }

    func testMutationsReadsAndPagingWithoutAServer() async throws {
        let ledger = try await open()
        let ada = try await ledger.addChild(named: "Ada")
        let tx = try await ledger.add(cents: 500, to: ada.id, note: "allowance", source: .manual)
        XCTAssertFalse(tx.isPending, "a local-only ledger queues nothing")
        try await ledger.take(cents: 125, from: ada.id, note: "sweets", source: .siri)
        let reversal = try await ledger.undoLast(for: ada.id)
        XCTAssertEqual(reversal.amountCents, 125)
        try await ledger.rename(ada.id, to: "Ada L.")
        try await ledger.setArchived(true, for: ada.id)
        try await ledger.move(ada.id, toSortOrder: 2)

        let snap = try await ledger.snapshot()
        XCTAssertEqual(snap.status, .localOnly)
        XCTAssertEqual(snap.children.count, 1)
        XCTAssertEqual(snap.children[0].name, "Ada L.")
        XCTAssertEqual(snap.children[0].balanceCents, 500)
        XCTAssertTrue(snap.children[0].archived)
        XCTAssertEqual(snap.children[0].sortOrder, 2)

        for i in 1...7 { try await ledger.add(cents: Int64(i), to: ada.id) }
        var seen: [LedgerTransaction] = []
        var cursor: String?
        repeat {
            let page = try await ledger.history(of: ada.id, limit: 3, before: cursor)
            XCTAssertLessThanOrEqual(page.items.count, 3)
            seen += page.items
            cursor = page.nextCursor
        } while cursor != nil
        XCTAssertEqual(seen.count, 10)
        XCTAssertEqual(Set(seen.map(\.id)).count, 10, "no transaction on two pages")
        XCTAssertEqual(seen.map(\.createdAt), seen.map(\.createdAt).sorted(by: >), "newest first")
        XCTAssertEqual(seen.prefix(7).map(\.amountCents), [7, 6, 5, 4, 3, 2, 1], "the same millisecond keeps the order of writing")
        XCTAssertEqual(seen.first { $0.id == tx.id }?.reversedBy, nil)
        let undone = try XCTUnwrap(seen.first { $0.reversesId != nil })
        XCTAssertNotNil(seen.first { $0.reversedBy == undone.id })
    }

    func testErrorsAreTypedWithSentencesForPeople() async throws {
        let ledger = try await open()
        let ada = try await ledger.addChild(named: "Ada")
        await assertThrows(.invalidAmount) { try await ledger.add(cents: 0, to: ada.id) }
        await assertThrows(.invalidAmount) { try await ledger.take(cents: -5, from: ada.id) }
        await assertThrows(.notFound) { try await ledger.add(cents: 5, to: "no-such-child") }
        await assertThrows(.nothingToUndo) { try await ledger.undoLast(for: ada.id) }
        await assertThrows(.notAllowed(reason: "This ledger has no server set.")) { try await ledger.syncNow() }
        do {
            _ = try await ledger.addChild(named: "  ")
            XCTFail("an empty name was accepted")
        } catch let error as LedgerError {
            guard case .invalidInput(let field, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(field, "name")
        }
        let errors: [LedgerError] = [.offline, .unauthenticated, .attentionRequired(.accessRevoked), .notFound, .invalidAmount,
                                     .nothingToUndo, .joinWouldReplaceLocalLedger, .store(underlying: CocoaError(.fileWriteOutOfSpace)),
                                     .server(code: "x", status: 400, detail: ""), .cancelled]
        for error in errors {
            let text = try XCTUnwrap(error.errorDescription)
            XCTAssertTrue(text.hasSuffix("."), text)
            XCTAssertFalse(text.contains("kidledger"), "no command names: \(text)")
            XCTAssertFalse(text.contains("`"), text)
        }
    }

    private func assertThrows<T>(_ expected: LedgerError, _ body: () async throws -> T, line: UInt = #line) async {
        do {
            _ = try await body()
            XCTFail("no error", line: line)
        } catch {
            XCTAssertEqual(error as? LedgerError, expected, line: line)
        }
    }

    func testSnapshotsStreamStartsWithTheCurrentValueAndEndsWithItsTask() async throws {
        let ledger = try await open()
        let first = expectation(description: "current value")
        let second = expectation(description: "after a mutation")
        let task = Task {
            var n = 0
            for await snap in ledger.snapshots() {
                n += 1
                if n == 1 { XCTAssertTrue(snap.children.isEmpty); first.fulfill() }
                if n == 2 { XCTAssertEqual(snap.children.map(\.name), ["Ada"]); second.fulfill() }
            }
            return n
        }
        await fulfillment(of: [first], timeout: 5)
        try await ledger.addChild(named: "Ada")
        await fulfillment(of: [second], timeout: 5)
        task.cancel()
        let count = await task.value
        XCTAssertEqual(count, 2, "the stream ended when its task was cancelled")
    }

    func testFileCredentialStoreKeepsTheTokenPrivate() async throws {
        let store = FileCredentialStore(directory: directory)
        let none = try await store.token()
        XCTAssertNil(none)
        try await store.setToken("kl_secret")
        let read = try await store.token()
        XCTAssertEqual(read, "kl_secret")
        let attributes = try FileManager.default.attributesOfItem(atPath: store.file.path)
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        try await store.setToken("kl_other")
        let replaced = try await store.token()
        XCTAssertEqual(replaced, "kl_other", "a second token replaces the first")
        let after = try FileManager.default.attributesOfItem(atPath: store.file.path)
        XCTAssertEqual((after[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        try await store.removeToken()
        let removed = try await store.token()
        XCTAssertNil(removed)
    }
}
