import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
@testable import LedgerStorageSQLite
import XCTest

/// Fixtures shared by the link-code, recovery, owner-transfer and deletion tests.
extension TestServer {
    /// A fresh handle (handles are unique per server).
    static func handle(_ prefix: String) -> String {
        prefix + String(UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(10))
    }

    /// Shares `household` (if it is not yet) and has a new account accept an invitation with
    /// `permission`; answers the participant's account id, token and handle.
    func member(of household: String, owner: String, permission: String = "readWrite", accept: Bool = true)
        -> (id: String, token: String, handle: String) {
        _ = call("POST", "/v1/households/\(household)/share", token: owner)
        let handle = TestServer.handle("p")
        let (id, token) = signup(handle)
        let invited = call("POST", "/v1/households/\(household)/share/participants", token: owner,
                           json: .obj(["handle": .string(handle), "permission": .string(permission)]))
        precondition(invited.status == 201, "invite failed: \(invited.status)")
        if accept {
            let accepted = call("POST", "/v1/invitations/\(invited.json["invitationId"]!.stringValue!)/accept", token: token)
            precondition(accepted.status == 200, "accept failed: \(accepted.status)")
        }
        return (id, token, handle)
    }

    /// Runs `body` in one write of the server's storage, waiting for the outcome.
    func write<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T) throws -> T {
        try app.services.storage.writeAndWait(body)
    }

    /// Runs `count` writes, up to `inFlight` at once (group commits over SQLite, every
    /// connection of the pool over PostgreSQL), and answers their outcomes in submission order.
    func concurrentWrites<T: Sendable>(_ count: Int, inFlight: Int = 64,
                                       _ body: @escaping @Sendable (Int, any LedgerWriting) throws -> T) -> [Result<T, any Error>] {
        let results = ResultList<T>(count)
        let group = DispatchGroup()
        let slots = DispatchSemaphore(value: inFlight)
        let storage = app.services.storage
        for i in 0..<count {
            slots.wait()
            group.enter()
            storage.write({ w in try body(i, w) }) { r in
                results.set(i, r)
                slots.signal()
                group.leave()
            }
        }
        group.wait()
        return results.all
    }
}

/// Outcomes collected from completion handlers on other threads.
final class ResultList<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Result<T, any Error>?]
    init(_ count: Int) { items = Array(repeating: nil, count: count) }
    func set(_ i: Int, _ r: Result<T, any Error>) { lock.lock(); items[i] = r; lock.unlock() }
    var all: [Result<T, any Error>] { lock.lock(); defer { lock.unlock() }; return items.map { $0! } }
}

extension TestServer.Reply {
    /// The headers that describe the answer itself (not when or how it was sent), lowercased.
    var answerHeaders: [String: String] {
        var out: [String: String] = [:]
        for (k, v) in headers where !["date", "connection", "keep-alive"].contains(k.lowercased()) { out[k.lowercased()] = v }
        return out
    }
}
