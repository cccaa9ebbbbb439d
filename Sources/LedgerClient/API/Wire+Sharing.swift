extension Wire {
    /// A participant of a household's share.
    struct Participant: Codable, Sendable, Equatable {
        var accountId: String
        var handle: String?
        var displayName: String?
        var role: String?
        var permission: String
        var status: String
        var invitationId: String?
    }

    /// The household's one zone-wide share.
    struct Share: Codable, Sendable, Equatable {
        var householdId: String
        var publicPermission: String?
        var participants: [Participant]
    }

    /// A pending invitation addressed to the caller.
    struct Invitation: Codable, Sendable, Equatable {
        var id: String
        var householdId: String
        var householdName: String
        var ownerDisplayName: String?
        var permission: String
        var invitedAt: String?
    }
}
