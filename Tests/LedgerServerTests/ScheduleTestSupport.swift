import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import Synchronization
import XCTest

/// A clock tests move by hand (milliseconds since the epoch).
final class TestClock: Sendable {
    private let ms: Mutex<Int64>

    init(_ text: String) { ms = Mutex(Timestamp.parse(text)!) }

    func now() -> Int64 { ms.withLock { $0 } }
    func set(_ text: String) { let v = Timestamp.parse(text)!; ms.withLock { $0 = v } }
}

extension TestServer {
    /// A server whose schedules run by `clock`, with the job run only when a test asks.
    static func scheduled(_ clock: TestClock) throws -> TestServer {
        try TestServer { c in
            c.clock = { clock.now() }
            c.scheduleJobInterval = 0
        }
    }

    /// POST …/schedules; returns the reply.
    @discardableResult
    func addSchedule(_ token: String, _ household: String, _ child: String, _ fields: JSONValue) -> Reply {
        call("POST", "/v1/households/\(household)/children/\(child)/schedules", token: token, json: fields)
    }

    /// The child's transactions, newest first (every page).
    func transactions(_ token: String, _ household: String, _ child: String) -> [JSONValue] {
        var out: [JSONValue] = [], cursor: String?
        repeat {
            let r = call("GET", "/v1/households/\(household)/children/\(child)/transactions?limit=1000"
                         + (cursor.map { "&cursor=\($0)" } ?? ""), token: token)
            precondition(r.status == 200, "list failed: \(r.status)")
            out += r.json["items"]!.arrayValue!
            cursor = r.json["nextCursor"]?.stringValue
        } while cursor != nil
        return out
    }

    func balance(_ token: String, _ household: String, _ child: String) -> Int64 {
        call("GET", "/v1/households/\(household)/children/\(child)", token: token).json["balanceCents"]!.intValue!
    }

    /// Runs the payment job once at the server's clock.
    @discardableResult
    func payDue() -> ScheduleJob.Report { app.scheduleJob.run() }
}

enum ScheduleFixtures {
    static func allowance(_ cents: Int64, _ cadence: String, from first: String, zone: String, id: String? = nil,
                          extra: [String: JSONValue] = [:]) -> JSONValue {
        var o: JSONObject = ["kind": "allowance", "amountCents": .int(cents), "cadence": .string(cadence),
                             "firstDate": .string(first), "timeZone": .string(zone)]
        if let id { o["id"] = .string(id) }
        for (k, v) in extra { o[k] = v }
        return .object(o)
    }

    /// The payment id of `schedule` for `date` (API.md's rule, computed here from its parts).
    static func paymentId(_ kind: String, _ schedule: String, _ date: String) -> String {
        UUIDv5.make(namespace: LedgerIDs.namespace, name: "\(kind):\(schedule):\(date)").lowercased
    }
}
