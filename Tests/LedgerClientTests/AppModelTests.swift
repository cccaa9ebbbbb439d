import Foundation
import LedgerClient
import XCTest

/// How an app holds a ledger: a main-actor model calling it from `Task {}` and iterating its
/// streams. This file must build in Swift 6 mode without warnings (the package's language
/// mode), which is what the issue asked for; the test also runs it.
@MainActor
final class AppModel {
    let ledger: Ledger
    var children: [ChildSummary] = []
    var status: SyncStatus?
    var lastEvent: LedgerEvent?
    var lastError: LedgerError?
    private var observers: [Task<Void, Never>] = []

    init(ledger: Ledger) { self.ledger = ledger }

    func appear() {
        observers.append(Task { for await snap in ledger.snapshots() { self.children = snap.children } })
        observers.append(Task { for await status in ledger.statusUpdates() { self.status = status } })
        observers.append(Task { for await event in ledger.events() { self.lastEvent = event } })
    }

    func disappear() {
        for task in observers { task.cancel() }
        observers = []
    }

    func addChild(_ name: String) {
        Task {
            do { try await ledger.addChild(named: name) } catch let error as LedgerError { lastError = error } catch {}
        }
    }

    func refresh() {
        Task.detached { [ledger] in _ = try? await ledger.syncNow() }
    }
}

final class AppModelTests: XCTestCase {
    @MainActor
    func testAMainActorModelDrivesTheLedger() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-app-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let ledger = try await Ledger.open(store: directory.appendingPathComponent("app.store"), server: nil,
                                           credentials: FileCredentialStore(directory: directory))
        let model = AppModel(ledger: ledger)
        model.appear()
        model.addChild("Ada")
        model.refresh()
        let deadline = Date().addingTimeInterval(5)
        while model.children.map(\.name) != ["Ada"] || model.status == nil, Date() < deadline {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        XCTAssertEqual(model.children.map(\.name), ["Ada"])
        XCTAssertEqual(model.status, .localOnly)
        XCTAssertNil(model.lastError)
        model.disappear()
    }
}
