import Dispatch
import Foundation
import HTTPServer
import LedgerCore
import LedgerModel
import Synchronization

/// Answers to repeated reads, kept in memory until a commit changes what they depend on.
///
/// Every entry is stamped with the generation that was current *before* its data was read;
/// the writer bumps the generations after a durable COMMIT and before it answers the
/// requests of that commit. So an entry is served only while no relevant write has
/// committed since it was read, and a client that saw its write acknowledged never reads an
/// older answer. GET answers depend on anything (one generation for every commit); the
/// caller of a token changes only when a token is revoked (a second generation, bumped by
/// commits that revoke one). Only positive results are kept (a known token, a 200 answer):
/// writes made by another process (`accounts create` while serving) only add rows, which a
/// miss finds.
///
/// With several server processes (PostgreSQL) a commit of another process bumps no
/// generation here, so GET answers about a household are kept by stamp instead (the
/// storage's `stampsReads`): each with the household's `HouseholdReadStamp` read before its
/// data, and served only after the stamp, read again from the database (one row), came back
/// the same — so a write acknowledged by any process is seen by the next read here. A
/// commit this process hears of (its own, or another's through the change bus) drops the
/// touched households' answers at once (`forget(households:)`), sparing that row's round
/// trip on the next read. A token lookup is kept for `tokenLifetime` at most: a token
/// revoked through another process is refused here once the change bus has said so
/// (`invalidate(tokens: true)`, milliseconds) or at the latest when the entry expires
/// (the bus is best effort: a process killed between its COMMIT and its NOTIFY announces
/// nothing). While the bus is disconnected `bypassTokens` turns the token cache off.
final class ReadCache: Sendable {
    /// Entries kept per kind before the table is emptied and refilled. Default 4096.
    let capacity: Int
    /// Longest time a token lookup is served from memory, in nanoseconds; nil: until the
    /// next commit that revokes a token (one process over SQLite).
    let tokenLifetime: UInt64?
    private let tokensBypassed = Atomic<Bool>(false)

    private let generation = Atomic<UInt64>(0)
    private let tokenGeneration = Atomic<UInt64>(0)
    private struct Entry<Value> {
        let generation: UInt64
        let value: Value
        /// When it stops being served (uptime nanoseconds); 0: never by age.
        var expires: UInt64 = 0
    }
    private struct Stamped {
        let stamp: HouseholdReadStamp
        let response: HTTPResponse
    }
    private struct State {
        var callers: [TokenSecret.TokenKey: Entry<Caller>] = [:]
        var responses: [String: Entry<HTTPResponse>] = [:]
        /// Answers kept by stamp, by household, then by key.
        var stamped: [String: [String: Stamped]] = [:]
        var stampedCount = 0
    }
    private let stampedHits = Atomic<UInt64>(0)
    /// Where stamps are read, concurrent requests' together.
    let stamps = ReadStampBatch()
    /// Guards `storage`. Taken by every request that authenticates or reads a cached
    /// answer, on PostgreSQL from many request threads: a plain mutex, held here directly
    /// (`Locked.withLock` called from another module runs unspecialised).
    private let lock = NSLock()
    @exclusivity(unchecked) nonisolated(unsafe) private var storage = State()

    private func withState<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&storage)
    }

    init(capacity: Int = 4096, tokenLifetime: Double? = nil) {
        self.capacity = capacity
        self.tokenLifetime = tokenLifetime.map { UInt64($0 * 1e9) }
    }

    /// While true, token lookups are neither served nor kept (and turning it on forgets
    /// every kept one).
    var bypassTokens: Bool {
        get { tokensBypassed.load(ordering: .acquiring) }
        set {
            tokensBypassed.store(newValue, ordering: .releasing)
            if newValue { invalidate(tokens: true) }
        }
    }

    /// The generation to stamp on a GET answer about to be read.
    var current: UInt64 { generation.load(ordering: .acquiring) }

    /// The generation to stamp on a token lookup about to be read.
    var currentTokens: UInt64 { tokenGeneration.load(ordering: .acquiring) }

    /// Called by the writer after each durable commit: every GET answer becomes stale, and
    /// every token lookup too when the commit revoked a token.
    func invalidate(tokens: Bool) {
        if tokens { tokenGeneration.wrappingAdd(1, ordering: .releasing) }
        generation.wrappingAdd(1, ordering: .releasing)
    }

    /// The caller of a token, if it was looked up since the last token revocation.
    func caller(token: TokenSecret.TokenKey) -> Caller? {
        if tokenLifetime != nil && bypassTokens { return nil }
        let now = currentTokens
        let e = withState { s -> Entry<Caller>? in
            guard let e = s.callers[token], e.generation == now else { return nil }
            return e
        }
        guard let e else { return nil }
        if e.expires != 0 && DispatchTime.now().uptimeNanoseconds >= e.expires { return nil }
        return e.value
    }

    /// `readAt` is `currentTokens` taken before the lookup ran.
    func store(_ caller: Caller, token: TokenSecret.TokenKey, readAt generation: UInt64) {
        var expires: UInt64 = 0
        if let tokenLifetime {
            if bypassTokens { return }
            expires = DispatchTime.now().uptimeNanoseconds + tokenLifetime
        }
        withState { s in
            if s.callers.count >= capacity { s.callers.removeAll(keepingCapacity: true) }
            s.callers[token] = Entry(generation: generation, value: caller, expires: expires)
        }
    }

    /// The key of a cached response: `kind` and three parts, a space between each, written
    /// once into a string of its exact size (an interpolated string grows piece by piece).
    static func key(_ kind: StaticString, _ a: String, _ b: String, _ c: String) -> String {
        String(writing: kind.utf8CodeUnitCount + a.utf8.count + b.utf8.count + c.utf8.count + 3) { w in
            w.put(literal: kind)
            w.put(UInt8(ascii: " ")); w.put(utf8: a)
            w.put(UInt8(ascii: " ")); w.put(utf8: b)
            w.put(UInt8(ascii: " ")); w.put(utf8: c)
        }
    }

    /// A response read since the last commit under `key`.
    func response(_ key: String) -> HTTPResponse? {
        let now = current
        return withState { s in
            guard let e = s.responses[key], e.generation == now else { return nil }
            return e.value
        }
    }

    func store(_ response: HTTPResponse, key: String, readAt generation: UInt64) {
        withState { s in
            if s.responses.count >= capacity { s.responses.removeAll(keepingCapacity: true) }
            s.responses[key] = Entry(generation: generation, value: response)
        }
    }

    // MARK: answers kept by stamp (several processes)

    /// The answer kept under `key` about `household`, with the stamp it was read at.
    func stamped(household: String, key: String) -> (stamp: HouseholdReadStamp, response: HTTPResponse)? {
        withState { s in s.stamped[household]?[key].map { ($0.stamp, $0.response) } }
    }

    /// Keeps a 200 answer about `household` read after `stamp` was.
    func store(_ response: HTTPResponse, household: String, key: String, stamp: HouseholdReadStamp) {
        withState { s in
            if s.stampedCount >= capacity {
                s.stamped.removeAll(keepingCapacity: true)
                s.stampedCount = 0
            }
            if s.stamped[household, default: [:]].updateValue(Stamped(stamp: stamp, response: response), forKey: key) == nil {
                s.stampedCount += 1
            }
        }
    }

    /// Drops the answers kept about `households` (a commit touched them).
    func forget(households: Set<String>) {
        guard !households.isEmpty else { return }
        withState { s in
            guard !s.stamped.isEmpty else { return }
            for h in households {
                if let gone = s.stamped.removeValue(forKey: h) { s.stampedCount -= gone.count }
            }
        }
    }

    /// Counts an answer served by stamp.
    func countStampedHit() { stampedHits.wrappingAdd(1, ordering: .relaxed) }

    /// Answers served by stamp since the process started.
    var stampedHitCount: UInt64 { stampedHits.load(ordering: .relaxed) }
}
