import Foundation
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// Sync helpers for tests: pulls, pushes and pushed-record builders.
extension TestServer {
    /// `GET …/changes`; `since` nil pulls everything.
    func pull(_ token: String, _ household: String, since: String? = nil, limit: Int? = nil, wait: Int? = nil,
              timeout: Double = 30) -> Reply {
        var q: [String] = []
        if let since { q.append("since=\(since)") }
        if let limit { q.append("limit=\(limit)") }
        if let wait { q.append("wait=\(wait)") }
        return call("GET", "/v1/households/\(household)/changes" + (q.isEmpty ? "" : "?" + q.joined(separator: "&")),
                    token: token, timeout: timeout)
    }

    /// Pulls pages until `moreComing` is false; returns every record in arrival order.
    func pullAll(_ token: String, _ household: String, since: String? = nil, limit: Int = 500)
        -> (children: [JSONValue], transactions: [JSONValue], token: String) {
        var kids: [JSONValue] = [], txs: [JSONValue] = []
        var cursor = since
        while true {
            let r = pull(token, household, since: cursor, limit: limit)
            precondition(r.status == 200, "pull failed: \(r.status) \(String(decoding: r.body, as: UTF8.self))")
            kids += r.json["children"]!.arrayValue!
            txs += r.json["transactions"]!.arrayValue!
            cursor = r.json["nextToken"]!.stringValue!
            if r.json["moreComing"]?.boolValue != true { return (kids, txs, cursor!) }
        }
    }

    /// `POST …/changes`; returns the reply (results in `json["results"]`).
    @discardableResult
    func push(_ token: String, _ household: String, children: [JSONValue] = [], transactions: [JSONValue] = []) -> Reply {
        call("POST", "/v1/households/\(household)/changes", token: token,
             json: .obj(["children": .array(children), "transactions": .array(transactions)]))
    }

    /// The results of a push that must answer 200.
    func pushResults(_ token: String, _ household: String, children: [JSONValue] = [], transactions: [JSONValue] = [],
                     file: StaticString = #filePath, line: UInt = #line) -> [JSONValue] {
        let r = push(token, household, children: children, transactions: transactions)
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self), file: file, line: line)
        return r.json["results"]?.arrayValue ?? []
    }
}

/// Builders for pushed records.
enum SyncRecords {
    static func ts(_ ms: Int64) -> JSONValue { .string(Timestamp.format(ms: ms)) }

    static func child(_ id: String, name: String, sortOrder: Int64 = 0, archived: Bool = false, modifiedAt: Int64 = 1_700_000_000_000,
                      modifiedBy: String, base: String? = nil) -> JSONValue {
        var o: JSONObject = ["id": .string(id), "name": .string(name), "sortOrder": .int(sortOrder), "archived": .bool(archived),
                             "createdAt": ts(1_700_000_000_000), "modifiedAt": ts(modifiedAt), "modifiedBy": .string(modifiedBy)]
        if let base { o["baseChangeTag"] = .string(base) }
        return .object(o)
    }

    static func transaction(_ id: String, child: String, amount: Int64, note: String = "", reverses: String? = nil,
                            createdAt: Int64 = 1_700_000_000_000) -> JSONValue {
        var o: JSONObject = ["id": .string(id), "childId": .string(child), "amountCents": .int(amount), "note": .string(note),
                             "source": "manual", "createdAt": ts(createdAt)]
        if let reverses { o["reversesId"] = .string(reverses) }
        return .object(o)
    }

    static func newId() -> String { UUID().uuidString.lowercased() }

    static func reversalId(of id: String) -> String { LedgerIDs.reversalID(of: LedgerIDs.parse(id)!).lowercased }
}
