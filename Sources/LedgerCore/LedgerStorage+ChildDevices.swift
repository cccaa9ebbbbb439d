import LedgerModel

/// Reads about children's devices (child tokens) and children's requests. Part of
/// `LedgerReading`; rules over these: `Rules/LedgerWriting+ChildDevices.swift`,
/// `Rules/LedgerWriting+Requests.swift`.
package protocol ChildDeviceReading {
    /// The caller of a live child token with this hash whose household still exists; nil otherwise.
    func childCaller(tokenHash: [UInt8]) throws -> Caller?
    /// The child scope kept with the link code of this hash (nil: a code of an account's own device, or no code).
    func linkCodeChild(hash: [UInt8]) throws -> ChildLinkScope?
    /// The live devices of one child, by pairing time then id, after `after`.
    func childDevices(household: String, child: String, after: TimeAndIdPosition?,
                      limit: Int) throws -> KeyedPage<ChildDeviceRecord, TimeAndIdPosition>
    /// How many live devices the child has.
    func childDeviceCount(household: String, child: String) throws -> Int

    /// The request `id` of the household.
    func request(household: String, id: String) throws -> RequestRecord?
    /// The child's requests, newest first, before `before`.
    func requests(household: String, child: String, before: TimeAndIdPosition?,
                  limit: Int) throws -> KeyedPage<RequestRecord, TimeAndIdPosition>
    /// The request whose approval pays the transaction `paymentId`, if any.
    func request(household: String, paymentId: String) throws -> RequestRecord?
}

/// Writes about children's devices and requests; like every primitive they check nothing.
package protocol ChildDeviceWriting: ChildDeviceReading {
    /// Keeps `scope` with the link code of this hash (just inserted).
    func setLinkCodeChild(hash: [UInt8], scope: ChildLinkScope) throws
    /// A new child token stored under its hash.
    func insertChildToken(_ record: ChildDeviceRecord, hash: [UInt8]) throws
    /// Revokes the child token `id` of that child; false when there is no such live token.
    /// A revoked token is reported in the commit (`StorageCommit.revokedTokens`).
    func revokeChildToken(household: String, child: String, id: String, at: Int64) throws -> Bool

    /// A new request, stamped with `seq`.
    func insertRequest(_ r: RequestRecord, seq: Int64) throws
    /// Replaces the stored request, stamped with `seq`.
    func updateRequest(_ r: RequestRecord, seq: Int64) throws
}
