/// Push primitives every storage conformer's reads offer besides `LedgerReading` (a
/// protocol of its own, like the identity primitives).
package protocol PushReading {
    /// The push registrations of these tokens (the caller's), by token id.
    func pushRegistrations(tokens: [String]) throws -> [String: PushRegistration]
    /// Wakes in the outbox (due, or taken and not yet answered).
    func pushOutboxDepth() throws -> Int
}

/// Push primitives of a write transaction: registrations and the wake outbox (one row per
/// device and household, kept with the device's quiet time, so it never holds more than
/// that, whatever the write rate).
package protocol PushWriting: PushReading {
    /// Registers (or replaces) the token's push key; another token of the same account that
    /// held the key lets go of it.
    func upsertPushRegistration(_ registration: PushRegistration) throws
    /// Unregisters the token (its waiting wakes go with it); whether it was registered. With
    /// `pushKey`, only while the token is still registered with that key.
    func deletePushRegistration(token: String, pushKey: String?) throws -> Bool
    /// Queues a wake for every registered, live device token of `household`'s members
    /// (owner and accepted participants) but `author`: a device with one due or in flight
    /// keeps that one, now announcing the household's current change position; else it is
    /// due at `now`, or when the device's quiet time since its last wake ends. How many
    /// devices had a wake queued or updated.
    func queuePushWakes(household: String, except author: String?, now: Int64) throws -> Int
    /// Takes up to `limit` wakes due at `now` (each until `lease`, when it is due again
    /// unless answered: a process that died mid-call leaves it to another), dropping those
    /// whose device lost access to the household. Wakes another process is taking are
    /// skipped, never waited for.
    func claimPushWakes(now: Int64, lease: Int64, limit: Int) throws -> PushWakeClaim
    /// The wake was answered (delivered, or refused for good) for the changes up to
    /// `sentSeq`: due no more, unless a newer change came meanwhile, which is then due at
    /// `quietUntil`. The device's next wake of the household waits until `quietUntil`.
    func finishPushWake(token: String, household: String, sentSeq: Int64, quietUntil: Int64) throws
    /// An attempt failed: the wake is due again at `at`, one attempt more.
    func postponePushWake(token: String, household: String, to at: Int64) throws
}

extension LedgerReading {
    /// The push primitives of this snapshot.
    package func pushReading() throws -> any PushReading {
        guard let r = self as? any PushReading else { throw IdentityStorageError.unsupported }
        return r
    }
}

extension LedgerWriting {
    /// The push primitives of this write.
    package func pushWriting() throws -> any PushWriting {
        guard let w = self as? any PushWriting else { throw IdentityStorageError.unsupported }
        return w
    }

    /// Queues the push wakes of what `commit` changed (inside its transaction, before
    /// COMMIT): each household it touched wakes its members' devices but the one that made
    /// every change to it. How many wakes were queued or updated.
    package func queuePushWakes(for commit: StorageCommit, now: Int64) throws -> Int {
        guard !commit.touched.isEmpty else { return 0 }
        let w = try pushWriting()
        var queued = 0
        for household in commit.touched.sorted() {
            queued += try w.queuePushWakes(household: household, except: commit.author(of: household), now: now)
        }
        return queued
    }
}
