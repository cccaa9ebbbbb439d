extension Wire {
    /// A participant of a household's share.
    public struct Participant: Codable, Sendable, Equatable {
        public var accountId: String
        public var handle: String?
        public var displayName: String?
        public var role: String?
        public var permission: String
        public var status: String
        public var invitationId: String?
    }

    /// The household's one zone-wide share.
    public struct Share: Codable, Sendable, Equatable {
        public var householdId: String
        public var publicPermission: String?
        public var participants: [Participant]
    }

    /// A pending invitation addressed to the caller.
    public struct Invitation: Codable, Sendable, Equatable {
        public var id: String
        public var householdId: String
        public var householdName: String
        public var ownerDisplayName: String?
        public var permission: String
        public var invitedAt: String?
    }
}
