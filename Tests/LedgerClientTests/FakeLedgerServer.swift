import Foundation
@testable import LedgerClient
import LedgerClientTesting
import LedgerModel
import Synchronization

/// An in-memory stand-in for the server's sync contract (API.md), for fast unit tests of the
/// device side: accounts, households (PUT), the change feed, batch push, shares, invitations.
final class FakeLedgerServer: Sendable {
    struct Household {
        var id: String, name: String, currency: String, owner: String
        var members: [String: String] = [:]   // accountId → permission (accepted participants)
        var revoked: Set<String> = []
        var shared = false
        var seq: Int64 = 0
        var epoch = 0
        var children: [String: (Wire.Child, Int64)] = [:]
        var transactions: [String: (Wire.Transaction, Int64)] = [:]
        var schedules: [String: (Wire.Schedule, Int64)] = [:]
        var pots: [String: (Wire.Pot, Int64)] = [:]
    }
    struct State {
        var tokens: [String: String] = [:]        // secret → accountId
        var handles: [String: String] = [:]       // handle → accountId
        var households: [String: Household] = [:]
        var invitations: [String: (household: String, account: String, permission: String)] = [:]
        var tagCounter = 0
        var failNext: [Int] = []                  // statuses to answer before handling
        var pushedTransactionBatches: [[String]] = []  // the transaction ids of each push
        var pushedSchedules: [(id: String, backPay: Bool)] = []
    }
    let state = Mutex(State())

    var transport: InMemoryTransport { InMemoryTransport { [self] in try self.handle($0) } }

    func answer(_ status: Int, _ body: some Encodable) -> TransportResponse {
        TransportResponse(status: status, headers: ["Content-Type": "application/json"], body: Array(try! JSONEncoder().encode(body)))
    }
    func problem(_ status: Int, _ code: String) -> TransportResponse {
        TransportResponse(status: status, body: Array(#"{"status":\#(status),"code":"\#(code)"}"#.utf8))
    }

    /// Forgets every household's feed position (like a re-created household): old tokens get 410.
    func expireTokens() { state.withLock { s in for k in s.households.keys { s.households[k]!.epoch += 1 } } }

    /// The transactions the server holds of household `hh`.
    func transactions(_ hh: String) -> [Wire.Transaction] {
        state.withLock { s in s.households[hh]?.transactions.values.map(\.0) ?? [] }
    }

    func balances(_ hh: String) -> [String: Int64] {
        state.withLock { s in
            var b: [String: Int64] = [:]
            for (id, _) in s.households[hh]?.children ?? [:] { b[id] = 0 }
            for (t, _) in s.households[hh]?.transactions.values.map({ $0 }) ?? [] { b[t.childId, default: 0] += t.amountCents }
            return b
        }
    }

    func handle(_ req: TransportRequest) throws -> TransportResponse {
        try state.withLock { s -> TransportResponse in
            if !s.failNext.isEmpty { return problem(s.failNext.removeFirst(), "internal") }
            let pathOnly = String(req.path.split(separator: "?", maxSplits: 1).first ?? "")
            let query = req.path.contains("?") ? String(req.path.split(separator: "?", maxSplits: 1)[1]) : ""
            var params: [String: String] = [:]
            for pair in query.split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
                params[kv[0]] = kv.count > 1 ? kv[1].removingPercentEncoding : ""
            }
            let p = pathOnly.split(separator: "/").map(String.init)
            let me = req.headers["Authorization"].flatMap { s.tokens[String($0.dropFirst(7))] }
            if req.method == "POST", p == ["v1", "accounts"] {
                let body = try JSONSerialization.jsonObject(with: Data(req.body)) as! [String: Any]
                let handle = body["handle"] as! String
                if s.handles[handle] != nil { return problem(409, "handle_taken") }
                let id = UUID().lowercased, secret = "kl_" + UUID().uuidString
                s.handles[handle] = id; s.tokens[secret] = id
                return answer(201, Wire.AccountAndToken(account: .init(id: id, handle: handle, displayName: body["displayName"] as! String),
                                                        token: .init(id: UUID().lowercased, secret: secret)))
            }
            guard let me else { return problem(401, "unauthenticated") }
            if p == ["v1", "me"] {
                let handle = s.handles.first { $0.value == me }!.key
                return answer(200, Wire.AccountAndToken(account: .init(id: me, handle: handle, displayName: handle), token: .init(id: "t")))
            }
            if p == ["v1", "invitations"] {
                let items = s.invitations.filter { $0.value.account == me }.map { (id, inv) in
                    Wire.Invitation(id: id, householdId: inv.household, householdName: s.households[inv.household]!.name, permission: inv.permission)
                }
                return answer(200, Wire.Page(items: items, nextCursor: nil))
            }
            if p.count == 4, p[1] == "invitations", p[3] == "accept" {
                guard let inv = s.invitations[p[2]], inv.account == me else { return problem(404, "not_found") }
                s.invitations[p[2]] = nil
                s.households[inv.household]!.members[me] = inv.permission
                s.households[inv.household]!.revoked.remove(me)
                let h = s.households[inv.household]!
                return answer(200, Wire.Household(id: h.id, name: h.name, currency: h.currency, ownerAccountId: h.owner))
            }
            guard p.count >= 3, p[1] == "households" else { return problem(404, "not_found") }
            let hid = p[2]
            if req.method == "PUT", p.count == 3 {
                if let h = s.households[hid] {
                    return h.owner == me ? answer(200, Wire.Household(id: hid, name: h.name, ownerAccountId: me, role: "owner", permission: "readWrite"))
                                         : problem(409, "id_conflict")
                }
                let body = try JSONSerialization.jsonObject(with: Data(req.body)) as! [String: Any]
                s.households[hid] = Household(id: hid, name: body["name"] as! String, currency: "USD", owner: me)
                return answer(201, Wire.Household(id: hid, name: body["name"] as! String, ownerAccountId: me, role: "owner", permission: "readWrite"))
            }
            guard var h = s.households[hid] else { return problem(404, "not_found") }
            if h.revoked.contains(me) { return problem(403, "access_revoked") }
            guard h.owner == me || h.members[me] != nil else { return problem(404, "not_found") }
            let permission = h.owner == me ? "readWrite" : h.members[me]!
            defer { s.households[hid] = h }
            let rest = Array(p.dropFirst(3))
            switch (req.method, rest) {
            case ("GET", []):
                return answer(200, Wire.Household(id: hid, name: h.name, ownerAccountId: h.owner))
            case ("POST", ["share"]):
                h.shared = true
                return answer(201, Wire.Share(householdId: hid, publicPermission: "none", participants: []))
            case ("GET", ["share"]):
                let parts = h.members.map { m in Wire.Participant(accountId: m.key, handle: s.handles.first { e in e.value == m.key }?.key, permission: m.value, status: "accepted") }
                return answer(200, Wire.Share(householdId: hid, publicPermission: "none", participants: parts))
            case ("POST", ["share", "participants"]):
                let body = try JSONSerialization.jsonObject(with: Data(req.body)) as! [String: Any]
                guard let acc = s.handles[body["handle"] as! String] else { return problem(404, "unknown_handle") }
                let inv = UUID().lowercased
                s.invitations[inv] = (hid, acc, body["permission"] as! String)
                return answer(201, Wire.Participant(accountId: acc, handle: body["handle"] as? String, permission: body["permission"] as! String, status: "invited", invitationId: inv))
            case ("DELETE", let r) where r.count == 3 && r[0] == "share":
                h.members[r[2]] = nil; h.revoked.insert(r[2])
                return TransportResponse(status: 204)
            case ("GET", ["changes"]):
                var since: Int64 = 0
                if let t = params["since"] {
                    let parts = t.split(separator: ":")
                    guard parts.count == 3, parts[0] == hid, Int(parts[1]) == h.epoch, let n = Int64(parts[2]) else { return problem(410, "token_expired") }
                    since = n
                }
                let limit = Int(params["limit"] ?? "500") ?? 500
                var records: [(Int64, Any)] = h.children.values.filter { $0.1 > since }.map { ($0.1, $0.0 as Any) }
                records += h.transactions.values.filter { $0.1 > since }.map { ($0.1, $0.0 as Any) }
                records += h.schedules.values.filter { $0.1 > since }.map { ($0.1, $0.0 as Any) }
                records += h.pots.values.filter { $0.1 > since }.map { ($0.1, $0.0 as Any) }
                records.sort { $0.0 < $1.0 }
                let pageRecs = records.prefix(limit)
                let last = pageRecs.last?.0 ?? since
                return answer(200, Wire.ChangesPage(
                    household: Wire.Household(id: hid, name: h.name, ownerAccountId: h.owner, role: h.owner == me ? "owner" : "participant", permission: permission),
                    children: pageRecs.compactMap { $0.1 as? Wire.Child }, transactions: pageRecs.compactMap { $0.1 as? Wire.Transaction },
                    schedules: pageRecs.compactMap { $0.1 as? Wire.Schedule }, pots: pageRecs.compactMap { $0.1 as? Wire.Pot },
                    access: .init(role: h.owner == me ? "owner" : "participant", permission: permission),
                    nextToken: "\(hid):\(h.epoch):\(last)", moreComing: records.count > pageRecs.count))
            case ("POST", ["changes"]):
                if permission == "readOnly" { return problem(403, "read_only") }
                let batch = try JSONDecoder().decode(Wire.PushRequest.self, from: Data(req.body))
                if batch.children.count + batch.transactions.count + batch.schedules.count + batch.pots.count > 400 {
                    return problem(413, "batch_too_large")
                }
                s.pushedTransactionBatches.append(batch.transactions.map(\.id))
                var results: [[String: Any]] = []
                for c in batch.children {
                    if let (cur, _) = h.children[c.id] {
                        let same = cur.name == c.name && cur.archived == c.archived && cur.sortOrder == c.sortOrder && cur.modifiedAt == c.modifiedAt && cur.modifiedBy == c.modifiedBy
                        if same { results.append(["type": "child", "id": c.id, "status": "unchanged", "changeTag": cur.changeTag!]); continue }
                        if c.baseChangeTag != cur.changeTag {
                            results.append(["type": "child", "id": c.id, "status": "conflict", "serverRecord": try JSONSerialization.jsonObject(with: JSONEncoder().encode(cur))])
                            continue
                        }
                    }
                    s.tagCounter += 1; h.seq += 1
                    let stored = Wire.Child(id: c.id, householdId: hid, name: c.name, sortOrder: c.sortOrder, archived: c.archived, createdAt: c.createdAt,
                                            modifiedAt: c.modifiedAt, modifiedBy: c.modifiedBy, changeTag: "tag\(s.tagCounter)")
                    h.children[c.id] = (stored, h.seq)
                    results.append(["type": "child", "id": c.id, "status": "saved", "changeTag": stored.changeTag!])
                }
                /// Saves a pot or schedule pushed on top of the current version; a conflict otherwise.
                func save<R: Codable>(_ type: String, _ id: String, base: String?, in records: WritableKeyPath<Household, [String: (R, Int64)]>,
                                      tag: (R) -> String?, stamp: (inout R, String) -> Void, _ pushed: R) throws {
                    if let (cur, _) = h[keyPath: records][id], base != tag(cur) {
                        results.append(["type": type, "id": id, "status": "conflict", "serverRecord": try JSONSerialization.jsonObject(with: JSONEncoder().encode(cur))])
                        return
                    }
                    s.tagCounter += 1; h.seq += 1
                    var stored = pushed
                    stamp(&stored, "tag\(s.tagCounter)")
                    h[keyPath: records][id] = (stored, h.seq)
                    results.append(["type": type, "id": id, "status": "saved", "changeTag": "tag\(s.tagCounter)"])
                }
                for p in batch.pots {
                    try save("pot", p.id, base: p.baseChangeTag, in: \.pots, tag: \.changeTag, stamp: {
                        $0.householdId = hid; $0.baseChangeTag = nil; $0.changeTag = $1
                    }, p)
                }
                for sc in batch.schedules {
                    s.pushedSchedules.append((sc.id, sc.backPay ?? false))
                    try save("schedule", sc.id, base: sc.baseChangeTag, in: \.schedules, tag: \.changeTag, stamp: {
                        $0.householdId = hid; $0.baseChangeTag = nil; $0.changeTag = $1; $0.backPay = nil
                        // A server that has paid nothing yet: everything from the first date is due.
                        $0.nextDueDate = $0.deleted == true ? nil : $0.firstDate
                    }, sc)
                }
                for t in batch.transactions {
                    let stored = Wire.Transaction(id: t.id, householdId: hid, childId: t.childId, amountCents: t.amountCents, note: t.note, source: t.source,
                                                  createdAt: t.createdAt, recordedAt: Timestamp.format(ms: Timestamp.nowMs()), authorAccountId: me, reversesId: t.reversesId,
                                                  potId: t.potId)
                    if let (cur, _) = h.transactions[t.id] {
                        let same = cur.childId == t.childId && cur.amountCents == t.amountCents && cur.note == t.note && cur.createdAt == t.createdAt
                            && cur.reversesId == t.reversesId && cur.potId == t.potId
                        results.append(same ? ["type": "transaction", "id": t.id, "status": "unchanged"]
                                            : ["type": "transaction", "id": t.id, "status": "conflict", "serverRecord": try JSONSerialization.jsonObject(with: JSONEncoder().encode(cur))])
                        continue
                    }
                    guard h.children[t.childId] != nil else { results.append(["type": "transaction", "id": t.id, "status": "rejected", "code": "unknown_child"]); continue }
                    if let r = t.reversesId {
                        guard let target = h.transactions[r]?.0 else { results.append(["type": "transaction", "id": t.id, "status": "rejected", "code": "unknown_transaction"]); continue }
                        if target.reversesId != nil || h.transactions.values.contains(where: { $0.0.reversesId == r }) {
                            results.append(["type": "transaction", "id": t.id, "status": "rejected", "code": "not_reversible"]); continue
                        }
                        if LedgerIDs.reversalID(of: UUID(uuidString: r)!).lowercased != t.id {
                            results.append(["type": "transaction", "id": t.id, "status": "rejected", "code": "reversal_id_mismatch"]); continue
                        }
                    }
                    h.seq += 1
                    h.transactions[t.id] = (stored, h.seq)
                    results.append(["type": "transaction", "id": t.id, "status": "saved"])
                }
                return TransportResponse(status: 200, body: Array(try JSONSerialization.data(withJSONObject: ["results": results])))
            default:
                return problem(404, "not_found")
            }
        }
    }
}
