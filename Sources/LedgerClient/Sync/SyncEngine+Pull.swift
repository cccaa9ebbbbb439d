import LedgerModel

extension SyncEngine {
    /// Pulls the feed from the stored token, page by page (`moreComing`), merging each page
    /// atomically with its token. A 410 restarts from nothing, keeping pending changes (and
    /// local records); `history_rewound` also starts a reconciliation. A page
    /// whose household or mode changed while it was in flight is dropped.
    ///
    /// The token is advanced with compare-and-set: a page is merged only when the stored token
    /// is still the one it was asked from, so a second engine on the same file (another
    /// process) that merged further meanwhile is never rewound nor has newer records
    /// overwritten by older ones; the pull goes on from where that engine got to.
    ///
    /// Records that cannot be merged are set aside and reported (`SyncEvent.unmerged`) while
    /// the rest of their page is merged; a page that cannot be read at all is noted the same
    /// way before the error is thrown, and cleared once a later page merges.
    func pull(wait: Int, into report: inout Report) throws {
        let generation = try store.generation()
        let householdId = try store.household().id
        // A child's device reads its child's feed (the same protocol, its own token).
        let paired = try pairedChild()
        var refetched = false
        var first = true
        while true {
            try checkCancelled()
            let since = try store.string(.syncToken)
            let api = self.api
            let limit = pullPageSize
            let waitNow = first && since != nil ? wait : 0
            let page: Wire.ChangesPage
            do {
                page = try retrying { () throws(APIError) in
                    if let paired {
                        return try api.childChanges(householdId: householdId, childId: paired, since: since, limit: limit, wait: waitNow)
                    }
                    return try api.changes(householdId: householdId, since: since, limit: limit, wait: waitNow)
                }
            } catch {
                if error.status == 410 && !refetched {
                    refetched = true
                    // The server went back in time: once everything is pulled again, find what
                    // it lacks (`reconcileIfNeeded`).
                    // (A child's device holds nothing the server could lack but its requests, which stay queued.)
                    let rewound = error.code == "history_rewound" && paired == nil
                    try store.transaction {
                        if try store.generation() == generation, try store.string(.syncToken) == since {
                            try store.set(.syncToken, nil)
                            if rewound { try store.set(.reconcile, "1") }
                        }
                    }
                    continue
                }
                if case .invalidAnswer(let why) = error { try noteUnreadablePage(since: since, reason: why) }
                throw error
            }
            first = false
            enum Outcome { case merged([SyncEvent]), dropped, superseded }
            let outcome: Outcome = try store.transaction {
                guard try store.generation() == generation, try store.household().id == householdId,
                      try store.phase() == .shared else { return .dropped }
                guard try store.string(.syncToken) == since else { return .superseded }
                let events = try merge(page, householdId: householdId, report: &report)
                try store.set(.syncToken, page.nextToken)
                try store.clearUnmerged(kind: "page")
                return .merged(events)
            }
            switch outcome {
            case .dropped:
                report.droppedPages += 1
                return
            case .superseded:
                continue
            case .merged(let events):
                emit(events)
                if !page.moreComing { return }
            }
        }
    }

    /// Notes that the page asked from `since` cannot be read, reporting it the first time.
    private func noteUnreadablePage(since: String?, reason: String) throws {
        let new = try store.transaction {
            try store.setAside(kind: "page", id: since ?? "", reason: reason, json: "", now: now())
        }
        if new { emit([.unmerged(count: 1, reason: reason)]) }
    }

    /// Merges one page into the replica and returns the events to report once it committed.
    /// Call inside a store transaction.
    @discardableResult
    func merge(_ page: Wire.ChangesPage, householdId: String, report: inout Report) throws -> [SyncEvent] {
        var household = try store.household()
        if let h = page.household, h.id.lowercased() == householdId {
            household.name = h.name
            household.currency = h.currency ?? household.currency
            household.ownerAccountId = h.ownerAccountId ?? household.ownerAccountId
            household.changeTag = h.changeTag ?? household.changeTag
            if let role = h.role { household.role = Role(rawValue: role) }
            if let permission = h.permission { household.permission = Permission(rawValue: permission) }
            household.shared = h.shared ?? household.shared
        }
        // A child's device is told `{role: child, permission: readOnly}`: it makes requests, and
        // nothing else, whatever it is told, so its queue is never frozen by it.
        let paired = try pairedChild()
        if let access = page.access, paired == nil {
            if let role = access.role { household.role = Role(rawValue: role) }
            if let permission = access.permission { household.permission = Permission(rawValue: permission) }
        }
        try store.saveHousehold(household, now: now())
        let attention = try store.attention()
        if household.permission == .readOnly, paired == nil {
            if attention == nil { try store.setAttention(.readOnly) }
        } else if attention == .readOnly || attention == .accessRevoked || attention == .householdDeleted {
            try store.setAttention(nil)
        }

        // Records set aside earlier are dropped from that list when a readable version arrives.
        let anySetAside = try store.unmergedCount() > 0
        var setAside: [String] = []
        var children = 0, transactions = 0
        /// Sets aside a pulled record whose timestamps do not parse.
        func setAsideMalformed(_ kind: String, id: String, json: String) throws {
            try store.setAside(kind: kind, id: id.lowercased(), reason: "malformed timestamp", json: json, now: now())
            setAside.append("\(kind) \(id) has a malformed timestamp")
        }
        for record in page.unreadable {
            try store.setAside(kind: record.kind, id: record.id.isEmpty ? "#\(record.json.hashValue)" : record.id,
                               reason: record.reason, json: record.json, now: now())
            setAside.append(record.reason)
        }
        for wire in page.children {
            guard let server = wire.record() else {
                try setAsideMalformed("child", id: wire.id, json: wire.jsonText())
                continue
            }
            if anySetAside { try store.clearUnmerged(kind: "child", id: server.id) }
            try store.noteSeen(modifiedAt: server.modifiedAt)
            report.pulledChildren += 1
            children += 1
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
        for wire in page.pots {
            if anySetAside { try store.clearUnmerged(kind: "pot", id: wire.id.lowercased()) }
            guard try mergePot(wire) else {
                try store.setAside(kind: "pot", id: wire.id.lowercased(), reason: "malformed member", json: wire.jsonText(), now: now())
                setAside.append("pot \(wire.id) has a malformed member")
                continue
            }
        }
        for wire in page.schedules {
            if anySetAside { try store.clearUnmerged(kind: "schedule", id: wire.id.lowercased()) }
            guard try mergeSchedule(wire) else {
                try store.setAside(kind: "schedule", id: wire.id.lowercased(), reason: "malformed member", json: wire.jsonText(), now: now())
                setAside.append("schedule \(wire.id) has a malformed member")
                continue
            }
        }
        var requests = 0
        for wire in page.requests {
            if anySetAside { try store.clearUnmerged(kind: "request", id: wire.id.lowercased()) }
            guard try mergeRequest(wire) else {
                try store.setAside(kind: "request", id: wire.id.lowercased(), reason: "malformed member", json: wire.jsonText(), now: now())
                setAside.append("request \(wire.id) has a malformed member")
                continue
            }
            requests += 1
        }
        // Looked up once per page: the children seen present, and whether anything waits.
        var presentChildren = Set<String>()
        var anyDeferred = try store.deferredCount() > 0
        for wire in page.transactions {
            guard let server = wire.record() else {
                try setAsideMalformed("transaction", id: wire.id, json: wire.jsonText())
                continue
            }
            if anySetAside { try store.clearUnmerged(kind: "transaction", id: server.id) }
            report.pulledTransactions += 1
            transactions += 1
            if try presentChildren.contains(server.childId) || store.hasChild(id: server.childId) {
                presentChildren.insert(server.childId)
                try adopt(server, wasDeferred: anyDeferred)
            } else {
                try store.deferTransaction(id: server.id, childId: server.childId, json: wire.jsonText())
                anyDeferred = true
            }
        }
        if anyDeferred {
            for (id, json) in try store.readyDeferred() {
                if let wire = try? JSONDecoderBox.decode(Wire.Transaction.self, json), let server = wire.record() {
                    try adopt(server, wasDeferred: true)
                }
                try store.removeDeferred(id: id)
            }
        }
        var events: [SyncEvent] = []
        if children + transactions + requests > 0 { events.append(.remoteChanges(children: children, transactions: transactions)) }
        if let first = setAside.first { events.append(.unmerged(count: setAside.count, reason: first)) }
        return events
    }

    /// Stores the server's version of a transaction; the server's copy is authoritative.
    private func adopt(_ server: TransactionRecord, wasDeferred: Bool) throws {
        if let reversesId = server.reversesId, let other = try store.reversal(of: reversesId), other.id != server.id {
            // Cannot happen with deterministic reversal ids; the server's record wins.
            try store.deleteTransaction(id: other.id)
            try store.dequeue(.transaction, id: other.id)
        }
        try store.upsert(server)
        try store.dequeue(.transaction, id: server.id)
        if wasDeferred { try store.removeDeferred(id: server.id) }
    }
}
