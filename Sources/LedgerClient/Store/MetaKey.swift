/// Keys of the store's `meta` table, the one list of them. The raw values are what store files
/// hold: renaming a case is fine, changing a raw value loses what earlier versions wrote.
enum MetaKey: String, Sendable, CaseIterable {
    case deviceId = "device_id"
    case serverURL = "server_url"
    /// Where earlier versions kept the bearer token; moved to the credential store on open.
    case token
    case tokenId = "token_id"
    /// The account this ledger is pinned to (never rebound silently).
    case accountId = "account_id"
    case accountHandle = "account_handle"
    case accountDisplayName = "account_display_name"
    /// The account of the current token when it differs from `accountId`.
    case signedInAccountId = "signed_in_account_id"
    case signedInAccountHandle = "signed_in_account_handle"
    case signedInAccountDisplayName = "signed_in_display_name"
    /// The pinned account's token (earlier versions) and its id, kept while another account is
    /// signed in so that the device can go back to the ledger's account.
    case pinnedToken = "pinned_token"
    case pinnedTokenId = "pinned_token_id"
    /// `LedgerPhase.storageValue`.
    case phase
    case syncToken = "sync_token"
    /// Bumped whenever the household or mode changes; a pull started under another
    /// generation is dropped.
    case generation
    /// `AttentionReason` raw value, while shared editing is frozen.
    case attention
    /// `SyncOutcome` raw value of the last sync attempt; absent when it said nothing against the server.
    case lastOutcome = "last_outcome"
    /// Milliseconds since the epoch.
    case lastSyncAt = "last_sync_at"
    /// Since when the server could not be reached, in milliseconds since the epoch.
    case offlineSince = "offline_since"
    case newestSeenModifiedAt = "newest_seen_modified_at"
    /// Set when the server answered `history_rewound` (it went back in time): until a
    /// reconciliation finds nothing missing, the device says so instead of "synced".
    case reconcile
    /// How many records the server lacks that only another member's device (or the owner's
    /// restore from this device) can bring back, as the last reconciliation counted them.
    case reconcileWaiting = "reconcile_waiting"
    /// Set while the owner's "restore from this device" runs: every record is pushed, those of
    /// other members marked as restored by the owner.
    case ownerRestore = "owner_restore"
    /// While a join runs: the phase (and, after an account switch, the pinned account) to
    /// return to if the invitation turns out to be withdrawn.
    case joinPreviousPhase = "join_previous_phase"
    case joinPreviousAccountId = "join_previous_account_id"
    case joinPreviousAccountHandle = "join_previous_account_handle"
    /// While a join fetches: the feed token its staged pages reached, and the household
    /// (with the caller's access) as the feed last described it, as JSON.
    case joinStageToken = "join_stage_token"
    case joinStageHousehold = "join_stage_household"
    /// The household's last verified entitlement token and the server's keys it verified
    /// with, for answering offline.
    case entitlementToken = "entitlement_token"
    case entitlementKeys = "entitlement_keys"
    /// The app's push registration (`Ledger.registerForPush`): its app id and push key, and
    /// the token id the server has them for (absent: to register again).
    case pushAppId = "push_app_id"
    case pushKey = "push_key"
    case pushRegisteredTokenId = "push_registered_token_id"
    /// Set on a child's device (`Ledger.redeemChildCode`): the child it is paired to. The
    /// ledger then syncs from that child's feed and offers only that child's calls.
    case childModeChildId = "child_mode_child_id"
    /// The child's name as the pairing answered it, until the feed brings the child.
    case childModeChildName = "child_mode_child_name"
}
