import LedgerModel

// One decoding initializer per record, over either backend's row. Each names the columns
// it reads, in order, starting at column `at`; a backend's SELECT lists them so. Values
// the database cannot hold wrong are read with the rules' defaults (an unknown source is
// `api`, an unknown permission `readOnly`, an unknown participant status `revoked`).

extension Child {
    /// `id, household_id, name, sort_order, archived, created_at, modified_at, modified_by,
    /// change_tag, balance_cents`.
    @inlinable
    package init<Row: StorageRow>(row r: Row, at c: Int = 0) {
        self.init(id: r.id(c), householdId: r.id(c + 1), name: r.string(c + 2), sortOrder: r.int(c + 3),
                  archived: r.bool(c + 4), createdAt: r.time(c + 5), modifiedAt: r.time(c + 6), modifiedBy: r.id(c + 7),
                  changeTag: r.string(c + 8), balanceCents: r.int(c + 9))
    }
}

extension LedgerTransaction {
    /// `id, household_id, child_id, amount_cents, note, source, created_at, recorded_at,
    /// author_account_id, reverses_id, reversed_by_id, pot_id`.
    @inlinable
    package init<Row: StorageRow>(row r: Row, at c: Int = 0) {
        self.init(id: r.id(c), householdId: r.id(c + 1), childId: r.id(c + 2), amountCents: r.int(c + 3),
                  note: r.string(c + 4), source: TransactionSource(rawValue: r.string(c + 5)) ?? .api,
                  createdAt: r.time(c + 6), recordedAt: r.time(c + 7), authorAccountId: r.id(c + 8),
                  reversesId: r.optionalID(c + 9), reversedById: r.optionalID(c + 10), potId: r.optionalID(c + 11))
    }
}

extension HouseholdRecord {
    /// `id, name, currency, owner_account_id, created_at, modified_at, change_tag, shared`.
    @inlinable
    package init<Row: StorageRow>(row r: Row, at c: Int = 0) {
        self.init(id: r.id(c), name: r.string(c + 1), currency: r.string(c + 2), ownerAccountId: r.id(c + 3),
                  createdAt: r.time(c + 4), modifiedAt: r.time(c + 5), changeTag: r.string(c + 6), shared: r.bool(c + 7))
    }
}

extension HouseholdListing {
    /// The household's columns, then the participant's `permission`: how `account` stands
    /// in it (the owner reads and writes).
    @inlinable
    package init<Row: StorageRow>(row r: Row, account: String) {
        let h = HouseholdRecord(row: r)
        if h.ownerAccountId == account {
            self.init(household: h, role: .owner, permission: .readWrite)
        } else {
            self.init(household: h, role: .participant,
                      permission: r.optionalString(8).flatMap(Membership.Permission.init(rawValue:)) ?? .readOnly)
        }
    }
}

extension AccountRecord {
    /// `id, handle, display_name, created_at`.
    @inlinable
    package init<Row: StorageRow>(row r: Row) {
        self.init(id: r.id(0), handle: r.string(1), displayName: r.string(2), createdAt: r.time(3))
    }
}

extension TokenRecord {
    /// `id, account_id, device_name, created_at, last_used_at`.
    @inlinable
    package init<Row: StorageRow>(row r: Row) {
        self.init(id: r.id(0), accountId: r.id(1), deviceName: r.string(2), createdAt: r.time(3), lastUsedAt: r.optionalTime(4))
    }
}

extension Caller {
    /// `id, account_id, hash` of a token looked up by `hash`: nil unless the stored hash is
    /// that one (compared in constant time).
    @inlinable
    package init?<Row: StorageRow>(row r: Row, hash: [UInt8]) {
        guard TokenSecret.constantTimeEqual(r.bytes(2), hash) else { return nil }
        self.init(accountId: r.id(1), tokenId: r.id(0))
    }
}

extension HouseholdReadStamp {
    /// `AccessRecord(row:)`'s four columns, then `n`, `seq` and the database's incarnation;
    /// read for `account`.
    @inlinable
    package init<Row: StorageRow>(row r: Row, account: String) {
        self.init(row: r.int(4), seq: r.int(5), incarnation: r.int(6), account: account, access: AccessRecord(row: r))
    }
}

extension AccessRecord {
    /// `owner_account_id`, then the participant's `status, permission, accepted_at IS NOT NULL`
    /// (NULL, NULL, false when the account was never invited).
    @inlinable
    package init<Row: StorageRow>(row r: Row) {
        self.init(ownerAccountId: r.id(0), status: r.optionalString(1).flatMap(Participant.Status.init(rawValue:)),
                  permission: r.optionalString(2).flatMap(Membership.Permission.init(rawValue:)),
                  everAccepted: r.optionalBool(3) ?? false)
    }
}

extension Participant {
    /// `household_id, account_id, handle, display_name, permission, status, invitation_id,
    /// invited_at`.
    @inlinable
    package init<Row: StorageRow>(row r: Row) {
        self.init(householdId: r.id(0), accountId: r.id(1), handle: r.string(2), displayName: r.string(3),
                  permission: Membership.Permission(rawValue: r.string(4)) ?? .readOnly,
                  status: Participant.Status(rawValue: r.string(5)) ?? .revoked, invitationId: r.id(6),
                  invitedAt: r.time(7))
    }
}

extension Invitation {
    /// `invitation_id, household id, household name, owner's display_name, permission,
    /// invited_at` (then the row's order, for the page's position).
    @inlinable
    package init<Row: StorageRow>(row r: Row) {
        self.init(id: r.id(0), householdId: r.id(1), householdName: r.string(2), ownerDisplayName: r.string(3),
                  permission: Membership.Permission(rawValue: r.string(4)) ?? .readOnly, invitedAt: r.time(5))
    }
}

extension BlockRecord {
    /// `blocked_account_id, handle, display_name, created_at`.
    @inlinable
    package init<Row: StorageRow>(row r: Row) {
        self.init(accountId: r.id(0), handle: r.string(1), displayName: r.string(2), createdAt: r.time(3))
    }
}

extension DeviceSyncRecord {
    /// `token_id, account_id, device_name, last_pull_at, last_push_at`, changes behind.
    @inlinable
    package init<Row: StorageRow>(row r: Row) {
        self.init(tokenId: r.id(0), accountId: r.id(1), deviceName: r.string(2), lastPullAt: r.optionalTime(3),
                  lastPushAt: r.optionalTime(4), changesBehind: r.int(5))
    }
}

extension FeedHead {
    /// `seq, incarnation, database incarnation`.
    @inlinable
    package init<Row: StorageRow>(row r: Row) {
        self.init(seq: r.int(0), incarnation: r.int(1), database: r.int(2))
    }
}

extension PendingInvitationCounts {
    /// The three counts, in the order of the properties.
    @inlinable
    package init<Row: StorageRow>(row r: Row?) {
        self.init(byInviter: r?.int(0) ?? 0, toInvitee: r?.int(1) ?? 0, byInviterToInvitee: r?.int(2) ?? 0)
    }
}

extension StoredPurchase {
    /// The columns of `app_store_purchases` that both backends' schemas name alike, in the
    /// order `init(row:at:)` reads them: the purchase's newest event, then when it was stored.
    package static let columns = """
        original_transaction_id, environment, product_id, expires_at, revoked_at, grace_until, billing_retry, auto_renew, \
        apple_status, event_type, event_subtype, event_signed_date, event_key, source, signed_transaction, signed_renewal_info, \
        updated_at
        """

    /// `columns` of the table aliased `alias`.
    package static func columns(of alias: String) -> String {
        columns.split(separator: ",").map { alias + "." + $0.drop { $0 == " " } }.joined(separator: ", ")
    }

    /// `columns`, starting at column `at`.
    @inlinable
    package init<Row: StorageRow>(row r: Row, at c: Int = 0) {
        self.init(event: PurchaseEvent(
            originalTransactionId: r.string(c), environment: r.string(c + 1), productId: r.string(c + 2),
            expiresAt: r.optionalTime(c + 3), revokedAt: r.optionalTime(c + 4), graceUntil: r.optionalTime(c + 5),
            billingRetry: r.bool(c + 6), autoRenew: r.optionalBool(c + 7), appleStatus: r.optionalInt(c + 8).map { Int($0) },
            type: r.optionalString(c + 9), subtype: r.optionalString(c + 10), signedDate: r.time(c + 11),
            key: r.string(c + 12), source: r.string(c + 13), signedTransaction: r.string(c + 14),
            signedRenewalInfo: r.optionalString(c + 15)), updatedAt: r.time(c + 16))
    }
}

extension SubscriptionRecord {
    /// `granted_by, verified_at`, then the purchase's `StoredPurchase.columns`.
    @inlinable
    package init<Row: StorageRow>(row r: Row) {
        self.init(grantedBy: r.id(0), verifiedAt: r.time(1), purchase: StoredPurchase(row: r, at: 2))
    }
}

extension IdentityRecord {
    /// The columns `init(row:at:)` reads, in order.
    package static let columns = "id, account_id, provider, issuer, subject, linked_at"

    @inlinable
    package init<Row: StorageRow>(row r: Row, at c: Int = 0) {
        self.init(id: r.id(c), accountId: r.id(c + 1), provider: r.string(c + 2), issuer: r.string(c + 3),
                  subject: r.string(c + 4), linkedAt: r.time(c + 5))
    }
}

extension AppleTokenRecord {
    /// The columns `init(row:at:)` reads, in order.
    package static let columns = "id, account_id, identity_id, client_id, sealed, key_id, created_at, revoke_after, attempts"

    @inlinable
    package init<Row: StorageRow>(row r: Row, at c: Int = 0) {
        self.init(id: r.id(c), accountId: r.id(c + 1), identityId: r.optionalID(c + 2), clientId: r.string(c + 3),
                  sealed: r.bytes(c + 4), keyId: r.string(c + 5), createdAt: r.time(c + 6),
                  revokeAfter: r.optionalTime(c + 7), attempts: Int(r.int(c + 8)))
    }
}
