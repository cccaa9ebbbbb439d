import HTTPServer
import LedgerCore
import LedgerModel

/// How handlers reach storage: through the `LedgerStorage` seam only, in domain types.
/// Storage refusals (`LedgerStorageError`) become HTTP answers in one place
/// (`LedgerStorageError+HTTP.swift`), when `respond(_:)` or the router sees them.
extension RequestContext {
    /// Runs `body` against one consistent snapshot of storage.
    func read<T>(_ body: (any LedgerReading) throws -> T) throws -> T {
        try services.storage.read(body)
    }

    /// Runs `body` in a write transaction (on SQLite: a job of the next group commit) and,
    /// once it is durable, answers with `answer(value)`, built off the writer thread: on
    /// the connection's event loop when the request was handled there (`answersOnLoop`),
    /// otherwise on the storage's completion thread. A refusal or a failed commit is
    /// answered as its problem.
    /// `household`: the one household `body` locks, when it keeps to one (the write may
    /// then share a transaction with others: group commit over PostgreSQL).
    /// `lookahead`: what `body` looks up first (with `household`), for a backend to read ahead.
    func write<T: Sendable>(household: String? = nil, lookahead: WriteLookahead? = nil, _ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                            answer: @escaping @Sendable (T) throws -> HTTPResponse) -> Reply {
        let done: @Sendable (Result<T, any Error>) -> Void = { [self] result in
            do { respond(try answer(result.get())) } catch { respond(error) }
        }
        // What an authenticated request changes wakes the household's other devices, not its own.
        let attributed: @Sendable (any LedgerWriting) throws -> T = if let token = caller?.tokenId {
            { w in w.attributeChanges(to: token); return try body(w) }
        } else { body }
        if let household, let lookahead {
            services.storage.write(household: household, lookahead: lookahead, answeringOn: answersOnLoop ? self : nil,
                                   attributed, completion: done)
        } else {
            services.storage.write(household: household, answeringOn: answersOnLoop ? self : nil, attributed, completion: done)
        }
        return .pending
    }

    /// A GET answer from the read cache, else `body` run against one snapshot, its 200
    /// answer kept under `key`. The key must name everything the answer depends on (the
    /// caller included).
    ///
    /// Over SQLite (`cachesReads`: one process) an answer is served while nothing has
    /// committed since it was read. Over PostgreSQL (`stampsReads`) an answer about
    /// `household` is served while the household's stamp, read from the database before
    /// each use (one row; concurrent requests' rows in one statement, `ReadStampBatch`), is
    /// the one read before the answer's data: that needs every change
    /// the answer can show to advance the household's change sequence, so `household` is
    /// nil for an answer that may change without (it is then kept over SQLite only).
    ///
    /// On an event loop over PostgreSQL (a `Router.Execution.keptRead` route whose caller
    /// was remembered) nothing here blocks: a kept answer is handed to the stamp batch,
    /// whose reader (a worker) serves it through the connection once the stamp came back
    /// the same; any other read (nothing kept, the stamp moved) runs on a worker.
    func cachedRead(_ key: String, household: String?,
                    _ body: @escaping @Sendable (any LedgerReading) throws -> HTTPResponse) throws -> Reply {
        let storage = services.storage
        let cache = services.readCache
        if storage.cachesReads {
            if let hit = cache.response(key) { return .response(hit) }
            let generation = cache.current
            let response = try read(body)
            if response.status == 200 { cache.store(response, key: key, readAt: generation) }
            return .response(response)
        }
        guard answersOnLoop else { return .response(try stampedRead(key, household: household, body)) }
        guard let household, storage.stampsReads, cache.stamped(household: household, key: key) != nil else {
            offLoop { [self] in .response(try stampedRead(key, household: household, body)) }
            return .pending
        }
        let workers = services.workers
        cache.stamps.stamp(household: household, account: caller?.accountId ?? Caller.noAccount,
                           read: { try storage.readStamps($0) }, start: { workers.async($0) }) { [self] outcome in
            // On the stamp reader's thread.
            let stamp: HouseholdReadStamp?
            do { stamp = try outcome.get() } catch { return respond(error) }
            if let stamp, let kept = cache.stamped(household: household, key: key), kept.stamp == stamp {
                cache.countStampedHit()
                return respond(kept.response)
            }
            // Moved (or no stamp: no such household); read after this stamp was.
            offLoop { [self] in
                let response = try read(body)
                if let stamp, response.status == 200 { cache.store(response, household: household, key: key, stamp: stamp) }
                return .response(response)
            }
        }
        return .pending
    }

    /// `cachedRead` over stamped storage, on the calling thread (which may block).
    private func stampedRead(_ key: String, household: String?,
                             _ body: (any LedgerReading) throws -> HTTPResponse) throws -> HTTPResponse {
        let storage = services.storage
        let cache = services.readCache
        guard let household, storage.stampsReads,
              let stamp = try cache.stamps.stamp(household: household, account: caller?.accountId ?? Caller.noAccount,
                                                 read: { try storage.readStamps($0) })
        else { return try read(body) }
        if let kept = cache.stamped(household: household, key: key), kept.stamp == stamp {
            cache.countStampedHit()
            return kept.response
        }
        let response = try read(body)
        if response.status == 200 { cache.store(response, household: household, key: key, stamp: stamp) }
        return response
    }

    /// Runs `work` on a worker and answers with what it returns (503 when the workers'
    /// backlog is full).
    private func offLoop(_ work: @escaping @Sendable () throws -> Reply) {
        let queued = services.offLoop { [self] in
            do {
                switch try work() {
                case .response(let r): respond(r)
                case .pending: break
                }
            } catch { respond(error) }
        }
        if !queued { respond(AppHandler.busy()) }
    }
}

/// A write made by a request handled on its connection's event loop is answered there: the
/// storage hands the outcome straight to the loop, which builds the answer and writes it.
extension RequestContext: WriteCompletionExecutor {
    func execute(_ work: @escaping @Sendable () -> Void) { responder.execute(work) }
}
