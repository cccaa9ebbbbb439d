/// What durable writes changed: one write's, or a whole commit's (the writes of a group
/// commit merged). After every commit this process's long-polls wake, its caches forget
/// and its counters count by it; over PostgreSQL it is also what other processes hear of.
@usableFromInline package struct StorageCommit: Sendable, Equatable {
    /// Households whose feed moved (or that were deleted): their long-polls wake.
    package var touched: Set<String> = []
    /// Tokens revoked: remembered tokens must be checked again, and their long-polls end.
    package var revokedTokens: Set<String> = []
    /// Writes made durable (those of a group commit that succeeded; 0 for what another
    /// process announced).
    @usableFromInline package var writes = 0
    /// The device token whose request made this write (nil: no device's, e.g. an admin
    /// command): its changes wake the household's other devices, never that one.
    @usableFromInline package var author: String?
    /// Of merged writes: per household touched, the one device token that made every change
    /// to it ("" when several did, or a change no device made).
    @usableFromInline package var authors: [String: String] = [:]
    /// Push wakes queued or updated in the outbox by the commit.
    @usableFromInline package var wakesQueued = 0

    @usableFromInline package init(touched: Set<String> = [], revokedTokens: Set<String> = [], writes: Int = 0) {
        (self.touched, self.revokedTokens, self.writes) = (touched, revokedTokens, writes)
    }

    /// The device token that made every change to `household` here (nil: none did alone).
    package func author(of household: String) -> String? {
        if let a = authors[household] { return a.isEmpty ? nil : a }
        return author
    }

    /// Whether it changed anything another process must hear of.
    package var isEmpty: Bool { touched.isEmpty && revokedTokens.isEmpty }

    /// Adds what `other` changed, and its writes. `authors: false` leaves `authors` as it
    /// is, for a commit nobody asks `author(of:)` (no push wakes are queued): a few string
    /// hashes less per write of every group commit.
    @usableFromInline package mutating func merge(_ other: StorageCommit, authors keepingAuthors: Bool = true) {
        if keepingAuthors {
            for h in other.touched {
                let theirs = other.author(of: h) ?? ""
                authors[h] = !touched.contains(h) || (author(of: h) ?? "") == theirs ? theirs : ""
            }
        }
        wakesQueued += other.wakesQueued
        // The first write's sets are taken as they are (no hashing, no copy); a write to the
        // one household already touched adds nothing (the common batch: no hashing either).
        if touched.isEmpty {
            touched = other.touched
        } else if !other.touched.isEmpty,
                  !(touched.count == 1 && other.touched.count == 1 && touched.first == other.touched.first) {
            touched.formUnion(other.touched)
        }
        if !other.revokedTokens.isEmpty { revokedTokens.formUnion(other.revokedTokens) }
        writes += other.writes
    }
}
