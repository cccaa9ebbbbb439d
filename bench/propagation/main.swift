// Propagation benchmark for bench/propagation.sh: two devices, both running automatic sync
// against a real server; each round one device changes a balance and the time until the other
// device's `snapshots()` stream shows it is measured. Written against the public API only.
// Usage: ledger-propagation-bench SERVER_URL [ROUNDS]   (prints one JSON line)
import Foundation
import LedgerClient

@main
struct PropagationBench {
    static func main() async throws {
        let args = CommandLine.arguments
        guard args.count >= 2, let server = URL(string: args[1]) else {
            print("usage: ledger-propagation-bench SERVER_URL [ROUNDS]")
            exit(2)
        }
        let rounds = args.count >= 3 ? Int(args[2]) ?? 200 : 200
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("kl-propagation-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let suffix = String(UUID().uuidString.prefix(8)).lowercased()

        func device(_ name: String) async throws -> Ledger {
            let dir = work.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            return try await Ledger.open(store: dir.appendingPathComponent("ledger.store"), server: server,
                                         credentials: FileCredentialStore(directory: dir))
        }
        let a = try await device("a"), b = try await device("b")
        try await a.signUp(handle: "a\(suffix)", displayName: "A")
        try await b.signUp(handle: "b\(suffix)", displayName: "B")
        let child = try await a.addChild(named: "Ada")
        try await a.enableSharing(householdName: "Bench")
        try await a.invite(handle: "b\(suffix)", permission: .readWrite)
        guard let invitation = try await b.pendingInvitations().first else { throw CancellationError() }
        try await b.join(invitation.id, replacingLocal: false)
        await a.startAutomaticSync()
        await b.startAutomaticSync()

        // Each device's balance of the child, as its snapshots() stream last showed it.
        let seen = Seen()
        let watchers = [(a, "a"), (b, "b")].map { ledger, name in
            Task {
                for await snap in ledger.snapshots() {
                    if let cents = snap.children.first(where: { $0.id == child.id })?.balanceCents {
                        await seen.set(name, cents)
                    }
                }
            }
        }
        try await Task.sleep(nanoseconds: 500_000_000)   // both long-polls open

        var samples: [Double] = []
        var expected = try await a.snapshot().children.first { $0.id == child.id }?.balanceCents ?? 0
        for round in 0..<rounds {
            let (writer, reader) = round % 2 == 0 ? (a, "b") : (b, "a")
            expected += 1
            let start = DispatchTime.now().uptimeNanoseconds
            try await writer.add(cents: 1, to: child.id)
            let deadline = start + 10_000_000_000
            while await seen.get(reader) != expected {
                if DispatchTime.now().uptimeNanoseconds > deadline { throw CancellationError() }
                try await Task.sleep(nanoseconds: 200_000)
            }
            samples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            try await Task.sleep(nanoseconds: 20_000_000)   // let both sides settle between rounds
        }
        for w in watchers { w.cancel() }
        await a.stopAutomaticSync()
        await b.stopAutomaticSync()
        samples.sort()
        func pct(_ p: Double) -> Double { samples[min(samples.count - 1, Int(Double(samples.count) * p))] }
        print(String(format: "{\"rounds\":%d,\"p50_ms\":%.1f,\"p90_ms\":%.1f,\"p99_ms\":%.1f,\"max_ms\":%.1f}",
                     samples.count, pct(0.5), pct(0.9), pct(0.99), samples.last ?? 0))
    }
}

actor Seen {
    private var values: [String: Int64] = [:]
    func set(_ name: String, _ cents: Int64) { values[name] = cents }
    func get(_ name: String) -> Int64? { values[name] }
}
