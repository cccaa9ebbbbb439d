/// A device token's push registration: where its wakes go. The key never leaves the server
/// except in a wake to the gateway it was registered for. A child's device (a child token)
/// registers too: `child` is its scope and `accountId` is `Caller.noAccount`.
package struct PushRegistration: Sendable, Equatable {
    package var tokenId: String
    package var accountId: String
    /// The household and child of a child token's registration; nil for an account's token.
    package var child: ChildScope?
    /// The app's id at the gateway (`app_id`), e.g. its bundle id.
    package var appId: String
    /// The device's push key (`pushkey`): an APNs device token, lowercase hex.
    package var pushKey: String
    /// The full notify URL of the gateway, one of those the operator allowed.
    package var gateway: String
    /// When the key was registered, ms (`pushkey_ts`, in seconds, in a wake).
    package var registeredAt: Int64

    package init(tokenId: String, accountId: String, child: ChildScope? = nil, appId: String, pushKey: String, gateway: String,
                 registeredAt: Int64) {
        (self.tokenId, self.accountId, self.child, self.appId, self.pushKey) = (tokenId, accountId, child, appId, pushKey)
        (self.gateway, self.registeredAt) = (gateway, registeredAt)
    }
}

/// A wake taken from the outbox for one attempt: the household changed up to `seq`, and the
/// device registered as `registration` is to hear of it.
package struct PushWake: Sendable, Equatable {
    package var householdId: String
    /// The household's change position the wake announces (the outbox row's, when claimed).
    package var seq: Int64
    /// Attempts made before this one.
    package var attempts: Int
    /// When the wake was first queued, ms (for the gateway latency and the commit-to-wake time).
    package var queuedAt: Int64
    package var registration: PushRegistration

    package init(householdId: String, seq: Int64, attempts: Int, queuedAt: Int64, registration: PushRegistration) {
        (self.householdId, self.seq, self.attempts, self.queuedAt) = (householdId, seq, attempts, queuedAt)
        self.registration = registration
    }

    package var tokenId: String { registration.tokenId }
}

/// What a claim took from the outbox.
package struct PushWakeClaim: Sendable {
    /// The wakes to send now, each taken until the claim's lease ends.
    package var wakes: [PushWake]
    /// Wakes dropped instead of taken: their device lost access to the household, or its
    /// token or registration is gone.
    package var dropped: Int
    /// When the next wake still waiting is due, ms (nil: none waits).
    package var nextDue: Int64?

    package init(wakes: [PushWake], dropped: Int, nextDue: Int64?) {
        (self.wakes, self.dropped, self.nextDue) = (wakes, dropped, nextDue)
    }
}
