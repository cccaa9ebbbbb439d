import LedgerModel

extension SyncEngine {
    /// Pulls the feed from the stored token, page by page (`moreComing`), merging each page
    /// atomically with its token. A 410 restarts from nothing, keeping pending changes. A page
    /// whose household or mode changed while it was in flight is dropped.
    func pull(wait: Int, into report: inout Report) throws(APIError) {
        let generation: Int64
        let householdId: String
        do {
            generation = try store.generation()
            householdId = try store.household().id
        } catch { throw .invalidAnswer("store: \(error)") }
        var refetched = false
        var first = true
        while true {
            let since: String?
            do { since = try store.string(.syncToken) } catch { throw .invalidAnswer("store: \(error)") }
            let api = self.api
            let limit = pullPageSize
            let waitNow = first && since != nil ? wait : 0
            let page: Wire.ChangesPage
            do {
                page = try retry.run { () throws(APIError) in
                    try api.changes(householdId: householdId, since: since, limit: limit, wait: waitNow)
                }
            } catch {
                guard error.status == 410 && !refetched else { throw error }
                refetched = true
                do {
                    try store.transaction {
                        if try store.generation() == generation { try store.set(.syncToken, nil) }
                    }
                } catch { throw .invalidAnswer("store: \(error)") }
                continue
            }
            first = false
            let merged: Bool
            do {
                merged = try store.transaction {
                    guard try store.generation() == generation, try store.household().id == householdId,
                          try store.phase() == .shared else { return false }
                    try merge(page, householdId: householdId, report: &report)
                    try store.set(.syncToken, page.nextToken)
                    return true
                }
            } catch let error as APIError { throw error } catch { throw .invalidAnswer("store: \(error)") }
            if !merged {
                report.droppedPages += 1
                return
            }
            if !page.moreComing { return }
        }
    }

    /// Merges one page into the replica. Call inside a store transaction.
    func merge(_ page: Wire.ChangesPage, householdId: String, report: inout Report) throws {
        var household = try store.household()
        if let h = page.household, h.id.lowercased() == householdId {
            household.name = h.name
            household.currency = h.currency ?? household.currency
            household.ownerAccountId = h.ownerAccountId ?? household.ownerAccountId
            household.changeTag = h.changeTag ?? household.changeTag
            household.role = h.role ?? household.role
            household.permission = h.permission ?? household.permission
            household.shared = h.shared ?? household.shared
        }
        if let access = page.access {
            household.role = access.role ?? household.role
            household.permission = access.permission ?? household.permission
        }
        try store.saveHousehold(household, now: now())
        let attention = try store.attention()
        if household.permission == "readOnly" {
            if attention == nil { try store.setAttention(.readOnly) }
        } else if attention == .readOnly || attention == .accessRevoked || attention == .householdDeleted {
            try store.setAttention(nil)
        }

        for wire in page.children {
            guard let server = wire.record() else { throw APIError.invalidAnswer("child \(wire.id) has a malformed timestamp") }
            try store.noteSeen(modifiedAt: server.modifiedAt)
            report.pulledChildren += 1
            guard let local = try store.child(id: server.id),
                  try store.pendingVersion(.child, id: server.id) != nil else {
                try store.upsert(server)
                continue
            }
            if LWW.wins((local.modifiedAt, local.modifiedBy), over: (server.modifiedAt, server.modifiedBy)) {
                // Our pending edit is newer: keep it and push it on top of this version.
                try store.setChangeTag(childId: server.id, server.changeTag)
            } else {
                try store.upsert(server)
                try store.dequeue(.child, id: server.id)
            }
        }
        for wire in page.transactions {
            guard let server = wire.record() else { throw APIError.invalidAnswer("transaction \(wire.id) has a malformed timestamp") }
            report.pulledTransactions += 1
            if try store.child(id: server.childId) != nil {
                try adopt(server)
            } else {
                try store.deferTransaction(id: server.id, childId: server.childId, json: wire.jsonText())
            }
        }
        for (id, json) in try store.readyDeferred() {
            if let wire = try? JSONDecoderBox.decode(Wire.Transaction.self, json), let server = wire.record() {
                try adopt(server)
            }
            try store.removeDeferred(id: id)
        }
    }

    /// Stores the server's version of a transaction; the server's copy is authoritative.
    private func adopt(_ server: TransactionRecord) throws {
        if let reversesId = server.reversesId, let other = try store.reversal(of: reversesId), other.id != server.id {
            // Cannot happen with deterministic reversal ids; the server's record wins.
            try store.db.run("DELETE FROM transactions WHERE id = ?", [.text(other.id)])
            try store.dequeue(.transaction, id: other.id)
        }
        try store.upsert(server)
        try store.dequeue(.transaction, id: server.id)
        try store.removeDeferred(id: server.id)
    }
}
