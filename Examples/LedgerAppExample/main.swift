// An app-like program written against the LedgerClient contract (CLIENT_API.md) and nothing
// else: two devices, offline edits, observation from a main-actor model, cancellation,
// sharing and revocation. Usage: ledger-app-example SERVER_URL [WORK_DIR]
// Exits 0 and prints "all checks passed" when every step behaved as the contract says.
import Foundation
import LedgerClient

/// What a SwiftUI view model looks like: main-actor state fed by the ledger's streams.
@MainActor
final class Model {
    let ledger: Ledger
    private(set) var snapshot: LedgerSnapshot?
    private(set) var status: SyncStatus?
    private(set) var events: [LedgerEvent] = []
    private var tasks: [Task<Void, Never>] = []

    init(ledger: Ledger) {
        self.ledger = ledger
    }

    func start() {
        tasks.append(Task { for await snap in ledger.snapshots() { self.snapshot = snap } })
        tasks.append(Task { for await status in ledger.statusUpdates() { self.status = status } })
        tasks.append(Task { for await event in ledger.events() { self.events.append(event) } })
        Task { await ledger.startAutomaticSync() }
    }

    func addAllowance(to childId: String) {
        Task {
            do { try await ledger.add(cents: 100, to: childId, note: "allowance", source: .allowance) } catch {
                print("could not add: \(error.localizedDescription)")
            }
        }
    }

    func stop() {
        for task in tasks { task.cancel() }
        Task { await ledger.stopAutomaticSync() }
    }

    func balance(of childId: String) -> Int64? {
        snapshot?.children.first { $0.id == childId }?.balanceCents
    }
}

struct CheckFailed: Error, CustomStringConvertible {
    var description: String
}

func check(_ condition: Bool, _ what: String) throws {
    guard condition else { throw CheckFailed(description: what) }
    print("ok: \(what)")
}

/// Polls `condition` on the main actor until it holds or `seconds` pass.
@MainActor
func eventually(_ seconds: Double, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return try await condition()
}

@MainActor
func main() async throws {
    guard CommandLine.arguments.count >= 2, let server = URL(string: CommandLine.arguments[1]) else {
        print("usage: ledger-app-example SERVER_URL [WORK_DIR]")
        exit(2)
    }
    let work = CommandLine.arguments.count >= 3
        ? URL(fileURLWithPath: CommandLine.arguments[2])
        : FileManager.default.temporaryDirectory.appendingPathComponent("ledger-app-example-\(UUID().uuidString)")
    let mumDir = work.appendingPathComponent("mum"), dadDir = work.appendingPathComponent("dad")
    for dir in [mumDir, dadDir] { try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true) }
    let suffix = String(UUID().uuidString.prefix(6)).lowercased()

    // Mum's phone: a ledger kept offline first, then shared.
    let mum = try await Ledger.open(store: mumDir.appendingPathComponent("family.store"), server: server,
                                    credentials: FileCredentialStore(directory: mumDir))
    let ada: Child = try await mum.addChild(named: "Ada")
    let tx: LedgerTransaction = try await mum.add(cents: 500, to: ada.id, note: "allowance", source: .manual)
    try await mum.take(cents: 125, from: ada.id, note: "sweets", source: .siri)
    let reversal: LedgerTransaction = try await mum.undoLast(for: ada.id)
    try check(reversal.reversesId != nil && reversal.amountCents == 125, "undoLast reverses the newest transaction")
    try await mum.rename(ada.id, to: "Ada L.")
    try await mum.move(ada.id, toSortOrder: 2)
    try check(Cents.parse("5.25") == 525, "Cents.parse is exact")
    var snap: LedgerSnapshot = try await mum.snapshot()
    try check(snap.status == .localOnly && snap.children.first?.balanceCents == 500, "a never-shared ledger is local only")

    try await mum.signUp(handle: "mum\(suffix)", displayName: "Mum", deviceName: "Mum's iPhone")
    let me: Account? = await mum.account
    try check(me?.handle == "mum\(suffix)", "signed up")
    let preview: SharingPreview = try await mum.sharingPreview()
    try check(preview.childCount == 1 && preview.transactionCount == 3, "the sharing preview counts what will be uploaded")
    try await mum.enableSharing(householdName: "Family")
    snap = try await mum.snapshot()
    try check(snap.household?.role == .owner && snap.household?.name == "Family", "sharing enabled")

    // Dad's phone joins.
    let dad = try await Ledger.open(store: dadDir.appendingPathComponent("family.store"), server: server,
                                    credentials: FileCredentialStore(directory: dadDir))
    try await dad.signUp(handle: "dad\(suffix)", displayName: "Dad", deviceName: "Dad's iPhone")
    let p: Participant = try await mum.invite(handle: "dad\(suffix)", permission: .readWrite)
    try await mum.setPermission(.readOnly, for: p.accountId)
    try await mum.setPermission(.readWrite, for: p.accountId)
    let invitations: [Invitation] = try await dad.pendingInvitations()
    try check(invitations.count == 1, "dad sees the invitation")
    try await dad.join(invitations[0].id, replacingLocal: false)

    // Observation: dad's main-actor model follows mum's changes.
    let model = Model(ledger: dad)
    model.start()
    await mum.startAutomaticSync()
    try check(await eventually(5) { model.balance(of: ada.id) == 500 }, "dad's model shows the shared balance")
    let before = Date()
    try await mum.add(cents: 200, to: ada.id, note: "chores")
    try check(await eventually(5) { model.balance(of: ada.id) == 700 }, "mum's change reaches dad's snapshots stream")
    print("propagation: \(Int(Date().timeIntervalSince(before) * 1000)) ms")
    try check(await eventually(5) { model.events.contains { if case .remoteChanges = $0 { return true } else { return false } } },
              "dad heard of remote changes")

    // Offline edits: dad's phone loses the server, keeps working, and catches up later.
    let offlineDad = try await Ledger.open(store: dadDir.appendingPathComponent("family.store"),
                                           server: URL(string: "http://127.0.0.1:9")!,
                                           credentials: FileCredentialStore(directory: dadDir))
    try await offlineDad.take(cents: 50, from: ada.id, note: "ice cream")
    do {
        _ = try await offlineDad.syncNow()
        throw CheckFailed(description: "a sync against no server succeeded")
    } catch LedgerError.offline {
        print("ok: an unreachable server is LedgerError.offline")
    }
    let offlineStatus = try await offlineDad.snapshot().status
    if case .offline = offlineStatus {
        // (The app's own Ledger on this file may have uploaded the edit already.)
        print("ok: the ledger that could not reach the server says offline")
    } else {
        throw CheckFailed(description: "status is \(offlineStatus), not offline")
    }
    try check(await eventually(2) { model.balance(of: ada.id) == 650 }, "the app's model saw the other Ledger's write on its file")
    try check(await eventually(5) { model.status.map { if case .synced = $0 { return true } else { return false } } ?? false },
              "the app uploaded it and is synced")
    try check(try await eventually(5) { try await mum.snapshot().children.first?.balanceCents == 650 }, "mum sees dad's offline edit")
    _ = try await Ledger.open(store: dadDir.appendingPathComponent("family.store"), server: server,
                              credentials: FileCredentialStore(directory: dadDir))

    // Cancellation: a cancelled sync ends promptly and leaves the ledger usable.
    let task = Task { try await dad.syncNow() }
    task.cancel()
    let cancelledAt = Date()
    do { _ = try await task.value } catch LedgerError.cancelled {}
    try check(Date().timeIntervalSince(cancelledAt) < 1, "a cancelled sync stops within a second")
    let report: SyncReport = try await dad.syncNow()
    try check(report.pushed >= 0, "syncNow works after a cancellation")

    // History with paging.
    let page: HistoryPage = try await mum.history(of: ada.id, limit: 2, before: nil)
    try check(page.items.count == 2 && page.nextCursor != nil, "history pages, newest first")
    try check(try await mum.history(of: ada.id, limit: 50, before: nil).items.contains { $0.id == tx.id && $0.reversedBy == nil },
              "history holds the first transaction")

    // Revocation: dad is frozen with a reason and keeps his copy.
    try await mum.revoke(p.accountId)
    do {
        _ = try await dad.syncNow()
        throw CheckFailed(description: "a revoked participant synced")
    } catch LedgerError.attentionRequired(let reason) {
        try check(reason == .accessRevoked, "revoked: attention required")
    }
    try check(await eventually(3) { model.events.contains(.attentionRequired(.accessRevoked)) }, "dad's model heard why")
    do {
        try await dad.add(cents: 1, to: ada.id)
        throw CheckFailed(description: "a revoked participant wrote")
    } catch LedgerError.attentionRequired {
        print("ok: edits are refused while frozen")
    }
    try check(try await dad.snapshot().children.first?.balanceCents == 650, "nothing local was deleted")
    let error = LedgerError.attentionRequired(.accessRevoked)
    try check(!(error.errorDescription ?? "").isEmpty, "errors have sentences for people")
    model.stop()
    try await dad.leave()
    try check(try await dad.snapshot().status == .localOnly, "leaving keeps a local copy")

    // Export and import.
    let file = work.appendingPathComponent("family.json.gz")
    try await mum.export(to: file)
    let restored = try await Ledger.open(store: work.appendingPathComponent("restored.store"), server: nil,
                                         credentials: FileCredentialStore(directory: work))
    try await restored.importLedger(from: file)
    try check(try await restored.snapshot().children.first?.balanceCents == 650, "an export restores into an empty ledger")

    // Allowance that pays itself, pots and a goal.
    let utc = TimeZone(identifier: "UTC")!
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = utc
    let weekAgo = calendar.dateComponents([.year, .month, .day], from: Date().addingTimeInterval(-7 * 86_400))
    let schedule: Schedule = try await mum.addSchedule(
        .allowance(cents: 300, every: .weekly, firstDate: LocalDate(weekAgo.year!, weekAgo.month!, weekAgo.day!), timeZone: utc),
        for: ada.id, note: "pocket money")
    snap = try await mum.snapshot()
    try check(snap.children.first?.balanceCents == 650 + 600, "a first date a week back pays the two dates due at once")
    try check(snap.children.first?.nextPayment?.cents == 300 && snap.children.first?.nextPayment?.date == schedule.nextDueDate,
              "the snapshot shows the next payment")
    let save: Pot = try await mum.addPot(named: "Save", for: ada.id, target: 2_000, by: nil)
    let main = try await mum.pots(of: ada.id)[0]
    try await mum.move(cents: 500, from: main.id, to: save.id)
    let pots = try await mum.snapshot().children.first?.pots ?? []
    try check(pots.map(\.balanceCents) == [750, 500] && pots[1].progress == 0.25, "pots add up to the balance, with goal progress")
    try await mum.pause(schedule.id)
    try check(try await mum.snapshot().children.first?.nextPayment == nil, "a paused schedule pays nothing")
    await mum.stopAutomaticSync()
    try await mum.stopSharing()
    try await mum.signOut()
    try check(await mum.account == nil, "signed out")
    try? FileManager.default.removeItem(at: work)
    print("all checks passed")
}

do {
    try await main()
} catch {
    print("FAILED: \((error as? LocalizedError)?.errorDescription ?? String(describing: error))")
    exit(1)
}
